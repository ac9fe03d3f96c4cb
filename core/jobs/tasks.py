"""Celery task of the background jobs. Thin: it loads the row and calls the runner."""

from celery import shared_task

from core.jobs import services


@shared_task(name="scoring.run_job")  # its name from before it moved to core: messages already queued still run
def run_job(job_id: int) -> str:
    job = services.execute(job_id)
    return job.status
