"""The one answer of a download or an API call whose figures a worker has not stored yet for the current inputs
(stored figures, :mod:`core.jobs.figures`): nothing is computed in the request. The job that computes them is
queued by whoever looks; the API answers 202 with the job's progress and ``Retry-After``, a download a small page
saying the file is being prepared, which follows the job and fetches the file once it is ready. A job that
failed on the current inputs is a 409 saying why, in both."""

from __future__ import annotations

import math
from datetime import datetime

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import serializers, status
from rest_framework.response import Response

from core.jobs.models import Job

#: Ask again after at least this long (a queued job's debounced start can make it longer).
RETRY_AFTER_SECONDS = 5
RETRY_AFTER_MAX = 60


def retry_after(job: Job) -> int:
    """Seconds until asking again is worth it: the job's debounced start when it is later than the default."""
    seconds = RETRY_AFTER_SECONDS
    not_before = job.params.get("not_before") if job.status == Job.Status.QUEUED else None
    if not_before:
        wait = (datetime.fromisoformat(not_before) - timezone.now()).total_seconds()
        seconds = max(seconds, math.ceil(wait) + 1)
    return min(seconds, RETRY_AFTER_MAX)


class PendingSerializer(serializers.Serializer):
    status = serializers.CharField(help_text="queued or running.")
    progress = serializers.FloatField(help_text="From 0 to 1.")
    message = serializers.CharField(help_text="The worker's progress note (may be empty).")
    job = serializers.IntegerField(help_text="The background job computing the figures.")
    detail = serializers.CharField(help_text="What to do: ask again after Retry-After seconds.")


#: Documents what :func:`api_answer` answers when the figures are not ready (``extend_schema(responses=...)``).
API_RESPONSES = {
    202: OpenApiResponse(PendingSerializer, description="A worker is computing the figures for the current data "
                                                        "(nothing is computed in the request): ask again after "
                                                        "Retry-After seconds."),
    409: OpenApiResponse(description="The figures could not be computed for the current data (the detail says "
                                     "why)."),
}
#: The ``Retry-After`` header of the 202 (``extend_schema(parameters=[...])``).
RETRY_AFTER_HEADER = OpenApiParameter("Retry-After", int, OpenApiParameter.HEADER, response=[202],
                                      description="Seconds after which the figures may be ready.")


def api_answer(job: Job) -> Response:
    """The API's answer while ``job`` (not succeeded) stands for the current inputs: 202 with its progress and
    ``Retry-After``, or 409 with its error when it failed."""
    if job.status == Job.Status.FAILED:
        return Response({"detail": gettext("The figures could not be computed: %(error)s") % {"error": job.error},
                         "job": job.pk}, status=status.HTTP_409_CONFLICT)
    seconds = retry_after(job)
    return Response({"status": job.status, "progress": job.progress, "message": job.message, "job": job.pk,
                     "detail": gettext("A worker is computing the figures; ask again in %(seconds)s seconds.")
                     % {"seconds": seconds}},
                    status=status.HTTP_202_ACCEPTED, headers={"Retry-After": str(seconds)})


def download_answer(request: HttpRequest, job: Job, *, page_url: str) -> HttpResponse:
    """A download's answer while ``job`` (not succeeded) stands for the current inputs: a page (202,
    ``Retry-After``) saying the file is being prepared, which follows the job and, once it has succeeded, says the
    file is ready and fetches it (:func:`core.jobs.views.figures_status` with the file's address); or, when it
    failed, a page (409) with its error and a link to ``page_url``, where it can be tried again."""
    failed = job.status == Job.Status.FAILED
    seconds = retry_after(job)
    response = render(request, "scoring/download_pending.html",
                      {"job": job, "failed": failed, "page_url": page_url, "retry_after": seconds,
                       "poll_url": reverse("figures-status", args=[job.pk]), "file_url": request.get_full_path()},
                      status=409 if failed else 202)
    if not failed:
        response["Retry-After"] = str(seconds)
    return response
