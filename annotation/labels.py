"""Label services: save a click, submit/skip/flag, return for re-annotation, adjudicate, gold labels.

Every change to a label writes a LabelChange row (who, when, old, new, why) in the same transaction.
"""

from __future__ import annotations

from functools import lru_cache

from django.db import transaction
from django.utils import timezone

from annotation.models import (
    Adjudication,
    Assignment,
    AuditEvent,
    GoldLabel,
    Item,
    Label,
    LabelChange,
)


class LabelError(ValueError):
    """A save the rules refuse (wrong rater, closed assignment, value not allowed); the message says why."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


@lru_cache(maxsize=64)
def _allowed(version_id: int) -> dict[int, tuple[str, tuple[int, ...]]]:
    """Item id -> (code, allowed values) for the rating items of a (locked, hence immutable) version."""
    items = Item.objects.filter(version_id=version_id, response_type__in=["binary", "ordinal"]).prefetch_related(
        "levels")
    return {item.pk: (item.code, tuple(item.allowed_values())) for item in items}


def rating_items(version_id: int) -> dict[int, tuple[str, tuple[int, ...]]]:
    return _allowed(version_id)


def save_label(assignment: Assignment, item_id: int, value: int | None, user, *, comment: str | None = None,
               client_seq: int = 0, reason: str = "") -> Label:
    """Store one answer at once. Retries are harmless (same value = no new history) and a late retry of an
    older click never overwrites a newer one (``client_seq``)."""
    if assignment.rater_id != user.pk:
        raise LabelError("This dialogue is not assigned to you.", status=403)
    items = _allowed(assignment.campaign.scale_version_id)
    if item_id not in items:
        raise LabelError("That item is not part of this campaign's scale.")
    code, allowed = items[item_id]
    if value is not None and value not in allowed:
        raise LabelError(f"Item {code} takes {', '.join(map(str, allowed))}; got {value}.")
    with transaction.atomic():
        locked = Assignment.objects.select_for_update().get(pk=assignment.pk)
        if not locked.is_open:
            raise LabelError(f"This dialogue is {locked.get_status_display().lower()}; answers can no longer change.",
                             status=409)
        now = timezone.now()
        # Lock only the label row: the model's default ordering joins assignment, item and campaign, and a plain
        # FOR UPDATE would lock those rows too (one campaign row for every save: queueing and deadlocks).
        label = (Label.objects.select_for_update(of=("self",)).filter(assignment=locked, item_id=item_id)
                 .order_by("pk").first())
        if label is None:
            label = Label.objects.create(
                assignment=locked, campaign_id=locked.campaign_id, dialogue_id=locked.dialogue_id, rater=user,
                item_id=item_id, value=value, comment=comment or "", client_seq=client_seq, created_at=now,
                updated_at=now)
            LabelChange.objects.create(label=label, changed_by=user, changed_at=now, old_value=None, new_value=value,
                                       new_comment=comment or "", reason=reason)
        elif client_seq and client_seq < label.client_seq:
            return label  # an older click arriving late: the newer answer stands
        else:
            new_comment = label.comment if comment is None else comment
            if label.value != value or label.comment != new_comment:
                LabelChange.objects.create(label=label, changed_by=user, changed_at=now, old_value=label.value,
                                           new_value=value, old_comment=label.comment, new_comment=new_comment,
                                           reason=reason)
                label.value, label.comment = value, new_comment
            label.client_seq = max(label.client_seq, client_seq)
            label.updated_at = now
            label.save(update_fields=["value", "comment", "client_seq", "updated_at"])
        if locked.status == Assignment.Status.ASSIGNED:
            locked.status = Assignment.Status.IN_PROGRESS
            locked.started_at = now
            locked.save(update_fields=["status", "started_at", "updated_at"])
    return label


def missing_items(assignment: Assignment) -> list[str]:
    items = _allowed(assignment.campaign.scale_version_id)
    answered = set(Label.objects.filter(assignment=assignment, value__isnull=False).values_list("item_id", flat=True))
    return [code for item_id, (code, _) in sorted(items.items(), key=lambda kv: kv[1][0]) if item_id not in answered]


def _open_for(assignment: Assignment, user) -> Assignment:
    locked = Assignment.objects.select_for_update().get(pk=assignment.pk)
    if locked.rater_id != user.pk:
        raise LabelError("This dialogue is not assigned to you.", status=403)
    if not locked.is_open:
        raise LabelError(f"This dialogue is already {locked.get_status_display().lower()}.", status=409)
    return locked


@transaction.atomic
def submit(assignment: Assignment, user, *, comment: str | None = None) -> Assignment:
    locked = _open_for(assignment, user)
    missing = missing_items(locked)
    if missing:
        raise LabelError(f"Answer every item before submitting; missing: {', '.join(missing)}.")
    if comment is not None:
        locked.comment = comment
    locked.status = Assignment.Status.SUBMITTED
    locked.submitted_at = timezone.now()
    locked.save(update_fields=["status", "submitted_at", "comment", "updated_at"])
    AuditEvent.record(user, "assignment.submit", locked)
    return locked


@transaction.atomic
def skip(assignment: Assignment, user, reason: str) -> Assignment:
    if not reason.strip():
        raise LabelError("Say why you skip this dialogue.")
    locked = _open_for(assignment, user)
    locked.status = Assignment.Status.SKIPPED
    locked.skip_reason = reason.strip()
    locked.save(update_fields=["status", "skip_reason", "updated_at"])
    AuditEvent.record(user, "assignment.skip", locked, reason=reason)
    return locked


@transaction.atomic
def flag(assignment: Assignment, user, note: str) -> Assignment:
    if not note.strip():
        raise LabelError("Describe the problem you are flagging.")
    locked = Assignment.objects.select_for_update().get(pk=assignment.pk)
    if locked.rater_id != user.pk:
        raise LabelError("This dialogue is not assigned to you.", status=403)
    locked.flagged = True
    locked.flag_note = note.strip()
    locked.save(update_fields=["flagged", "flag_note", "updated_at"])
    AuditEvent.record(user, "assignment.flag", locked, reason=note)
    return locked


@transaction.atomic
def save_comment(assignment: Assignment, user, comment: str) -> Assignment:
    locked = _open_for(assignment, user)
    if locked.comment != comment:
        AuditEvent.record(user, "assignment.comment", locked, old=locked.comment, new=comment)
        locked.comment = comment
        locked.save(update_fields=["comment", "updated_at"])
    return locked


@transaction.atomic
def return_for_reannotation(assignment: Assignment, by, note: str) -> Assignment:
    """Send submitted (or skipped) work back to its rater with a note; labels stay and can be changed."""
    if not note.strip():
        raise LabelError("Tell the rater why the dialogue comes back.")
    locked = Assignment.objects.select_for_update().get(pk=assignment.pk)
    if locked.status not in (Assignment.Status.SUBMITTED, Assignment.Status.SKIPPED):
        raise LabelError("Only submitted or skipped work can be returned.", status=409)
    locked.status = Assignment.Status.RETURNED
    locked.return_note = note.strip()
    locked.save(update_fields=["status", "return_note", "updated_at"])
    AuditEvent.record(by, "assignment.return", locked, reason=note)
    return locked


@transaction.atomic
def adjudicate(campaign, dialogue, item: Item, value: int, by, reason: str) -> Adjudication:
    if not reason.strip():
        raise LabelError("Give the reason for the final label.")
    if item.version_id != campaign.scale_version_id or value not in item.allowed_values():
        raise LabelError(f"Item {item.code} takes {', '.join(map(str, item.allowed_values()))}.")
    existing = (Adjudication.objects.select_for_update(of=("self",))
                .filter(campaign=campaign, dialogue=dialogue, item=item).order_by("pk").first())
    old = existing.value if existing else None
    if existing:
        existing.value, existing.reason, existing.decided_by, existing.decided_at = value, reason, by, timezone.now()
        existing.save()
        result = existing
    else:
        result = Adjudication.objects.create(campaign=campaign, dialogue=dialogue, item=item, value=value,
                                             reason=reason, decided_by=by)
    AuditEvent.record(by, "label.adjudicate", result, reason=reason, item=item.code, old=old, new=value,
                      dialogue=dialogue.external_id)
    return result


@transaction.atomic
def set_gold(campaign, dialogue, item: Item, value: int | None, by) -> GoldLabel | None:
    """Set (or with None, remove) the reference answer of a gold dialogue in a trial campaign."""
    existing = GoldLabel.objects.filter(campaign=campaign, dialogue=dialogue, item=item).first()
    old = existing.value if existing else None
    if value is None:
        if existing:
            existing.delete()
        AuditEvent.record(by, "gold.clear", dialogue, item=item.code, old=old)
        return None
    if value not in item.allowed_values():
        raise LabelError(f"Item {item.code} takes {', '.join(map(str, item.allowed_values()))}.")
    gold, _ = GoldLabel.objects.update_or_create(campaign=campaign, dialogue=dialogue, item=item,
                                                 defaults={"value": value, "set_by": by, "set_at": timezone.now()})
    AuditEvent.record(by, "gold.set", dialogue, item=item.code, old=old, new=value, campaign=campaign.name)
    return gold
