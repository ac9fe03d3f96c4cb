"""Celery tasks and worker signals of the LLM engine. The broker only wakes engines; state lives in the database."""

from celery import current_app, shared_task
from celery.signals import worker_init, worker_process_init, worker_process_shutdown, worker_ready, worker_shutdown
from django.conf import settings

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


def consumes_llm_queue() -> bool:
    """Whether this worker takes the LLM queue (every queue when started without -Q)."""
    queues = current_app.amqp.queues.consume_from
    return not queues or settings.CELERY_LLM_QUEUE in queues


@worker_init.connect
def _warm_up(sender=None, **kwargs) -> None:
    """A worker of the LLM queue imports the openai client (0.5 s of CPU, 1.2 s on a loaded machine) before it
    consumes, once in the prefork parent, so a run's first requests go out at once; a worker of the other queues
    never sends a request and skips it. The task modules themselves are imported by Celery's autodiscovery before
    the worker consumes (its queues are known by then)."""
    if consumes_llm_queue():
        import openai  # noqa: F401


@worker_process_init.connect
def _start_in_process(**kwargs) -> None:
    """Every process that does LLM work runs an engine from its start (a prefork child, the solo pool): engines
    find running jobs by themselves, so several share a job without a message for each."""
    if consumes_llm_queue():
        worker.engine()


@worker_ready.connect
def _start_in_threads_worker(sender=None, **kwargs) -> None:
    """A threads-pool worker runs its tasks, and its engine, in the main process."""
    pool = getattr(sender, "pool", None)
    if pool is not None and "thread" in type(pool).__module__ and consumes_llm_queue():
        worker.engine()


@worker_shutdown.connect
@worker_process_shutdown.connect
def _stop_engine(sender=None, **kwargs) -> None:
    """A warm shutdown lets requests in flight finish and gives the rest of the claims back."""
    worker.stop_engine()
