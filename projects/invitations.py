"""Invitations: how a coordinator brings a person into a project by e-mail, without an administrator and without
learning who has an account on the instance.

* :func:`invite` looks no account up: whatever the address, the coordinator gets the same answer (a one-time link,
  mailed or shown once), and the audit trail the same entry.
* The person opens the link (:func:`find`); signed in (an existing account) they accept it (:func:`accept`); new
  to the instance, they choose a username and password (:func:`accept_as_new`). Either way they get the role in
  the project, once: the link is spent, and stops working when revoked (:func:`revoke`) or after
  ``INVITATION_DAYS`` (14) days.
* Only the token's SHA-256 is stored; the link holds the token (kept out of logs by ``config.logredact``).
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import QuerySet
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _

from projects.models import AuditEvent, Invitation, Project
from projects.roles import PROJECT_ROLES, assign_role

SESSION_KEY = "minicex_invitation"


class InvitationError(ValueError):
    """An invitation that cannot be made or accepted; the message says why."""


def lifetime() -> timedelta:
    return timedelta(days=settings.INVITATION_DAYS)


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def link_path(token: str) -> str:
    """The path of the one-time link (it redirects to :data:`SESSION_KEY`'s tokenless page at once)."""
    return reverse("invitation-open", args=[token])


def invite(project: Project, *, email: str, role: str, by) -> tuple[Invitation, str]:
    """A pending invitation of ``email`` to ``project`` in ``role``; returns it and its link's path (the only
    time the token exists outside the link). Audited: who invited which address in which role, never the link."""
    if role not in PROJECT_ROLES:
        raise InvitationError(_("Unknown project role %(role)s.") % {"role": role})
    email = email.strip()
    if not email:
        raise InvitationError(_("Give the person's e-mail address."))
    token = secrets.token_urlsafe(32)
    with transaction.atomic():
        invitation = Invitation.objects.create(project=project, email=email, role=role, token_hash=_hash(token),
                                               created_by=by, expires_at=timezone.now() + lifetime())
        AuditEvent.record(by, "invitation-create", project, email=email, role=role, invitation=invitation.pk,
                          expires=invitation.expires_at.isoformat())
    return invitation, link_path(token)


def find(token: str | None) -> Invitation | None:
    """The pending invitation of a link's token; None for an unknown, used, revoked or expired one (alike)."""
    if not token:
        return None
    invitation = Invitation.objects.select_related("project", "created_by").filter(token_hash=_hash(token)).first()
    return invitation if invitation is not None and invitation.is_pending else None


def pending(project: Project) -> QuerySet:
    """The project's invitations not yet accepted, revoked or expired, newest first."""
    return (Invitation.objects.filter(project=project, accepted_at=None, revoked_at=None,
                                      expires_at__gt=timezone.now())
            .select_related("created_by").order_by("-created_at", "-id"))


def _still_pending(invitation: Invitation) -> Invitation:
    fresh = Invitation.objects.select_for_update().get(pk=invitation.pk)
    if not fresh.is_pending:
        raise InvitationError(_("This invitation is no longer valid: it was used, revoked or it expired."))
    return fresh


def accept(invitation: Invitation, user) -> Invitation:
    """``user`` (signed in) takes the invitation: the role in its project, once. Audited as theirs."""
    if not user.is_active:
        raise InvitationError(_("This account is deactivated."))
    with transaction.atomic():
        invitation = _still_pending(invitation)
        assign_role(user, invitation.role, invitation.project, by=invitation.created_by)
        invitation.accepted_at, invitation.accepted_by = timezone.now(), user
        invitation.save(update_fields=["accepted_at", "accepted_by"])
        AuditEvent.record(user, "invitation-accept", invitation.project, invitation=invitation.pk,
                          user=user.get_username(), role=invitation.role)
    return invitation


def accept_as_new(invitation: Invitation, *, username: str, password: str, first_name: str = "",
                  last_name: str = ""):
    """A new account (with the invitation's e-mail address) that accepts the invitation; returns the account."""
    with transaction.atomic():
        user = get_user_model().objects.create_user(username=username, password=password,
                                                    email=invitation.email, first_name=first_name.strip()[:150],
                                                    last_name=last_name.strip()[:150])
        accept(invitation, user)
    return user


def revoke(invitation: Invitation, *, by) -> bool:
    """The link stops working; False when it was no longer pending. Audited."""
    with transaction.atomic():
        fresh = Invitation.objects.select_for_update().get(pk=invitation.pk)
        if not fresh.is_pending:
            return False
        fresh.revoked_at, fresh.revoked_by = timezone.now(), by
        fresh.save(update_fields=["revoked_at", "revoked_by"])
        AuditEvent.record(by, "invitation-revoke", fresh.project, invitation=fresh.pk, email=fresh.email,
                          role=fresh.role)
    return True
