"""Showing dialogues safely (redactions applied) and the privacy review of flagged dialogues."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import mark_safe
from django.utils.translation import get_language, gettext
from django.utils.translation import gettext_lazy as _

from annotation.models import Dialogue, PrivacyStatus, Redaction
from projects.models import AuditEvent


def active_redactions(dialogue: Dialogue) -> list[dict]:
    return [r.as_span() for r in dialogue.redactions.all() if r.revoked_at is None]


def redacted(dialogue: Dialogue) -> tuple[str, list[dict]]:
    """The self-report and turns as anyone may see them: every active redaction applied."""
    spans = active_redactions(dialogue)
    if not spans:
        return dialogue.self_report, dialogue.turns
    from annotation.privacy import apply_redactions  # its patterns compile at import: not at start-up

    return apply_redactions(dialogue.self_report, dialogue.turns, spans)


def _text_of(dialogue: Dialogue, field: str, turn: int | None) -> str:
    if field == "self_report":
        return dialogue.self_report
    if turn is None or not 0 <= turn < len(dialogue.turns):
        raise ValueError("No such turn.")
    return dialogue.turns[turn]["text"]


@transaction.atomic
def redact(dialogue: Dialogue, *, field: str, turn: int | None, start: int, end: int, user, source: str,
           reason: str = "") -> Redaction:
    """Hide a span of the original text (offsets refer to the original, unredacted text)."""
    if field not in ("self_report", "turn"):
        raise ValueError("field must be self_report or turn")
    text = _text_of(dialogue, field, turn)
    if not 0 <= start < end <= len(text):
        raise ValueError(gettext("The span %(start)s-%(end)s is outside the text (length %(length)s).")
                         % {"start": start, "end": end, "length": len(text)})
    redaction = Redaction.objects.create(dialogue=dialogue, field=field, turn=turn if field == "turn" else None,
                                         start=start, end=end, source=source, reason=reason, created_by=user)
    AuditEvent.record(user, "dialogue.redact", dialogue, reason=reason, field=field, turn=turn, start=start, end=end,
                      source=source)
    return redaction


@transaction.atomic
def revoke_redaction(redaction: Redaction, user, reason: str) -> None:
    if not reason.strip():
        raise ValueError("Say why the redaction is undone.")
    redaction.revoked_at = timezone.now()
    redaction.revoked_by = user
    redaction.save(update_fields=["revoked_at", "revoked_by"])
    AuditEvent.record(user, "dialogue.unredact", redaction.dialogue, reason=reason, redaction=redaction.pk)


@transaction.atomic
def review_privacy(dialogue: Dialogue, action: str, user, reason: str = "") -> Dialogue:
    """Coordinator decision on a flagged dialogue: redact the matches, exclude the dialogue, or keep it."""
    if action == "redact":
        for match in dialogue.privacy_matches:
            redact(dialogue, field=match["field"], turn=match.get("turn"), start=match["start"], end=match["end"],
                   user=user, source=Redaction.Source.FILTER, reason=reason or f"privacy filter: {match['kind']}")
        dialogue.privacy_status = PrivacyStatus.REDACTED
    elif action == "exclude":
        dialogue.privacy_status = PrivacyStatus.EXCLUDED
    elif action == "accept":
        dialogue.privacy_status = PrivacyStatus.ACCEPTED
    else:
        raise ValueError(f"unknown privacy action {action!r}")
    dialogue.save(update_fields=["privacy_status"])
    AuditEvent.record(user, f"privacy.{action}", dialogue, reason=reason)
    return dialogue


def segments(text: str, spans: list[tuple[int, int]]) -> list[dict]:
    """Split ``text`` into visible pieces (with their offset in the original) and redacted pieces, so a page
    can map a selection in what it shows back to offsets in the original text."""
    merged: list[list[int]] = []
    for start, end in sorted((max(0, s), min(len(text), e)) for s, e in spans if e > s):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    pieces, pos = [], 0
    for start, end in merged:
        if start > pos:
            pieces.append({"text": text[pos:start], "start": pos, "redacted": False})
        pieces.append({"text": "[REDACTED]", "start": start, "redacted": True})
        pos = end
    if pos < len(text) or not pieces:
        pieces.append({"text": text[pos:], "start": pos, "redacted": False})
    return pieces


def redacted_html() -> str:
    """The placeholder of a redacted piece, in the page's language (marked as such inside the dialogue's)."""
    return format_html('<mark class="redacted" title="{}" lang="{}">{}</mark>', gettext("Redacted"),
                       get_language() or "en", gettext("[REDACTED]"))


def segments_html(pieces: list[dict]) -> str:
    """The pieces as pages show them: visible text in spans carrying their offset in the original (the redaction
    tool maps a selection back through it), redacted pieces as a marked placeholder. Built here rather than in a
    template: a 40-turn page renders it ~40 times and the template engine made it a large share of the page time."""
    redacted = redacted_html()
    return mark_safe("".join(  # every piece is escaped by format_html
        redacted if piece["redacted"] else format_html('<span data-off="{}">{}</span>', piece["start"],
                                                       piece["text"])
        for piece in pieces))


#: The speakers of a dialogue and the parts of a question-answer item, as the pages name them.
ROLE_LABELS = {"doctor": _("Doctor"), "patient": _("Patient"), "measurement": _("Measurement"),
               "question": _("Question"), "answer": _("Answer"), "reference": _("Reference answer")}


def view_model(dialogue: Dialogue) -> dict:
    """Self-report and turns as segments with redactions applied (and as HTML), for the rating and review pages.
    A question-answer item's question, answer and reference come as turns of those roles (``is_answer``)."""
    spans = active_redactions(dialogue)
    by_place: dict[tuple[str, int | None], list[tuple[int, int]]] = {}
    for span in spans:
        by_place.setdefault((span["field"], span["turn"]), []).append((span["start"], span["end"]))
    self_report = segments(dialogue.self_report, by_place.get(("self_report", None), []))
    turns = []
    for i, turn in enumerate(dialogue.turns):
        pieces = segments(turn["text"], by_place.get(("turn", i), []))
        turns.append({"index": i, "role": turn["role"], "label": ROLE_LABELS.get(turn["role"], turn["role"]),
                      "segments": pieces, "html": segments_html(pieces)})
    return {"self_report": self_report, "self_report_html": segments_html(self_report), "turns": turns,
            "is_answer": dialogue.is_answer}
