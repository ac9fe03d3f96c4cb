"""Label exports (scoring.reports.exports and ``manage.py export_labels``): the CSV long format, pseudonyms, who may see
names, what is left out, XLSX/JSON/SPSS read back, the round trip through import_labels, extra label sources."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime
from io import StringIO

import openpyxl
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from annotation.campaigns import add_rater, assign, create_campaign, reassign
from annotation.labels import save_label, submit
from annotation.models import Assignment, Campaign, Corpus, Dialogue, Label
from projects.pseudonyms import pseudonym
from projects.scoping import active_project_id
from scoring.reports import exports
from scoring.reports.exports import (
    COLUMNS,
    LABEL_SOURCES,
    ExportError,
    csv_stream,
    label_rows,
    may_see_names,
    write_csv,
)
from tests.factories import campaign_with, mini_cex, rating_items
from tests.lazy import lazy

pyreadstat = lazy("pyreadstat")

HEADER = "dialogue_id,rater,item,value,rater_kind,judge_run,created,comment,status,item_language"
RATERS = ("dr_alice", "dr_bob", "dr_carol")


@pytest.fixture(autouse=True)
def _fresh_label_cache():
    from annotation.labels import _allowed

    _allowed.cache_clear()
    yield
    _allowed.cache_clear()


def run(*args) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("export_labels", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def rate(assignment: Assignment, user, *, done: bool = True) -> None:
    """Answer every item with a value that varies by dialogue, rater and item; submit unless ``done`` is False."""
    for n, item in enumerate(rating_items(assignment.campaign)):
        if item.response_type == "binary":
            value = (assignment.dialogue_id + user.pk + n) % 2
        else:
            value = 1 + (assignment.dialogue_id + user.pk) % 3
        save_label(assignment, item.pk, value, user)
    if done:
        submit(assignment, user)


def rate_all(campaign: Campaign, users) -> None:
    by_pk = {u.pk: u for u in users}
    for assignment in Assignment.objects.filter(campaign=campaign).order_by("pk"):
        rate(assignment, by_pk[assignment.rater_id])


def db_rows(corpus, *, by: str = "pseudonym", **filters) -> set[tuple]:
    """(dialogue, rater, item, value) of the exported labels straight from the database."""
    qs = (Label.objects.filter(campaign__corpus=corpus, value__isnull=False, **filters)
          .select_related("dialogue", "item", "rater__rater_profile"))
    return {(lab.dialogue.external_id,
             pseudonym(lab.campaign.project_id, lab.rater) if by == "pseudonym" else lab.rater.username,
             lab.item.code, lab.value) for lab in qs}


def read_csv(path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def key(row) -> tuple:
    return row["dialogue_id"], row["rater"], row["item"], int(row["value"])


@pytest.fixture
def raters(make_user):
    return [make_user(name, "physician") for name in RATERS]


@pytest.fixture
def study(instrument, raters):
    """Campaign C1 on corpus "corpus-C1": 4 dialogues x 2 of 3 raters, every assignment submitted."""
    campaign = campaign_with(raters, n=4, overlap=2, name="C1")
    rate_all(campaign, raters)
    return campaign


# ------------------------------------------------------------------------------------------------------------- CSV


@pytest.mark.django_db
def test_csv_has_the_exact_header_one_row_per_label_and_pseudonyms_only(study, raters, tmp_path):
    path = tmp_path / "labels.csv"
    out, err = run("--corpus", "corpus-C1", "--format", "csv", "--out", str(path))
    text = path.read_text(encoding="utf-8")
    assert text.splitlines()[0] == HEADER
    rows = read_csv(path)
    assert len(rows) == 8 * 24 == Label.objects.count()
    assert f"Wrote {len(rows)} label rows" in err and str(path) in err and out == ""

    pseudonyms = {pseudonym(active_project_id(), u) for u in raters}
    assert {r["rater"] for r in rows} <= pseudonyms
    for user in raters:
        assert user.username not in text
    assert {key(r) for r in rows} == db_rows(study.corpus)
    assert {r["rater_kind"] for r in rows} == {"human"} and {r["judge_run"] for r in rows} == {""}

    # created = the label's last save, ISO 8601; order: dialogue, rater, item order.
    label = Label.objects.select_related("dialogue", "item", "rater__rater_profile").order_by("pk").first()
    who = pseudonym(label.campaign.project_id, label.rater)
    mine = next(r for r in rows if key(r)[:3] == (label.dialogue.external_id, who, label.item.code))
    assert datetime.fromisoformat(mine["created"]) == label.updated_at
    order = {item.code: item.order for item in rating_items(study)}
    sort_key = [(r["dialogue_id"], r["rater"], order[r["item"]]) for r in rows]
    assert sort_key == sorted(sort_key)


@pytest.mark.django_db
def test_the_status_column_and_the_submitted_only_export_count_as_the_reports_do(study, raters, client, analyst,
                                                                                   coordinator):
    """A dialogue answered but not submitted is in the export with its status; submitted-only (analysts' default,
    --submitted-only) leaves it out, as the agreement report does."""
    from annotation.models import Assignment

    open_one = Assignment.objects.filter(campaign=study).order_by("pk").first()
    Assignment.objects.filter(pk=open_one.pk).update(status=Assignment.Status.IN_PROGRESS)
    mine = Label.objects.filter(assignment=open_one).count()
    rows = list(label_rows(study.corpus))
    assert {r["status"] for r in rows} == {"submitted", "in_progress"}
    assert sum(r["status"] == "in_progress" for r in rows) == mine
    assert len(list(label_rows(study.corpus, submitted_only=True))) == len(rows) - mine
    lines = {}
    for who, query in ((analyst, ""), (coordinator, ""), (analyst, "?submitted=0"), (coordinator, "?submitted=1")):
        client.force_login(who)
        body = b"".join(client.get(reverse("campaign-export", args=[study.pk, "csv"]) + query).streaming_content)
        lines[(who.username, query)] = body.decode().count("\n") - 1
    assert lines == {("ana", ""): len(rows) - mine, ("coord", ""): len(rows), ("ana", "?submitted=0"): len(rows),
                     ("coord", "?submitted=1"): len(rows) - mine}
    assert client.get(reverse("campaign-export", args=[study.pk, "csv"]) + "?submitted=yes").status_code == 400
    # The API's labels take the same choice with the same defaults (and an ETag of their own per choice).
    api = {}
    for who, query in ((analyst, ""), (coordinator, ""), (analyst, "&submitted=false"), (coordinator, "&submitted=1")):
        client.force_login(who)
        answer = client.get(reverse("api-campaign-labels", args=[study.pk]) + "?format=json" + query)
        assert answer.status_code == 200, answer.content
        api[(who.username, query)] = (len(json.loads(b"".join(answer.streaming_content))), answer["ETag"])
    assert {k: n for k, (n, _) in api.items()} == {
        ("ana", ""): len(rows) - mine, ("coord", ""): len(rows), ("ana", "&submitted=false"): len(rows),
        ("coord", "&submitted=1"): len(rows) - mine}
    assert api[("ana", "")][1] != api[("ana", "&submitted=false")][1]
    bad = client.get(reverse("api-campaign-labels", args=[study.pk]) + "?submitted=yes")
    assert bad.status_code == 400 and "submitted" in bad.json()["detail"]
    out, _ = run("--corpus", "corpus-C1", "--submitted-only", "--out", "-")
    assert out.count("\n") - 1 == len(rows) - mine and "in_progress" not in out


@pytest.mark.django_db
def test_raters_without_a_pseudonym_get_one_on_the_fly(study, raters, tmp_path):
    from projects.models import Pseudonym

    Pseudonym.objects.all().delete()  # e.g. raters written by a bulk load that made none
    rows = list(label_rows(study.corpus))
    pseudonyms = set(Pseudonym.objects.filter(user__in=raters, project=study.project_id).values_list("code",
                                                                                                     flat=True))
    assert len(pseudonyms) == 3 and {r["rater"] for r in rows} == pseudonyms


@pytest.mark.django_db
def test_csv_stream_gives_the_same_bytes_as_write_csv(study):
    handle = io.StringIO(newline="")
    count = write_csv(label_rows(study.corpus), handle)
    chunks = list(csv_stream(label_rows(study.corpus), chunk_bytes=1000))
    assert len(chunks) > 1 and all(isinstance(c, bytes) for c in chunks)
    assert b"".join(chunks).decode("utf-8") == handle.getvalue()
    assert count == Label.objects.count()


@pytest.mark.django_db
def test_the_python_timestamp_path_gives_the_same_rows_as_the_database_one(study, monkeypatch):
    from_db = list(label_rows(study.corpus))
    monkeypatch.setattr(exports, "_created_text", lambda: None)  # what a database other than PostgreSQL does
    assert list(label_rows(study.corpus)) == from_db
    assert exports.iso_utc(datetime(2024, 5, 1, 9, 30, tzinfo=UTC)) == "2024-05-01T09:30:00.000000+00:00"


@pytest.mark.django_db
def test_out_dash_writes_csv_and_json_to_stdout(study, tmp_path):
    out, err = run("--corpus", "corpus-C1", "--out", "-")
    assert out.splitlines()[0] == HEADER and len(out.splitlines()) == 1 + 8 * 24
    assert "standard output" in err
    out, _ = run("--corpus", "corpus-C1", "--format", "json", "--out", "-")
    assert len(json.loads(out)) == 8 * 24
    with pytest.raises(CommandError, match="needs a file path"):
        run("--corpus", "corpus-C1", "--format", "xlsx", "--out", "-")


# ----------------------------------------------------------------------------------------------------------- names


@pytest.mark.django_db
def test_names_refused_for_an_analyst_and_without_a_user_allowed_for_coordinator_and_admin(
        study, raters, analyst, coordinator, admin_user, tmp_path):
    path = tmp_path / "named.csv"
    with pytest.raises(CommandError, match="--names refused"):
        run("--corpus", "corpus-C1", "--out", str(path), "--names", "--as", analyst.username)
    with pytest.raises(CommandError, match="--names refused"):
        run("--corpus", "corpus-C1", "--out", str(path), "--names")
    assert not path.exists()
    with pytest.raises(CommandError, match='no active user "nobody"'):
        run("--corpus", "corpus-C1", "--out", str(path), "--names", "--as", "nobody")

    for user in (coordinator, admin_user):
        _, err = run("--corpus", "corpus-C1", "--out", str(path), "--names", "--as", user.username)
        rows = read_csv(path)
        assert {r["rater"] for r in rows} <= set(RATERS) and "usernames" in err
        assert {key(r) for r in rows} == db_rows(study.corpus, by="username")
    # An analyst without --names gets pseudonyms: no refusal.
    run("--corpus", "corpus-C1", "--out", str(path), "--as", analyst.username)
    assert not {r["rater"] for r in read_csv(path)} & set(RATERS)


@pytest.mark.django_db
def test_may_see_names_honours_a_campaign_allow_names_attribute(study, analyst, coordinator, monkeypatch,
                                                                tmp_path):
    other = create_campaign(name="C2", corpus=study.corpus, scale_version=mini_cex(), overlap=1)
    assert not may_see_names(analyst, [study])
    assert may_see_names(coordinator, [study, other])
    assert not may_see_names(analyst, [])
    study.allow_names = True
    assert may_see_names(analyst, [study])
    assert not may_see_names(analyst, [study, other])  # every campaign must allow names
    assert not may_see_names(None, [other])

    # When every campaign on the corpus allows names, the command lets an analyst see them.
    if any(f.name == "allow_names" for f in Campaign._meta.get_fields()):
        Campaign.objects.filter(corpus=study.corpus).update(allow_names=True)
    else:  # the model field is not there yet: the export reads the attribute with getattr
        monkeypatch.setattr(Campaign, "allow_names", True, raising=False)
    path = tmp_path / "named.csv"
    run("--corpus", "corpus-C1", "--out", str(path), "--names", "--as", analyst.username)
    assert {r["rater"] for r in read_csv(path)} <= set(RATERS)


# --------------------------------------------------------------------------------------------- what is left out


@pytest.mark.django_db
def test_withdrawn_assignments_deleted_campaigns_and_null_values_are_left_out(study, raters, coordinator, tmp_path):
    corpus = study.corpus
    second = create_campaign(name="C2", corpus=corpus, scale_version=mini_cex(), overlap=2)
    for user in raters:
        add_rater(second, user)
    assign(second)
    assignments = list(Assignment.objects.filter(campaign=second).order_by("pk"))
    by_pk = {u.pk: u for u in raters}

    # 1. An assignment in progress with a null answer: its answered items are exported, the null is not.
    partial = assignments[0]
    rate(partial, by_pk[partial.rater_id], done=False)
    first_item = rating_items(second)[0]
    save_label(partial, first_item.pk, None, by_pk[partial.rater_id])
    # 2. An assignment answered, then withdrawn (reassigned to the rater who did not have the dialogue).
    withdrawn = assignments[1]
    rate(withdrawn, by_pk[withdrawn.rater_id], done=False)
    had = set(Assignment.objects.filter(campaign=second, dialogue=withdrawn.dialogue).values_list("rater_id",
                                                                                                  flat=True))
    free = next(u for u in raters if u.pk not in had)
    reassign(withdrawn, free, by=coordinator, reason="on leave")
    # 3. The rest submitted.
    for assignment in assignments[2:]:
        rate(assignment, by_pk[assignment.rater_id])

    rows = list(label_rows(corpus))
    nulls = Label.objects.filter(campaign=second, value__isnull=True).count()
    withdrawn_labels = Label.objects.filter(assignment=withdrawn).count()
    assert nulls == 1 and withdrawn_labels == 24
    expected = Label.objects.filter(campaign__corpus=corpus).count() - nulls - withdrawn_labels
    assert len(rows) == expected
    keys = {(r["dialogue_id"], r["rater"], r["item"]) for r in label_rows(corpus, second)}
    partial_who = (partial.dialogue.external_id, pseudonym(active_project_id(), by_pk[partial.rater_id]))
    assert (*partial_who, first_item.code) not in keys  # the null answer
    assert (*partial_who, rating_items(second)[1].code) in keys  # its other answers

    # Only C2 with --campaign; C1 alone is the study's 192 labels.
    path = tmp_path / "c2.csv"
    run("--corpus", "corpus-C1", "--campaign", "C2", "--out", str(path))
    assert len(read_csv(path)) == expected - 8 * 24
    # A deleted campaign disappears from the corpus export and cannot be asked for by name.
    second.soft_delete(coordinator, "set up by mistake")
    run("--corpus", "corpus-C1", "--out", str(path))
    assert {key(r) for r in read_csv(path)} == db_rows(corpus, campaign=study)
    with pytest.raises(CommandError, match='no campaign "C2"'):
        run("--corpus", "corpus-C1", "--campaign", "C2", "--out", str(path))


@pytest.mark.django_db
def test_unknown_corpus_and_campaign_and_a_campaign_of_another_corpus_are_refused(study, raters, tmp_path):
    path = str(tmp_path / "x.csv")
    with pytest.raises(CommandError, match='no corpus "nope"'):
        run("--corpus", "nope", "--out", path)
    with pytest.raises(CommandError, match='no campaign "nope"'):
        run("--corpus", "corpus-C1", "--campaign", "nope", "--out", path)
    campaign_with(raters, n=2, overlap=1, name="Other")
    with pytest.raises(CommandError, match='rates corpus "corpus-Other"'):
        run("--corpus", "corpus-C1", "--campaign", "Other", "--out", path)
    with pytest.raises(ExportError):
        list(label_rows(study.corpus, Campaign.objects.get(name="Other")))


# --------------------------------------------------------------------------------------------- other formats


@pytest.mark.django_db
def test_json_xlsx_and_sav_read_back_with_the_same_rows(study, tmp_path):
    run("--corpus", "corpus-C1", "--out", str(tmp_path / "labels.csv"))
    reference = read_csv(tmp_path / "labels.csv")
    assert len(reference) == 8 * 24

    run("--corpus", "corpus-C1", "--format", "json", "--out", str(tmp_path / "labels.json"))
    with open(tmp_path / "labels.json", encoding="utf-8") as handle:
        data = json.load(handle)
    assert [list(d) for d in data[:1]] == [list(COLUMNS)]
    assert [{k: str(v) for k, v in d.items()} for d in data] == reference
    assert all(isinstance(d["value"], int) for d in data)

    run("--corpus", "corpus-C1", "--format", "xlsx", "--out", str(tmp_path / "labels.xlsx"))
    workbook = openpyxl.load_workbook(tmp_path / "labels.xlsx", read_only=True)
    assert workbook.sheetnames == ["labels"]
    values = list(workbook["labels"].iter_rows(values_only=True))
    assert values[0] == COLUMNS
    created = COLUMNS.index("created")
    # created is a date-time cell (UTC), not text: compare it as a time, the other cells as text.
    for row, ref in zip(values[1:], reference, strict=True):
        row = (*row, *[None] * (len(COLUMNS) - len(row)))  # read-only mode leaves out trailing empty cells
        stamp = datetime.fromisoformat(ref["created"]).astimezone(UTC).replace(tzinfo=None)
        assert isinstance(row[created], datetime) and abs((row[created] - stamp).total_seconds()) < 0.001
        cells = {c: ("" if v is None else str(v)) for c, v in zip(COLUMNS, row, strict=True) if c != "created"}
        assert cells == {c: v for c, v in ref.items() if c != "created"}
    assert len(values) == 1 + len(reference)

    _, err = run("--corpus", "corpus-C1", "--format", "sav", "--out", str(tmp_path / "labels.sav"))
    assert "Wrote 192 label rows (sav" in err
    frame, meta = pyreadstat.read_sav(str(tmp_path / "labels.sav"))
    assert list(frame.columns) == list(COLUMNS) and len(frame) == len(reference)
    for row, ref in zip(frame.to_dict("records"), reference, strict=True):
        assert (row["dialogue_id"], row["rater"], row["item"], int(row["value"])) == key(ref)
        assert row["rater_kind"] == "human" and row["judge_run"] == ""
        stamp = datetime.fromisoformat(ref["created"]).astimezone(UTC).replace(tzinfo=None)
        assert abs((row["created"] - stamp).total_seconds()) < 0.001
    assert meta.column_names_to_labels["value"].startswith("Label value")
    assert all(meta.column_names_to_labels[c] for c in COLUMNS)
    assert meta.variable_value_labels["rater_kind"] == {"human": "Physician (human rater)", "judge": "LLM judge"}


@pytest.mark.django_db
def test_xlsx_refuses_more_rows_than_a_sheet_holds_and_writes_nothing(study, tmp_path, monkeypatch):
    monkeypatch.setattr(exports, "XLSX_MAX_ROWS", 100)
    path = tmp_path / "big.xlsx"
    with pytest.raises(CommandError, match="Too many labels for one Excel sheet"):
        run("--corpus", "corpus-C1", "--format", "xlsx", "--out", str(path))
    assert list(tmp_path.iterdir()) == []


# ----------------------------------------------------------------------------------------------------- round trip


@pytest.mark.django_db
def test_exported_csv_imports_into_a_fresh_corpus_with_the_same_labels(study, coordinator, tmp_path):
    path = tmp_path / "export.csv"
    run("--corpus", "corpus-C1", "--out", str(path))
    exported = read_csv(path)

    fresh = Corpus.objects.create(name="fresh")
    Dialogue.objects.bulk_create([
        Dialogue(corpus=fresh, external_id=d.external_id, self_report=d.self_report, turns=d.turns)
        for d in study.corpus.dialogues.all()])
    out = StringIO()
    call_command("import_labels", str(path), "--corpus", "fresh", stdout=out, stderr=StringIO())
    assert f"Imported {len(exported)} labels" in out.getvalue()

    imported = Label.objects.filter(campaign__corpus=fresh).select_related("dialogue", "rater", "item")
    assert {(lab.dialogue.external_id, lab.rater.username, lab.item.code, lab.value) for lab in imported} \
        == {key(r) for r in exported}
    # Exported again under the (imported) rater names, the file is the same, timestamps included.
    again = tmp_path / "again.csv"
    run("--corpus", "fresh", "--out", str(again), "--names", "--as", coordinator.username)
    assert again.read_text(encoding="utf-8") == path.read_text(encoding="utf-8")


# ---------------------------------------------------------------------------------- spreadsheet formula injection

FORMULA_IDS = {'=HYPERLINK("http://x","click")': "'=HYPERLINK(\"http://x\",\"click\")", "@SUM(A1)": "'@SUM(A1)",
               "+1 (555) 0100": "'+1 (555) 0100", "-1": "-1"}


def formula_like_dialogue_ids(study) -> None:
    """Give the study's dialogues external ids a spreadsheet would run (and the plain number "-1")."""
    for dialogue, new_id in zip(Dialogue.objects.filter(corpus=study.corpus).order_by("pk"), FORMULA_IDS,
                                strict=True):
        Dialogue.objects.filter(pk=dialogue.pk).update(external_id=new_id)


@pytest.mark.django_db
def test_csv_and_xlsx_neutralise_formula_like_cells_and_keep_numbers(study, tmp_path, client, coordinator):
    formula_like_dialogue_ids(study)
    run("--corpus", "corpus-C1", "--out", str(tmp_path / "labels.csv"))
    rows = read_csv(tmp_path / "labels.csv")
    assert {r["dialogue_id"] for r in rows} == set(FORMULA_IDS.values())
    assert {r["value"] for r in rows} <= {"0", "1", "2", "3"}
    assert b"".join(csv_stream(label_rows(study.corpus))).decode() == (tmp_path / "labels.csv").read_text()

    run("--corpus", "corpus-C1", "--format", "xlsx", "--out", str(tmp_path / "labels.xlsx"))
    client.force_login(coordinator)
    response = client.get(reverse("campaign-export", args=[study.pk, "xlsx"]))
    assert response.status_code == 200 and response.streaming
    (tmp_path / "web.xlsx").write_bytes(b"".join(response.streaming_content))
    for name in ("labels.xlsx", "web.xlsx"):
        sheet = openpyxl.load_workbook(tmp_path / name)["labels"]
        cells = list(sheet.iter_rows(min_row=2))
        assert {row[0].value for row in cells} == set(FORMULA_IDS.values()), name
        assert all(row[0].data_type == "s" for row in cells)  # text, never a formula cell ("f")
        assert all(row[3].data_type == "n" and isinstance(row[3].value, int) for row in cells)


@pytest.mark.django_db
def test_a_neutralised_csv_imports_back_with_the_original_ids(study, tmp_path):
    formula_like_dialogue_ids(study)
    path = tmp_path / "export.csv"
    run("--corpus", "corpus-C1", "--out", str(path))
    fresh = Corpus.objects.create(name="fresh")
    Dialogue.objects.bulk_create([Dialogue(corpus=fresh, external_id=d.external_id, self_report=d.self_report,
                                           turns=d.turns) for d in study.corpus.dialogues.all()])
    call_command("import_labels", str(path), "--corpus", "fresh", stdout=StringIO(), stderr=StringIO())
    imported = set(Label.objects.filter(campaign__corpus=fresh).values_list("dialogue__external_id", flat=True))
    assert imported == set(FORMULA_IDS)


@pytest.mark.django_db
def test_web_xlsx_refuses_a_campaign_too_big_for_a_sheet(study, client, coordinator, monkeypatch):
    monkeypatch.setattr(exports, "XLSX_MAX_ROWS", 100)
    client.force_login(coordinator)
    response = client.get(reverse("campaign-export", args=[study.pk, "xlsx"]))
    assert response.status_code == 409 and "Too many labels for one Excel sheet" in response.content.decode()
    chinese = client.get(reverse("campaign-export", args=[study.pk, "xlsx"]), headers={"accept-language": "zh-CN"})
    assert chinese.status_code == 409
    assert chinese.content.decode().startswith("标注过多，一个 Excel 工作表容纳不下（超过 99 行")


# --------------------------------------------------------------------------------------------- label sources


@pytest.mark.django_db
def test_registered_label_sources_follow_the_human_labels(study, tmp_path):
    calls = []

    def fake_judge(corpus, campaign, *, names=False):
        calls.append((corpus.pk, campaign, names))
        yield {"dialogue_id": "d000", "rater": "gpt-judge", "item": "1.1", "value": 1, "rater_kind": "judge",
               "judge_run": "run-7", "created": "2024-05-01T10:00:00+00:00"}
        yield {"dialogue_id": "d001", "rater": "gpt-judge", "item": "4", "value": 2, "rater_kind": "judge"}

    exports.register_label_source(fake_judge)
    try:
        exports.register_label_source(fake_judge)  # registering twice adds it once
        assert LABEL_SOURCES.count(fake_judge) == 1
        path = tmp_path / "all.json"
        run("--corpus", "corpus-C1", "--format", "json", "--out", str(path))
        rows = json.loads(path.read_text(encoding="utf-8"))
        assert len(rows) == 8 * 24 + 2
        assert {r["rater_kind"] for r in rows[:-2]} == {"human"}
        assert rows[-2]["judge_run"] == "run-7" and rows[-2]["rater"] == "gpt-judge"
        assert rows[-1] == {"dialogue_id": "d001", "rater": "gpt-judge", "item": "4", "value": 2,
                            "rater_kind": "judge", "judge_run": "", "created": "", "comment": "", "status": "",
                            "item_language": ""}
        assert calls == [(study.corpus.pk, None, False)]

        _, err = run("--corpus", "corpus-C1", "--format", "sav", "--out", str(tmp_path / "all.sav"))
        frame, _ = pyreadstat.read_sav(str(tmp_path / "all.sav"))
        assert list(frame["rater_kind"][-2:]) == ["judge", "judge"] and frame["created"].isna().sum() == 1
    finally:
        LABEL_SOURCES.remove(fake_judge)
    assert len(list(label_rows(study.corpus))) == 8 * 24


@pytest.mark.django_db
def test_a_source_row_without_required_columns_is_an_error(study):
    def broken(corpus, campaign, *, names=False):
        yield {"dialogue_id": "d000", "rater": "judge"}

    LABEL_SOURCES.append(broken)
    try:
        with pytest.raises(ExportError, match="without item, value, rater_kind"):
            list(label_rows(study.corpus))
    finally:
        LABEL_SOURCES.remove(broken)
