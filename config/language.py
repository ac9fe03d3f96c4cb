"""The language of each page (see ``projects.language`` for the order of preference)."""

from __future__ import annotations

from django.middleware.locale import LocaleMiddleware
from django.utils import translation

from projects.language import account_language


class LanguageMiddleware(LocaleMiddleware):
    """Django's LocaleMiddleware (Accept-Language, the language cookie, LANGUAGE_CODE; ``Content-Language`` and
    ``Vary: Accept-Language`` on the answer), with the account's own choice first."""

    def process_request(self, request):
        language = account_language(request) or translation.get_language_from_request(request)
        translation.activate(language)
        request.LANGUAGE_CODE = translation.get_language()
