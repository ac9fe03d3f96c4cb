"""System status page: service checks and an end-to-end worker check run as a background job."""

from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_POST

from annotation.roles import ADMIN, COORDINATOR, role_required
from config.health import health
from scoring.jobs import services as jobs
from scoring.jobs.models import Job


@role_required(ADMIN, COORDINATOR)
def system_status(request):
    ok, checks = health()
    recent = Job.objects.filter(kind=Job.Kind.WORKER_CHECK).select_related("requested_by")[:5]
    return render(request, "scoring/system.html", {"ok": ok, "checks": checks, "recent": recent})


@require_POST
@role_required(ADMIN, COORDINATOR)
def worker_check_start(request):
    job = jobs.submit(Job.Kind.WORKER_CHECK, user=request.user)
    return render(request, "scoring/partials/job.html", {"job": job})


@role_required(ADMIN, COORDINATOR)
def job_status(request, pk: int):
    job = get_object_or_404(Job, pk=pk)
    return render(request, "scoring/partials/job.html", {"job": job})
