"""Celery tasks and worker signals of the LLM engine. The broker only wakes engines; state lives in the database."""

from celery import shared_task
from celery.signals import worker_init, worker_shutdown

from scoring.llm import batch, engine, worker


@shared_task(name=engine.WAKE_TASK)
def wake(kind: str, job_id: int) -> str:
    """Hand a job to this process's engine, which works on it until nothing is left to claim. Returns at once:
    the engine's threads keep the requests in flight, so a worker thread is never held by a run."""
    worker.engine().wake(kind, job_id)
    return "woken"


@shared_task(name="scoring.llm.poll_batch")
def poll_batch(batch_id: int) -> str:
    """Look at a provider batch and store its results once it has ended (queued by the reconciler)."""
    return batch.poll(batch_id)


@worker_init.connect
def _warm_up(sender=None, **kwargs) -> None:
    """Import the openai client (about half a second) before the worker consumes, so a run's first requests go out
    at once. The task modules themselves are imported by Celery's autodiscovery before the worker consumes."""
    import openai  # noqa: F401


@worker_shutdown.connect
def _stop_engine(sender=None, **kwargs) -> None:
    """A warm shutdown lets requests in flight finish and gives the rest of the claims back."""
    worker.stop_engine()
