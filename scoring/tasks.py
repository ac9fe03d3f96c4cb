"""Celery tasks. Thin: each loads its row and calls a plain function."""

from celery import shared_task
from celery.signals import worker_ready

from scoring import jobs


@shared_task(name="scoring.run_job")
def run_job(job_id: int) -> str:
    job = jobs.execute(job_id)
    return job.status


@shared_task(bind=True, name="scoring.judge_unit", max_retries=None)
def judge_unit(self, run_id: int, dialogue_id: int, item_id: int | None = None) -> str:
    """One judge request (or its cached answer). Retries are scheduled with a countdown, never slept."""
    from scoring import judging

    outcome = judging.process_unit(run_id, dialogue_id, item_id)
    if outcome.retry_in is not None:
        raise self.retry(countdown=outcome.retry_in)
    return outcome.state


@shared_task(name="scoring.recover_runs")
def recover_runs() -> int:
    """Re-enqueue the pending work of running judge runs (after a worker was killed or restarted)."""
    from scoring import judging
    from scoring.models import JudgeRun

    sent = 0
    for run in JudgeRun.objects.filter(status=JudgeRun.Status.RUNNING):
        sent += judging.enqueue_pending(run)
    return sent


@worker_ready.connect
def _recover_on_start(sender=None, **kwargs) -> None:
    # A worker that starts picks up runs whose messages died with a killed worker; claims make it harmless
    # when the original messages are still queued.
    recover_runs.delay()
