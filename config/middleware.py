"""Response headers the security review asked for that Django has no setting for."""

from __future__ import annotations

from django.utils.cache import patch_cache_control


class PrivateResponsesMiddleware:
    """``Cache-Control: no-store`` on downloads (label exports, reports, Delphi workbooks: study data must not sit
    in a shared or browser cache), API answers and the pages of personal panel links. (The referrer policy stays
    ``same-origin`` everywhere, so a panel link's token never goes to another site; ``no-referrer`` would make the
    browser send ``Origin: null`` with the questionnaire's forms, which the CSRF check refuses.)"""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        path = request.path
        attachment = response.get("Content-Disposition", "").startswith("attachment")
        if attachment or path.startswith(("/api/", "/delphi/p/")):
            patch_cache_control(response, no_store=True, private=True)
        return response
