"""API tokens (DRF's ``authtoken``) that expire and are replaced when the password changes.

A token is valid for ``API_TOKEN_DAYS`` (30) days from when it was made; an expired token is refused with a message
saying how to get a new one (``/api/auth/token/`` or the *API token* page). Changing a password replaces the
user's token, so a token copied before the change stops working with it.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token
from rest_framework.exceptions import AuthenticationFailed


def lifetime() -> timedelta:
    return timedelta(days=settings.API_TOKEN_DAYS)


def expires_at(token: Token) -> datetime:
    return token.created + lifetime()


def is_expired(token: Token) -> bool:
    return timezone.now() >= expires_at(token)


@transaction.atomic
def replace(user) -> Token:
    """A new token for the user; the old one (if any) stops working at once."""
    Token.objects.filter(user=user).delete()
    return Token.objects.create(user=user)


def issue(user) -> Token:
    """The user's valid token, made (or replaced, when expired) as needed."""
    token = Token.objects.filter(user=user).first()
    if token is None or is_expired(token):
        return replace(user)
    return token


class ExpiringTokenAuthentication(TokenAuthentication):
    """``Authorization: Token <key>``, refused once the token is older than ``API_TOKEN_DAYS``."""

    def authenticate_credentials(self, key):
        user, token = super().authenticate_credentials(key)
        if is_expired(token):
            raise AuthenticationFailed(
                f"This token expired on {expires_at(token):%Y-%m-%d %H:%M} UTC (tokens last {settings.API_TOKEN_DAYS} "
                "days). Get a new one with POST /api/auth/token/ or on the API token page.")
        return user, token


def remember_password(sender, instance, update_fields=None, **kwargs) -> None:
    """pre_save of the user model: note whether the password hash is about to change."""
    if instance.pk is None or (update_fields is not None and "password" not in update_fields):
        return
    old = type(instance).objects.filter(pk=instance.pk).values_list("password", flat=True).first()
    instance._minicex_password_changed = old is not None and old != instance.password


def rotate_on_password_change(sender, instance, **kwargs) -> None:
    """post_save of the user model: a changed password replaces an existing token."""
    if getattr(instance, "_minicex_password_changed", False):
        instance._minicex_password_changed = False
        if Token.objects.filter(user=instance).exists():
            replace(instance)
