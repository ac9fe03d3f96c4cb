"""Background jobs (reports, the worker check): state and result live in the database, not in Celery."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from projects.models import ProjectScoped


class Job(ProjectScoped):
    """A unit of background work whose state and result live in the database, not in Celery.

    The web process creates the row and enqueues the task with its id; the worker moves it through
    the states and stores the result, so the browser can poll it and nothing depends on a result backend.
    """

    class Kind(models.TextChoices):
        WORKER_CHECK = "worker_check", _("End-to-end worker check")
        CAMPAIGN_REPORT = "campaign_report", _("Campaign agreement report")
        JUDGE_REPORT = "judge_report", _("Judge vs physicians report")
        STUDY_EXPORT = "study_export", _("Study archive export")
        PREFERENCE_RESULTS = "preference_results", _("Preference study results")
        DELPHI_ROUND = "delphi_round", _("Delphi round statistics")
        JUDGE_COMPARE = "judge_compare", _("Two judge runs compared against physicians")
        JUDGE_SELECTION = "judge_selection", _("Judge selection of a campaign")
        JUDGE_PLANNER = "judge_planner", _("Sample-size plan from a pilot")
        STUDY_METHODS = "study_methods", _("Methods page of a study")
        PREFERENCE_BLINDED = "preference_blinded", _("Preference study figures before unblinding")

    class Status(models.TextChoices):
        QUEUED = "queued", _("Queued")
        RUNNING = "running", _("Running")
        SUCCEEDED = "succeeded", _("Succeeded")
        FAILED = "failed", _("Failed")

    kind = models.CharField(max_length=40, choices=Kind.choices, verbose_name=_("kind"))
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.QUEUED, db_index=True,
                              verbose_name=_("status"))
    params = models.JSONField(default=dict, blank=True, verbose_name=_("parameters"))
    result = models.JSONField(default=dict, blank=True, verbose_name=_("result"))
    error = models.TextField(blank=True, verbose_name=_("error"))
    progress = models.FloatField(default=0.0, verbose_name=_("progress"))
    message = models.CharField(max_length=200, blank=True, help_text=_("What the job is doing now."),
                               verbose_name=_("message"))
    project = models.ForeignKey("projects.Project", null=True, blank=True, on_delete=models.PROTECT,
                                related_name="+", help_text=_("Empty for instance-wide jobs (the worker check)."),
                                verbose_name=_("project"))
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+",
        verbose_name=_("requested by")
    )
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))
    started_at = models.DateTimeField(null=True, blank=True, verbose_name=_("started at"))
    finished_at = models.DateTimeField(null=True, blank=True, verbose_name=_("finished at"))
    attempts = models.PositiveIntegerField(default=0, verbose_name=_("attempts"))
    enqueued_at = models.DateTimeField(null=True, blank=True, help_text=_("Last message sent to the workers."),
                                       verbose_name=_("enqueued at"))
    heartbeat_at = models.DateTimeField(null=True, blank=True,
                                        help_text=_("Last sign of life of the worker running it."),
                                        verbose_name=_("heartbeat at"))

    class Meta:
        verbose_name = _("job")
        verbose_name_plural = _("jobs")
        db_table = "scoring_job"  # the model moved from the scoring app; its table did not
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} #{self.pk} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in {self.Status.SUCCEEDED, self.Status.FAILED}

    @property
    def result_rows(self) -> list[tuple[str, object]]:
        """The result as (key, value) pairs; templates cannot call ``.items`` on a dict with an "items" key."""
        return list(self.result.items()) if isinstance(self.result, dict) else []

    @property
    def duration_seconds(self) -> float | None:
        if self.started_at and self.finished_at:
            return (self.finished_at - self.started_at).total_seconds()
        return None
