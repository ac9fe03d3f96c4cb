"""Project-level views: the health endpoint."""

from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from core.site.health import health, log_answer


@never_cache
@require_GET
def healthz(request):
    """200 only when database, broker and workers are up. Anonymous callers (load balancers) get only ok / not ok;
    the details (database name, broker URL, worker names) are for staff. A 503 is logged as one line (a warning
    when the reason changes), never as a server error: it is the answer asked for, e.g. before the workers start."""
    staff = request.user.is_staff
    ok, body = health(details=staff)
    log_answer(ok, body)
    response = JsonResponse(body if staff else {"status": body["status"]}, status=200 if ok else 503)
    response._has_been_logged = True  # Django would log a 5xx as an error
    return response
