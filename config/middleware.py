"""Response headers the security review asked for that Django has no setting for."""

from __future__ import annotations

from django.utils.cache import patch_cache_control


class PrivateResponsesMiddleware:
    """``Cache-Control: no-store`` on downloads (label exports, reports, Delphi workbooks: study data must not sit
    in a shared or browser cache) and API answers; personal panel links also get ``Referrer-Policy: no-referrer``
    so their token is not sent on to the next page's request."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        path = request.path
        if response.get("Content-Disposition", "").startswith("attachment") or path.startswith("/api/"):
            patch_cache_control(response, no_store=True, private=True)
        if path.startswith("/delphi/p/"):
            patch_cache_control(response, no_store=True, private=True)
            response["Referrer-Policy"] = "no-referrer"
        return response
