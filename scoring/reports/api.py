"""Report endpoints (JSON): the same figures as the browser report."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import permissions, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.models import Campaign
from projects.access import request_has_role
from projects.roles import ANALYST, COORDINATOR
from scoring.jobs.models import Job
from scoring.reports.service import current_report_job, report_options


class CanReadReports(permissions.BasePermission):
    message = "Reports are for coordinators and analysts."

    def has_permission(self, request, view):
        return bool(request.user and request.user.is_authenticated and request_has_role(request, COORDINATOR, ANALYST))


class ReportPendingSerializer(serializers.Serializer):
    status = serializers.CharField()
    progress = serializers.FloatField()
    message = serializers.CharField()
    job = serializers.IntegerField()


class CampaignReportView(APIView):
    """The campaign's agreement report. 200 with the report when it is ready for the current labels;
    202 with progress while a worker computes it (poll again)."""

    permission_classes = [CanReadReports]

    @extend_schema(
        parameters=[OpenApiParameter("plots", bool, description="include the SVG plots (default false)"),
                    OpenApiParameter("ci", str, enum=["percentile", "bca"],
                                     description="bootstrap interval method (default percentile)"),
                    OpenApiParameter("correlation", str, enum=["pearson", "tetrachoric"],
                                     description="correlations for reliability and validity (default pearson)")],
        responses={200: OpenApiResponse(description="the report (see scoring.reports.compute)"),
                   202: ReportPendingSerializer},
    )
    def get(self, request, pk: int):
        campaign = get_object_or_404(Campaign.objects.alive(), pk=pk)
        for key, allowed in (("ci", ("percentile", "bca")), ("correlation", ("pearson", "tetrachoric"))):
            value = request.query_params.get(key)
            if value is not None and value not in allowed:
                return Response({"detail": f"{key} must be {' or '.join(allowed)}, got {value!r}."},
                                status=status.HTTP_400_BAD_REQUEST)
        job = current_report_job(campaign, request.user, options=report_options(request.query_params))
        if job.status != Job.Status.SUCCEEDED:
            return Response({"status": job.status, "progress": job.progress, "message": job.message, "job": job.pk},
                            status=status.HTTP_202_ACCEPTED)
        report = dict(job.result)
        if request.query_params.get("plots") not in ("1", "true", "yes"):
            report.pop("plots", None)
        return Response(report)
