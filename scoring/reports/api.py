"""Report endpoints: the same figures as the browser report, as JSON or CSV (``Accept: text/csv`` or
``?format=csv``), and the campaign's labels in the export's long format; downloads carry an ETag and answer a
conditional GET with 304."""

from __future__ import annotations

import json

from django.http import HttpResponse, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import permissions, serializers
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.models import Campaign
from core.jobs.models import Job
from projects.access import get_in_project_or_404, request_has_role
from projects.roles import ANALYST, COORDINATOR
from scoring.reports import wording
from scoring.reports.figures import current_report_job, report_options
from scoring.reports.pending import API_RESPONSES, RETRY_AFTER_HEADER, api_answer


def object_body(description: str, **properties) -> dict:
    """The schema of a JSON object answer whose figures vary with the data: the keys always present, described,
    and more keys allowed."""
    return {"type": "object", "description": description, "additionalProperties": True,
            "properties": properties}


class CSVRenderer(BaseRenderer):
    """CSV text made by the view (a string, or a stream the view answers itself)."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return data if isinstance(data, str | bytes) else json.dumps(data)


class CSVOrJSON:
    """A view answering JSON or CSV by content negotiation (``Accept``) or ``?format=``; its errors stay JSON."""

    renderer_classes = [JSONRenderer, CSVRenderer]

    def wants_csv(self, request) -> bool:
        return getattr(request, "accepted_renderer", None) is not None and request.accepted_renderer.format == "csv"

    def finalize_response(self, request, response, *args, **kwargs):
        if isinstance(response, Response) and response.status_code != 200:  # errors, and 202's progress
            request.accepted_renderer, request.accepted_media_type = JSONRenderer(), "application/json"
        return super().finalize_response(request, response, *args, **kwargs)


FORMAT = OpenApiParameter("format", str, enum=["json", "csv"],
                          description="json or csv (instead of Accept: application/json or text/csv).")


def not_modified(request, etag: str) -> HttpResponse | None:
    """304 when the client's If-None-Match holds ``etag`` (its copy is current), else None."""
    sent = request.META.get("HTTP_IF_NONE_MATCH", "")
    if sent.strip() == "*" or etag in [tag.strip().removeprefix("W/") for tag in sent.split(",")]:
        response = HttpResponse(status=304)
        response["ETag"] = etag
        return response
    return None


class CanReadReports(permissions.BasePermission):
    message = "Reports are for coordinators and analysts."

    def has_permission(self, request, view):
        return bool(request.user and request.user.is_authenticated and request_has_role(request, COORDINATOR, ANALYST))


CAMPAIGN_REPORT = object_body(
    "The campaign's agreement report (scoring.reports.compute): per item and dimension the agreement figures with "
    "confidence intervals, reliability, validity, the design and the methods.",
    items={"type": "array", "items": {"type": "object", "additionalProperties": True}},
    icc={"type": "object", "additionalProperties": True})


class CampaignReportView(CSVOrJSON, APIView):
    """The campaign's agreement report. 200 with the report when it is ready for the current labels;
    202 with progress and Retry-After while a worker computes it (ask again then); 409 when it failed. As CSV
    (``Accept: text/csv`` or ``?format=csv``): the figures as flat rows, as the report page's agreement CSV."""

    permission_classes = [CanReadReports]

    @extend_schema(
        parameters=[OpenApiParameter("plots", bool,
                                     description="include the SVG plots, {name: svg}, in English (default false)"),
                    OpenApiParameter("ci", str, enum=["percentile", "bca"],
                                     description="bootstrap interval method (default percentile)"),
                    OpenApiParameter("correlation", str, enum=["pearson", "tetrachoric"],
                                     description="correlations for reliability and validity (default pearson)"),
                    FORMAT, RETRY_AFTER_HEADER],
        responses={(200, "application/json"): OpenApiResponse(CAMPAIGN_REPORT, description="the report"),
                   (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="the figures as CSV rows"),
                   **API_RESPONSES,
                   304: OpenApiResponse(description="Not modified: your copy (If-None-Match) is current.")},
    )
    def get(self, request, pk: int):
        campaign = get_in_project_or_404(Campaign.objects.alive(), pk=pk)
        job = current_report_job(campaign, request.user, options=report_options(request.query_params))
        if job.status != Job.Status.SUCCEEDED:
            return api_answer(job)
        plots = request.query_params.get("plots") in ("1", "true")
        csv = self.wants_csv(request)
        etag = f'"report-{job.pk}-{"csv" if csv else "json"}{"-plots" if plots and not csv else ""}"'
        unchanged = not_modified(request, etag)
        if unchanged is not None:
            return unchanged
        if csv:
            from scoring.reports.agreement_csv import csv_text

            response = Response(csv_text(job.result))
        else:
            report = dict(job.result)
            if plots and "plots" in report:  # the English ones, {name: svg}, whatever the reader's language
                report["plots"] = wording.plots_in(report.get("plots"), wording.ENGLISH)
            else:
                report.pop("plots", None)
            response = Response(report)
        response["ETag"] = etag
        return response


class LabelRowSerializer(serializers.Serializer):
    """One label in the export's long format (DESIGN.md section 5)."""

    dialogue_id = serializers.CharField(help_text="The dialogue's external id in the corpus.")
    rater = serializers.CharField(help_text="Pseudonym, username (where names are allowed) or judge.")
    item = serializers.CharField(help_text="The item code.")
    value = serializers.FloatField(allow_null=True, help_text="Empty for free-text items (their answer is the "
                                                              "comment).")
    rater_kind = serializers.CharField(help_text="human or judge.")
    judge_run = serializers.CharField(allow_blank=True, help_text="The judge run (empty for physicians).")
    created = serializers.CharField(help_text="When the label was last saved (ISO 8601, UTC).")
    comment = serializers.CharField(allow_blank=True)
    status = serializers.CharField(allow_blank=True, help_text="Where the physician's dialogue stands (submitted: "
                                   "counted by the reports; in progress, skipped); empty for judges.")


SUBMITTED = OpenApiParameter(
    "submitted", OpenApiTypes.BOOL, required=False,
    description="true: the physicians' labels of submitted dialogues only (what the reports count); false: every "
                "saved answer with its status. Unset: submitted only for analysts, everything for coordinators.")


class CampaignLabelsView(CSVOrJSON, APIView):
    """Every label of the campaign, the physicians' and the judges' on its dialogues, in the export's long format
    (the same rows as the campaign page's downloads): JSON rows or CSV. Raters under pseudonyms unless names are
    allowed. The ETag changes with any label, submission or judge answer: send it as If-None-Match to get a 304
    while nothing changed."""

    permission_classes = [CanReadReports]

    @extend_schema(
        parameters=[FORMAT, SUBMITTED],
        responses={(200, "application/json"): LabelRowSerializer(many=True),
                   (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="the rows as CSV"),
                   304: OpenApiResponse(description="Not modified: your copy (If-None-Match) is current.")},
        summary="The campaign's labels as JSON rows or CSV (the export's long format)")
    def get(self, request, pk: int):
        from scoring.reports import exports
        from scoring.reports.figures import names_allowed

        campaign = get_in_project_or_404(Campaign.objects.alive(), pk=pk)
        names = names_allowed(request.user, campaign)
        fmt = "csv" if self.wants_csv(request) else "json"
        submitted_only = exports.submitted_only_default(request.query_params.get("submitted"),
                                                        coordinator=request_has_role(request, COORDINATOR))
        etag = (f'"labels-{exports.change_mark(campaign.corpus, campaign)}-{fmt}{"-names" if names else ""}'
                f'{"-submitted" if submitted_only else "-all"}"')
        unchanged = not_modified(request, etag)
        if unchanged is not None:
            return unchanged
        rows = exports.label_rows(campaign.corpus, campaign, names=names, submitted_only=submitted_only)
        if fmt == "csv":
            response = StreamingHttpResponse(exports.csv_stream(rows), content_type="text/csv; charset=utf-8")
        else:
            response = StreamingHttpResponse((chunk.encode() for chunk in exports.json_stream(rows)),
                                             content_type="application/json")
        response["ETag"] = etag
        response["Content-Disposition"] = f'inline; filename="labels-{campaign.pk}.{fmt}"'
        return response
