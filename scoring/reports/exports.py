"""Label exports in the CSV long format of DESIGN.md section 5, and the same rows as XLSX, JSON and SPSS .sav.

One row per label, columns exactly :data:`COLUMNS`::

    dialogue_id, rater, item, value, rater_kind, judge_run, created, comment, status, item_language

* ``dialogue_id`` is the dialogue's (or question-answer item's) external id, ``item`` the item code (Mini-CEX:
  ``1.1`` ... ``3.7``, ``4``; other instruments: their codes), ``value`` an integer (scale items: the point, as
  rated; empty for free-text items, whose answer is the comment), ``created`` the time the label was last saved
  (ISO 8601 in UTC with microseconds, e.g. ``2024-05-01T09:30:00.000000+00:00``; a date-time cell in XLSX and
  SPSS), ``comment`` the rater's comment on the item, or the answer to a free-text item (empty for judges),
  ``status`` where the physician's dialogue stands (:data:`STATUS_LABELS`: ``submitted`` is what the reports count;
  ``in_progress``, ``assigned`` (answers saved before the rater opened it again), ``returned`` and ``skipped`` are
  answers the reports leave out; empty for judges, whose stored answers are final), ``item_language`` the language
  of the item text the physician saw when last saving the answer (``en`` or ``zh``, a code whatever the reader's
  language; empty when not recorded: imported labels, API saves that do not say, judges).
* ``submitted_only=True`` (the default of analysts' downloads, ``export_labels --submitted-only``) keeps only the
  physicians' rows of submitted dialogues: the labels the agreement report and the judge reports count.
* Physician labels come first (``rater_kind`` "human", ``judge_run`` empty): every label with a value, and every
  answered free-text item, of the corpus's campaigns that are not deleted (or of one campaign), whose assignment
  is not withdrawn and whose dialogue is not deleted. Raters appear under their stable pseudonym
  (their pseudonyms in the corpus's project, created on the fly) unless ``names=True``, which gives usernames;
  callers decide with :func:`may_see_names`.
* Then every source in :data:`LABEL_SOURCES`, in order. Other modules (the LLM judge runs) append a generator
  function there: ``source(corpus, campaign, names=...)`` yielding dicts of the same shape (``rater_kind``
  "judge", ``judge_run`` naming the run).

The CSV output reads back through ``manage.py import_labels`` (annotation.label_import) unchanged, comments and
free-text answers included, as long as it holds only human rows of one campaign (the importer refuses judge rows,
and a rater's label on a dialogue and item appears once per campaign).

Memory: :func:`label_rows` streams from the database (server-side cursor, only the needed columns, no model
instances), and the CSV, JSON and XLSX writers write row by row, so a 643,000-label study exports in constant
memory. XLSX is written by ``core.site.spreadsheet``'s streaming writer (643,200 labels in under 20 s; the web
download streams it as it is written). SPSS .sav is the exception: pyreadstat writes a whole pandas DataFrame, so
:func:`write_sav` holds every row in memory (about 250 bytes a row: some 170 MB for 643,000 labels).

Spreadsheet formula injection: CSV and XLSX cells that a spreadsheet would run as a formula (text starting with
= + - @ tab or CR, e.g. a rater or judge named ``=HYPERLINK(...)``) get a leading apostrophe
(``core.site.spreadsheet.safe_cell``); numbers and plain-number text such as ``-1`` are left alone. JSON and SPSS
hold the values unchanged. ``import_labels`` drops the apostrophe again, so an exported CSV still reads back.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from operator import itemgetter
from typing import IO, Any

from django.utils.translation import gettext

from core.site.spreadsheet import XLSX_MAX_ROWS as SHEET_ROWS
from core.site.spreadsheet import TooManyRows, safe_row, write_xlsx_file
from core.site.spreadsheet import xlsx_stream as _xlsx_stream
from projects.pseudonyms import pseudonyms

COLUMNS = ("dialogue_id", "rater", "item", "value", "rater_kind", "judge_run", "created", "comment", "status",
           "item_language")
HUMAN = "human"
JUDGE = "judge"
XLSX_MAX_ROWS = SHEET_ROWS  # rows in an Excel sheet, the header line included
SHEET_NAME = "labels"
CHUNK_SIZE = 5000

COLUMN_LABELS = {
    "dialogue_id": "Dialogue (external id in the corpus)",
    "rater": "Rater (pseudonym, username or judge)",
    "item": "Item code of the scale version",
    "value": "Label value (binary: 1 = met, 0 = not met; levels: the level's value; scale: the point)",
    "rater_kind": "Kind of rater (human physician or LLM judge)",
    "judge_run": "Judge run (empty for physicians)",
    "created": "Time the label was last saved (UTC)",
    "comment": "The rater's comment on the item, or the answer to a free-text item",
    "status": "Status of the physician's dialogue (submitted: counted by the reports; empty for judges)",
    "item_language": "Language of the item text the physician saw (en, zh; empty: not recorded)",
}
STATUS_LABELS = {"submitted": "Submitted (counted by the reports)", "in_progress": "In progress, not submitted",
                 "assigned": "Not submitted", "returned": "Returned for revision, not submitted",
                 "skipped": "Skipped"}
RATER_KIND_LABELS = {HUMAN: "Physician (human rater)", JUDGE: "LLM judge"}

LabelSource = Callable[..., Iterable[dict[str, Any]]]
#: Further label generators, called as ``source(corpus, campaign, names=names)`` after the physician labels;
#: ``campaign`` is None for the whole corpus. Each yields dicts with the keys of :data:`COLUMNS`.
LABEL_SOURCES: list[LabelSource] = []


class ExportError(ValueError):
    """An export that cannot be written as asked (too many rows for the format, a malformed source row)."""


def register_label_source(source: LabelSource) -> LabelSource:
    """Append ``source`` to :data:`LABEL_SOURCES` (once); usable as a decorator."""
    if source not in LABEL_SOURCES:
        LABEL_SOURCES.append(source)
    return source


def change_mark(corpus, campaign=None) -> str:
    """A mark that changes whenever the export's rows may (the API's ETag): the physicians' labels and assignments
    (:func:`scoring.reports.fingerprint.study_fingerprint`) and each source's own ``mark(corpus, campaign)``, for
    the sources that give one (the judge runs: their state and last stored answer)."""
    import hashlib

    from scoring.reports.fingerprint import study_fingerprint

    parts = [study_fingerprint(list(campaigns_in_scope(corpus, campaign)))]
    parts += [str(source.mark(corpus, campaign)) for source in LABEL_SOURCES if hasattr(source, "mark")]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:24]


# ------------------------------------------------------------------------------------------------ who sees names


def may_see_names(user, campaigns, project=None) -> bool:
    """True when ``user`` may see raters' usernames in an export of ``campaigns`` (of one project: ``project``, by
    default the campaigns').

    Coordinators of that project and admins always may; anyone else only when every campaign allows names
    (``allow_names``, read with getattr so an object without the attribute counts as not allowing). With no
    campaign at all, only coordinators and admins.
    """
    from projects.roles import ADMIN, COORDINATOR, has_role

    campaigns = list(campaigns)
    if project is None and campaigns:
        project = getattr(campaigns[0], "project_id", None)
    if user is not None and has_role(user, COORDINATOR, ADMIN, project=project):
        return True
    return bool(campaigns) and all(getattr(c, "allow_names", False) for c in campaigns)


# -------------------------------------------------------------------------------------------------------- rows


def campaigns_in_scope(corpus, campaign=None):
    """The campaigns whose labels an export of ``corpus`` (optionally one campaign) includes."""
    from annotation.models import Campaign

    qs = Campaign.objects.alive().filter(corpus=corpus)
    if campaign is not None:
        qs = qs.filter(pk=campaign.pk)
    return qs.order_by("pk")


def _human_labels(corpus, campaign=None, submitted_only: bool = False):
    """Labels with a value, and answers to free-text items (their label's comment; they have no value); with
    ``submitted_only``, only those of submitted dialogues."""
    from django.db.models import Q

    from annotation.models import Assignment, Item, Label

    answered = Q(value__isnull=False) | (Q(item__response_type=Item.ResponseType.TEXT) & ~Q(comment=""))
    qs = Label.objects.filter(answered, campaign__corpus=corpus, campaign__deleted_at__isnull=True,
                              dialogue__deleted_at__isnull=True)
    if campaign is not None:
        qs = qs.filter(campaign=campaign)
    if submitted_only:
        return qs.filter(assignment__status=Assignment.Status.SUBMITTED)
    return qs.exclude(assignment__status=Assignment.Status.WITHDRAWN)


def _ensure_pseudonyms(corpus, campaign=None) -> None:
    """Give every rater in scope their pseudonym in the corpus's project."""
    from annotation.models import Assignment

    raters = Assignment.objects.filter(campaign__in=campaigns_in_scope(corpus, campaign)).values_list(
        "rater_id", flat=True).distinct()
    pseudonyms(corpus.project_id, list(raters))


def _pseudonym_of_rater(project_id: int):
    """The rater's pseudonym in the project, as a column of a label query."""
    from django.db.models import OuterRef, Subquery

    from projects.models import Pseudonym

    return Subquery(Pseudonym.unscoped.filter(project_id=project_id, user_id=OuterRef("rater_id"))
                    .values("code")[:1])


def submitted_only_default(choice: str | None, *, coordinator: bool) -> bool:
    """Whether a download holds submitted dialogues only: ``choice`` "1"/"true" yes, "0"/"false" no (every saved
    answer, with its status); unset, submitted only for analysts (what the reports count), everything for
    coordinators (they follow work in progress). One rule for the campaign page's downloads and the API."""
    if choice:
        return choice.lower() in ("1", "true")
    return not coordinator


def human_label_rows(corpus, campaign=None, *, names: bool = False, submitted_only: bool = False
                     ) -> Iterator[dict[str, Any]]:
    """The physicians' labels, ordered by dialogue external id, rater and item order."""
    if campaign is not None and campaign.corpus_id != corpus.pk:
        raise ExportError(gettext('Campaign "%(campaign)s" rates corpus "%(campaign_corpus)s", not "%(corpus)s".')
                          % {"campaign": campaign, "campaign_corpus": campaign.corpus, "corpus": corpus})
    rater_column = "rater__username"
    qs = _human_labels(corpus, campaign, submitted_only)
    if not names:
        _ensure_pseudonyms(corpus, campaign)
        rater_column = "rater_pseudonym"
        qs = qs.annotate(rater_pseudonym=_pseudonym_of_rater(corpus.project_id))
    qs = qs.order_by("dialogue__external_id", rater_column, "item__order", "campaign_id")
    created = _created_text()
    if created is not None:  # PostgreSQL formats the time: parsing 643,000 timestamps in Python costs seconds
        qs = qs.annotate(created_text=created).values_list(
            "dialogue__external_id", rater_column, "item__code", "value", "created_text", "comment",
            "assignment__status", "item_language")
        for dialogue_id, rater, code, value, stamp, comment, status, language in qs.iterator(chunk_size=CHUNK_SIZE):
            yield {"dialogue_id": dialogue_id, "rater": rater, "item": code, "value": value, "rater_kind": HUMAN,
                   "judge_run": "", "created": stamp, "comment": comment, "status": status,
                   "item_language": language}
        return
    qs = qs.values_list("dialogue__external_id", rater_column, "item__code", "value", "updated_at", "comment",
                        "assignment__status", "item_language")
    for dialogue_id, rater, code, value, updated, comment, status, language in qs.iterator(chunk_size=CHUNK_SIZE):
        yield {"dialogue_id": dialogue_id, "rater": rater, "item": code, "value": value, "rater_kind": HUMAN,
               "judge_run": "", "created": iso_utc(updated), "comment": comment, "status": status,
               "item_language": language}


def iso_utc(moment) -> str:
    """ISO 8601 in UTC with microseconds, the form PostgreSQL gives in :func:`_created_text`."""
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def _created_text():
    """An expression giving updated_at as ISO 8601 text in UTC, where the database can (PostgreSQL), else None."""
    from django.db import connection
    from django.db.models import CharField, F, Func

    if connection.vendor != "postgresql":
        return None
    return Func(F("updated_at"), output_field=CharField(),
                template="""to_char(%(expressions)s AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"+00:00"')""")


def _checked(rows: Iterable[dict[str, Any]], source: LabelSource) -> Iterator[dict[str, Any]]:
    """Rows of a registered source in column order; missing optional columns become empty."""
    name = getattr(source, "__qualname__", repr(source))
    for row in rows:
        missing = [c for c in ("dialogue_id", "rater", "item", "value", "rater_kind") if c not in row]
        if missing:
            raise ExportError(f"label source {name} yielded a row without {', '.join(missing)}: {row!r}")
        yield {c: row.get(c, "") for c in COLUMNS}


def label_rows(corpus, campaign=None, *, names: bool = False, submitted_only: bool = False
               ) -> Iterator[dict[str, Any]]:
    """Every label of ``corpus`` (or of one ``campaign`` on it) as dicts with the keys :data:`COLUMNS`:
    the physicians' labels (streamed from the database), then each source in :data:`LABEL_SOURCES`.
    ``names=True`` gives usernames instead of pseudonyms: check :func:`may_see_names` first.
    ``submitted_only=True`` leaves out the physicians' answers on dialogues not submitted (their ``status`` column
    says which rows those are otherwise)."""
    yield from human_label_rows(corpus, campaign, names=names, submitted_only=submitted_only)
    for source in list(LABEL_SOURCES):
        yield from _checked(source(corpus, campaign, names=names), source)


# ----------------------------------------------------------------------------------------------------- writers


_cells = itemgetter(*COLUMNS)  # row dict -> tuple of cells in column order
_CREATED = COLUMNS.index("created")


def _xlsx_cells(row: dict[str, Any]) -> tuple[Any, ...]:
    """The row's cells for a spreadsheet: ``created`` as a date-time (a date cell), not text."""
    cells = _cells(row)
    stamp = cells[_CREATED]
    if not isinstance(stamp, str) or not stamp:
        return cells
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:  # a source's own text: kept as it is
        return cells
    return (*cells[:_CREATED], moment, *cells[_CREATED + 1:])


def _safe_cells(row: dict[str, Any]) -> list[Any]:
    """The row's cells in column order, text that would run as a spreadsheet formula neutralised."""
    return safe_row(_cells(row))


def write_csv(rows: Iterable[dict[str, Any]], fileobj: IO[str]) -> int:
    """Write a header line and one line per row to a text file (open it with ``newline=""`` and UTF-8).
    Returns the number of rows written."""
    writer = csv.writer(fileobj, lineterminator="\n")
    writer.writerow(COLUMNS)
    count = 0
    for row in rows:
        writer.writerow(_safe_cells(row))
        count += 1
    return count


def csv_stream(rows: Iterable[dict[str, Any]], *, chunk_bytes: int = 64 * 1024) -> Iterator[bytes]:
    """UTF-8 CSV in chunks of about ``chunk_bytes``, for ``StreamingHttpResponse``."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in rows:
        writer.writerow(_safe_cells(row))
        if buffer.tell() >= chunk_bytes:
            yield buffer.getvalue().encode("utf-8")
            buffer.seek(0)
            buffer.truncate()
    if buffer.tell():
        yield buffer.getvalue().encode("utf-8")


def json_stream(rows: Iterable[dict[str, Any]]) -> Iterator[str]:
    """A JSON array of row objects, one object a line, produced piece by piece."""
    yield "["
    separator = "\n"
    for row in rows:
        yield separator + json.dumps({c: row[c] for c in COLUMNS}, ensure_ascii=False)
        separator = ",\n"
    yield "\n]\n"


def write_json(rows: Iterable[dict[str, Any]], fileobj: IO[str]) -> int:
    """Write the rows as a JSON array, incrementally (never the whole array in memory). Returns the row count."""
    count = 0
    fileobj.write("[")
    for row in rows:
        fileobj.write(("\n" if count == 0 else ",\n") + json.dumps({c: row[c] for c in COLUMNS}, ensure_ascii=False))
        count += 1
    fileobj.write("\n]\n")
    return count


def too_many_for_xlsx() -> ExportError:
    """The error (and its message for the CLI and the web) for labels that do not fit in one Excel sheet."""
    return ExportError(gettext("Too many labels for one Excel sheet (more than %(rows)s rows plus the header): "
                               "export CSV, JSON or SPSS .sav instead, or one campaign at a time.")
                       % {"rows": f"{XLSX_MAX_ROWS - 1:,}"})


def write_xlsx(rows: Iterable[dict[str, Any]], path_or_fileobj) -> int:
    """Write one sheet "labels" (header + rows), streaming, in bounded memory. Raises ExportError when the rows do
    not fit in an Excel sheet (1,048,576 rows with the header): the file is then incomplete, so write to a
    temporary path and discard it (``export_labels`` does). Returns the row count."""
    try:
        return write_xlsx_file(path_or_fileobj, COLUMNS, (_xlsx_cells(row) for row in rows), sheet_name=SHEET_NAME,
                               max_rows=XLSX_MAX_ROWS)
    except TooManyRows:
        raise too_many_for_xlsx() from None


def xlsx_stream(rows: Iterable[dict[str, Any]]) -> Iterator[bytes]:
    """The XLSX file of :func:`write_xlsx` in chunks while the rows are read, for ``StreamingHttpResponse``.
    Raises ExportError mid-stream when the rows overflow a sheet: check :func:`fits_in_a_sheet` first."""
    try:
        yield from _xlsx_stream(COLUMNS, (_xlsx_cells(row) for row in rows), sheet_name=SHEET_NAME,
                                max_rows=XLSX_MAX_ROWS)
    except TooManyRows:
        raise too_many_for_xlsx() from None


def fits_in_a_sheet(corpus, campaign=None) -> bool:
    """False when the physicians' labels alone exceed an Excel sheet (a COUNT; judge labels are not counted)."""
    return _human_labels(corpus, campaign).count() < XLSX_MAX_ROWS


def rows_dataframe(rows: Iterable[dict[str, Any]]):
    """The rows as a pandas DataFrame (in memory): value as integer, created as naive UTC datetimes."""
    import pandas as pd

    columns: dict[str, list[Any]] = {c: [] for c in COLUMNS}
    shared: dict[str, dict[Any, Any]] = {c: {} for c in COLUMNS if c != "created"}  # one object per distinct value
    for row in rows:
        for c, values in columns.items():
            value = row[c]
            if c in shared:
                value = shared[c].setdefault(value, value)
            values.append(value)
    frame = pd.DataFrame(columns, columns=list(COLUMNS))
    for c in ("dialogue_id", "rater", "item", "rater_kind", "judge_run", "comment"):
        frame[c] = frame[c].fillna("").astype(str)
    frame["value"] = pd.to_numeric(frame["value"]).astype("float64")
    created = frame["created"].fillna("").astype(str)
    created = created.where(created != "", None)
    frame["created"] = pd.to_datetime(created, utc=True, format="ISO8601").dt.tz_localize(None)
    return frame


def write_sav(rows: Iterable[dict[str, Any]], path) -> int:
    """Write an SPSS .sav file with pyreadstat: variable labels for every column, value labels for rater_kind,
    ``created`` as an SPSS date-time in UTC. pyreadstat needs a whole DataFrame, so unlike the other writers
    this holds every row in memory. Returns the row count."""
    import pyreadstat

    frame = rows_dataframe(rows)
    pyreadstat.write_sav(
        frame, str(path), column_labels=[COLUMN_LABELS[c] for c in COLUMNS],
        variable_value_labels={"rater_kind": dict(RATER_KIND_LABELS), "status": dict(STATUS_LABELS)},
        variable_measure={"dialogue_id": "nominal", "rater": "nominal", "item": "nominal", "value": "ordinal",
                          "rater_kind": "nominal", "judge_run": "nominal", "created": "scale", "comment": "nominal"},
        file_label="Mini-CEX Workbench label export")
    return len(frame)


FORMATS = ("csv", "xlsx", "json", "sav")
STREAMABLE = ("csv", "json")  # may go to stdout / an open text file
