"""Celery tasks of dialogue generation. Thin: each calls a plain function of ``scoring.generation.services``."""

from celery import shared_task
from celery.signals import worker_ready

from scoring.generation import services
from scoring.generation.models import GenerationJob


@shared_task(bind=True, name="scoring.generation_step", max_retries=None)
def generation_step(self, generated_id: int) -> str:
    """One step of one generated dialogue (the next turn or the moderator's verdict), then the next step.
    Retries are scheduled with a countdown, never slept."""
    outcome = services.process_step(generated_id)
    if outcome.retry_in is not None:
        raise self.retry(countdown=outcome.retry_in)
    if outcome.next:
        generation_step.delay(generated_id)
    return outcome.state


@shared_task(name="scoring.recover_generation")
def recover_generation() -> int:
    """Re-enqueue the open dialogues of running generation jobs (after a worker was killed or restarted)."""
    return sum(services.enqueue_open(job) for job in GenerationJob.objects.filter(
        status=GenerationJob.Status.RUNNING))


@worker_ready.connect
def _recover_on_start(sender=None, **kwargs) -> None:
    recover_generation.delay()
