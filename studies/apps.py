from django.apps import AppConfig


class StudiesConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "studies"
    verbose_name = "Study archive"

    def ready(self) -> None:
        from scoring.jobs import services as scoring_jobs
        from scoring.jobs.models import Job
        from studies import (
            figures,
            jobs,  # noqa: F401 - registers the export job's handler (web processes and workers)
        )

        # the data digests the methods page shows, kept ahead by the workers that read the data anyway
        for kind in (Job.Kind.CAMPAIGN_REPORT, Job.Kind.JUDGE_REPORT):
            scoring_jobs.follow_up(kind)(figures.keep_digests)
