"""Which language a person's pages are in: the language set in their account menu (stored per user in
:class:`projects.models.AccountSettings`), else the one their browser asks for (``Accept-Language``, or the cookie
the login page's switch sets), else the instance's ``LANGUAGE_CODE``. ``config.language.LanguageMiddleware``
applies it to every request; a Delphi panel link applies the panellist's own (``delphi.views``).

The preference is read from the database once per session and kept in the session (a login starts a new one)."""

from __future__ import annotations

from django.conf import settings
from django.utils import timezone, translation

from projects.models import AccountSettings

SESSION_KEY = "_account_language"


def supported(code: str | None) -> str | None:
    """``code`` as one of settings.LANGUAGES (``zh-CN`` -> ``zh-hans``), or None if the instance has no such
    language."""
    if not code:
        return None
    try:
        return translation.get_supported_language_variant(code.strip().lower())
    except LookupError:
        return None


def language_choices() -> list[tuple[str, str]]:
    """The instance's languages, each named in its own language (as a menu of languages shows them)."""
    return list(settings.LANGUAGES)


def account_language(request) -> str | None:
    """The language the signed-in user chose in their account menu, or None (not signed in, or never chose)."""
    user = getattr(request, "user", None)
    if not getattr(user, "is_authenticated", False):
        return None
    session = getattr(request, "session", None)
    if session is not None and SESSION_KEY in session:
        return supported(session[SESSION_KEY])
    chosen = AccountSettings.objects.filter(user=user).values_list("language", flat=True).first() or ""
    if session is not None:
        session[SESSION_KEY] = chosen
    return supported(chosen)


def choose(request, code: str) -> str | None:
    """Store ``code`` as the signed-in user's language ('' = the browser's language again) and apply it to this
    session. Returns the language now in force for the account, or None for the browser's."""
    language = supported(code) if code else None
    user = request.user
    if getattr(user, "is_authenticated", False):
        AccountSettings.objects.update_or_create(user=user, defaults={"language": language or "",
                                                                      "updated_at": timezone.now()})
        request.session[SESSION_KEY] = language or ""
    return language
