"""Judge report endpoint (JSON): the same figures and verdicts as the judge-vs-physicians page."""

from __future__ import annotations

import hashlib
import json

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.models import Campaign
from core.jobs.models import Job
from projects.access import get_in_project_or_404
from scoring.judges import runs as judging
from scoring.judges.forms import VerdictSettingsForm
from scoring.judges.models import JudgeRun, Jury
from scoring.judges.report_csv import csv_rows, csv_text, score_rows
from scoring.llm.api import JOB_FIELDS, EngineJobSerializer, EngineJobViewSet
from scoring.reports.api import FORMAT, CanReadReports, CSVOrJSON, not_modified, object_body
from scoring.reports.pending import API_RESPONSES, RETRY_AFTER_HEADER, api_answer

RUN_INFO = {"type": "object", "additionalProperties": True,
            "description": "The run (or jury): id, name, model, mode and provenance."}
JUDGE_REPORT = object_body(
    "Judge vs physicians (scoring.judges.report.judge_vs_physicians): per item the figures, the verdict with its "
    "reasons, the acceptance rule, the model ranking and the methods.",
    kind={"type": "string", "enum": ["judge_vs_physicians"]}, run=RUN_INFO,
    campaign={"type": "object", "additionalProperties": True, "properties": {"id": {"type": "integer"},
                                                                          "name": {"type": "string"}}})
JUDGE_SCORES = object_body(
    "The run's own scores (scoring.judges.report.judge_scores): per model and criterion the mean with a bootstrap "
    "CI, and the Table 2 of repeated answers.",
    kind={"type": "string", "enum": ["judge_scores"]}, run=RUN_INFO)


class JudgeRunSerializer(EngineJobSerializer):
    config = serializers.CharField(source="config.name", read_only=True, allow_null=True,
                                   help_text="The judge configuration's name (null for an imported run).")
    model = serializers.SerializerMethodField()
    mode = serializers.SerializerMethodField()

    class Meta:
        model = JudgeRun
        fields = [*JOB_FIELDS, "config", "model", "mode", "corpus", "batch", "item_codes", "progress"]

    def get_model(self, run) -> str:
        return run.snapshot.get("model", "")

    def get_mode(self, run) -> str:
        return run.snapshot.get("mode", "")


class JudgeRunViewSet(EngineJobViewSet):
    """LLM judge runs: status (queued, running, paused, cancelled, succeeded = Finished, problems = Finished with
    problems, failed), the reason in ``error``, requests sent against the run's limit, cost in the judge's currency
    and, on the detail, the progress with the top causes of failed or unscored answers."""

    serializer_class = JudgeRunSerializer

    def jobs(self):
        return JudgeRun.objects.select_related("config").order_by("-created_at", "-id")

    progress = staticmethod(judging.progress)


def _runs(request):
    """The request's project's runs: another project's run is a 404, as a missing one."""
    return JudgeRun.objects.select_related("config", "corpus")


NOT_MODIFIED = OpenApiResponse(description="Not modified: your copy (If-None-Match) is current.")
CSV_TEXT = OpenApiResponse(OpenApiTypes.STR, description="the figures as CSV rows (as manage.py judge_report)")


class JudgeReportView(CSVOrJSON, APIView):
    """Judge vs physicians for a finished run and a campaign on the same corpus: per item the Table 5 figures, the
    verdict (judge can replace physicians / keep physicians / item unreliable / not enough data) with its reasons,
    the paper's rule for comparison, the model ranking and the methods. Settings as query parameters. Computed by a
    worker and cached until the labels, the judge's answers or the settings change, as the campaign report: 200
    with the report when it is ready, 202 with the progress while it is computed (ask again)."""

    permission_classes = [CanReadReports]

    @staticmethod
    def sources(request):
        return _runs(request)

    @extend_schema(
        parameters=[OpenApiParameter("campaign", int, required=True, description="campaign on the run's corpus"),
                    OpenApiParameter("floor", float, description="reliability floor (default 0.40)"),
                    OpenApiParameter("min_dialogues", int, description="minimum dialogues (default 30)"),
                    OpenApiParameter("margin", float, description="non-inferiority margin (default 0.10)"),
                    OpenApiParameter("ci", str, enum=["percentile", "bca"], description="interval method"), FORMAT,
                    RETRY_AFTER_HEADER],
        responses={(200, "application/json"): OpenApiResponse(JUDGE_REPORT, description="the report"),
                   (200, "text/csv"): CSV_TEXT, 304: NOT_MODIFIED, **API_RESPONSES,
                   400: OpenApiResponse(description="invalid settings, or run and campaign not comparable")},
    )
    def get(self, request, pk: int):
        from scoring.judges.figures import current_report_job
        from scoring.judges.report import check_comparable

        run = get_in_project_or_404(self.sources(request), pk=pk)
        campaign_id = request.query_params.get("campaign")
        if not campaign_id:  # a malformed one was refused by the request checks (config.api_checks)
            return Response({"detail": "Give the campaign to compare with: ?campaign=<id>."},
                            status=status.HTTP_400_BAD_REQUEST)
        campaign = get_in_project_or_404(Campaign.objects.alive(), pk=int(campaign_id))
        form = VerdictSettingsForm.from_query(request.query_params)
        if not form.is_valid():
            errors = "; ".join(f"{name}: {' '.join(errs)}" for name, errs in form.errors.items())
            return Response({"detail": f"Invalid settings: {errors}", "errors": form.errors},
                            status=status.HTTP_400_BAD_REQUEST)
        try:
            check_comparable(run, campaign)
        except ValueError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        job = current_report_job(run, campaign, request.user, form.settings())
        if job.status != Job.Status.SUCCEEDED:
            return api_answer(job)
        csv = self.wants_csv(request)
        etag = f'"judge-report-{job.pk}-{"csv" if csv else "json"}"'
        response = not_modified(request, etag)
        if response is None:
            response = Response(csv_text(csv_rows(job.result))) if csv else Response(job.result)
        response["ETag"] = etag
        return response


class JudgeScoresView(CSVOrJSON, APIView):
    """A judge run's own scores, without physicians (for any finished run, imported or run by the app): per model and
    criterion the mean score with a bootstrap CI, and for repeated answers the mean over cases with the SD and CI
    over replicates (Cardenal-Antolin et al., HIVMedQA, Table 2); an imported run's provenance (file name and
    SHA-256, model, import date, who) under ``run.provenance``."""

    permission_classes = [CanReadReports]

    @staticmethod
    def sources(request):
        return _runs(request)

    @extend_schema(parameters=[FORMAT],
                   responses={(200, "application/json"): OpenApiResponse(JUDGE_SCORES, description="the scores"),
                              (200, "text/csv"): CSV_TEXT, 304: NOT_MODIFIED,
                              404: OpenApiResponse(description="no such run")})
    def get(self, request, pk: int):
        from scoring.judges.figures import stored_judge_scores

        run = get_in_project_or_404(self.sources(request), pk=pk)
        scores = stored_judge_scores(run)
        csv = self.wants_csv(request)
        digest = hashlib.sha256(json.dumps(scores, sort_keys=True, default=str).encode()).hexdigest()[:24]
        etag = f'"scores-{digest}-{"csv" if csv else "json"}"'
        response = not_modified(request, etag)
        if response is None:
            response = Response(csv_text(score_rows(scores))) if csv else Response(scores)
        response["ETag"] = etag
        return response


def _juries(request):
    """The request's project's live juries: another project's jury is a 404, as a missing one."""
    return Jury.objects.alive().select_related("corpus")


class JuryReportView(JudgeReportView):
    """Jury vs physicians for a jury (two or more runs combined by a declared rule) and a campaign on the same
    corpus: the same report as a run's, with the jury's members and rule under ``run.provenance``."""

    @staticmethod
    def sources(request):
        return _juries(request)


class JuryScoresView(JudgeScoresView):
    """A jury's own combined scores, without physicians (as a run's), its members and rule under
    ``run.provenance``."""

    @staticmethod
    def sources(request):
        return _juries(request)
