"""Project-level views: the health endpoint."""

from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from config.health import health


@never_cache
@require_GET
def healthz(request):
    """JSON status of database, broker and workers; 200 only when all three are up."""
    ok, body = health()
    return JsonResponse(body, status=200 if ok else 503)
