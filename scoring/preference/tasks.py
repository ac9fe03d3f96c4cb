"""Celery tasks of preference judging. Thin: each calls a plain function of ``scoring.preference.judging``."""

from celery import shared_task
from celery.signals import worker_ready

from scoring.preference import judging
from scoring.preference.models import PreferenceJudgeRun


@shared_task(bind=True, name="scoring.preference_judge_unit", max_retries=None)
def preference_judge_unit(self, verdict_id: int) -> str:
    """One preference comparison asked of an LLM judge in one order; retries are scheduled, never slept."""
    outcome = judging.process_verdict(verdict_id)
    if outcome.retry_in is not None:
        raise self.retry(countdown=outcome.retry_in)
    return outcome.state


@shared_task(name="scoring.recover_preference_runs")
def recover_preference_runs() -> int:
    """Re-enqueue pending comparisons of running preference judge runs (after a worker restart)."""
    return sum(judging.enqueue_pending(run)
               for run in PreferenceJudgeRun.objects.filter(status=PreferenceJudgeRun.Status.RUNNING))


@worker_ready.connect
def _recover_on_start(sender=None, **kwargs) -> None:
    recover_preference_runs.delay()
