"""Read-only API of LLM jobs (judge runs, preference judging, dialogue generation): state, why a job paused, failed
or finished with problems, what it sent and spent against its limits, and its progress. One base for the three
kinds; each kind's module names its model and its progress function."""

from __future__ import annotations

from collections.abc import Callable

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers, viewsets

from annotation.api import IsReader

JOB_FIELDS = ["id", "status", "status_label", "error", "created_at", "started_at", "finished_at", "requests_sent",
              "request_limit", "spent_cost", "spent_tokens", "currency", "cost_cap", "token_cap"]


class EngineJobSerializer(serializers.ModelSerializer):
    """A job's state and spending; ``progress`` (counts, top causes, cost in words) on the detail only."""

    status_label = serializers.CharField(source="get_status_display", read_only=True)
    currency = serializers.SerializerMethodField()
    progress = serializers.SerializerMethodField()

    def get_currency(self, job) -> str:
        return str(job.snapshot.get("currency") or "USD")

    @extend_schema_field(serializers.DictField(allow_null=True, help_text="Counts, top causes and cost in words: on "
                                                                       "the detail only (null in lists)."))
    def get_progress(self, job) -> dict | None:
        progress: Callable | None = self.context.get("progress")
        if progress is None:
            return None
        data = dict(progress(job))
        data.pop("delivery", None)  # pings the broker: for the pages
        data["causes"] = [{"cause": cause, "count": n} for cause, n in data.get("causes", [])]
        return data


class EngineJobViewSet(viewsets.ReadOnlyModelViewSet):
    """Coordinators, analysts and admins read LLM jobs of the request's project (another project's job is a 404, as
    a missing one); the detail adds the progress."""

    permission_classes = [IsReader]
    progress: Callable | None = None

    def jobs(self):
        """The job model's rows (the scoped manager: the request's project), newest first."""
        raise NotImplementedError

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation: no request project
            return self.serializer_class.Meta.model.objects.none()
        return self.jobs()

    def get_serializer_context(self):
        context = super().get_serializer_context()
        if self.action == "retrieve" and self.progress is not None:
            context["progress"] = type(self).progress
        return context
