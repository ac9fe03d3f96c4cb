"""core.site.spreadsheet: the formula-injection guard every CSV/XLSX export uses, and the streaming XLSX writer
(read back with openpyxl). The exports' own tests are in test_exports, test_preference and test_delphi."""

from __future__ import annotations

import csv
import io
import zipfile
from io import StringIO

import openpyxl
import pytest
from django.core.management import call_command

from annotation.labels import submit
from annotation.models import Dialogue
from core.site.spreadsheet import (
    TooManyRows,
    needs_guard,
    restore_cell,
    safe_cell,
    safe_row,
    write_xlsx_file,
    xlsx_stream,
)
from tests.factories import answer_all, campaign_with

ATTACKS = ['=HYPERLINK("http://x","click")', "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1:A9)", "\t=1+1", "\r=1+1",
           "-", "+", "=", "@"]
PLAIN = ["", "text", "1.1", "4", "3.5", "-1", "+2", "-0.25", "1e-3", "-3E+4", ".5", " =not first"]


@pytest.mark.parametrize("text", ATTACKS)
def test_text_a_spreadsheet_would_run_gets_an_apostrophe_and_reads_back(text):
    assert needs_guard(text)
    assert safe_cell(text) == "'" + text
    assert restore_cell(safe_cell(text)) == text


@pytest.mark.parametrize("text", PLAIN)
def test_plain_text_and_plain_numbers_are_left_alone(text):
    assert not needs_guard(text)
    assert safe_cell(text) == text
    assert restore_cell(text) == text


def test_non_text_values_are_left_alone():
    assert safe_row([-1, -0.5, None, True, 3]) == [-1, -0.5, None, True, 3]
    assert safe_cell("'=x") == "'=x"  # already guarded: not guarded twice


def test_streamed_xlsx_reads_back_with_text_numbers_and_no_formula(tmp_path):
    rows = [["=HYPERLINK(\"http://x\")", -1, "-1", 2.5, None, "a & <b> \"c\""],
            ["\tlead", 0, "", -0.125, True, "bell\x07 and\r\nnew line "],
            ["中文", 10**12, "x" * 500, float("nan"), False, "  spaced"]]
    path = tmp_path / "out.xlsx"
    assert write_xlsx_file(path, ["a", "b", "c", "d", "e", "f"], rows, sheet_name="labels") == 3
    streamed = b"".join(xlsx_stream(["a", "b", "c", "d", "e", "f"], rows, sheet_name="labels"))
    (tmp_path / "streamed.xlsx").write_bytes(streamed)
    for name in ("out.xlsx", "streamed.xlsx"):
        assert zipfile.ZipFile(tmp_path / name).testzip() is None
        book = openpyxl.load_workbook(tmp_path / name)
        assert book.sheetnames == ["labels"]
        sheet = book["labels"]
        assert [c.value for c in sheet[1]] == ["a", "b", "c", "d", "e", "f"] and sheet[1][0].font.b
        assert sheet.freeze_panes == "A2"
        first, second, third = (list(r) for r in sheet.iter_rows(min_row=2))
        assert [c.value for c in first] == ["'=HYPERLINK(\"http://x\")", -1, "-1", 2.5, None, "a & <b> \"c\""]
        assert (first[0].data_type, first[1].data_type, first[2].data_type) == ("s", "n", "s")
        assert [c.value for c in second] == ["'\tlead", 0, None, -0.125, True, "bell_x0007_ and\r\nnew line "]
        assert [c.value for c in third] == ["中文", 10**12, "x" * 500, "nan", False, "  spaced"]
        assert not any(c.data_type == "f" for row in sheet.iter_rows() for c in row)


def test_streamed_xlsx_comes_in_chunks_and_refuses_rows_beyond_the_sheet():
    rows = ([f"r{i}", i] for i in range(10_000))
    chunks = list(xlsx_stream(["name", "n"], rows))
    assert len(chunks) > 3 and all(isinstance(c, bytes) for c in chunks)
    sheet = openpyxl.load_workbook(io.BytesIO(b"".join(chunks)), read_only=True)["Sheet1"]
    assert sum(1 for _ in sheet.iter_rows()) == 10_001
    with pytest.raises(TooManyRows):
        list(xlsx_stream(["n"], ([i] for i in range(10)), max_rows=10))
    assert len(list(xlsx_stream(["n"], ([i] for i in range(9)), max_rows=10))) >= 1
    with pytest.raises(ValueError):  # a row with more cells than the header is a bug, not something to drop
        list(xlsx_stream(["n"], [[1, 2]]))


@pytest.mark.django_db
def test_agreement_csv_neutralises_a_model_name_from_the_data(instrument, make_user):
    raters = [make_user(f"agree{i}", "physician") for i in range(2)]
    campaign = campaign_with(raters, n=6, overlap=2, name="Inject")
    Dialogue.objects.filter(corpus=campaign.corpus, source_model="model-A").update(source_model="=cmd|'/C calc'!A0")
    for assignment in campaign.assignments.select_related("rater"):
        answer_all(assignment, assignment.rater, value=(assignment.dialogue_id + assignment.rater_id) % 2)
        submit(assignment, assignment.rater)
    out = StringIO()
    call_command("agreement", "--corpus", campaign.corpus.name, "--format", "csv", "--resamples", "20", stdout=out)
    rows = list(csv.reader(StringIO(out.getvalue())))
    scopes = {row[1] for row in rows if row[0] == "model comparison"}
    assert scopes == {"'=cmd|'/C calc'!A0", "model-B"}
    assert not any(cell[:1] in ("=", "+", "@") for row in rows for cell in row)
