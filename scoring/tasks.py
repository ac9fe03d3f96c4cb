"""Celery tasks. Thin: each loads its row and calls a plain function."""

from celery import shared_task
from celery.signals import worker_init, worker_ready

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
    recover_preference_runs.delay()


@shared_task(bind=True, name="scoring.preference_judge_unit", max_retries=None)
def preference_judge_unit(self, verdict_id: int) -> str:
    """One preference comparison asked of an LLM judge in one order; retries are scheduled, never slept."""
    from scoring import preference_judging

    outcome = preference_judging.process_verdict(verdict_id)
    if outcome.retry_in is not None:
        raise self.retry(countdown=outcome.retry_in)
    return outcome.state


@shared_task(name="scoring.recover_preference_runs")
def recover_preference_runs() -> int:
    """Re-enqueue pending comparisons of running preference judge runs (after a worker restart)."""
    from scoring import preference_judging
    from scoring.preference_models import PreferenceJudgeRun

    return sum(preference_judging.enqueue_pending(run)
               for run in PreferenceJudgeRun.objects.filter(status=PreferenceJudgeRun.Status.RUNNING))


@shared_task(bind=True, name="scoring.generation_step", max_retries=None)
def generation_step(self, generated_id: int) -> str:
    """One step of one generated dialogue (the next turn or the moderator's verdict), then the next step.
    Retries are scheduled with a countdown, never slept."""
    from scoring import generation

    outcome = generation.process_step(generated_id)
    if outcome.retry_in is not None:
        raise self.retry(countdown=outcome.retry_in)
    if outcome.next:
        generation_step.delay(generated_id)
    return outcome.state


@shared_task(name="scoring.recover_generation")
def recover_generation() -> int:
    """Re-enqueue the open dialogues of running generation jobs (after a worker was killed or restarted)."""
    from scoring import generation
    from scoring.models import GenerationJob

    return sum(generation.enqueue_open(job) for job in GenerationJob.objects.filter(
        status=GenerationJob.Status.RUNNING))


@worker_ready.connect
def _recover_generation_on_start(sender=None, **kwargs) -> None:
    recover_generation.delay()


@worker_init.connect
def _warm_up(sender=None, **kwargs) -> None:
    """Import the LLM task modules (and the openai client, about half a second) before the worker consumes, so
    the first tasks of a run call the endpoint at once instead of every worker importing them then."""
    import openai  # noqa: F401

    from scoring import generation, judging, preference_judging  # noqa: F401
