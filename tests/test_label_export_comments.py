"""Label exports carry comments and free-text answers (CSV, XLSX, JSON, SPSS) and read
back through import_labels; XLSX writes `created` as a date-time cell; the report page offers the agreement CSV."""

import csv
import io
import json
import random
from datetime import UTC, datetime
from io import StringIO

import openpyxl
import pytest
from django.core.management import call_command
from django.urls import reverse

from annotation import instruments
from annotation.campaigns import add_rater, assign, create_campaign
from annotation.labels import save_label, submit
from annotation.models import Assignment, Corpus, Dialogue, Label
from core.jobs.models import Job
from core.site.spreadsheet import write_xlsx_file
from scoring.reports import exports
from scoring.reports.agreement_csv import csv_text
from scoring.reports.figures import current_report_job
from tests.factories import campaign_with
from tests.lazy import lazy
from tests.test_figures import run_due
from tests.test_reports import rate_everything

pyreadstat = lazy("pyreadstat")

SPEC = {
    "name": "Answer notes", "slug": "answer-notes", "language": "en", "target": "dialogue",
    "dimensions": [{"code": "A", "name": "All"}],
    "items": [
        {"code": "safe", "dimension": "A", "text": "Safe", "response": {"type": "binary"}},
        {"code": "notes", "dimension": "A", "text": "Anything else?", "response": {"type": "text"}},
    ],
}
NOTE = '=HYPERLINK("x") 需要复查, "quoted", comma'
COMMENT = "Asked twice;\nsecond line"


@pytest.fixture
def commented(make_user):
    """Two raters on two dialogues: the binary item with a comment on one label, the free-text item answered."""
    version, _ = instruments.import_instrument(SPEC)
    raters = [make_user("note-a", "physician"), make_user("note-b", "physician")]
    corpus = Corpus.objects.create(name="notes")
    for n in range(2):
        Dialogue.objects.create(corpus=corpus, external_id=f"n{n}", self_report="Cough.",
                                turns=[{"role": "doctor", "text": "Hello"}])
    campaign = create_campaign(name="Notes", corpus=corpus, scale_version=version, overlap=2)
    for rater in raters:
        add_rater(campaign, rater)
    assign(campaign)
    safe, notes = version.items.get(code="safe"), version.items.get(code="notes")
    for assignment in Assignment.objects.filter(campaign=campaign).select_related("rater").order_by("pk"):
        first = assignment.rater == raters[0] and assignment.dialogue.external_id == "n0"
        save_label(assignment, safe.pk, 1, assignment.rater, comment=COMMENT if first else "")
        if first:
            save_label(assignment, notes.pk, None, assignment.rater, comment=NOTE)
        submit(assignment, assignment.rater)
    return campaign


def export(*args) -> str:
    out = StringIO()
    call_command("export_labels", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_every_format_has_the_comment_column_with_comments_and_free_text_answers(commented, tmp_path):
    rows = list(csv.DictReader(io.StringIO(export("--corpus", "notes", "--out", "-"))))
    assert list(rows[0]) == list(exports.COLUMNS) and exports.COLUMNS[-3:] == ("comment", "status", "item_language")
    assert len(rows) == 2 * 2 + 1  # four binary labels and one free-text answer
    commented_row = next(r for r in rows if r["item"] == "safe" and r["comment"])
    assert commented_row["comment"] == COMMENT and commented_row["value"] == "1"
    answer = next(r for r in rows if r["item"] == "notes")
    assert answer["value"] == "" and answer["comment"] == "'" + NOTE  # a formula is neutralised in CSV

    data = json.loads(export("--corpus", "notes", "--format", "json", "--out", "-"))
    text_row = next(d for d in data if d["item"] == "notes")
    assert text_row["value"] is None and text_row["comment"] == NOTE  # JSON holds the value unchanged

    export("--corpus", "notes", "--format", "xlsx", "--out", str(tmp_path / "n.xlsx"))
    sheet = openpyxl.load_workbook(tmp_path / "n.xlsx")["labels"]
    header = [c.value for c in sheet[1]]
    assert header == list(exports.COLUMNS)
    cells = {(sheet.cell(r, 3).value, sheet.cell(r, 8).value) for r in range(2, sheet.max_row + 1)}
    assert ("notes", "'" + NOTE) in cells and ("safe", COMMENT) in cells

    export("--corpus", "notes", "--format", "sav", "--out", str(tmp_path / "n.sav"))
    frame, meta = pyreadstat.read_sav(str(tmp_path / "n.sav"))
    assert list(frame.columns) == list(exports.COLUMNS)
    assert NOTE in set(frame["comment"]) and COMMENT in set(frame["comment"])
    assert meta.column_names_to_labels["comment"].startswith("The rater's comment")


def test_exported_comments_and_free_text_answers_import_back(commented, coordinator, tmp_path):
    path = tmp_path / "notes.csv"
    path.write_text(export("--corpus", "notes", "--out", "-"), encoding="utf-8")
    fresh = Corpus.objects.create(name="notes again")
    for dialogue in commented.corpus.dialogues.all():
        Dialogue.objects.create(corpus=fresh, external_id=dialogue.external_id, self_report=dialogue.self_report,
                                turns=dialogue.turns)
    call_command("import_labels", str(path), "--corpus", "notes again", "--scale", "answer-notes",
                 stdout=StringIO(), stderr=StringIO())
    imported = Label.objects.filter(campaign__corpus=fresh)
    assert imported.count() == 5
    assert imported.get(item__code="notes").comment == NOTE and imported.get(item__code="notes").value is None
    assert imported.get(item__code="safe", comment=COMMENT).value == 1
    # Exported again under the imported (pseudonym) names: the same file, comments and timestamps included.
    again = export("--corpus", "notes again", "--out", "-", "--names", "--as", coordinator.username)
    assert again == path.read_text(encoding="utf-8")


def test_xlsx_created_is_a_date_time_cell(tmp_path):
    moment = datetime(2024, 5, 1, 9, 30, 15, 250000, tzinfo=UTC)
    write_xlsx_file(tmp_path / "d.xlsx", ["created", "day", "text"],
                    [[moment, moment.date(), "2024-05-01"], [None, None, ""]])
    sheet = openpyxl.load_workbook(tmp_path / "d.xlsx")["Sheet1"]
    stamp, day, text = sheet["A2"], sheet["B2"], sheet["C2"]
    assert stamp.is_date and stamp.number_format == "yyyy-mm-dd hh:mm:ss"
    assert abs((stamp.value - moment.replace(tzinfo=None)).total_seconds()) < 0.001
    assert day.is_date and day.number_format == "yyyy-mm-dd" and day.value.date() == moment.date()
    assert text.data_type == "s" and text.value == "2024-05-01"
    assert sheet["A3"].value is None


def test_the_report_page_offers_the_agreement_csv_of_its_options(client, analyst, make_user):
    raters = [make_user(f"csv{i}", "physician") for i in range(3)]
    campaign = campaign_with(raters, n=6, overlap=3, name="CSV")
    rate_everything(campaign, random.Random(3))
    client.force_login(analyst)
    url = reverse("campaign-report-csv", args=[campaign.pk])
    assert client.get(url).status_code == 202  # being prepared (queued when the labels were submitted)
    run_due()
    page = client.get(reverse("campaign-report", args=[campaign.pk])).content.decode()
    assert f'href="{url}?ci=percentile&amp;correlation=pearson"' in page
    response = client.get(url, {"ci": "percentile", "correlation": "pearson"})
    assert response.status_code == 200 and "attachment" in response["Content-Disposition"]
    assert response["Content-Type"].startswith("text/csv")
    body = response.content.decode()
    job = current_report_job(campaign, analyst, start=False)  # the analyst's report (without names)
    assert job.status == Job.Status.SUCCEEDED
    assert body == csv_text(job.result)
    rows = list(csv.reader(io.StringIO(body)))
    assert rows[0][:4] == ["section", "scope", "statistic", "value"] and len(rows) > 24
    out = StringIO()
    call_command("agreement", corpus=campaign.corpus.name, format="csv", stdout=out)
    assert out.getvalue().splitlines()[0] == body.splitlines()[0]
    physician = raters[0]
    client.force_login(physician)
    assert client.get(url).status_code == 403
