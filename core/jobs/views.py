"""System status page: service checks and an end-to-end worker check run as a background job."""

from django.shortcuts import render
from django.views.decorators.http import require_POST

from core.jobs import services as jobs
from core.jobs.models import Job
from core.site.health import health
from projects.access import current, get_in_project_or_404, role_required
from projects.roles import ADMIN, ANALYST, COORDINATOR, is_admin


@role_required(ADMIN, COORDINATOR)
def system_status(request):
    """The services' state. The workers' from the last ping, however old (with its age): the page never waits for a
    ping (up to its timeout when no worker runs); one runs behind it and the page looks again."""
    admin = is_admin(request.user)  # the instance's details and the worker check: administrators only
    ok, checks = health(details=admin, wait=False)
    # instance-wide jobs: listed unscoped use
    recent = Job.unscoped.filter(kind=Job.Kind.WORKER_CHECK).select_related("requested_by")[:5] if admin else []
    return render(request, "scoring/system.html", {"ok": ok, "checks": checks, "recent": recent,
                                                   "may_check": admin, "details": admin})


@role_required(ADMIN, COORDINATOR)
def system_workers_status(request):
    """htmx poll of the system page while the workers are pinged behind it: a full-page refresh once a ping newer
    than the page's (``?after=`` its time, epoch seconds; 0 when the page had none) has answered, else the note."""
    from django.http import HttpResponse

    from core.site.health import answered_since

    try:
        after = float(request.GET.get("after", "0"))
    except ValueError:
        after = 0.0
    if answered_since(after):
        response = HttpResponse(status=204)
        response["HX-Refresh"] = "true"
        return response
    return render(request, "scoring/partials/workers_checking.html", {"after": after})


@require_POST
@role_required(ADMIN)
def worker_check_start(request):
    job = jobs.submit(Job.Kind.WORKER_CHECK, user=request.user, project=None)
    return render(request, "scoring/partials/job.html", {"job": job})


@role_required(ADMIN, COORDINATOR)
def job_status(request, pk: int):
    """A job of the request's project; an instance-wide one (the worker check) for administrators only."""
    from django.db.models import Q

    qs = Job.objects.all()
    if is_admin(request.user):  # instance-wide jobs (the worker check) have no project: listed unscoped use
        qs = Job.unscoped.filter(Q(project=current(request)) | Q(project__isnull=True))
    job = get_in_project_or_404(qs, request, pk=pk)
    return render(request, "scoring/partials/job.html", {"job": job})


@role_required(COORDINATOR, ANALYST)
def figures_status(request, pk: int):
    """htmx poll of a page showing stored figures (core/jobs/figures.py): the "updating" note (or, with
    ``?computing=1``, the progress) while the job runs, a full-page refresh once it has finished. With ``?file=``
    (a download waiting for the figures, scoring/reports/pending.py) the download's state instead: its progress,
    then, once the job has succeeded, that the file is ready (the page fetches it; reloading it would leave the
    page as it was, the answer being the file). A job of the request's project only."""
    from django.http import HttpResponse
    from django.urls import reverse

    job = get_in_project_or_404(Job.objects.exclude(kind=Job.Kind.WORKER_CHECK), request, pk=pk)
    poll_url = reverse("figures-status", args=[job.pk])
    file_url = _download_url(request)
    if file_url and job.status != Job.Status.FAILED:
        return render(request, "scoring/partials/download_state.html",
                      {"job": job, "poll_url": poll_url, "file_url": file_url, "ready": job.is_finished})
    if job.is_finished:
        response = HttpResponse(status=204)
        response["HX-Refresh"] = "true"
        return response
    template = "scoring/partials/figures_computing.html" if request.GET.get("computing") else \
        "scoring/partials/figures_updating.html"
    return render(request, template, {"job": job, "poll_url": poll_url})


def _download_url(request) -> str:
    """The ``file`` a download's page waits for: an address of this site only ("" otherwise)."""
    from django.utils.http import url_has_allowed_host_and_scheme

    url = request.GET.get("file", "")
    if url.startswith("/") and url_has_allowed_host_and_scheme(url, allowed_hosts={request.get_host()}):
        return url
    return ""
