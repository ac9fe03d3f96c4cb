"""REST API of preference studies. Physicians reach only their own comparisons, blinded (A/B, no source, no
candidate id); coordinators and analysts read studies and progress; sources, per-source results and the source
columns of the export appear only after the study is unblinded. Refusals are 4xx with a "detail" message."""

from __future__ import annotations

from django.http import HttpResponse
from django.utils.translation import gettext_lazy as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import BasePermission
from rest_framework.response import Response

from core.jobs.models import Job
from projects.access import request_has_role, widen
from projects.roles import ANALYST, COORDINATOR
from scoring.llm.api import JOB_FIELDS, EngineJobSerializer, EngineJobViewSet
from scoring.preference import judging
from scoring.preference import services as preference
from scoring.preference.errors import SEALED, PreferenceError
from scoring.preference.models import PreferenceJudgeRun, PreferenceStudy, PreferenceTask
from scoring.reports.api import object_body
from scoring.reports.pending import API_RESPONSES, RETRY_AFTER_HEADER, api_answer


class _Refusals:
    """Turn the services' refusals into 4xx answers with their message."""

    def handle_exception(self, exc):
        if isinstance(exc, PreferenceError):
            body = {"detail": str(exc)}
            if isinstance(exc, preference.ImportRejected):
                body["errors"] = [{"line": e.line, "message": e.message} for e in exc.errors]
            return Response(body, status=exc.status)
        return super().handle_exception(exc)


class IsStudyReader(BasePermission):
    message = "Preference studies are for coordinators, analysts and admins."

    def has_permission(self, request, view) -> bool:
        user = request.user
        if not (user and user.is_authenticated and request_has_role(request, COORDINATOR, ANALYST)):
            return False
        if view.action in ("lock", "unblind"):
            return request_has_role(request, COORDINATOR)
        return True


class CriterionSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    code = serializers.CharField()
    name = serializers.CharField()
    description = serializers.CharField()


class StudySerializer(serializers.ModelSerializer):
    criteria = CriterionSerializer(many=True, read_only=True)
    progress = serializers.SerializerMethodField()
    sources = serializers.SerializerMethodField(help_text="Source names; null until the study is unblinded.")
    seed = serializers.SerializerMethodField(
        help_text="The seed of the side randomisation; null until the study is unblinded (it reveals the sides).")

    class Meta:
        model = PreferenceStudy
        fields = ["id", "name", "kind", "status", "overlap", "seed", "instructions", "criteria", "created_at",
                  "opened_at", "locked_at", "unblinded_at", "unblind_reason", "progress", "sources"]

    def get_progress(self, study) -> dict:
        p = preference.progress(study)
        return {k: p[k] for k in ("items", "sources", "pairs", "criteria", "tasks", "submitted", "percent")}

    def get_seed(self, study) -> int | None:
        return study.seed if study.is_unblinded else None

    def get_sources(self, study) -> list[str] | None:
        if not study.is_unblinded:
            return None
        return list(study.sources.order_by("position").values_list("label", flat=True))


class ReasonSerializer(serializers.Serializer):
    reason = serializers.CharField(required=False, allow_blank=True, default="")


class RequiredReasonSerializer(serializers.Serializer):
    reason = serializers.CharField(help_text="Why (it is recorded).",
                                   error_messages={"blank": _("Give the reason (it is recorded)."),
                                                   "required": _("Give the reason (it is recorded).")})


class PreferenceStudyViewSet(_Refusals, viewsets.ReadOnlyModelViewSet):
    """Preference studies of the request's project (coordinators and analysts). Lock and unblind are coordinator
    actions."""

    serializer_class = StudySerializer
    permission_classes = [IsStudyReader]

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation: no request project
            return PreferenceStudy.objects.none()
        return (PreferenceStudy.objects.alive()
                .prefetch_related("criteria").order_by("-created_at", "-id"))

    @extend_schema(request=ReasonSerializer, responses=StudySerializer)
    @action(detail=True, methods=["post"])
    def lock(self, request, pk=None, format=None):
        data = ReasonSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        study = preference.lock(self.get_object(), request.user, data.validated_data["reason"])
        return Response(StudySerializer(study).data)

    @extend_schema(request=RequiredReasonSerializer, responses=StudySerializer)
    @action(detail=True, methods=["post"])
    def unblind(self, request, pk=None, format=None):
        study = self.get_object()
        data = RequiredReasonSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        study = preference.unblind(study, request.user, data.validated_data["reason"])
        return Response(StudySerializer(study).data)

    @extend_schema(parameters=[OpenApiParameter("resamples", int, description="Bootstrap resamples (cut to 100 to "
                                                                          "5,000; default 1,000)."),
                               RETRY_AFTER_HEADER],
                   responses={200: OpenApiResponse(object_body(
                       "The study's results per source and criterion (scoring.preference.analysis.analysis)."),
                       description="the results"),
                              202: API_RESPONSES[202],
                              409: OpenApiResponse(description="the study is not unblinded, or its results could "
                                                               "not be computed (the detail says which)")})
    @action(detail=True, methods=["get"])
    def results(self, request, pk=None, format=None):
        """The results page's figures: computed by a worker when the votes change and stored; 202 with progress
        and Retry-After while a worker computes them for the current votes."""
        try:
            n = min(5000, max(100, int(request.query_params.get("resamples", 1000))))
        except ValueError:
            raise PreferenceError('"resamples" must be a whole number.') from None
        from scoring.preference.figures import results_figures

        study = self.get_object()
        if not study.is_unblinded:
            raise PreferenceError(SEALED, status=409)
        job = results_figures(study, request.user, n_resamples=n).current_job
        if job.status != Job.Status.SUCCEEDED:
            return api_answer(job)
        return Response(job.result)

    @extend_schema(responses={(200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="CSV long format")})
    @action(detail=True, methods=["get"])
    def export(self, request, pk=None, format=None):
        from scoring.preference.rows import export_csv

        return HttpResponse(export_csv(self.get_object()), content_type="text/csv; charset=utf-8")


class AnswerSerializer(serializers.Serializer):
    criterion = serializers.IntegerField()
    choice = serializers.ChoiceField(choices=["A", "tie", "B", ""])
    comment = serializers.CharField(required=False, allow_blank=True, allow_null=True, default=None)
    seq = serializers.IntegerField(required=False, default=0, min_value=0)


class TaskSerializer(serializers.Serializer):
    """A comparison as the rater sees it: sides A and B, never the source."""

    def to_representation(self, task):
        return preference.blinded_task(task)


class PreferenceTaskViewSet(_Refusals, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """The requesting rater's own comparisons (blinded), in every project where they are a physician (like the
    rating queue)."""

    serializer_class = TaskSerializer

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        # The rater's comparisons span every project where they rate: the view works in those and the request's.
        widen(request, preference.rater_projects(request.user))

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation: no user
            return PreferenceTask.objects.none()
        return (preference.my_tasks(self.request.user).exclude(status=PreferenceTask.Status.WITHDRAWN)
                .select_related("study", "pair__item__dialogue", "pair__first", "pair__second")
                .order_by("study_id", "position", "id"))

    @extend_schema(request=AnswerSerializer, responses=TaskSerializer)
    @action(detail=True, methods=["post"])
    def answer(self, request, pk=None, format=None):
        task = self.get_object()
        data = AnswerSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        preference.save_answer(task, v["criterion"], v["choice"], request.user, comment=v["comment"],
                               client_seq=v["seq"])
        return Response(preference.blinded_task(self.get_object()))

    @extend_schema(request=None, responses=TaskSerializer)
    @action(detail=True, methods=["post"])
    def submit(self, request, pk=None, format=None):
        preference.submit_task(self.get_object(), request.user)
        return Response(preference.blinded_task(self.get_object()))

    @extend_schema(request=RequiredReasonSerializer, responses=TaskSerializer)
    @action(detail=True, methods=["post"])
    def skip(self, request, pk=None, format=None):
        task = self.get_object()
        data = RequiredReasonSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        preference.skip_task(task, request.user, data.validated_data["reason"])
        return Response(preference.blinded_task(self.get_object()))


class PreferenceJudgeRunSerializer(EngineJobSerializer):
    config = serializers.CharField(source="config.name", read_only=True, allow_null=True)

    class Meta:
        model = PreferenceJudgeRun
        fields = [*JOB_FIELDS, "study", "config", "progress"]


class PreferenceJudgeRunViewSet(EngineJobViewSet):
    """LLM judges answering preference studies (each pair in both orders): state, reason, requests and cost; the
    detail adds the progress."""

    serializer_class = PreferenceJudgeRunSerializer

    def jobs(self):
        return PreferenceJudgeRun.objects.select_related("config").order_by("-created_at", "-id")

    progress = staticmethod(judging.progress)
