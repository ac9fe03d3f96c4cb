"""Accounts a project's coordinator makes and finds without an administrator.

* :func:`create_account`: a new person's account (a physician, usually) in the coordinator's project, with a
  one-time set-password link (Django's password-reset token: it stops working once the password is set, and after
  ``PASSWORD_RESET_TIMEOUT``). The username is made from the person's name with a random tail, so creating an account
  never tells a coordinator which usernames exist elsewhere on the instance.
* :func:`visible_account`: the active account of a username the coordinator already works with (a member of one of
  the projects they manage); anyone else is "not found", whether or not they exist, for the same reason.
"""

from __future__ import annotations

import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.tokens import default_token_generator
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode
from django.utils.text import slugify

from projects.models import AuditEvent, Membership, Project
from projects.roles import COORDINATOR, PROJECT_ROLES, is_admin

TAIL_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"  # no 0/o, 1/l/i: read aloud or copied from paper


def set_password_path(user) -> str:
    """The path of ``user``'s one-time set-password page (valid until the password changes or the token expires)."""
    return reverse("account-set-password", args=[urlsafe_base64_encode(force_bytes(user.pk)),
                                                 default_token_generator.make_token(user)])


def mail_configured() -> bool:
    """Whether e-mail leaves this machine (an SMTP or other real backend), not printed to the console."""
    backend = settings.EMAIL_BACKEND
    return not backend.endswith(("ConsoleBackend", "console.EmailBackend", "locmem.EmailBackend",
                                 "dummy.EmailBackend", "filebased.EmailBackend"))


def _username(first_name: str, last_name: str) -> str:
    base = slugify(f"{first_name} {last_name}")[:24].strip("-") or "user"
    return f"{base}-{''.join(secrets.choice(TAIL_ALPHABET) for _ in range(4))}"


def create_account(project: Project, *, first_name: str, last_name: str, email: str = "", role: str, by):
    """A new active account with ``role`` in ``project`` and no usable password yet; returns (user, set-password
    path). Audited (who created whom, in which role; never the link)."""
    from projects.services import ProjectError, add_member

    if role not in PROJECT_ROLES:
        raise ProjectError(f"Unknown project role {role!r}; roles: {', '.join(PROJECT_ROLES)}.")
    first_name, last_name, email = first_name.strip(), last_name.strip(), email.strip()
    if not (first_name or last_name):
        raise ProjectError("Give the person's name.")
    User = get_user_model()
    for _attempt in range(20):
        try:
            with transaction.atomic():
                user = User(username=_username(first_name, last_name), first_name=first_name[:150],
                            last_name=last_name[:150], email=email)
                user.set_unusable_password()
                user.save()
                add_member(project, user, role, by=by)
                AuditEvent.record(by, "account-create", project, user=user.get_username(), role=role)
        except IntegrityError:
            continue  # the random tail met an existing username: draw another
        return user, set_password_path(user)
    raise ProjectError("Could not find a free username; try again.")


def visible_account(coordinator, username: str):
    """The active account named ``username`` if ``coordinator`` may see it (an administrator: any; a coordinator:
    members of the projects they coordinate), else None: "no such account" and "an account elsewhere" answer alike."""
    User = get_user_model()
    accounts = User.objects.filter(username=username.strip(), is_active=True)
    if not is_admin(coordinator):
        managed = Membership.objects.filter(user=coordinator, role=COORDINATOR).values("project")
        accounts = accounts.filter(memberships__project__in=managed).distinct()
    return accounts.first()
