"""The status vocabulary of the workflow models: one set of stored values, each meaning one thing everywhere.

Two lifecycles have a ``status``:

* **containers of work** (scale versions, campaigns, preference studies, Delphi studies and rounds) go through
  :class:`Stage`; each model takes the stages it has with :func:`stages`, in its own words where it needs them;
* **units of rating work** (a campaign's assignments, a preference study's tasks) go through :class:`WorkStatus`,
  the same for both (:mod:`annotation.queue`).
"""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class Stage(models.TextChoices):
    """Where a container of work stands; a model's ``Status`` is a subset (:func:`stages`)."""

    SETUP = "setup", _("Setting up")
    DRAFT = "draft", _("Draft")
    OPEN = "open", _("Open")
    RUNNING = "running", _("Running")
    VALIDATION = "validation", _("Validation survey")
    CLOSED = "closed", _("Closed")
    LOCKED = "locked", _("Locked")
    UNBLINDED = "unblinded", _("Unblinded")
    PUBLISHED = "published", _("Published")
    RETIRED = "retired", _("Retired")


def stages(*members: Stage, **labels) -> type[models.TextChoices]:
    """A model's ``Status``: these stages (in this order), with the stored values of :class:`Stage` and its labels
    unless ``labels`` gives the model's own (by member name), e.g. ``stages(Stage.DRAFT, Stage.OPEN,
    DRAFT=_("Not opened"))``."""
    unknown = set(labels) - {m.name for m in members}
    if unknown:
        raise ValueError(f"Labels for stages not listed: {', '.join(sorted(unknown))}.")
    return models.TextChoices("Status", [(m.name, (m.value, labels.get(m.name, m.label))) for m in members])


class WorkStatus(models.TextChoices):
    """Where one rater's unit of work stands; the stored values are those of every work table."""

    ASSIGNED = "assigned", _("Not started")
    IN_PROGRESS = "in_progress", _("In progress")
    SUBMITTED = "submitted", _("Submitted")
    SKIPPED = "skipped", _("Skipped")
    RETURNED = "returned", _("Returned for re-annotation")
    WITHDRAWN = "withdrawn", _("Withdrawn")


#: Work that still takes answers (and waits in the rater's queue).
OPEN_WORK = (WorkStatus.ASSIGNED, WorkStatus.IN_PROGRESS, WorkStatus.RETURNED)
#: Work that counts towards a unit's ``overlap`` and a rater's load: all but skipped and withdrawn.
COUNTED_WORK = (*OPEN_WORK, WorkStatus.SUBMITTED)
