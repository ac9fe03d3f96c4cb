"""System status page: service checks and an end-to-end worker check run as a background job."""

from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_POST

from annotation import projects
from annotation.roles import ADMIN, COORDINATOR, is_admin, role_required
from config.health import health
from scoring.jobs import services as jobs
from scoring.jobs.models import Job


@role_required(ADMIN, COORDINATOR)
def system_status(request):
    ok, checks = health()
    admin = is_admin(request.user)  # the worker check is instance-wide: administrators only
    recent = Job.objects.filter(kind=Job.Kind.WORKER_CHECK).select_related("requested_by")[:5] if admin else []
    return render(request, "scoring/system.html", {"ok": ok, "checks": checks, "recent": recent,
                                                   "may_check": admin})


@require_POST
@role_required(ADMIN)
def worker_check_start(request):
    job = jobs.submit(Job.Kind.WORKER_CHECK, user=request.user, project=None)
    return render(request, "scoring/partials/job.html", {"job": job})


@role_required(ADMIN, COORDINATOR)
def job_status(request, pk: int):
    """A job of the request's project; an instance-wide one (the worker check) for administrators only."""
    from django.db.models import Q

    visible = Q(project=projects.current(request))
    if is_admin(request.user):
        visible |= Q(project__isnull=True)
    job = get_object_or_404(Job.objects.filter(visible), pk=pk)
    return render(request, "scoring/partials/job.html", {"job": job})
