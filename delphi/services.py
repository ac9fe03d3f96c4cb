"""Delphi services: studies, panel and links, rounds, answers, focus-group decisions, closing, publishing.

Views call these; tests call them directly. Every change to study data is recorded in
annotation.AuditEvent (who, when, why); answers keep their own history in ResponseChange.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from celery import current_app
from django.conf import settings
from django.core import signing
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import Max
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.text import slugify
from django.utils.translation import gettext, gettext_lazy, ngettext

from annotation import scales
from annotation.instruments import slug_taken
from annotation.models import Item, ScaleVersion
from core.jobs import figures as scoring_figures
from core.jobs.models import Job
from delphi import consensus
from delphi import figures as delphi_figures
from delphi.models import (
    DelphiStudy,
    Familiarity,
    Influence,
    ItemDecision,
    Panelist,
    Participation,
    Proposal,
    Response,
    ResponseChange,
    Round,
)
from projects import scoping
from projects.models import AuditEvent

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)
TOKEN_SALT = "delphi.panelist-link"
RULE_FIELDS = ("consensus_min_mean", "consensus_max_cv", "consensus_min_agreement", "agreement_level")
SETTING_FIELDS = ("invitation", "instructions", "planned_rounds", "familiarity_threshold", "reminder_days",
                  "link_valid_days")


class DelphiError(ValueError):
    """A refused action, with the HTTP status a view should answer."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


class LinkError(DelphiError):
    """A personal link that is tampered with, expired or revoked (``kind`` says which)."""

    def __init__(self, message: str, kind: str):
        super().__init__(message, status=410 if kind == "expired" else 403)
        self.kind = kind


# --------------------------------------------------------------------------------------------------------------
# studies
# --------------------------------------------------------------------------------------------------------------
ITEM_LINE = re.compile(r"^\s*(?P<code>\d+(?:\.\d+)?)\s+(?P<text>[^|]+?)\s*(?:\|\s*(?P<guidance>.*?)\s*)?$")


def parse_item_lines(text: str) -> dict[str, Any]:
    """Parse a draft scale typed as lines ``code text | guidance``: codes without a dot are dimensions
    (``1 Medical interviewing``), codes with a dot are items of the dimension before the dot (``1.1 ...``).
    All-or-nothing: every problem is reported with its line number."""
    dims: list[dict] = []
    by_code: dict[str, dict] = {}
    seen: set[str] = set()
    errors: list[str] = []
    for n, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        m = ITEM_LINE.match(raw)
        if not m:
            errors.append(gettext("line %(n)d: expected 'code text' (e.g. '1 Interviewing' or '1.1 Ask open "
                                  "questions'), got “%(line)s”") % {"n": n, "line": raw.strip()[:60]})
            continue
        code, body, guidance = m["code"], m["text"].strip(), (m["guidance"] or "").strip()
        if code in seen:
            errors.append(gettext("line %(n)d: code %(code)s is used twice") % {"n": n, "code": code})
            continue
        seen.add(code)
        if "." not in code:
            dim = {"code": code, "name_en": body, "items": []}
            dims.append(dim)
            by_code[code] = dim
        else:
            parent = by_code.get(code.split(".")[0])
            if parent is None:
                errors.append(gettext("line %(n)d: item %(code)s needs its dimension line %(dimension)s above it")
                              % {"n": n, "code": code, "dimension": code.split(".")[0]})
                continue
            parent["items"].append({"code": code, "type": "binary", "text_en": body, "guidance_en": guidance})
    if not errors and not any(d["items"] for d in dims):
        errors.append(gettext("No items: add at least one item line such as '1.1 Ask open questions'."))
    if errors:
        raise DelphiError(gettext("The item list has problems (nothing was saved): %(problems)s")
                          % {"problems": "; ".join(errors)})
    return {"dimensions": dims}


def _unique_slug(title: str) -> str:
    base = slugify(title)[:40] or "delphi-scale"
    slug, n = base, 1
    while slug_taken(slug):
        n += 1
        slug = f"{base}-{n}"
    return slug


@transaction.atomic
def create_study(*, title: str, user, version: ScaleVersion | None = None, scale_name: str = "",
                 item_lines: str = "", project=None, **fields) -> DelphiStudy:
    """A study over an existing scale version (the project's own, or a published one of the library), or over a
    new draft scale typed as item lines; round 1 is created (not opened). ``project``: default the active scope's."""
    project_id = scoping.chosen_project_id(project)
    with scoping.in_project(project_id):  # the study and a draft scale belong to the project
        return _create_study(title=title, user=user, version=version, scale_name=scale_name, item_lines=item_lines,
                             project_id=project_id, **fields)


def _create_study(*, title: str, user, version: ScaleVersion | None, scale_name: str, item_lines: str,
                  project_id: int, **fields) -> DelphiStudy:
    title = title.strip()
    if not title:
        raise DelphiError(gettext("Give the study a title."))
    if version is not None and not ScaleVersion.objects.filter(pk=version.pk).exists():
        raise DelphiError(gettext("%(version)s is a draft of another project; choose a published version or your own.")
                          % {"version": version})
    if DelphiStudy.objects.filter(title=title, project=project_id).exists():
        raise DelphiError(gettext("A study called “%(title)s” exists already.") % {"title": title})
    if version is None:
        from annotation import models as annotation_models

        data = parse_item_lines(item_lines)
        name = scale_name.strip() or f"{title} scale"
        scale = scales.load_instrument({"slug": _unique_slug(name), "name_en": name,
                                        "version_note": f"Draft for Delphi study {title}", **data},
                                       annotation_models, publish=False)
        version = scale.versions.get(number=1)
        ScaleVersion.objects.filter(pk=version.pk).update(created_by=user)
    if not version.secondary_items().exists():
        raise DelphiError(gettext("%(version)s has no items to rate.") % {"version": version})
    study = DelphiStudy(title=title, scale=version.scale, base_version=version, created_by=user, project_id=project_id,
                        consensus_fixed_at=timezone.now())
    _apply_fields(study, fields)
    study.save()
    Round.objects.create(study=study, number=1, version=version)
    AuditEvent.record(user, "delphi.study.create", study, version=str(version), rule=study.consensus_rule())
    return study


def _apply_fields(study: DelphiStudy, fields: dict[str, Any]) -> list[str]:
    changed = []
    for name in RULE_FIELDS + SETTING_FIELDS + ("site_url",):
        if name in fields and fields[name] != getattr(study, name):
            setattr(study, name, fields[name])
            changed.append(name)
    if study.planned_rounds < 1:
        raise DelphiError(gettext("Plan at least one round."))
    if study.agreement_level not in consensus.LIKERT:
        raise DelphiError(gettext("The agreement level is a rating from 1 to 5."))
    if study.link_valid_days < 1:
        raise DelphiError(gettext("Links must stay valid for at least one day."))
    return changed


def _decimal_equal(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    try:
        return Decimal(str(a)) == Decimal(str(b))
    except InvalidOperation:
        return False


@transaction.atomic
def update_settings(study: DelphiStudy, user, fields: dict[str, Any], reason: str = "") -> list[str]:
    """Change the study's texts and settings. The consensus rule cannot change once round 1 opened."""
    study = DelphiStudy.objects.select_for_update().get(pk=study.pk)
    rule_changes = [f for f in RULE_FIELDS if f in fields and not _decimal_equal(fields[f], getattr(study, f))]
    if rule_changes and study.consensus_locked:
        raise DelphiError(gettext("The consensus rule was locked when round 1 opened (%(when)s UTC) and cannot "
                                  "change.") % {"when": f"{study.consensus_locked_at:%Y-%m-%d %H:%M}"}, status=409)
    before = {f: str(getattr(study, f)) for f in RULE_FIELDS + SETTING_FIELDS}
    changed = _apply_fields(study, {k: v for k, v in fields.items() if k not in RULE_FIELDS or k in rule_changes})
    if rule_changes:
        study.consensus_fixed_at = timezone.now()
    study.save()
    if changed:
        AuditEvent.record(user, "delphi.study.settings", study, reason=reason,
                          changes={f: [before.get(f), str(getattr(study, f))] for f in changed if f in before})
    if rule_changes:
        delphi_figures.refresh_study(study)  # consensus is judged by the rule
    return changed


def current_round(study: DelphiStudy) -> Round | None:
    """The open round, else the newest round not yet opened."""
    rounds = list(study.rounds.order_by("number"))
    for r in rounds:
        if r.status == Round.Status.OPEN:
            return r
    drafts = [r for r in rounds if r.status == Round.Status.DRAFT]
    return drafts[-1] if drafts else None


def last_closed_delphi_round(study: DelphiStudy) -> Round | None:
    return study.rounds.filter(kind=Round.Kind.DELPHI, status=Round.Status.CLOSED).order_by("-number").first()


def remember_site(study: DelphiStudy, request) -> None:
    """Keep the address the coordinator uses, so e-mailed links (also from the worker) point to it."""
    url = request.build_absolute_uri("/").rstrip("/")
    if url != study.site_url:
        DelphiStudy.objects.filter(pk=study.pk).update(site_url=url)
        study.site_url = url


# --------------------------------------------------------------------------------------------------------------
# panel, personal links, e-mail
# --------------------------------------------------------------------------------------------------------------
CONTACT_LINE = re.compile(r"^\s*(?:(?P<name>[^<>,;]*?)\s*<(?P<email1>[^<>\s]+)>|(?P<email2>[^<>\s,;]+)"
                          r"(?:\s*[,;]\s*(?P<name2>.+?))?)\s*$")
EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


def parse_contacts(text: str) -> list[tuple[str, str]]:
    """Lines ``Name <email>``, ``email`` or ``email, Name``. All-or-nothing with line numbers."""
    contacts: list[tuple[str, str]] = []
    errors: list[str] = []
    seen: set[str] = set()
    for n, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        m = CONTACT_LINE.match(raw)
        email = (m and (m["email1"] or m["email2"]) or "").strip()
        name = (m and (m["name"] or m["name2"]) or "").strip()
        if not m or not EMAIL.match(email):
            errors.append(gettext("line %(n)d: no valid e-mail address in “%(line)s”")
                          % {"n": n, "line": raw.strip()[:60]})
            continue
        if email.lower() in seen:
            errors.append(gettext("line %(n)d: %(email)s is listed twice") % {"n": n, "email": email})
            continue
        seen.add(email.lower())
        contacts.append((name, email))
    if errors:
        raise DelphiError(gettext("Nobody was invited: %(problems)s") % {"problems": "; ".join(errors)})
    if not contacts:
        raise DelphiError(gettext("Give at least one e-mail address."))
    return contacts


def _next_pseudonym(study: DelphiStudy) -> str:
    n = Panelist.objects.filter(study=study).count() + 1
    while Panelist.objects.filter(study=study, pseudonym=f"P{n:03d}").exists():
        n += 1
    return f"P{n:03d}"


def _target_round(study: DelphiStudy) -> Round:
    target = current_round(study)
    if target is None:
        raise DelphiError(gettext("No round is being prepared or open: start the next round or the validation survey "
                                  "first."),
                          status=409)
    return target


@transaction.atomic
def invite(study: DelphiStudy, user, *, text: str = "", users=()) -> list[Panelist]:
    """Add panelists (e-mail lines and/or user accounts) to the current round; if it is open they get their
    personal link at once, otherwise when it opens."""
    target = _target_round(study)
    contacts = parse_contacts(text) if text.strip() else []
    users = list(users)
    if not contacts and not users:
        raise DelphiError(gettext("Give at least one e-mail address or user."))
    existing_emails = {e.lower(): p for p, e in ((p, p.email) for p in study.panelists.alive()) if e}
    existing_users = {p.user_id: p for p in study.panelists.alive() if p.user_id}
    added: list[Panelist] = []
    for name, email in contacts:
        panelist = existing_emails.get(email.lower())
        if panelist is None:
            panelist = Panelist.objects.create(study=study, pseudonym=_next_pseudonym(study), name=name, email=email,
                                               added_by=user)
        added.append(panelist)
    for account in users:
        panelist = existing_users.get(account.pk)
        if panelist is None:
            panelist = Panelist.objects.create(study=study, pseudonym=_next_pseudonym(study),
                                               name=account.get_full_name() or account.username,
                                               email=account.email, user=account, added_by=user)
        added.append(panelist)
    new_participations = []
    for panelist in added:
        part, created = Participation.objects.get_or_create(round=target, panelist=panelist)
        if created:
            new_participations.append(part)
    AuditEvent.record(user, "delphi.panel.invite", target, added=[p.pseudonym for p in added])
    if target.status == Round.Status.OPEN:
        transaction.on_commit(lambda: [send_invitation(p) for p in new_participations])
    return added


def make_token(panelist: Panelist, *, now: float | None = None) -> str:
    """A personal signed link token: names the panelist and its link version, expires after the study's
    ``link_valid_days``."""
    expires = int((now or time.time()) + panelist.study.link_valid_days * 86400)
    return signing.dumps({"p": panelist.pk, "v": panelist.token_version, "e": expires}, salt=TOKEN_SALT,
                         compress=True)


def resolve_token(token: str) -> Panelist:
    """The panelist a link belongs to, or LinkError (tampered, expired, revoked, removed)."""
    try:
        data = signing.loads(token, salt=TOKEN_SALT)
    except signing.BadSignature:
        raise LinkError(gettext("This link is not valid: it may have been cut off or changed. Open the link from "
                                "your e-mail again, or ask the study coordinator for a new one."),
                        kind="invalid") from None
    if not isinstance(data, dict) or not {"p", "v", "e"} <= set(data):
        raise LinkError(gettext("This link is not valid."), kind="invalid")
    if time.time() > float(data["e"]):
        raise LinkError(gettext("This link has expired. Ask the study coordinator to send you a new one; your "
                                "answers so far are kept."), kind="expired")
    # The signed link is the panelist's credential, whichever project (if any) its bearer works in: looked up across
    # projects; the panel's views then work in the study's project (delphi.views._panelist).
    panelist = Panelist.unscoped.select_related("study").filter(pk=data["p"]).first()
    if panelist is None or panelist.is_deleted or panelist.study.is_deleted:
        raise LinkError(gettext("This link no longer opens a questionnaire: you are not on this panel."),
                        kind="revoked")
    if panelist.token_version != data["v"]:
        raise LinkError(gettext("This link was replaced by a newer one. Use the most recent e-mail from the study "
                                "coordinator."), kind="revoked")
    return panelist


HAND_OVER = ("copy", "print")


def hand_over_links(study: DelphiStudy, user, how: str, panelists=None) -> list[tuple[Panelist, str]]:
    """Personal links a coordinator hands over without e-mail (copied one at a time, or a printed list), for the
    panelists of the current round (``panelists``: some of them): (panelist, link) pairs. Each handing-over is
    audited with who, how and the pseudonyms, never the link itself; the links appear in no log."""
    if how not in HAND_OVER:
        raise DelphiError(gettext("Links are handed over by copy or print."))
    target = current_round(study)
    if target is None:
        raise DelphiError(gettext("The study has no round yet."), status=409)
    chosen = study.panelists.alive().filter(participations__round=target).order_by("pseudonym")
    if panelists is not None:
        chosen = chosen.filter(pk__in=[p.pk for p in panelists])
    links = [(panelist, panelist_url(panelist)) for panelist in chosen]
    if not links:
        raise DelphiError(gettext("Nobody on the panel of the current round yet: invite the panel first."), status=409)
    AuditEvent.record(user, "delphi.panel.links_handed", target, how=how, panelists=[p.pseudonym for p, _ in links])
    return links


def panelist_url(panelist: Panelist) -> str:
    path = reverse("delphi:panel-home", args=[make_token(panelist)])
    base = panelist.study.site_url or getattr(settings, "SITE_URL", "") or "http://127.0.0.1:8000"
    return base.rstrip("/") + path


def _mail(participation: Participation, kind: str) -> bool:
    """E-mail a panelist their personal link (``kind``: "invitation" or "reminder"), in the language the coordinator
    set for them (else the instance's)."""
    panelist = participation.panelist
    address = panelist.contact
    if not address:
        log.warning("panelist %s has no e-mail address; nothing sent", panelist.pseudonym)
        return False
    rnd = participation.round
    study = rnd.study
    with translation.override(panelist.language or settings.LANGUAGE_CODE):
        values = {"title": study.title, "round": rnd.label, "round_lower": rnd.label.lower(),
                  "name": panelist.name or gettext("expert")}
        if kind == "reminder":
            subject = gettext("Reminder: %(title)s, %(round)s") % values
            lead = gettext("Dear %(name)s,\n\nthis is a reminder: your answers to %(round_lower)s of the Delphi study "
                           "“%(title)s” are not complete yet.") % values
        else:
            subject = gettext("%(title)s: %(round)s") % values
            lead = gettext("Dear %(name)s,\n\nyou are invited to %(round_lower)s of the Delphi study “%(title)s”.") \
                % values
        deadline = ("\n" + gettext("Please answer by %(date)s.") % {"date": f"{rnd.deadline:%Y-%m-%d}"}
                    if rnd.deadline else "")
        link = gettext("Your personal link (do not share it; no account is needed; you can stop and come back at any "
                       "time):")
        valid = ngettext("The link is valid for %(days)d day.", "The link is valid for %(days)d days.",
                         study.link_valid_days) % {"days": study.link_valid_days}
    body = f"{lead}\n\n{study.invitation.strip()}\n\n{link}\n{panelist_url(panelist)}\n{deadline}\n\n{valid}\n"
    send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, [address])
    return True


def send_invitation(participation: Participation) -> bool:
    sent = _mail(participation, "invitation")
    if sent:
        Participation.objects.filter(pk=participation.pk).update(invited_at=timezone.now())
    return sent


def send_reminders(rnd: Round, *, force: bool = False, now=None) -> int:
    """Remind the open round's panelists who have not completed it. Without ``force`` only those not contacted
    for ``reminder_days`` days. Each reminder is claimed by a conditional update before it is mailed, so a
    repeated or duplicated task (or two workers at once) never sends one twice."""
    rnd = Round.objects.select_related("study").get(pk=rnd.pk)
    if rnd.status != Round.Status.OPEN:
        return 0
    now = now or timezone.now()
    sent = 0
    for part in _due(rnd, now, force=force):
        claimed = Participation.objects.filter(pk=part.pk, last_reminded_at=part.last_reminded_at).update(
            last_reminded_at=now)
        if not claimed:
            continue
        if _mail(part, "reminder"):
            Participation.objects.filter(pk=part.pk).update(reminders_sent=part.reminders_sent + 1)
            sent += 1
        else:  # not sent: due again next time
            Participation.objects.filter(pk=part.pk).update(last_reminded_at=part.last_reminded_at)
    return sent


def _due(rnd: Round, now, *, force: bool = False) -> list[Participation]:
    """Participations of an open round that have not completed and were not contacted for ``reminder_days``."""
    days = rnd.study.reminder_days
    due = []
    for part in (rnd.participations.select_related("panelist", "panelist__user", "round__study")
                 .filter(completed_at__isnull=True, withdrawn_at__isnull=True, panelist__deleted_at__isnull=True)):
        last = max(filter(None, [part.invited_at, part.last_reminded_at]), default=None)
        if not force and (not days or (last and (now - last).total_seconds() < days * 86400 - 60)):
            continue
        due.append(part)
    return due


def reconcile_reminders() -> list[int]:
    """Queue the reminders that are due (a reconciler hook run by every worker: reminders live in the database,
    not in delayed broker messages, so a broker restart loses none). Turned off by DELPHI_SCHEDULE_REMINDERS=0."""
    if not getattr(settings, "DELPHI_SCHEDULE_REMINDERS", True):
        return []
    now = timezone.now()
    queued = []
    # the reconciler looks across projects (it runs in a worker, in none); each round is read in its own project
    for rnd in Round.unscoped.filter(status=Round.Status.OPEN, study__deleted_at__isnull=True,
                                     study__reminder_days__gt=0).select_related("study"):
        with scoping.in_project(rnd.study.project_id):
            due = _due(rnd, now)
        if due:
            current_app.send_task("delphi.send_round_reminders", (rnd.pk,))
            queued.append(rnd.pk)
    return queued


# --------------------------------------------------------------------------------------------------------------
# rounds
# --------------------------------------------------------------------------------------------------------------
@transaction.atomic
def open_round(rnd: Round, user, *, deadline=None, notify: bool = True) -> Round:
    """Open a round: lock the consensus rule (round 1) and the scale version, e-mail every panelist
    (``notify=False``: no e-mail and no reminders, for demo data)."""
    rnd = Round.objects.select_for_update().select_related("study", "version").get(pk=rnd.pk)
    if rnd.status != Round.Status.DRAFT:
        raise DelphiError(gettext("%(round)s is already %(status)s.") % {
            "round": rnd.label, "status": rnd.get_status_display().lower()}, status=409)
    if rnd.study.rounds.filter(status=Round.Status.OPEN).exists():
        raise DelphiError(gettext("Another round is still open; close it first."), status=409)
    if not rnd.participations.filter(panelist__deleted_at__isnull=True).exists():
        raise DelphiError(gettext("Invite at least one panelist before opening the round."))
    now = timezone.now()
    study = rnd.study
    if not study.consensus_locked:
        DelphiStudy.objects.filter(pk=study.pk).update(consensus_locked_at=now)
        AuditEvent.record(user, "delphi.consensus.lock", study, rule=study.consensus_rule())
    if study.status == DelphiStudy.Status.SETUP:
        DelphiStudy.objects.filter(pk=study.pk).update(status=DelphiStudy.Status.RUNNING)
    with translation.override("en"):  # a stored note, in one language whoever opens the round
        reason = f"Delphi study {study.title}, {rnd.label}"
    scales.lock(rnd.version, reason)
    rnd.status, rnd.opened_at = Round.Status.OPEN, now
    if deadline:
        rnd.deadline = deadline
    rnd.save(update_fields=["status", "opened_at", "deadline"])
    AuditEvent.record(user, "delphi.round.open", rnd)
    parts = list(rnd.participations.filter(panelist__deleted_at__isnull=True).select_related("panelist__study",
                                                                                           "panelist__user", "round"))
    if notify:
        transaction.on_commit(lambda: [send_invitation(p) for p in parts])
    return rnd


def round_items(rnd: Round) -> list[Item]:
    """The items panelists rate in a round: every secondary item (binary and scale items, and the levels of levels
    items such as the Mini-CEX's item 4)."""
    return list(rnd.version.secondary_items().select_related("dimension").order_by("order"))


def _open_participation(participation: Participation) -> Participation:
    part = Participation.objects.select_for_update().select_related("round").get(pk=participation.pk)
    if part.round.status != Round.Status.OPEN:
        label = part.round.label
        if part.round.status == Round.Status.CLOSED and part.round.closed_at:
            message = gettext("%(round)s is closed on %(date)s; answers are no longer accepted.") % {
                "round": label, "date": f"{part.round.closed_at:%Y-%m-%d}"}
        elif part.round.status == Round.Status.CLOSED:
            message = gettext("%(round)s is closed.") % {"round": label}
        else:
            message = gettext("%(round)s is not open yet.") % {"round": label}
        raise DelphiError(message, status=409)
    if part.withdrawn_at:
        raise DelphiError(gettext("You were withdrawn from this round; answers are not accepted."), status=409)
    return part


@transaction.atomic
def save_answer(participation: Participation, item_id: int, *, importance: int | None = None,
                comment: str | None = None, wording: str | None = None) -> Response:
    """Store one item's answer at once (called on every change); repeated saves are harmless. ``None`` for the
    comment or the wording leaves it as it is; ``None`` for the importance clears it."""
    answer = {"importance": importance, "comment": comment, "wording": wording}
    return save_answers(participation, {item_id: answer})[0]


@transaction.atomic
def save_answers(participation: Participation, answers: dict[int, dict[str, Any]]) -> list[Response]:
    """Store a panelist's answers to several items at once (item id -> ``{"importance", "comment", "wording"}``,
    as :func:`save_answer` takes them), with its checks and history, in a handful of statements: the demo's panel
    answers whole questionnaires. All or nothing. Returns the responses in the order of ``answers``."""
    part = _open_participation(participation)
    try:
        ids = [int(item_id) for item_id in answers]
    except (TypeError, ValueError):
        raise DelphiError(gettext("That item is not part of this round's questionnaire.")) from None
    if len(set(part.round.version.secondary_items().filter(pk__in=ids).values_list("pk", flat=True))) != len(set(ids)):
        raise DelphiError(gettext("That item is not part of this round's questionnaire."))
    for answer in answers.values():
        importance = answer.get("importance")
        if importance is not None and importance not in consensus.LIKERT:
            raise DelphiError(gettext("Importance is rated from 1 (not important) to 5 (very important)."))
    now = timezone.now()
    stored = {r.item_id: r for r in Response.objects.select_for_update().filter(participation=part, item_id__in=ids)}
    responses, created, updated, changes = [], [], [], []
    for item_id, answer in zip(ids, answers.values(), strict=True):
        resp = stored.get(item_id)
        if resp is None:
            resp = stored[item_id] = Response(participation=part, item_id=item_id, created_at=now)
            old = (None, "", "")
        else:
            old = (resp.importance, resp.comment, resp.proposed_wording)
        resp.importance = answer.get("importance")
        if answer.get("comment") is not None:
            resp.comment = answer["comment"].strip()
        if answer.get("wording") is not None:
            resp.proposed_wording = answer["wording"].strip()
        new = (resp.importance, resp.comment, resp.proposed_wording)
        if resp.pk is None or new != old:
            resp.updated_at = now
            (created if resp.pk is None and resp not in created else updated).append(resp)
            changes.append((resp, old, new))
        responses.append(resp)
    Response.objects.bulk_create(created)
    Response.objects.bulk_update({r.pk: r for r in updated}.values(),
                                 ["importance", "comment", "proposed_wording", "updated_at"])
    ResponseChange.objects.bulk_create(
        ResponseChange(response=resp, changed_at=now, old_importance=old[0], new_importance=new[0],
                       old_comment=old[1], new_comment=new[1], old_wording=old[2], new_wording=new[2])
        for resp, old, new in changes)
    if part.started_at is None:
        Participation.objects.filter(pk=part.pk).update(started_at=now)
    return responses


PROFILE_FIELDS = ("gender", "age", "education", "professional_title", "working_years")
BASIS_FIELDS = ("basis_practice", "basis_theory", "basis_literature", "basis_intuition")
#: The bases of judgement as the questionnaire names them.
BASIS_NAMES = {"basis_practice": gettext_lazy("Practical experience"),
               "basis_theory": gettext_lazy("Theoretical analysis"),
               "basis_literature": gettext_lazy("Literature (domestic and foreign)"),
               "basis_intuition": gettext_lazy("Intuition")}
#: The profile's and the proposal form's fields as the questionnaire names them (in refusals).
FIELD_NAMES = {"gender": gettext_lazy("Gender"), "age": gettext_lazy("Age"), "education": gettext_lazy("Education"),
               "professional_title": gettext_lazy("Professional title"),
               "working_years": gettext_lazy("Working years"), "familiarity": gettext_lazy("Familiarity"),
               "dimension_code": gettext_lazy("Dimension")}


@transaction.atomic
def save_profile(participation: Participation, data: dict[str, Any]) -> Participation:
    """The panelist's profile (kept on the panelist) and this round's familiarity and basis of judgement."""
    part = _open_participation(participation)
    panelist = Panelist.objects.select_for_update().get(pk=part.panelist_id)
    for name in PROFILE_FIELDS:
        if name in data:
            value = data[name]
            if name in ("age", "working_years"):
                value = _int_or_none(value, FIELD_NAMES[name], 0, 100)
            else:
                value = _fitting_text(Panelist, name, value)
            setattr(panelist, name, value if value is not None else ("" if name not in ("age", "working_years")
                                                                      else None))
    panelist.save()
    if "familiarity" in data:
        fam = _int_or_none(data["familiarity"], FIELD_NAMES["familiarity"], 1, 5)
        part.familiarity = fam
    for name in BASIS_FIELDS:
        if name in data:
            value = data[name] or ""
            if value and value not in Influence.values:
                raise DelphiError(gettext("%(basis)s: choose high, medium or low.") % {"basis": BASIS_NAMES[name]})
            setattr(part, name, value)
    part.started_at = part.started_at or timezone.now()
    part.save()
    return part


def _fitting_text(model, name: str, value) -> str:
    """Text for a CharField of ``model``: at most its max_length, or a DelphiError saying so."""
    value = "" if value is None else str(value).strip()
    limit = model._meta.get_field(name).max_length
    if limit is not None and len(value) > limit:
        label = str(FIELD_NAMES.get(name) or model._meta.get_field(name).verbose_name).capitalize()
        raise DelphiError(gettext("%(field)s: at most %(limit)d characters (you gave %(given)d).") % {
            "field": label, "limit": limit, "given": len(value)})
    return value


def _int_or_none(value, label: str, low: int, high: int) -> int | None:
    if value in (None, ""):
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise DelphiError(gettext("%(field)s must be a whole number.") % {"field": str(label).capitalize()}) from None
    if not low <= number <= high:
        raise DelphiError(gettext("%(field)s must be between %(low)d and %(high)d.") % {
            "field": str(label).capitalize(), "low": low, "high": high})
    return number


@transaction.atomic
def add_proposal(participation: Participation, *, text: str, dimension_code: str = "", reason: str = "") -> Proposal:
    part = _open_participation(participation)
    if part.round.is_validation:
        raise DelphiError(gettext("The validation survey rates the agreed items; new items are proposed in Delphi "
                                  "rounds."))
    if not text.strip():
        raise DelphiError(gettext("Write the item you propose."))
    return Proposal.objects.create(participation=part, text=text.strip(),
                                   dimension_code=_fitting_text(Proposal, "dimension_code", dimension_code),
                                   reason=reason.strip())


@transaction.atomic
def withdraw_proposal(participation: Participation, proposal_id: int) -> None:
    part = _open_participation(participation)
    proposal = Proposal.objects.alive().filter(pk=proposal_id, participation=part).first()
    if proposal is None:
        raise DelphiError(gettext("No such proposal."), status=404)
    proposal.deleted_at = timezone.now()
    proposal.delete_reason = "withdrawn by the panelist"
    proposal.save(update_fields=["deleted_at", "delete_reason"])


def missing_answers(part: Participation) -> list[str]:
    """What keeps a questionnaire from being complete, in words."""
    missing = []
    answered = set(part.responses.filter(importance__isnull=False).values_list("item_id", flat=True))
    codes = [i.code for i in round_items(part.round) if i.pk not in answered]
    if codes:
        missing.append(ngettext("importance of item %(codes)s", "importance of items %(codes)s", len(codes))
                       % {"codes": ", ".join(codes)})
    if not part.round.is_validation:
        if part.familiarity is None:
            missing.append(gettext("your familiarity with the topic"))
        if any(not getattr(part, f) for f in BASIS_FIELDS):
            missing.append(gettext("the basis of your judgement (all four)"))
    return missing


@transaction.atomic
def complete(participation: Participation) -> Participation:
    part = _open_participation(participation)
    missing = missing_answers(part)
    if missing:
        raise DelphiError(gettext("Not complete yet: %(missing)s.") % {"missing": "; ".join(missing)})
    part.completed_at = part.completed_at or timezone.now()
    part.save(update_fields=["completed_at"])
    delphi_figures.refresh_round(part.round)  # the round's statistics count completed questionnaires
    return part


def participation_for(panelist: Panelist) -> Participation | None:
    """The panelist's place in the open round, else in the newest round they were on."""
    parts = list(panelist.participations.select_related("round", "round__study", "round__version")
                 .order_by("-round__number"))
    for p in parts:
        if p.round.status == Round.Status.OPEN:
            return p
    return next((p for p in parts if p.round.status == Round.Status.CLOSED), None)


# --------------------------------------------------------------------------------------------------------------
# focus group: adoption of opinions, item decisions
# --------------------------------------------------------------------------------------------------------------
def _editable_round(rnd: Round) -> Round:
    rnd = Round.objects.select_for_update().select_related("study").get(pk=rnd.pk)
    if rnd.status == Round.Status.CLOSED:
        raise DelphiError(gettext("%(round)s is closed; its decisions can no longer change.") % {"round": rnd.label},
                          status=409)
    if rnd.is_validation:
        raise DelphiError(gettext("The validation survey has no focus-group decisions."), status=409)
    return rnd


@transaction.atomic
def set_adoption(obj: Response | Proposal, value: str, user, note: str = "") -> Response | Proposal:
    """Record Adopt / Not adopt for a panelist's opinion (comment, rewording or proposed item)."""
    rnd = obj.participation.round
    _editable_round(rnd)
    if value not in Response.Adoption.values:
        raise DelphiError(gettext("Choose Adopt or Not adopt."))
    old = obj.adoption
    obj.adoption, obj.adoption_note = value, note.strip()
    obj.adoption_by, obj.adoption_at = user, timezone.now()
    obj.save(update_fields=["adoption", "adoption_note", "adoption_by", "adoption_at"])
    AuditEvent.record(user, "delphi.opinion.adoption", rnd, reason=note, kind=type(obj).__name__, id=obj.pk,
                      old=old, new=value)
    return obj


@transaction.atomic
def decide(rnd: Round, user, *, item: Item | None, action: str, reason: str = "", new_text_en: str = "",
           new_text_zh: str = "", new_guidance_en: str = "", merge_into: Item | None = None, new_code: str = "",
           dimension_code: str = "", proposal: Proposal | None = None) -> ItemDecision:
    """Record (or change) the focus group's decision on an item, or add a new item."""
    rnd = _editable_round(rnd)
    if action not in ItemDecision.Action.values:
        raise DelphiError(gettext("Choose Keep, Revise, Delete, Merge or Add."))
    version_items = {i.pk: i for i in round_items(rnd)}
    new_text_en, reason = new_text_en.strip(), reason.strip()
    if action == ItemDecision.Action.ADD:
        item = None
        codes = {i.code for i in rnd.version.items.all()}
        new_code = new_code.strip()
        if not new_text_en:
            raise DelphiError(gettext("An added item needs its wording."))
        if not new_code:
            raise DelphiError(gettext("Give the added item a code, e.g. 1.9."))
        taken = codes | set(rnd.decisions.alive().filter(action="add").exclude(new_code="")
                            .values_list("new_code", flat=True))
        if new_code in taken:
            raise DelphiError(gettext("Code %(code)s is already used in this version.") % {"code": new_code})
        dimension_code = dimension_code.strip() or new_code.split(".")[0]
        if not rnd.version.dimensions.filter(code=dimension_code).exists():
            raise DelphiError(gettext("There is no dimension %(code)s in %(version)s.") % {
                "code": dimension_code, "version": rnd.version})
    else:
        if item is None or item.pk not in version_items:
            raise DelphiError(gettext("That item is not in this round's version."))
        if action == ItemDecision.Action.REVISE and not new_text_en:
            raise DelphiError(gettext("Revise %(code)s: give the new wording.") % {"code": item.code})
        if action == ItemDecision.Action.MERGE and (
                merge_into is None or merge_into.pk not in version_items or merge_into.pk == item.pk):
            raise DelphiError(gettext("Merge %(code)s: choose another item of this version to merge it into.")
                              % {"code": item.code})
        if action in (ItemDecision.Action.DELETE, ItemDecision.Action.MERGE) and not reason:
            raise DelphiError(gettext("%(action)s %(code)s: give the reason.") % {
                "action": ItemDecision.action_name(action), "code": item.code})
    decision = (rnd.decisions.alive().filter(item=item).first() if item is not None else None) or ItemDecision(
        round=rnd, item=item)
    old = {"action": decision.action, "text": decision.new_text_en} if decision.pk else None
    decision.action, decision.reason = action, reason
    decision.new_text_en, decision.new_text_zh = new_text_en, new_text_zh.strip()
    decision.new_guidance_en = new_guidance_en.strip()
    decision.merge_into = merge_into if action == ItemDecision.Action.MERGE else None
    decision.new_code, decision.dimension_code = (new_code, dimension_code) if item is None else ("", "")
    decision.proposal = proposal
    decision.decided_by, decision.decided_at = user, timezone.now()
    decision.save()
    if proposal is not None and proposal.adoption != Response.Adoption.ADOPT:
        set_adoption(proposal, Response.Adoption.ADOPT, user, note=f"added as item {new_code}")
    AuditEvent.record(user, "delphi.item.decide", rnd, reason=reason, item=item.code if item else new_code,
                      decision=action, old=old, new_text=new_text_en)
    return decision


@transaction.atomic
def withdraw_added_item(decision: ItemDecision, user, reason: str) -> None:
    _editable_round(decision.round)
    if decision.action != ItemDecision.Action.ADD:
        raise DelphiError(gettext("Only added items are withdrawn; change other decisions to Keep instead."))
    decision.soft_delete(user, reason)


@dataclass
class CloseResult:
    round: Round
    next_version: ScaleVersion | None
    next_round: Round | None
    carried: int
    excluded: list[str]


@transaction.atomic
def close_round(rnd: Round, user, note: str = "") -> CloseResult:
    """Close a round. A Delphi round's decisions produce the next (draft) scale version; if more rounds are
    planned the next round is created with the panel that stays (completed, familiar enough)."""
    rnd = Round.objects.select_for_update().select_related("study", "version__scale").get(pk=rnd.pk)
    if rnd.status != Round.Status.OPEN:
        raise DelphiError(gettext("%(round)s is %(status)s, not open.") % {
            "round": rnd.label, "status": rnd.get_status_display().lower()}, status=409)
    study = rnd.study
    now = timezone.now()
    rnd.status, rnd.closed_at, rnd.closed_by, rnd.close_note = Round.Status.CLOSED, now, user, note.strip()
    next_version = next_round = None
    carried, excluded = 0, []
    if not rnd.is_validation:
        next_version = apply_decisions(rnd, user)
        rnd.next_version = next_version
        DelphiStudy.objects.filter(pk=study.pk).update(agreed_version=next_version)
        study.agreed_version = next_version
        stay, excluded = eligible_panel(rnd)
        if rnd.number < study.planned_rounds:
            next_round = Round.objects.create(study=study, number=rnd.number + 1, version=next_version)
            Participation.objects.bulk_create([Participation(round=next_round, panelist_id=p) for p in stay])
            carried = len(stay)
    rnd.save(update_fields=["status", "closed_at", "closed_by", "close_note", "next_version"])
    AuditEvent.record(user, "delphi.round.close", rnd, reason=note, next_version=getattr(next_version, "number", None),
                      carried=carried, excluded=excluded)
    delphi_figures.refresh_round(rnd)
    return CloseResult(rnd, next_version, next_round, carried, excluded)


def eligible_panel(rnd: Round) -> tuple[list[int], list[str]]:
    """Panelists who go on to the next round (returned the questionnaire and rated their familiarity at or
    above the threshold) and the pseudonyms of those excluded for low familiarity."""
    threshold = rnd.study.familiarity_threshold
    stay, excluded = [], []
    for part in (rnd.participations.select_related("panelist")
                 .filter(completed_at__isnull=False, withdrawn_at__isnull=True, panelist__deleted_at__isnull=True)
                 .order_by("panelist__pseudonym")):
        if part.familiarity is not None and part.familiarity >= threshold:
            stay.append(part.panelist_id)
        else:
            excluded.append(part.panelist.pseudonym)
    return stay, excluded


def apply_decisions(rnd: Round, user) -> ScaleVersion:
    """Copy the round's version into a new draft and apply Revise / Delete / Merge / Add."""
    decisions = list(rnd.decisions.alive().select_related("item", "merge_into").order_by("id"))
    counts = {a: sum(1 for d in decisions if d.action == a) for a in ItemDecision.Action.values}
    with translation.override("en"):  # a stored note: the same whoever closes the round, in whichever language
        summary = ", ".join(f"{n} {ItemDecision.action_name(a).lower()}" for a, n in counts.items()
                            if n and a != "reserve") or "no changes"
        note = f"Delphi study {rnd.study.title}, after {rnd.label.lower()}: {summary}."
    draft = scales.new_version(rnd.version, user, project=rnd.study.project_id, note=note)
    items = {i.code: i for i in draft.items.all()}
    dims = {d.code: d for d in draft.dimensions.all()}
    remove: list[str] = []
    for d in decisions:
        if d.action == ItemDecision.Action.REVISE:
            target = items[d.item.code]
            target.text_en = d.new_text_en
            if d.new_text_zh:
                target.text_zh = d.new_text_zh
            if d.new_guidance_en:
                target.guidance_en = d.new_guidance_en
            target.save()
        elif d.action == ItemDecision.Action.MERGE:
            target = items[d.merge_into.code]
            if d.new_text_en:
                target.text_en = d.new_text_en
                if d.new_text_zh:
                    target.text_zh = d.new_text_zh
                target.save()
            remove.append(d.item.code)
        elif d.action == ItemDecision.Action.DELETE:
            remove.append(d.item.code)
        elif d.action == ItemDecision.Action.ADD:
            dim = dims[d.dimension_code]
            last = max((i.order for i in items.values() if i.dimension_id == dim.pk), default=0)
            # A new item is answered like the scale items of its dimension (e.g. 0-5), else binary.
            like = max((i for i in items.values() if i.dimension_id == dim.pk
                        and i.response_type == Item.ResponseType.SCALE), key=lambda i: i.order, default=None)
            items[d.new_code] = Item.objects.create(
                version=draft, dimension=dim, code=d.new_code, order=last,
                response_type=like.response_type if like else Item.ResponseType.BINARY,
                scale_min=like.scale_min if like else None, scale_max=like.scale_max if like else None,
                anchors=like.anchors if like else {},
                text_en=d.new_text_en, text_zh=d.new_text_zh, guidance_en=d.new_guidance_en)
    for code in remove:
        item = items.pop(code, None)
        if item is not None and Item.objects.filter(pk=item.pk).exists():
            item.delete()
    # Renumber so that added items sit at the end of their dimension and the order stays dense.
    dim_order = {d.pk: d.order for d in dims.values()}
    alive = list(draft.items.all())
    alive.sort(key=lambda i: (dim_order[i.dimension_id], i.order, i.pk))
    for n, item in enumerate(alive, start=1):
        if item.order != n:
            Item.objects.filter(pk=item.pk).update(order=n)
    return draft


# --------------------------------------------------------------------------------------------------------------
# validation survey and publishing
# --------------------------------------------------------------------------------------------------------------
@transaction.atomic
def start_validation(study: DelphiStudy, user, *, copy_panel: bool = False) -> Round:
    """Create the validation survey on the agreed version (the version the last Delphi round produced)."""
    study = DelphiStudy.objects.select_for_update().get(pk=study.pk)
    if study.rounds.exclude(status=Round.Status.CLOSED).exists():
        raise DelphiError(gettext("Close or open the pending round first: a round is still in preparation or open."),
                          status=409)
    if study.rounds.filter(kind=Round.Kind.VALIDATION).exists():
        raise DelphiError(gettext("This study already has its validation survey."), status=409)
    last = last_closed_delphi_round(study)
    if last is None or study.agreed_version is None:
        raise DelphiError(gettext("Run at least one Delphi round before the validation survey."), status=409)
    number = (study.rounds.aggregate(m=Max("number"))["m"] or 0) + 1
    rnd = Round.objects.create(study=study, number=number, kind=Round.Kind.VALIDATION, version=study.agreed_version)
    if copy_panel:
        stay, _ = eligible_panel(last)
        Participation.objects.bulk_create([Participation(round=rnd, panelist_id=p) for p in stay])
    study.status = DelphiStudy.Status.VALIDATION
    study.save(update_fields=["status"])
    AuditEvent.record(user, "delphi.validation.start", rnd, version=study.agreed_version.number)
    return rnd


@transaction.atomic
def start_extra_round(study: DelphiStudy, user, reason: str) -> Round:
    """One more Delphi round than planned (e.g. consensus not reached), on the agreed version so far."""
    if not reason.strip():
        raise DelphiError(gettext("Say why another round is needed."))
    if study.rounds.exclude(status=Round.Status.CLOSED).exists() or study.rounds.filter(kind="validation").exists():
        raise DelphiError(gettext("Another round can only follow a closed Delphi round (and no validation survey)."),
                          status=409)
    last = last_closed_delphi_round(study)
    if last is None:
        raise DelphiError(gettext("No closed round yet."), status=409)
    study.planned_rounds = max(study.planned_rounds, last.number + 1)
    study.save(update_fields=["planned_rounds"])
    rnd = Round.objects.create(study=study, number=last.number + 1, version=last.next_version)
    stay, _ = eligible_panel(last)
    Participation.objects.bulk_create([Participation(round=rnd, panelist_id=p) for p in stay])
    AuditEvent.record(user, "delphi.round.extra", rnd, reason=reason)
    return rnd


@transaction.atomic
def publish_agreed(study: DelphiStudy, user) -> ScaleVersion:
    """Publish the agreed version so that annotation campaigns can use it."""
    study = DelphiStudy.objects.select_for_update().get(pk=study.pk)
    if study.agreed_version is None:
        raise DelphiError(gettext("There is no agreed version yet: close a Delphi round first."), status=409)
    if study.rounds.filter(status=Round.Status.OPEN).exists():
        raise DelphiError(gettext("A round is still open; close it before publishing."), status=409)
    version = study.agreed_version
    if version.status == ScaleVersion.Status.PUBLISHED:
        raise DelphiError(gettext("%(version)s is already published.") % {"version": version}, status=409)
    try:
        version = scales.publish(version, user)
    except ValueError as exc:
        raise DelphiError(gettext("%(version)s cannot be published: %(reason)s") % {
            "version": version, "reason": exc}) from exc
    study.status = DelphiStudy.Status.PUBLISHED
    study.save(update_fields=["status"])
    AuditEvent.record(user, "delphi.publish", study, version=version.number)
    return version


@transaction.atomic
def remove_panelist(panelist: Panelist, user, reason: str) -> None:
    """Soft delete: the panelist's link stops working; answers already given stay in the data."""
    panelist.soft_delete(user, reason)
    Panelist.objects.filter(pk=panelist.pk).update(token_version=panelist.token_version + 1)
    delphi_figures.refresh_study(panelist.study)  # the statistics leave a removed panelist out


@transaction.atomic
def new_link(panelist: Panelist, user) -> Panelist:
    """Revoke the panelist's old links and e-mail a new one for the current round."""
    Panelist.objects.filter(pk=panelist.pk).update(token_version=panelist.token_version + 1)
    panelist.refresh_from_db()
    part = participation_for(panelist)
    AuditEvent.record(user, "delphi.panel.new_link", panelist)
    if part is not None and part.round.status == Round.Status.OPEN:
        transaction.on_commit(lambda: send_invitation(part))
    return panelist


@transaction.atomic
def set_language(panelist: Panelist, user, code: str) -> Panelist:
    """The language the panellist's link opens in ('' = the language their browser asks for)."""
    from projects.language import supported

    language = supported(code) if code else ""
    if language is None:
        raise DelphiError(gettext("No language “%(code)s” on this site.") % {"code": code})
    Panelist.objects.filter(pk=panelist.pk).update(language=language)
    AuditEvent.record(user, "delphi.panel.language", panelist, language=language)
    panelist.language = language
    return panelist


@transaction.atomic
def delete_study(study: DelphiStudy, user, reason: str) -> None:
    if study.rounds.filter(status=Round.Status.OPEN).exists():
        raise DelphiError(gettext("Close the open round before deleting the study."), status=409)
    study.soft_delete(user, reason)


# --------------------------------------------------------------------------------------------------------------
# statistics loaders
# --------------------------------------------------------------------------------------------------------------
def answers_frame(rnd: Round, *, completed_only: bool = True) -> pd.DataFrame:
    """Long answers of a round: panelist (pseudonym), item (id), code, importance."""
    qs = Response.objects.filter(participation__round=rnd, importance__isnull=False,
                                 participation__panelist__deleted_at__isnull=True)
    if completed_only:
        qs = qs.filter(participation__completed_at__isnull=False)
    rows = list(qs.values_list("participation__panelist__pseudonym", "item_id", "item__code", "importance"))
    import pandas as pd  # the statistics stack loads when a round's figures are first needed, not at start-up

    return pd.DataFrame(rows, columns=["panelist", "item", "code", "importance"])


def item_stats(rnd: Round, items: list[Item] | None = None, frame: pd.DataFrame | None = None) -> dict[int, dict]:
    items = items if items is not None else round_items(rnd)
    frame = answers_frame(rnd) if frame is None else frame
    return consensus.items_table(frame, [i.pk for i in items], rnd.study.consensus_rule())


def round_summary(rnd: Round, frame: pd.DataFrame | None = None) -> dict:
    """Invited, responded, completed, positive coefficient, Ca, Cs, Cr, Kendall's W with chi-square and p."""
    frame = answers_frame(rnd) if frame is None else frame
    return consensus.round_summary(panel_rows(rnd), frame, validation=rnd.is_validation)


def panel_rows(rnd: Round) -> list[dict[str, Any]]:
    """One row per participation of a round (panelists removed from the study left out): pseudonym, whether they
    started and completed the questionnaire, their familiarity and judgement basis."""
    return [{"panelist": p.panelist.pseudonym, "started": p.started_at is not None,
             "completed": p.completed_at is not None, "familiarity": p.familiarity, "practice": p.basis_practice,
             "theory": p.basis_theory, "literature": p.basis_literature, "intuition": p.basis_intuition}
            for p in rnd.participations.filter(panelist__deleted_at__isnull=True).select_related("panelist")
            .order_by("panelist__pseudonym")]


def validation_stats(rnd: Round) -> dict:
    return consensus.validation_summary(answers_frame(rnd), instrument_rows(rnd))


def instrument_rows(rnd: Round) -> list[dict[str, str]]:
    """The items a round rates, in order: code, dimension code and dimension name."""
    return [{"code": i.code, "dimension": i.dimension.code, "dimension_name": i.dimension.name_en}
            for i in round_items(rnd)]


def feedback_for(part: Participation, items: list[Item]) -> dict[int, dict]:
    """From round 2: per item of this round, the previous round's group statistics (no identities) and the
    panelist's own previous answer. Items are matched by code; new items have no feedback."""
    rnd = part.round
    if rnd.is_validation or rnd.number < 2:
        return {}
    prev = rnd.study.rounds.filter(kind=Round.Kind.DELPHI, number=rnd.number - 1).first()
    if prev is None:
        return {}
    prev_items = {i.code: i for i in round_items(prev)}
    frame = answers_frame(prev)
    stats_by_item = consensus.items_table(frame, [i.pk for i in prev_items.values()], rnd.study.consensus_rule())
    own = {r.item.code: r for r in Response.objects.filter(participation__round=prev,
                                                           participation__panelist=part.panelist)
           .select_related("item")}
    out = {}
    for item in items:
        before = prev_items.get(item.code)
        if before is None:
            out[item.pk] = {"new": True}
            continue
        s = stats_by_item[before.pk]
        total = max(1, s["n"])
        out[item.pk] = {
            "new": False, "n": s["n"], "median": s["median"], "q1": s["q1"], "q3": s["q3"], "iqr": s["iqr"],
            "distribution": [(v, c, round(100 * c / total)) for v, c in s["distribution"].items()],
            "own": own.get(item.code), "reworded": before.text_en != item.text_en, "previous_text": before.text_en,
        }
    return out


def familiarity_label(value: int | None) -> str:
    return str(Familiarity(value).label) if value in Familiarity.values else ""


# --------------------------------------------------------------------------------------------------------------
# stored statistics (delphi/figures.py): the job that computes them
# --------------------------------------------------------------------------------------------------------------
def compute_statistics_now(rnd: Round) -> Job:
    """The statistics computed in this process (the demo loader), unless stored for the current inputs."""
    found = delphi_figures.round_figures(rnd, start=False)
    if found.fresh:
        return found.stored
    return scoring_figures.compute_now(Job.Kind.DELPHI_ROUND, {"round": rnd.pk}, project=rnd.owning_project_id)


def round_statistics(job: Job) -> dict[str, Any]:
    """The job's body (registered lazily in delphi/apps.py): the round's summary and per-item statistics."""
    rnd = Round.objects.select_related("study").get(pk=job.params["round"])
    scoring_figures.stamp(job, fingerprint=delphi_figures.inputs_fingerprint(rnd))
    items = round_items(rnd)
    frame = answers_frame(rnd)
    result: dict[str, Any] = {"summary": round_summary(rnd, frame),
                              "items": item_stats(rnd, items, frame)}
    if rnd.is_validation:
        result["validation"] = validation_stats(rnd)
    return scoring_figures.plain(result)
