"""Legacy label import: the CSV long format of DESIGN.md section 5.

``dialogue_id,rater,item,value`` plus the optional columns ``rater_kind`` (human | judge), ``judge_run``,
``created`` (ISO 8601) and ``comment``. Labels land in a campaign of phase "imported" on the corpus: one
submitted assignment per (dialogue, rater), one Label per row and a LabelChange (source "import") per label.
Raters are users by username; unknown names become external raters who cannot log in.

All-or-nothing like the dialogue import: every bad line is reported with its number (the header is line 1,
the first data row line 2) and nothing is written unless every line is good. Used by the
``import_labels`` management command; a browser upload can call :func:`import_labels` with the uploaded file.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from annotation.campaigns import CampaignError, add_rater, check_target, create_campaign
from annotation.importers import ImportRejected, LineError
from annotation.models import (
    Assignment,
    AuditEvent,
    Campaign,
    CampaignRater,
    Corpus,
    Dialogue,
    Item,
    Label,
    LabelChange,
    RaterProfile,
    Scale,
    ScaleVersion,
)
from annotation.spreadsheet import restore_cell

REQUIRED_COLUMNS = ("dialogue_id", "rater", "item", "value")
OPTIONAL_COLUMNS = ("rater_kind", "judge_run", "created", "comment")
DEFAULT_SCALE = "llm-mini-cex"
RATER_KINDS = ("human", "judge")
_IN_LOOKUP_MAX = 500


class LabelImportError(ValueError):
    """A problem with the request rather than with a line (unknown scale, campaign of another corpus...)."""


@dataclass
class LabelRow:
    line: int
    dialogue_id: str
    rater: str
    item_id: int
    item_code: str
    value: int | None  # None for free-text items, whose answer is the comment
    comment: str
    created: datetime | None


def default_campaign_name(file_name: str) -> str:
    return f"Imported labels: {file_name}"[:200]


def resolve_scale_version(slug: str = DEFAULT_SCALE, number: int | None = None) -> ScaleVersion:
    """The given published version of a scale, or its newest published version."""
    scale = Scale.objects.filter(slug=slug).first()
    if scale is None:
        raise LabelImportError(f'There is no scale "{slug}".')
    if number is None:
        version = scale.versions.filter(status=ScaleVersion.Status.PUBLISHED).order_by("-number").first()
        if version is None:
            raise LabelImportError(f'Scale "{slug}" has no published version.')
        return version
    version = scale.versions.filter(number=number).first()
    if version is None:
        raise LabelImportError(f'Scale "{slug}" has no version {number}.')
    if version.status != ScaleVersion.Status.PUBLISHED:
        raise LabelImportError(f"{version} is {version.status}; labels can only be imported on a published version.")
    return version


def _text_lines(lines: Iterable[str | bytes], errors: list[LineError]) -> Iterator[str]:
    """Decode byte lines (UTF-8, optional byte order mark); undecodable lines become errors."""
    for number, raw in enumerate(lines, start=1):
        if isinstance(raw, bytes):
            try:
                raw = raw.decode("utf-8")
            except UnicodeDecodeError:
                errors.append(LineError(number, "not valid UTF-8"))
                raw = "\n"
        if number == 1:
            raw = raw.lstrip("\ufeff")
        yield raw


def _parse_value(raw: str) -> int | None:
    """"1", "0", "1.0", " 2 " -> int; anything else -> None."""
    try:
        number = float(raw)
    except ValueError:
        return None
    return int(number) if number.is_integer() else None


def _parse_created(raw: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError:
        return None
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment)
    return moment


def _rating_items(version: ScaleVersion) -> tuple[dict[str, tuple[int, tuple[int, ...]]], dict[str, tuple[str, int]]]:
    """code -> (item id, allowed values) of the items rated on a dialogue (free-text items allow no value: their
    label's value is the comment); level code -> (parent code, value)."""
    items = {}
    levels = {}
    for item in version.items.filter(response_type__in=Item.RATED_TYPES).prefetch_related("levels"):
        items[item.code] = (item.pk, tuple(item.allowed_values()))
        for level in item.levels.all():
            levels[level.code] = (item.code, level.value)
    return items, levels


def _value_error(code: str, allowed: tuple[int, ...], raw: str) -> str:
    if allowed == (0, 1):
        return f'item {code} takes binary, 0, 1; got "{raw}"'
    if len(allowed) > 3 and allowed == tuple(range(allowed[0], allowed[-1] + 1)):
        return f'item {code} takes a whole number from {allowed[0]} to {allowed[-1]}; got "{raw}"'
    return f'item {code} takes {", ".join(map(str, allowed))}; got "{raw}"'



def parse_labels(lines: Iterable[str | bytes], version: ScaleVersion) -> tuple[list[LabelRow], list[LineError]]:
    """Read and check the CSV against the scale version (everything but the corpus and campaign)."""
    errors: list[LineError] = []
    rows: list[LabelRow] = []
    items, levels = _rating_items(version)
    reader = csv.reader(_text_lines(lines, errors))
    try:
        header = next(reader, None)
    except csv.Error as exc:
        return rows, [LineError(1, f"not readable as CSV ({exc})")]
    if header is None:
        return rows, errors + [LineError(0, "the file is empty; expected a header line "
                                            + ",".join(REQUIRED_COLUMNS))]
    columns = [name.strip().lower() for name in header]
    problems = [f'missing column "{name}"' for name in REQUIRED_COLUMNS if name not in columns]
    twice = sorted({c for c in columns if c and columns.count(c) > 1})
    problems += [f'column "{name}" appears twice' for name in twice]
    if problems:
        return rows, errors + [LineError(1, f"{p} (the header needs {','.join(REQUIRED_COLUMNS)}; optional: "
                                            f"{','.join(OPTIONAL_COLUMNS)})") for p in problems]
    index = {name: columns.index(name) for name in REQUIRED_COLUMNS + OPTIONAL_COLUMNS if name in columns}
    seen: dict[tuple[str, str, str], int] = {}
    last_line = reader.line_num
    now = timezone.now()
    while True:
        try:
            fields = next(reader, None)
        except csv.Error as exc:
            errors.append(LineError(last_line + 1, f"not readable as CSV ({exc})"))
            break
        if fields is None:
            break
        number, last_line = last_line + 1, reader.line_num
        if not fields or not any(f.strip() for f in fields):
            continue
        if len(fields) != len(columns):
            errors.append(LineError(number, f"{len(fields)} fields, but the header has {len(columns)}"))
            continue
        if any("\x00" in f for f in fields):
            errors.append(LineError(number, "contains a NUL character, which cannot be stored"))
            continue

        def get(name: str, row: list[str] = fields) -> str:
            # restore_cell: a cell our exports guarded against formula injection ('=x) reads back as it was (=x).
            return restore_cell(row[index[name]]).strip() if name in index else ""

        line_errors = []
        dialogue_id, rater, code, raw_value = get("dialogue_id"), get("rater"), get("item"), get("value")
        # A free-text item's answer may stand in the value or (as the label exports write it) in the comment.
        text_answer = code in items and not items[code][1] and bool(get("comment"))
        for name, text in (("dialogue_id", dialogue_id), ("rater", rater), ("item", code), ("value", raw_value)):
            if not text and not (name == "value" and text_answer):
                line_errors.append(f"{name} is empty")
        if len(rater) > 150:
            line_errors.append("rater names are at most 150 characters")
        kind = get("rater_kind").lower()
        if kind == "judge":
            line_errors.append("rater_kind is judge: judge labels come from judge runs and cannot be imported "
                               "as rater labels (remove the judge rows)")
        elif kind not in ("", "human"):
            line_errors.append(f'rater_kind must be human or judge, not "{get("rater_kind")}"')
        elif get("judge_run"):
            line_errors.append("judge_run is set: judge labels come from judge runs and cannot be imported")
        created = None
        if get("created"):
            created = _parse_created(get("created"))
            if created is None:
                line_errors.append(f'created "{get("created")}" is not an ISO 8601 date-time '
                                   "(e.g. 2024-03-01T14:30:00+08:00)")
            elif created > now + timedelta(days=1):
                line_errors.append(f'created "{get("created")}" is in the future')
                created = None
        value = None
        comment = get("comment")
        if code and code not in items:
            if code in levels:
                parent, level_value = levels[code]
                line_errors.append(f'item "{code}" is a level of item {parent}: use item "{parent}" '
                                   f"with value {level_value}")
            else:
                line_errors.append(f'unknown item "{code}" (rating items of {version}: {", ".join(items)})')
        elif code and raw_value and not items[code][1]:  # a free-text item: the value is the comment
            if comment:
                line_errors.append(f"item {code} is a free-text item: its value is the comment; leave the comment "
                                   "column empty")
            comment = raw_value
        elif code and raw_value:
            value = _parse_value(raw_value)
            allowed = items[code][1]
            if value not in allowed:
                line_errors.append(_value_error(code, allowed, raw_value))
        key = (dialogue_id, rater, code)
        if all(key) and key in seen:
            line_errors.append(f'duplicate label: dialogue "{dialogue_id}", rater "{rater}", item {code} '
                               f"is already on line {seen[key]}")
        elif all(key):
            seen[key] = number
        if line_errors:
            errors.extend(LineError(number, message) for message in line_errors)
            continue
        rows.append(LabelRow(line=number, dialogue_id=dialogue_id, rater=rater, item_id=items[code][0],
                             item_code=code, value=value, comment=comment, created=created))
    if not rows and not errors:
        errors.append(LineError(0, "the file contains no labels"))
    return rows, errors


def _find_campaign(name: str, corpus: Corpus, scale_version: ScaleVersion | None) -> Campaign | None:
    campaign = Campaign.objects.filter(name=name).select_related("scale_version").first()
    if campaign is None:
        return None
    if campaign.is_deleted:
        raise LabelImportError(f'Campaign "{name}" was deleted; choose another name with --campaign.')
    if campaign.corpus_id != corpus.pk:
        raise LabelImportError(f'Campaign "{name}" rates corpus "{campaign.corpus}", not "{corpus}".')
    if campaign.phase != Campaign.Phase.IMPORTED:
        raise LabelImportError(f'Campaign "{name}" is a {campaign.get_phase_display().lower()} campaign; '
                               "imported labels go to a campaign of their own (choose another --campaign).")
    if scale_version is not None and campaign.scale_version_id != scale_version.pk:
        raise LabelImportError(f'Campaign "{name}" uses {campaign.scale_version}, not {scale_version}.')
    return campaign


def _dialogues(corpus: Corpus, ext_ids: set[str]) -> dict[str, tuple[int, bool]]:
    """external id -> (pk, soft-deleted?) in one query."""
    qs = Dialogue.objects.filter(corpus=corpus)
    if len(ext_ids) <= _IN_LOOKUP_MAX:
        qs = qs.filter(external_id__in=ext_ids)
    return {ext: (pk, deleted is not None)
            for ext, pk, deleted in qs.values_list("external_id", "pk", "deleted_at") if ext in ext_ids}


def _external_rater(username: str):
    User = get_user_model()
    user = User(username=username, is_active=False)
    user.set_unusable_password()
    user.save()
    profile = RaterProfile.for_user(user)
    profile.is_external = True
    profile.save(update_fields=["is_external"])
    return user


@transaction.atomic
def import_labels(corpus: Corpus, lines: Iterable[str | bytes], *, file_name: str, campaign_name: str | None = None,
                  scale_version: ScaleVersion | None = None, user=None) -> dict[str, Any]:
    """Import a label CSV into an "imported" campaign on ``corpus``, or raise ImportRejected and write nothing.

    The campaign is ``campaign_name`` (default "Imported labels: <file name>"); an existing imported campaign of
    that name on this corpus is reused (labels it already holds are refused), otherwise one is created on
    ``scale_version`` (default: the newest published version of the Mini-CEX) with overlap = the most raters
    any dialogue has. Raises LabelImportError for problems that are not about a line.
    """
    name = (campaign_name or default_campaign_name(file_name)).strip()[:200]
    campaign = _find_campaign(name, corpus, scale_version)
    version = campaign.scale_version if campaign else (scale_version or resolve_scale_version())
    if version.status != ScaleVersion.Status.PUBLISHED:
        raise LabelImportError(f"{version} is {version.status}; labels can only be imported on a published version.")
    check_target(version, corpus, LabelImportError)
    rows, errors = parse_labels(lines, version)

    dialogues = _dialogues(corpus, {r.dialogue_id for r in rows})
    existing_labels: dict[tuple[int, str, int], int] = {}
    existing_assignments: dict[tuple[int, str], Assignment] = {}
    if campaign is not None:
        for assignment in Assignment.objects.filter(campaign=campaign).select_related("rater"):
            existing_assignments[(assignment.dialogue_id, assignment.rater.username)] = assignment
        for d, r, i in Label.objects.filter(campaign=campaign).values_list("dialogue_id", "rater__username", "item_id"):
            existing_labels[(d, r, i)] = 1
    for row in rows:
        found = dialogues.get(row.dialogue_id)
        if found is None:
            errors.append(LineError(row.line, f'dialogue "{row.dialogue_id}" is not in corpus "{corpus.name}"'))
        elif found[1]:
            errors.append(LineError(row.line, f'dialogue "{row.dialogue_id}" was deleted from corpus "{corpus.name}"'))
        elif (found[0], row.rater, row.item_id) in existing_labels:
            errors.append(LineError(row.line, f'campaign "{name}" already has rater "{row.rater}"\'s label on '
                                              f'item {row.item_code} of dialogue "{row.dialogue_id}"'))
    if errors:
        raise ImportRejected(sorted(errors, key=lambda e: e.line))

    # Everything is valid: write.
    now = timezone.now()
    raters_per_dialogue: dict[int, set[str]] = defaultdict(set)
    for dialogue_id, rater in existing_assignments:
        raters_per_dialogue[dialogue_id].add(rater)
    for row in rows:
        raters_per_dialogue[dialogues[row.dialogue_id][0]].add(row.rater)
    overlap = max(len(r) for r in raters_per_dialogue.values())
    campaign_created = campaign is None
    if campaign is None:
        try:
            campaign = create_campaign(name=name, corpus=corpus, scale_version=version, overlap=overlap,
                                       phase=Campaign.Phase.IMPORTED, user=user,
                                       instructions=f"Labels imported from {file_name}.")
        except CampaignError as exc:
            raise LabelImportError(str(exc)) from exc
    elif overlap > campaign.overlap:
        campaign.overlap = overlap
        campaign.save(update_fields=["overlap"])

    User = get_user_model()
    names = sorted({row.rater for row in rows})
    users = {u.username: u for u in User.objects.filter(username__in=names)}
    created_raters = [n for n in names if n not in users]
    for username in created_raters:
        users[username] = _external_rater(username)
    on_campaign = set(CampaignRater.objects.filter(campaign=campaign).values_list("user__username", flat=True))
    for username in names:
        if username not in on_campaign:
            add_rater(campaign, users[username], added_by=user)

    # One submitted assignment per (dialogue, rater), timed by its labels' created stamps.
    groups: dict[tuple[int, str], list[LabelRow]] = defaultdict(list)
    for row in rows:
        groups[(dialogues[row.dialogue_id][0], row.rater)].append(row)
    position: dict[int, int] = defaultdict(int)
    for assignment in existing_assignments.values():
        position[assignment.rater_id] = max(position[assignment.rater_id], assignment.position)
    assignments = dict(existing_assignments)
    new_assignments = []
    for key, group in groups.items():
        if key in assignments:
            continue
        dialogue_pk, rater = key
        stamps = [r.created for r in group if r.created is not None]
        rater_id = users[rater].pk
        position[rater_id] += 1
        assignments[key] = Assignment(
            campaign=campaign, dialogue_id=dialogue_pk, rater_id=rater_id, status=Assignment.Status.SUBMITTED,
            position=position[rater_id], created_at=min(stamps, default=now), started_at=min(stamps, default=now),
            submitted_at=max(stamps, default=now))
        new_assignments.append(assignments[key])
    Assignment.objects.bulk_create(new_assignments, batch_size=1000)

    labels = []
    for row in rows:
        dialogue_pk = dialogues[row.dialogue_id][0]
        stamp = row.created or now
        labels.append(Label(
            assignment_id=assignments[(dialogue_pk, row.rater)].pk, campaign=campaign, dialogue_id=dialogue_pk,
            rater_id=users[row.rater].pk, item_id=row.item_id, value=row.value, comment=row.comment,
            created_at=stamp, updated_at=stamp))
    Label.objects.bulk_create(labels, batch_size=1000)
    reason = f"imported from {file_name}"
    LabelChange.objects.bulk_create([
        LabelChange(label_id=label.pk, changed_by=user, changed_at=label.created_at, old_value=None,
                    new_value=label.value, new_comment=label.comment, source=LabelChange.Source.IMPORT,
                    reason=reason)
        for label in labels], batch_size=1000)
    counts = {
        "labels": len(labels), "assignments": len(new_assignments), "dialogues": len({r.dialogue_id for r in rows}),
        "raters": len(names), "raters_created": len(created_raters), "campaign": campaign.name,
        "campaign_created": campaign_created, "overlap": campaign.overlap,
    }
    AuditEvent.record(user, "labels.import", campaign, reason=reason, file=file_name,
                      **{k: v for k, v in counts.items() if k not in ("campaign",)})
    return counts

