"""Login throttling with django-axes: three counters, each with its own limit.

Behind a reverse proxy every user can share one address, and a hospital ward shares one NAT address, so a lock per
address alone would lock everyone out after a few typos. Failed logins (the login page, the admin's and
``/api/auth/token/``) are counted in the cache (shared by every web process through ``CACHE_URL``) per:

* username and client address: ``LOGIN_MAX_FAILURES`` (5) pauses that username from that address;
* username, from any address: ``LOGIN_MAX_FAILURES_PER_USERNAME`` (20) pauses the username everywhere (a guesser
  spreading over many addresses);
* client address, any username: ``LOGIN_MAX_FAILURES_PER_ADDRESS`` (200) pauses the address (one machine trying
  many usernames), high enough for a ward of physicians behind one NAT.

Each pause lasts ``LOGIN_LOCKOUT_SECONDS`` after the last failure; a successful login clears its pair counter.
axes has one limit for all its lockout parameters; a handler of our own is how its maintainers suggest having
several (jazzband/django-axes#661).

The client address is ``REMOTE_ADDR`` unless ``TRUSTED_PROXY_COUNT`` says how many reverse proxies append to
``X-Forwarded-For``; then it is that many entries from the right (what the outermost trusted proxy saw), as
Werkzeug's ProxyFix does. django-ipware's ``proxy_count`` wants the header to hold exactly count + 1 entries and
falls back to REMOTE_ADDR (or nothing) otherwise, which would put every user behind a hospital's forwarding proxy
(which adds its own entry) on the reverse proxy's address again.
"""

from __future__ import annotations

import hashlib
from datetime import timedelta

from axes.backends import AxesStandaloneBackend
from axes.handlers.cache import AxesCacheHandler
from axes.helpers import get_client_username
from axes.signals import user_locked_out
from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
from django.core.cache import cache
from django.http import JsonResponse
from django.shortcuts import render

MESSAGE = ("Too many failed attempts. For your security, logging in is paused for {minutes} minutes; try again "
           "later or ask an administrator to reset your password.")


def client_address(request) -> str:
    """AXES_CLIENT_IP_CALLABLE: the address the outermost trusted proxy saw (see the module docstring)."""
    meta = getattr(request, "META", {})
    trusted = settings.TRUSTED_PROXY_COUNT
    if trusted > 0:
        hops = [hop.strip() for hop in meta.get("HTTP_X_FORWARDED_FOR", "").split(",") if hop.strip()]
        if len(hops) >= trusted:
            return hops[-trusted][:100]
    return meta.get("REMOTE_ADDR") or "unknown"


def cool_off(request=None) -> timedelta:
    """AXES_COOLOFF_TIME, read at call time so the setting can change in tests."""
    return timedelta(seconds=settings.LOGIN_LOCKOUT_SECONDS)


def message() -> str:
    return MESSAGE.format(minutes=max(1, settings.LOGIN_LOCKOUT_SECONDS // 60))


def _key(kind: str, *parts: str) -> str:
    digest = hashlib.sha256("\x1f".join(parts).encode()).hexdigest()
    return f"minicex:login-fail:{kind}:{digest}"


def _generation_key(name: str) -> str:
    return _key("generation", name)


def counters(username: str | None, address: str | None) -> list[tuple[str, int]]:
    """(cache key, limit) of every counter a login attempt touches; a limit of 0 turns that counter off. A
    username's pair counters carry its generation, which ``reset_attempts`` bumps to clear them all at once."""
    name = (username or "").strip().lower()
    address = address or "unknown"
    found = [(_key("address", address), settings.LOGIN_MAX_FAILURES_PER_ADDRESS)]
    if name:
        generation = str(cache.get(_generation_key(name), 0))
        found = [(_key("pair", name, address, generation), settings.LOGIN_MAX_FAILURES),
                 (_key("username", name), settings.LOGIN_MAX_FAILURES_PER_USERNAME), *found]
    return [(key, limit) for key, limit in found if limit > 0]


class LoginThrottle(AxesCacheHandler):
    """axes' cache handler with one limit per counter (see the module docstring)."""

    def _counters(self, request, credentials) -> list[tuple[str, int]]:
        return counters(get_client_username(request, credentials), getattr(request, "axes_ip_address", None))

    def get_failures(self, request, credentials=None) -> int:
        return max((self.cache.get(key, 0) for key, _ in self._counters(request, credentials)), default=0)

    def is_locked(self, request, credentials=None) -> bool:
        return any(self.cache.get(key, 0) >= limit for key, limit in self._counters(request, credentials))

    def user_login_failed(self, sender, credentials: dict, request=None, **kwargs):
        if request is None or self.is_whitelisted(request, credentials):
            return
        timeout = settings.LOGIN_LOCKOUT_SECONDS
        locked = False
        for key, limit in self._counters(request, credentials):
            if self.cache.add(key, 1, timeout=timeout):
                count = 1
            else:
                try:
                    count = self.cache.incr(key)
                except ValueError:  # expired between add and incr
                    self.cache.set(key, 1, timeout=timeout)
                    count = 1
                self.cache.touch(key, timeout)
            locked = locked or count >= limit
        if locked:
            request.axes_locked_out = True
            request.axes_credentials = credentials
            user_locked_out.send("axes", request=request, username=get_client_username(request, credentials),
                                 ip_address=request.axes_ip_address)

    def user_logged_in(self, sender, request, user, **kwargs):
        # Only the pair is cleared: the real user's login must not give a guesser spread over many addresses
        # (the username counter) or a machine trying many usernames (the address counter) fresh attempts.
        address = getattr(request, "axes_ip_address", None)
        self.cache.delete_many([key for key, _ in counters(user.get_username(), address) if ":pair:" in key])

    def reset_attempts(self, *, ip_address=None, username=None, ip_or_username=False) -> int:
        """``manage.py axes_reset_username NAME``: the username's counter and all its (username, address) counters;
        ``axes_reset_ip ADDRESS``: the address's counter."""
        count = 0
        if username:
            name = username.strip().lower()
            self.cache.delete(_key("username", name))
            if not self.cache.add(_generation_key(name), 1, timeout=None):
                self.cache.incr(_generation_key(name))
            count += 1
        if ip_address:
            self.cache.delete(_key("address", ip_address))
            count += 1
        return count


class LoginThrottleBackend(AxesStandaloneBackend):
    """First of AUTHENTICATION_BACKENDS: refuses a paused login before the password is checked. ``authenticate()``
    without a request (a script, the test client's ``login``) is no web login: nothing to count or refuse (axes'
    own backend raises instead)."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username, password, **kwargs)


def retry_after() -> str:
    """``Retry-After`` of a lockout: the whole pause (it runs from the last failed attempt, so no sooner)."""
    return str(max(1, settings.LOGIN_LOCKOUT_SECONDS))


def lockout_response(request, original_response=None, credentials=None):
    """AXES_LOCKOUT_CALLABLE: 429 with the reason and ``Retry-After``, as JSON for the API and as the login page
    otherwise."""
    if request.path.startswith("/api/"):
        response = JsonResponse({"detail": message()}, status=429)
    else:
        # An unbound form: validating one would try to authenticate (and count a failure) again.
        form = AuthenticationForm(request, initial={"username": get_client_username(request, credentials) or ""})
        response = render(request, "registration/login.html", {"form": form, "lockout_message": message(),
                                                               "next": request.POST.get("next", "")}, status=429)
    response["Retry-After"] = retry_after()
    return response
