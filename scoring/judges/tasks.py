"""Celery tasks of judge runs. Thin: each calls a plain function of ``scoring.judges.runs``."""

from celery import shared_task
from celery.signals import worker_ready

from scoring.judges import runs
from scoring.judges.models import JudgeRun


@shared_task(bind=True, name="scoring.judge_unit", max_retries=None)
def judge_unit(self, run_id: int, dialogue_id: int, item_id: int | None = None) -> str:
    """One judge request (or its cached answer). Retries are scheduled with a countdown, never slept."""
    outcome = runs.process_unit(run_id, dialogue_id, item_id)
    if outcome.retry_in is not None:
        raise self.retry(countdown=outcome.retry_in)
    return outcome.state


@shared_task(name="scoring.recover_runs")
def recover_runs() -> int:
    """Re-enqueue the pending work of running judge runs (after a worker was killed or restarted)."""
    return sum(runs.enqueue_pending(run) for run in JudgeRun.objects.filter(status=JudgeRun.Status.RUNNING))


@worker_ready.connect
def _recover_on_start(sender=None, **kwargs) -> None:
    # A worker that starts picks up runs whose messages died with a killed worker; claims make it harmless
    # when the original messages are still queued.
    recover_runs.delay()
