from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class StudiesConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "studies"
    verbose_name = _("Study archive")
    demo_commands = ["load_methods_demo"]  # after every other app's demo (INSTALLED_APPS order)

    def ready(self) -> None:
        from core.jobs import services as scoring_jobs
        from core.jobs.models import Job
        from studies import (
            figure_rows,
            services,  # noqa: F401 - registers the export job's handler (web processes and workers)
        )

        # the data digests the methods page shows, kept ahead by the workers that read the data anyway
        for kind in (Job.Kind.CAMPAIGN_REPORT, Job.Kind.JUDGE_REPORT):
            scoring_jobs.follow_up(kind)(figure_rows.keep_digests)
            scoring_jobs.follow_up(kind)(_refresh_methods)
        # the methods page's data, computed by a worker (studies.figures)
        scoring_jobs.LAZY_HANDLERS["study_methods"] = "studies.figures.study_methods"


def _refresh_methods(job) -> None:
    """After a report job: the methods page that reads the reports is computed again (if anyone opened it)."""
    from studies.figures import refresh_methods

    refresh_methods(job.project_id)
