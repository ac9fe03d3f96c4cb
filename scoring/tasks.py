"""Celery tasks. Thin: each loads its row and calls a plain function."""

from celery import shared_task

from scoring import jobs


@shared_task(name="scoring.run_job")
def run_job(job_id: int) -> str:
    job = jobs.execute(job_id)
    return job.status
