"""Label services: save a click, submit/skip/flag, return for re-annotation, adjudicate, gold labels.

Every change to a label writes a LabelChange row (who, when, old, new, why) in the same transaction.
"""

from __future__ import annotations

from functools import lru_cache

from django.db import connection, transaction
from django.utils import timezone
from django.utils.translation import gettext, gettext_lazy

from annotation import scales, scores
from annotation.campaigns import CampaignQueue
from annotation.models import Adjudication, Assignment, Campaign, GoldLabel, Item, Label, LabelChange
from annotation.queue import QueueError, locking
from annotation.signals import send_labels_changed
from annotation.status import OPEN_WORK, WorkStatus
from projects.models import AuditEvent, Membership
from projects.roles import PHYSICIAN

#: Longest comment, skip reason or flag note a rater may write (the API's limit and the rating page's).
MAX_TEXT = 10_000


class LabelError(QueueError):
    """A save the rules refuse (wrong rater, closed assignment, value not allowed); the message says why."""


#: The names of the texts a rater writes, as the refusal of a too long one names them.
_TEXTS = {"comment": gettext_lazy("comment"), "reason": gettext_lazy("reason"), "note": gettext_lazy("note")}


def _bounded(text: str | None, what: str) -> str | None:
    """``text`` unless it is longer than :data:`MAX_TEXT` (a 400 saying so)."""
    if text is not None and len(text) > MAX_TEXT:
        raise LabelError(gettext("The %(what)s is %(length)s characters long; at most %(max)s are allowed.")
                         % {"what": _TEXTS.get(what, what), "length": f"{len(text):,}", "max": f"{MAX_TEXT:,}"})
    return text


def answers_of(assignments) -> dict[tuple[int, int], Label]:
    """(assignment id, item id) -> label for these assignments (the review page of a dialogue: a few hundred labels),
    looked up by their assignments' unique index: by campaign and dialogue the database may walk every label of the
    campaign (0.3-0.5 s on a MedEval-sized campaign of 643,200 labels)."""
    ids = [a.pk for a in assignments]
    # The assignments came through the scoped managers. The scoped manager would join the campaign (its project) to
    # the labels, and SQLite then reads them by the campaign's index instead of the assignments'.
    return {(label.assignment_id, label.item_id): label
            for label in Label.unscoped.filter(assignment_id__in=ids).order_by()} if ids else {}


@lru_cache(maxsize=64)
def _allowed(version_id: int) -> dict[int, tuple[str, tuple[int | float, ...]]]:
    """Item id -> (code, allowed values) for the items rated on the rating page of a (locked, hence immutable)
    version. Free-text items allow no value (their answer is the label's comment) and are never required."""
    return {item.pk: (item.code, tuple(item.allowed_values()))
            for _, items in scales.rating_sheet(version_id) for item in items}


def rating_items(version_id: int) -> dict[int, tuple[str, tuple[int, ...]]]:
    return _allowed(version_id)


def _sql(template: str) -> str:
    """Fill table names into a hot-path statement (quoted for the current database)."""
    q = connection.ops.quote_name
    return template.format(assignment=q(Assignment._meta.db_table), campaign=q(Campaign._meta.db_table),
                           label=q(Label._meta.db_table), change=q(LabelChange._meta.db_table),
                           membership=q(Membership._meta.db_table))


def save_label(assignment: Assignment | int, item_id: int, value: int | None, user, *, comment: str | None = None,
               client_seq: int = 0, reason: str = "", member_only: bool = False,
               item_language: str | None = None) -> Label:
    """Store one answer at once. Retries are harmless (same value = no new history) and a late retry of an
    older click never overwrites a newer one (``client_seq``).

    This is the busiest write of the app (every click of every rater), so it is a few plain statements rather
    than ORM queries: lock the assignment (which serialises every write to its labels and orders saves against
    submit), read the label, write it and its history row. Missing or deleted assignments are a 404; with
    ``member_only`` (the rating page) so is an assignment in a project where the rater is no longer a physician.
    ``item_language`` ("en", "zh") is the language of the item text the rater saw; None keeps what is stored."""
    assignment_id = assignment if isinstance(assignment, int) else assignment.pk
    value = _number(value)
    _bounded(comment, "comment")
    with transaction.atomic(), connection.cursor() as cursor:
        lock = " FOR UPDATE OF a" if connection.features.has_select_for_update_of else ""
        member = (_sql(", EXISTS (SELECT 1 FROM {membership} m WHERE m.project_id = c.project_id AND "
                       "m.user_id = a.rater_id AND m.role = %s)") if member_only else ", 1")
        cursor.execute(_sql("SELECT a.rater_id, a.status, a.campaign_id, a.dialogue_id, c.scale_version_id, "
                            "c.deleted_at") + member + _sql(" FROM {assignment} a JOIN {campaign} c ON "
                                                            "c.id = a.campaign_id WHERE a.id = %s") + lock,
                       ([PHYSICIAN] if member_only else []) + [assignment_id])
        row = cursor.fetchone()
        if row is None or row[5] is not None or not row[6]:
            raise LabelError(gettext("No such assignment."), status=404)
        rater_id, status, campaign_id, dialogue_id, version_id, _, _ = row
        if rater_id != user.pk:
            raise LabelError(gettext("This dialogue is not assigned to you."), status=403)
        _check_value(_allowed(version_id), item_id, value)
        _check_open(status)
        now = timezone.now()
        db_now = connection.ops.adapt_datetimefield_value(now)
        cursor.execute(_sql("SELECT id, value, comment, client_seq, item_language, created_at, updated_at FROM {label} "
                            "WHERE assignment_id = %s AND item_id = %s"), [assignment_id, item_id])
        found = cursor.fetchone()
        label = Label(assignment_id=assignment_id, campaign_id=campaign_id, dialogue_id=dialogue_id,
                      rater_id=rater_id, item_id=item_id, value=value, comment=comment or "", client_seq=client_seq,
                      item_language=item_language or "", created_at=now, updated_at=now)
        old_value, old_comment = None, ""
        if found is None:
            returning = " RETURNING id" if connection.features.can_return_columns_from_insert else ""
            cursor.execute(_sql("INSERT INTO {label} (assignment_id, campaign_id, dialogue_id, rater_id, item_id, "
                                "value, comment, client_seq, item_language, created_at, updated_at) "
                                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)") + returning,
                           [assignment_id, campaign_id, dialogue_id, rater_id, item_id, value, label.comment,
                            client_seq, label.item_language, db_now, db_now])
            label.pk = cursor.fetchone()[0] if returning else cursor.lastrowid
            changed = True
        else:
            label.pk, old_value, old_comment, old_seq, old_language = found[:5]
            if client_seq and client_seq < old_seq:
                # An older click arriving late: the newer answer stands.
                label.value, label.comment, label.client_seq = old_value, old_comment, old_seq
                label.item_language = old_language
                label.created_at = label.updated_at = None
                label.refresh_from_db(fields=["created_at", "updated_at"])
                return label
            label.comment = old_comment if comment is None else comment
            label.client_seq = max(old_seq, client_seq)
            label.item_language = old_language if item_language is None else item_language
            changed = old_value != value or old_comment != label.comment
            cursor.execute(_sql("UPDATE {label} SET value = %s, comment = %s, client_seq = %s, item_language = %s, "
                                "updated_at = %s WHERE id = %s"),
                           [value, label.comment, label.client_seq, label.item_language, db_now, label.pk])
        if changed:
            cursor.execute(_sql("INSERT INTO {change} (label_id, changed_by_id, changed_at, old_value, new_value, "
                                "old_comment, new_comment, source, reason) "
                                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"),
                           [label.pk, user.pk, db_now, old_value, value, old_comment, label.comment,
                            LabelChange.Source.RATER, reason])
        RATING.start(assignment_id, status, now)  # the assignment checked above (this save has no project scope)
    return label


def _number(value):
    """The value as stored (``scores.normal``), or a 400 saying it is not a number."""
    try:
        return scores.normal(value)
    except (TypeError, ValueError):
        raise LabelError(gettext("The value must be a number; got %(value)s.") % {"value": repr(value)}) from None


def _check_value(items: dict[int, tuple[str, tuple[int | float, ...]]], item_id: int, value) -> None:
    """A 400 unless ``item_id`` is rated on the scale (``items``: :func:`rating_items`) and ``value`` is allowed."""
    if item_id not in items:
        raise LabelError(gettext("That item is not part of this campaign's scale."))
    code, allowed = items[item_id]
    if value is not None and value not in allowed:
        raise LabelError(_refusal(code, allowed, value))


def _check_open(status: str) -> None:
    """A 409 unless an assignment of this status still takes answers."""
    if status not in OPEN_WORK:
        label_status = WorkStatus(status).label.lower()
        raise LabelError(gettext("This dialogue is %(status)s; answers can no longer change.")
                         % {"status": label_status}, status=409)


@transaction.atomic
def save_answers(assignment: Assignment, answers: dict[int, int | float | None], user, *,
                 reason: str = "") -> int:
    """Store a rater's answers to many items of one dialogue at once (item id -> value; a whole sheet, as the
    demo's synthetic raters give it): the checks and history of :func:`save_label` for each answer, in a handful of
    statements instead of four per answer. All or nothing: one refused answer stores none. Returns how many labels
    changed (an answer equal to the stored one changes nothing)."""
    locked = locking(Assignment.unscoped.select_related("campaign")).filter(pk=assignment.pk).first()
    if locked is None or locked.campaign.deleted_at is not None:
        raise LabelError(gettext("No such assignment."), status=404)
    if locked.rater_id != user.pk:
        raise LabelError(gettext("This dialogue is not assigned to you."), status=403)
    items = _allowed(locked.campaign.scale_version_id)
    answers = {item_id: _number(value) for item_id, value in answers.items()}
    for item_id, value in answers.items():
        _check_value(items, item_id, value)
    _check_open(locked.status)
    now = timezone.now()
    stored = {label.item_id: label for label in Label.unscoped.filter(assignment_id=locked.pk).order_by()}
    new = [Label(assignment_id=locked.pk, campaign_id=locked.campaign_id, dialogue_id=locked.dialogue_id,
                 rater_id=locked.rater_id, item_id=item_id, value=value, created_at=now, updated_at=now)
           for item_id, value in answers.items() if item_id not in stored]
    changed = [(label, label.value) for item_id, label in stored.items()
               if item_id in answers and label.value != answers[item_id]]
    for label, _ in changed:
        label.value, label.updated_at = answers[label.item_id], now
    Label.unscoped.bulk_create(new)
    if not all(label.pk for label in new):  # a database that does not return the new rows' ids
        ids = dict(Label.unscoped.filter(assignment_id=locked.pk, item_id__in=[label.item_id for label in new])
                   .values_list("item_id", "pk"))
        for label in new:
            label.pk = ids[label.item_id]
    Label.unscoped.bulk_update([label for label, _ in changed], ["value", "updated_at"])
    LabelChange.unscoped.bulk_create(
        [LabelChange(label_id=label.pk, changed_by_id=user.pk, changed_at=now, old_value=None, new_value=label.value,
                     source=LabelChange.Source.RATER, reason=reason) for label in new]
        + [LabelChange(label_id=label.pk, changed_by_id=user.pk, changed_at=now, old_value=old,
                       new_value=label.value, old_comment=label.comment, new_comment=label.comment,
                       source=LabelChange.Source.RATER, reason=reason) for label, old in changed])
    if new or changed:
        RATING.start(locked.pk, locked.status, now)
    return len(new) + len(changed)


def _refusal(code: str, allowed: tuple[int | float, ...], value) -> str:
    if not allowed:
        return gettext("Item %(code)s is answered with a comment, not a value; got %(value)s.") % {
            "code": code, "value": scores.text(value)}
    return gettext("Item %(code)s takes %(allowed)s; got %(value)s.") % {
        "code": code, "allowed": scores.describe(allowed), "value": scores.text(value)}


def missing_items(assignment: Assignment) -> list[str]:
    """Codes of the items that need a value before submitting (free-text items are optional)."""
    items = _allowed(assignment.campaign.scale_version_id)
    answered = set(Label.objects.filter(assignment=assignment, value__isnull=False).values_list("item_id", flat=True))
    return [code for item_id, (code, allowed) in sorted(items.items(), key=lambda kv: kv[1][0])
            if allowed and item_id not in answered]


class CampaignRating(CampaignQueue):
    """The rater's side of a campaign's queue: what must be answered before submitting, and the refusals."""

    error = LabelError
    not_yours = gettext_lazy("This dialogue is not assigned to you.")
    not_open = gettext_lazy("This dialogue is already %(status)s.")
    missing_answers = gettext_lazy("Answer every item before submitting; missing: %(items)s.")
    no_skip_reason = gettext_lazy("Say why you skip this dialogue.")

    def missing(self, locked: Assignment) -> list[str]:
        return missing_items(locked)


RATING = CampaignRating()


def submit(assignment: Assignment, user, *, comment: str | None = None) -> Assignment:
    _bounded(comment, "comment")
    return RATING.submit(assignment, user, comment=comment)


def skip(assignment: Assignment, user, reason: str) -> Assignment:
    _bounded(reason, "reason")
    return RATING.skip(assignment, user, reason)


@transaction.atomic
def flag(assignment: Assignment, user, note: str) -> Assignment:
    if not note.strip():
        raise LabelError(gettext("Describe the problem you are flagging."))
    _bounded(note, "note")
    # the queue's lock (the work row only), not the queue's claim: closed work may be flagged too
    locked = locking(Assignment.objects).get(pk=assignment.pk)
    if locked.rater_id != user.pk:
        raise LabelError(gettext("This dialogue is not assigned to you."), status=403)
    locked.flagged = True
    locked.flag_note = note.strip()
    locked.save(update_fields=["flagged", "flag_note", "updated_at"])
    AuditEvent.record(user, "assignment.flag", locked, reason=note)
    return locked


def save_comment(assignment: Assignment, user, comment: str) -> Assignment:
    _bounded(comment, "comment")
    return RATING.save_comment(assignment, user, comment)


@transaction.atomic
def return_for_reannotation(assignment: Assignment, by, note: str) -> Assignment:
    """Send submitted (or skipped) work back to its rater with a note; labels stay and can be changed."""
    if not note.strip():
        raise LabelError(gettext("Tell the rater why the dialogue comes back."))
    locked = locking(Assignment.objects).get(pk=assignment.pk)  # the work row, not its campaign's (as reassign)
    if locked.status not in (Assignment.Status.SUBMITTED, Assignment.Status.SKIPPED):
        raise LabelError(gettext("Only submitted or skipped work can be returned."), status=409)
    locked.status = Assignment.Status.RETURNED
    locked.return_note = note.strip()
    locked.save(update_fields=["status", "return_note", "updated_at"])
    AuditEvent.record(by, "assignment.return", locked, reason=note)
    send_labels_changed(locked.campaign)
    return locked


@transaction.atomic
def adjudicate(campaign, dialogue, item: Item, value: int, by, reason: str) -> Adjudication:
    if not reason.strip():
        raise LabelError(gettext("Give the reason for the final label."))
    if item.version_id != campaign.scale_version_id or value not in item.allowed_values():
        raise LabelError(gettext("Item %(code)s takes %(allowed)s.") % {
            "code": item.code, "allowed": scores.describe(item.allowed_values())})
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
        raise LabelError(gettext("Item %(code)s takes %(allowed)s.") % {
            "code": item.code, "allowed": scores.describe(item.allowed_values())})
    gold, _ = GoldLabel.objects.update_or_create(campaign=campaign, dialogue=dialogue, item=item,
                                                 defaults={"value": value, "set_by": by, "set_at": timezone.now()})
    AuditEvent.record(by, "gold.set", dialogue, item=item.code, old=old, new=value, campaign=campaign.name)
    return gold
