"""Raters' pseudonyms: one per person and project, random, stable within the project.

Random codes (``R-7KQ3M``) neither count the raters of the instance (sequential numbers did: R0005 told an analyst
that four raters existed elsewhere) nor link a person across projects (each project draws its own)."""

from __future__ import annotations

import secrets
from collections.abc import Iterable

from django.db import IntegrityError, transaction

from projects.models import Pseudonym

# Crockford-style: no 0/O, 1/I/L or U, so a code read aloud or copied by hand stays the same code.
ALPHABET = "23456789ABCDEFGHJKMNPQRSTVWXYZ"
LENGTH = 5


def _draw() -> str:
    return "R-" + "".join(secrets.choice(ALPHABET) for _ in range(LENGTH))


def pseudonyms(project, user_ids: Iterable[int]) -> dict[int, str]:
    """User id -> pseudonym in ``project`` (a Project or its id), created for those who have none yet."""
    project_id = getattr(project, "pk", project)
    wanted = {int(u) for u in user_ids}
    if not wanted:
        return {}
    known = dict(Pseudonym.unscoped.filter(project_id=project_id, user_id__in=wanted).values_list("user_id", "code"))
    for user_id in sorted(wanted - set(known)):
        known[user_id] = _create(project_id, user_id)
    return known


def pseudonym(project, user) -> str:
    user_id = getattr(user, "pk", user)
    return pseudonyms(project, [user_id])[user_id]


def _create(project_id: int, user_id: int) -> str:
    for _ in range(20):
        code = _draw()
        try:
            with transaction.atomic():
                Pseudonym.unscoped.create(project_id=project_id, user_id=user_id, code=code)
            return code
        except IntegrityError:
            existing = Pseudonym.unscoped.filter(project_id=project_id, user_id=user_id).values_list(
                "code", flat=True).first()
            if existing:  # made at the same time by another request
                return existing
    raise RuntimeError("could not draw a free pseudonym")  # 24 million codes per project: not in practice
