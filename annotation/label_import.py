"""Legacy label import: the CSV long format of DESIGN.md section 5.

``dialogue_id,rater,item,value`` plus the optional columns ``rater_kind`` (human | judge), ``judge_run``,
``created`` (ISO 8601), ``comment``, ``status``, ``item_language`` (en, zh or empty: the language of the item text
the physician saw, kept with the label) and, for judge rows, ``judge_model``, ``prompt`` and ``raw_response``.
The label exports' files read back as they are: their ``status`` column (where the physician's dialogue stood) may be
empty or ``submitted``; a row of an answer that was not submitted is refused (its line says so), since the imported
labels count as submitted, and the reports count submitted answers only.
Physicians' labels (``rater_kind`` human or empty) land in a campaign of phase "imported" on the corpus: one
submitted assignment per (dialogue, rater), one Label per row and a LabelChange (source "import") per label.
Raters are users by username; unknown names become external raters who cannot log in.

An existing judge's scores (``rater_kind`` judge) become an *imported judge run* per judge (its ``rater`` name and
``judge_run`` label), with the file's name and SHA-256, the model, the date and who imported it. Those runs are
judge runs of the scoring app, which this app does not import (scoring depends on annotation, never the other way):
scoring registers the writer with :func:`register_judge_importer`. A judge row may leave ``value`` empty when its
``raw_response`` holds the judge's answer; the writer then reads the score from it (the instrument's
``judge_keys``).

All-or-nothing like the dialogue import: every bad line is reported with its number (the header is line 1,
the first data row line 2) and nothing is written unless every line is good; :func:`annotation.importers.
group_errors` gives one line per distinct message with its count and first line numbers. Used by the
``import_labels`` management command; a browser upload can call :func:`import_labels` with the uploaded file.
"""

from __future__ import annotations

import csv
import hashlib
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from annotation import scores
from annotation.campaigns import CampaignError, add_rater, check_target, create_campaign
from annotation.importers import ImportRejected, LineError
from annotation.models import (
    Assignment,
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
from annotation.signals import send_labels_changed
from core.site.spreadsheet import restore_cell
from projects.models import AuditEvent, Membership
from projects.roles import PHYSICIAN

REQUIRED_COLUMNS = ("dialogue_id", "rater", "item", "value")
OPTIONAL_COLUMNS = ("rater_kind", "judge_run", "created", "comment", "status", "item_language", "judge_model",
                    "prompt", "raw_response")
JUDGE_COLUMNS = ("judge_model", "prompt", "raw_response")
DEFAULT_SCALE = "llm-mini-cex"
RATER_KINDS = ("human", "judge")
IMPORTED_STATUS = "submitted"  # an imported label counts as submitted (the exports' status column)
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
    value: int | float | None  # None for free-text items (their answer is the comment), or a judge's raw response
    comment: str
    created: datetime | None
    kind: str = "human"
    judge_run: str = ""
    judge_model: str = ""
    prompt: str = ""
    raw_response: str = ""
    unscored: str = ""  # a judge's row whose raw response gives no score, imported unscored: why
    item_language: str = ""  # the language of the item text the rater saw (the exports' column), "" not recorded

    @property
    def is_judge(self) -> bool:
        return self.kind == "judge"


class JudgeImporter(Protocol):
    """Writes judge rows as imported judge runs (registered by the scoring app)."""

    def check(self, corpus: Corpus, version: ScaleVersion, rows: list[LabelRow], dialogues: dict[str, int],
              sha256: str, skip_unscored: bool = False) -> list[LineError]:
        """Line errors of the judge rows (reading scores from raw responses, a file imported before...). With
        ``skip_unscored`` a raw response that gives no score is no error: its row is marked ``unscored`` (why)."""

    def write(self, corpus: Corpus, version: ScaleVersion, rows: list[LabelRow], dialogues: dict[str, int], *,
              file_name: str, sha256: str, user=None) -> list[dict[str, Any]]:
        """Create the runs; one summary per run."""


_judge_importer: list[JudgeImporter] = []


def register_judge_importer(importer: JudgeImporter) -> None:
    """Called once by the scoring app: where judge rows go."""
    _judge_importer[:] = [importer]


def default_campaign_name(file_name: str, corpus: Corpus) -> str:
    """The campaign a file's labels go to when none is named: the file and the corpus, so the same file name on two
    corpora (campaign names are unique in a project) makes two campaigns."""
    return f"Imported labels: {file_name} on {corpus.name}"[:200]


def legacy_campaign_name(file_name: str) -> str:
    """The default name before it named the corpus: a campaign of that name on the same corpus is still added to."""
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


def _parse_value(raw: str) -> int | float | None:
    """"1", "0", "1.0", " 2 ", "4.5", "4,5" -> a score (checked against the item's grid by the caller); anything
    else -> None."""
    try:
        return scores.parse(raw)
    except ValueError:
        return None


def _parse_created(raw: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError:
        return None
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment)
    return moment


def _rating_items(version: ScaleVersion) -> tuple[dict[str, tuple[int, tuple[int | float, ...]]],
                                                    dict[str, tuple[str, int]]]:
    """code -> (item id, allowed values) of the items rated on a dialogue (free-text items allow no value: their
    label's value is the comment); level code -> (parent code, value)."""
    items = {}
    levels = {}
    for item in version.items.filter(response_type__in=Item.RATED_TYPES).prefetch_related("levels"):
        items[item.code] = (item.pk, tuple(item.allowed_values()))
        for level in item.levels.all():
            levels[level.code] = (item.code, level.value)
    return items, levels


def _value_error(code: str, allowed: tuple[int | float, ...], raw: str) -> str:
    if allowed == (0, 1):
        return f'item {code} takes binary, 0, 1; got "{raw}"'
    return f'item {code} takes {scores.describe(allowed)}; got "{raw}"'


def _status_errors(status: str) -> list[str]:
    """A row's ``status`` (the label exports' column): empty or submitted is imported; an answer that was not
    submitted is refused rather than counted as submitted."""
    if not status or status.lower() == IMPORTED_STATUS:
        return []
    if status.lower() in Assignment.Status.values:
        return [f'status "{status}": only submitted answers are imported (imported labels count as submitted, and '
                "the reports count submitted answers only); export the labels of submitted dialogues only "
                "(export_labels --submitted-only) or remove these rows"]
    return [f'status must be "{IMPORTED_STATUS}" or empty, not "{status}"']


def row_text(fields: list[str], index: dict[str, int], name: str) -> str:
    """A long text cell as written (a judge's prompt or raw response): only the spreadsheet guard is undone."""
    return restore_cell(fields[index[name]]) if name in index else ""


_HEADER_HINT = f"(the header needs {','.join(REQUIRED_COLUMNS)}; optional: {','.join(OPTIONAL_COLUMNS)})"
_JUDGE_VALUE_HINT = " (a judge's row may leave it empty when raw_response holds the judge's answer)"


@dataclass
class _Cells:
    """One data line's cells by column name."""

    fields: list[str]
    index: dict[str, int]

    def get(self, name: str) -> str:
        """A short cell, stripped ("" for a column the file does not have). restore_cell: a cell our exports guarded
        against formula injection ('=x) reads back as it was (=x)."""
        return restore_cell(self.fields[self.index[name]]).strip() if name in self.index else ""

    def text(self, name: str) -> str:
        return row_text(self.fields, self.index, name)


def _read_header(reader: Iterator[list[str]], errors: list[LineError]) -> list[str] | None:
    """The header's column names, lower case; None when the file cannot be read further (``errors`` says why: a
    header that is not CSV at all is then the file's only error)."""
    try:
        header = next(reader, None)
    except csv.Error as exc:
        errors[:] = [LineError(1, f"not readable as CSV ({exc})")]
        return None
    if header is None:
        errors.append(LineError(0, "the file is empty; expected a header line " + ",".join(REQUIRED_COLUMNS)))
        return None
    columns = [name.strip().lower() for name in header]
    problems = [f'missing column "{name}"' for name in REQUIRED_COLUMNS if name not in columns]
    twice = sorted({c for c in columns if c and columns.count(c) > 1})
    problems += [f'column "{name}" appears twice' for name in twice]
    if problems:
        errors.extend(LineError(1, f"{problem} {_HEADER_HINT}") for problem in problems)
        return None
    return columns


def _data_lines(reader, errors: list[LineError]) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of each record after the header. A line number counts the file's lines, so a quoted cell
    spanning lines moves the next record's number on; a record the CSV reader cannot read ends the file."""
    last_line = reader.line_num
    while True:
        try:
            fields = next(reader, None)
        except csv.Error as exc:
            errors.append(LineError(last_line + 1, f"not readable as CSV ({exc})"))
            return
        if fields is None:
            return
        number, last_line = last_line + 1, reader.line_num
        yield number, fields


def _shape_error(fields: list[str], width: int) -> str | None:
    """Why a record cannot be read as a row of the header's columns."""
    if len(fields) != width:
        return f"{len(fields)} fields, but the header has {width}"
    if any("\x00" in f for f in fields):
        return "contains a NUL character, which cannot be stored"
    return None


def _created(raw: str, now: datetime) -> tuple[datetime | None, list[str]]:
    """The ``created`` cell as a moment (None when empty or wrong), and what is wrong with it."""
    if not raw:
        return None, []
    created = _parse_created(raw)
    if created is None:
        return None, [f'created "{raw}" is not an ISO 8601 date-time (e.g. 2024-03-01T14:30:00+08:00)']
    if created > now + timedelta(days=1):
        return None, [f'created "{raw}" is in the future']
    return created, []


def _rater_errors(cells: _Cells, kind: str) -> list[str]:
    """The rater's name and kind, and the columns that only a judge's rows (or only a physician's) may fill."""
    errors = []
    if len(cells.get("rater")) > 150:
        errors.append("rater names are at most 150 characters")
    if kind not in RATER_KINDS:
        errors.append(f'rater_kind must be human or judge, not "{cells.get("rater_kind")}"')
    elif kind == "human" and cells.get("judge_run"):
        errors.append("judge_run is set on a physician's row (rater_kind human): it names the run of a judge's rows "
                      "(rater_kind judge)")
    elif kind == "human" and any(cells.get(name) for name in JUDGE_COLUMNS):
        given = ", ".join(name for name in JUDGE_COLUMNS if cells.get(name))
        errors.append(f"{given} set on a physician's row (rater_kind human): these columns describe a judge's rows "
                      "(rater_kind judge)")
    errors += _status_errors(cells.get("status"))
    if kind == "judge" and len(cells.get("judge_model")) > 200:
        errors.append("judge_model is at most 200 characters")
    if kind == "judge" and len(cells.get("judge_run")) > 100:
        errors.append("judge_run is at most 100 characters")
    return errors


class _LineChecker:
    """Checks data lines against a scale version's rating items, remembering each label's first line to refuse a
    second one."""

    def __init__(self, version: ScaleVersion, items: dict[str, tuple[int, tuple[int | float, ...]]],
                 levels: dict[str, tuple[str, int]], index: dict[str, int]):
        self.version, self.items, self.levels, self.index = version, items, levels, index
        self.seen: dict[tuple[str, str, str, str, str], int] = {}
        self.now = timezone.now()

    def check(self, number: int, fields: list[str]) -> tuple[LabelRow | None, list[str]]:
        """The line's label, or None and what is wrong with the line."""
        cells = _Cells(fields, self.index)
        kind = cells.get("rater_kind").lower() or "human"
        dialogue_id, rater, code, raw_value = (cells.get(name) for name in REQUIRED_COLUMNS)
        errors = self._empty_cells(cells, kind) + _rater_errors(cells, kind)
        created, created_errors = _created(cells.get("created"), self.now)
        errors += created_errors
        item_language = cells.get("item_language")
        if item_language and (item_language not in ("en", "zh") or kind == "judge"):
            errors.append(f'item_language "{item_language}": en, zh or empty (physicians\' rows only)')
        value, comment, value_errors = self._answer(code, kind, raw_value, cells.get("comment"))
        errors += value_errors
        judge_run = cells.get("judge_run") if kind == "judge" else ""
        errors += self._duplicate(number, (dialogue_id, rater, code, kind, judge_run))
        if errors:
            return None, errors
        return LabelRow(line=number, dialogue_id=dialogue_id, rater=rater, item_id=self.items[code][0],
                        item_code=code, value=value, comment=comment, created=created, kind=kind,
                        judge_run=judge_run, judge_model=cells.get("judge_model"), prompt=cells.text("prompt"),
                        raw_response=cells.text("raw_response"), item_language=item_language), []

    def _empty_cells(self, cells: _Cells, kind: str) -> list[str]:
        code, raw_value = cells.get("item"), cells.get("value")
        # A judge's row may leave its value to its raw response (the score is read from the judge's answer).
        from_response = kind == "judge" and not raw_value and bool(cells.text("raw_response"))
        # A free-text item's answer may stand in the value or (as the label exports write it) in the comment.
        text_answer = code in self.items and not self.items[code][1] and bool(cells.get("comment"))
        return [f"{name} is empty" + (_JUDGE_VALUE_HINT if name == "value" and kind == "judge" else "")
                for name in REQUIRED_COLUMNS
                if not cells.get(name) and not (name == "value" and (from_response or text_answer))]

    def _answer(self, code: str, kind: str, raw_value: str,
                comment: str) -> tuple[int | float | None, str, list[str]]:
        """(value, comment, errors) of the line's item: a score on the item's grid, or a free-text item's answer
        (which is the label's comment)."""
        if not code:
            return None, comment, []
        if code not in self.items:
            if code in self.levels:
                parent, level_value = self.levels[code]
                return None, comment, [f'item "{code}" is a level of item {parent}: use item "{parent}" with value '
                                       f"{level_value}"]
            return None, comment, [f'unknown item "{code}" (rating items of {self.version}: {", ".join(self.items)})']
        allowed = self.items[code][1]
        if kind == "judge" and not allowed:
            return None, comment, [f"item {code} is a free-text item: judges score rated items only"]
        if not raw_value:
            return None, comment, []
        if not allowed:  # a free-text item: the value is the comment
            errors = [f"item {code} is a free-text item: its value is the comment; leave the comment column "
                      "empty"] if comment else []
            return None, raw_value, errors
        value = _parse_value(raw_value)
        if value not in allowed:
            return None, comment, [_value_error(code, allowed, raw_value)]
        return value, comment, []

    def _duplicate(self, number: int, key: tuple[str, str, str, str, str]) -> list[str]:
        """A second label of the same dialogue, rater and item (and judge run) is refused."""
        if not all(key[:3]):
            return []
        if key in self.seen:
            dialogue_id, rater, code = key[:3]
            return [f'duplicate label: dialogue "{dialogue_id}", rater "{rater}", item {code} is already on line '
                    f"{self.seen[key]}"]
        self.seen[key] = number
        return []


def parse_labels(lines: Iterable[str | bytes], version: ScaleVersion) -> tuple[list[LabelRow], list[LineError]]:
    """Read and check the CSV against the scale version (everything but the corpus and campaign)."""
    errors: list[LineError] = []
    rows: list[LabelRow] = []
    items, levels = _rating_items(version)
    reader = csv.reader(_text_lines(lines, errors))
    columns = _read_header(reader, errors)
    if columns is None:
        return rows, errors
    index = {name: columns.index(name) for name in REQUIRED_COLUMNS + OPTIONAL_COLUMNS if name in columns}
    checker = _LineChecker(version, items, levels, index)
    for number, fields in _data_lines(reader, errors):
        if not any(f.strip() for f in fields):
            continue
        problem = _shape_error(fields, len(columns))
        if problem:
            errors.append(LineError(number, problem))
            continue
        row, line_errors = checker.check(number, fields)
        errors.extend(LineError(number, message) for message in line_errors)
        if row is not None:
            rows.append(row)
    if not rows and not errors:
        errors.append(LineError(0, "the file contains no labels"))
    return rows, errors


def _find_campaign(name: str, corpus: Corpus, scale_version: ScaleVersion | None) -> Campaign | None:
    campaign = Campaign.objects.filter(name=name, project=corpus.project_id).select_related("scale_version").first()
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


def _raters_outside_project(rows: list[LabelRow], project) -> list[LineError]:
    """Rows naming a login account that is not a physician of the corpus's project. Their labels would be attributed
    to a person outside the study (user names are instance-wide); external raters of earlier imports may recur."""
    names = {row.rater for row in rows}
    if not names:
        return []
    accounts = set(get_user_model().objects.filter(username__in=names).exclude(rater_profile__is_external=True)
                   .values_list("username", flat=True))
    members = set(Membership.objects.filter(project=project, role=PHYSICIAN, user__username__in=accounts)
                  .values_list("user__username", flat=True))
    return [LineError(row.line, f'rater "{row.rater}" is an account that is not a physician of project '
                                f'"{project.name}": add them to the project first (manage.py project add '
                                f'"{project.name}" {row.rater} physician), or give this rater another name in the file')
            for row in rows if row.rater in accounts - members]


def _external_rater(username: str):
    User = get_user_model()
    user = User(username=username, is_active=False)
    user.set_unusable_password()
    user.save()
    RaterProfile.objects.create(user=user, is_external=True)
    return user


def _check_rater_kind(rater_kind: str | None) -> None:
    if rater_kind is not None and rater_kind not in Campaign.RaterKind.values:
        raise LabelImportError(f'rater kind "{rater_kind}" is not one of '
                               f'{", ".join(v for v in Campaign.RaterKind.values if v)}.')


def _target_campaign(corpus: Corpus, file_name: str, campaign_name: str | None, scale_version: ScaleVersion | None,
                     rater_kind: str | None) -> tuple[str, Campaign | None]:
    """The name of the campaign the labels go to, and the campaign when it exists: the one named, else the file's
    default campaign on this corpus, else one an earlier import of this file made under the name used before."""
    name = (campaign_name or default_campaign_name(file_name, corpus)).strip()[:200]
    campaign = _find_campaign(name, corpus, scale_version)
    if campaign is None and not campaign_name:
        legacy = Campaign.objects.filter(name=legacy_campaign_name(file_name), corpus=corpus,
                                         phase=Campaign.Phase.IMPORTED, deleted_at__isnull=True).first()
        if legacy is not None:
            name = legacy.name
            campaign = _find_campaign(name, corpus, scale_version)
    if campaign is not None and rater_kind and campaign.rater_kind and campaign.rater_kind != rater_kind:
        raise LabelImportError(f'Campaign "{name}" holds labels of {campaign.get_rater_kind_display().lower()}, not '
                               f'{Campaign.RaterKind(rater_kind).label.lower()}: import these into another campaign '
                               "(--campaign).")
    return name, campaign


def _import_version(corpus: Corpus, campaign: Campaign | None, scale_version: ScaleVersion | None) -> ScaleVersion:
    """The scale version the labels are read on: the campaign's, else the one given, else the newest Mini-CEX."""
    version = campaign.scale_version if campaign else (scale_version or resolve_scale_version())
    if version.status != ScaleVersion.Status.PUBLISHED:
        raise LabelImportError(f"{version} is {version.status}; labels can only be imported on a published version.")
    check_target(version, corpus, LabelImportError)
    return version


def _existing_work(campaign: Campaign | None, rows: list[LabelRow]) -> tuple[dict[tuple[int, str], Assignment],
                                                                             set[tuple[int, str, int]]]:
    """A reused campaign's assignments by (dialogue, rater name), and its labels as (dialogue, rater name, item)."""
    assignments: dict[tuple[int, str], Assignment] = {}
    labels: set[tuple[int, str, int]] = set()
    if campaign is not None and rows:
        for assignment in Assignment.objects.filter(campaign=campaign).select_related("rater"):
            assignments[(assignment.dialogue_id, assignment.rater.username)] = assignment
        labels = set(Label.objects.filter(campaign=campaign).values_list("dialogue_id", "rater__username", "item_id"))
    return assignments, labels


def _dialogue_errors(rows: list[LabelRow], dialogues: dict[str, tuple[int, bool]], existing_labels: set,
                     corpus: Corpus, campaign_name: str) -> list[LineError]:
    """Rows whose dialogue is not in the corpus (or was deleted), and labels the campaign already holds."""
    errors = []
    for row in rows:
        found = dialogues.get(row.dialogue_id)
        if found is None:
            errors.append(LineError(row.line, f'dialogue "{row.dialogue_id}" is not in corpus "{corpus.name}"'))
        elif found[1]:
            errors.append(LineError(row.line, f'dialogue "{row.dialogue_id}" was deleted from corpus "{corpus.name}"'))
        elif not row.is_judge and (found[0], row.rater, row.item_id) in existing_labels:
            errors.append(LineError(row.line, f'campaign "{campaign_name}" already has rater "{row.rater}"\'s label '
                                              f'on item {row.item_code} of dialogue "{row.dialogue_id}"'))
    return errors


def _judge_errors(corpus: Corpus, version: ScaleVersion, judge_rows: list[LabelRow], dialogues: dict[str, int],
                  sha256: str, skip_unscored: bool) -> list[LineError]:
    if judge_rows and not _judge_importer:
        return [LineError(0, "judge rows (rater_kind judge) need the scoring app, which is not installed")]
    if judge_rows:
        return _judge_importer[0].check(corpus, version, judge_rows, dialogues, sha256, skip_unscored)
    return []


def _campaign_to_write(campaign: Campaign | None, name: str, corpus: Corpus, version: ScaleVersion, overlap: int, *,
                       file_name: str, user, rater_kind: str | None) -> Campaign:
    """The campaign the labels are written to, created when new; its overlap grows to the most raters a dialogue
    has, and a stated rater kind is recorded on it."""
    if campaign is None:
        try:
            campaign = create_campaign(name=name, corpus=corpus, scale_version=version, overlap=overlap,
                                       phase=Campaign.Phase.IMPORTED, user=user,
                                       instructions=f"Labels imported from {file_name}.")
        except CampaignError as exc:
            raise LabelImportError(str(exc)) from exc
    if rater_kind and campaign.rater_kind != rater_kind:
        campaign.rater_kind = rater_kind
        campaign.save(update_fields=["rater_kind"])
    elif overlap > campaign.overlap:
        campaign.overlap = overlap
        campaign.save(update_fields=["overlap"])
    return campaign


def _overlap(rows: list[LabelRow], dialogues: dict[str, tuple[int, bool]],
             existing: dict[tuple[int, str], Assignment]) -> int:
    """The most raters any dialogue has, counting the campaign's earlier assignments."""
    raters_per_dialogue: dict[int, set[str]] = defaultdict(set)
    for dialogue_id, rater in existing:
        raters_per_dialogue[dialogue_id].add(rater)
    for row in rows:
        raters_per_dialogue[dialogues[row.dialogue_id][0]].add(row.rater)
    return max(len(r) for r in raters_per_dialogue.values())


def _raters(campaign: Campaign, names: list[str], user) -> tuple[dict[str, Any], list[str]]:
    """The raters' accounts by name (an unknown name becomes an external rater) and the names created; every one
    of them is a rater of the campaign."""
    users = {u.username: u for u in get_user_model().objects.filter(username__in=names)}
    created = [n for n in names if n not in users]
    for username in created:
        users[username] = _external_rater(username)
    on_campaign = set(CampaignRater.objects.filter(campaign=campaign).values_list("user__username", flat=True))
    for username in names:
        if username not in on_campaign:
            add_rater(campaign, users[username], added_by=user)
    return users, created


def _write_assignments(campaign: Campaign, rows: list[LabelRow], dialogues: dict[str, tuple[int, bool]],
                       users: dict[str, Any], existing: dict[tuple[int, str], Assignment],
                       now: datetime) -> tuple[dict[tuple[int, str], Assignment], list[Assignment]]:
    """One submitted assignment per (dialogue, rater), timed by its labels' created stamps, after each rater's
    earlier ones in the campaign. Returns every assignment by (dialogue, rater name), and the new ones."""
    groups: dict[tuple[int, str], list[LabelRow]] = defaultdict(list)
    for row in rows:
        groups[(dialogues[row.dialogue_id][0], row.rater)].append(row)
    position: dict[int, int] = defaultdict(int)
    for assignment in existing.values():
        position[assignment.rater_id] = max(position[assignment.rater_id], assignment.position)
    assignments = dict(existing)
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
    return assignments, new_assignments


def _write_labels(campaign: Campaign, rows: list[LabelRow], dialogues: dict[str, tuple[int, bool]],
                  users: dict[str, Any], assignments: dict[tuple[int, str], Assignment], now: datetime, *,
                  reason: str, user) -> list[Label]:
    """One label per row, and its history's first entry (source "import")."""
    labels = []
    for row in rows:
        dialogue_pk = dialogues[row.dialogue_id][0]
        stamp = row.created or now
        labels.append(Label(
            assignment_id=assignments[(dialogue_pk, row.rater)].pk, campaign=campaign, dialogue_id=dialogue_pk,
            rater_id=users[row.rater].pk, item_id=row.item_id, value=row.value, comment=row.comment,
            item_language=row.item_language, created_at=stamp, updated_at=stamp))
    Label.objects.bulk_create(labels, batch_size=1000)
    LabelChange.objects.bulk_create([
        LabelChange(label_id=label.pk, changed_by=user, changed_at=label.created_at, old_value=None,
                    new_value=label.value, new_comment=label.comment, source=LabelChange.Source.IMPORT,
                    reason=reason)
        for label in labels], batch_size=1000)
    return labels


def _declare_random_sample(campaign: Campaign, dialogue_ids: set[int], file_name: str, user) -> None:
    from annotation.sampling import declare_sample

    try:
        declare_sample(campaign, dialogue_ids, user=user, note=f"declared a random sample on importing {file_name}")
    except CampaignError as exc:
        raise LabelImportError(str(exc)) from exc


@transaction.atomic
def import_labels(corpus: Corpus, lines: Iterable[str | bytes], *, file_name: str, campaign_name: str | None = None,
                  scale_version: ScaleVersion | None = None, user=None, random_sample: bool = False,
                  skip_unscored: bool = False, rater_kind: str | None = None) -> dict[str, Any]:
    """Import a label CSV into an "imported" campaign on ``corpus``, or raise ImportRejected and write nothing.

    The campaign is ``campaign_name`` (default "Imported labels: <file name> on <corpus>"); an existing imported
    campaign of that name on this corpus is reused (labels it already holds are refused), otherwise one is created
    on ``scale_version`` (default: the newest published version of the Mini-CEX) with overlap = the most raters
    any dialogue has. Raises LabelImportError for problems that are not about a line. ``random_sample``: the
    analyst declares that the labelled dialogues are a random sample of the corpus (recorded with the import,
    :func:`annotation.sampling.declare_sample`), which prediction-powered estimates need. ``skip_unscored``: a
    judge's row whose raw response gives no score on its item's scale (an off-grid value, no answer for the item)
    is imported unscored, as a run leaves such an answer, instead of refusing the file; ``unscored`` in the result
    lists those rows' (line, reason). ``rater_kind``: who the (non-judge) raters are, a
    :class:`~annotation.models.Campaign.RaterKind` value the coordinator states ("physicians", "experts", "llm"),
    recorded on the campaign for the methods text; ``None`` leaves a reused campaign's statement as it is (a new
    campaign: not recorded), and a statement that contradicts the campaign's is refused.
    """
    _check_rater_kind(rater_kind)
    name, campaign = _target_campaign(corpus, file_name, campaign_name, scale_version, rater_kind)
    version = _import_version(corpus, campaign, scale_version)
    digest = hashlib.sha256()
    rows, errors = parse_labels(_hashed(lines, digest), version)
    sha256 = digest.hexdigest()
    judge_rows = [row for row in rows if row.is_judge]
    rows = [row for row in rows if not row.is_judge]

    dialogues = _dialogues(corpus, {r.dialogue_id for r in rows + judge_rows})
    existing_assignments, existing_labels = _existing_work(campaign, rows)
    errors += _dialogue_errors(rows + judge_rows, dialogues, existing_labels, corpus, name)
    judge_dialogues = {ext: pk for ext, (pk, deleted) in dialogues.items() if not deleted}
    errors += _judge_errors(corpus, version, judge_rows, judge_dialogues, sha256, skip_unscored)
    errors += _raters_outside_project(rows, corpus.project)
    if errors:
        raise ImportRejected(sorted(errors, key=lambda e: e.line))
    judges = (_judge_importer[0].write(corpus, version, judge_rows, judge_dialogues, file_name=file_name,
                                       sha256=sha256, user=user) if judge_rows else [])
    unscored = [(row.line, row.unscored) for row in judge_rows if row.unscored]
    if not rows:
        return {"labels": 0, "assignments": 0, "dialogues": len({r.dialogue_id for r in judge_rows}), "raters": 0,
                "target": version.scale.target,
                "raters_created": 0, "campaign": None, "campaign_created": False, "overlap": None,
                "judge_runs": judges, "judge_labels": len(judge_rows), "unscored": unscored, "sha256": sha256}

    # Everything is valid: write.
    now = timezone.now()
    campaign_created = campaign is None
    campaign = _campaign_to_write(campaign, name, corpus, version, _overlap(rows, dialogues, existing_assignments),
                                  file_name=file_name, user=user, rater_kind=rater_kind)
    names = sorted({row.rater for row in rows})
    users, created_raters = _raters(campaign, names, user)
    assignments, new_assignments = _write_assignments(campaign, rows, dialogues, users, existing_assignments, now)
    reason = f"imported from {file_name}"
    labels = _write_labels(campaign, rows, dialogues, users, assignments, now, reason=reason, user=user)
    counts = {
        "labels": len(labels), "assignments": len(new_assignments), "dialogues": len({r.dialogue_id for r in rows}),
        "raters": len(names), "raters_created": len(created_raters), "campaign": campaign.name,
        "campaign_created": campaign_created, "overlap": campaign.overlap, "sha256": sha256,
        "rater_kind": campaign.rater_kind, "target": version.scale.target,
    }
    if random_sample:
        _declare_random_sample(campaign, {dialogues[r.dialogue_id][0] for r in rows}, file_name, user)
    counts["random_sample"] = random_sample
    AuditEvent.record(user, "labels.import", campaign, reason=reason, file=file_name,
                      **{k: v for k, v in counts.items() if k not in ("campaign", "target")})
    send_labels_changed(campaign)
    return {**counts, "judge_runs": judges, "judge_labels": len(judge_rows), "unscored": unscored}


def _hashed(lines: Iterable[str | bytes], digest) -> Iterator[str | bytes]:
    """The lines unchanged, fed to ``digest`` on the way (the file's SHA-256 for an imported run's provenance)."""
    for line in lines:
        digest.update(line if isinstance(line, bytes) else line.encode("utf-8", "surrogatepass"))
        yield line

