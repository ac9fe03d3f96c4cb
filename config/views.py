"""Project-level views: the health endpoint."""

from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from config.health import health


@never_cache
@require_GET
def healthz(request):
    """200 only when database, broker and workers are up. Anonymous callers (load balancers) get only ok / not ok;
    the details (database name, broker URL, worker names) are for staff."""
    ok, body = health()
    if not request.user.is_staff:
        body = {"status": body["status"]}
    return JsonResponse(body, status=200 if ok else 503)
