"""The import_dialogues and import_labels commands: all-or-nothing imports that report every bad line."""

from __future__ import annotations

import importlib.util
import json
from datetime import UTC, datetime
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command, execute_from_command_line
from django.core.management.base import CommandError

from annotation.importers import ImportRejected, import_dialogues
from annotation.label_import import import_labels
from annotation.models import (
    Assignment,
    Campaign,
    CampaignRater,
    Corpus,
    Dialogue,
    Label,
    LabelChange,
    RaterProfile,
    ScaleVersion,
)
from projects.models import AuditEvent

HAS_PRIVACY = importlib.util.find_spec("annotation.privacy") is not None
User = get_user_model()


def dialogue(ext_id: str, report: str = "I have had a cough for three days.", **extra) -> str:
    record = {"id": ext_id, "self_report": report,
              "turns": [{"role": "patient", "text": report}, {"role": "doctor", "text": "Any fever?"}],
              "model": "GPT-4", "language": "en", "split": "test", "meta": {"source": "test"}}
    record.update(extra)
    return json.dumps(record, ensure_ascii=False)


def write(tmp_path, name: str, lines: list[str]) -> str:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def run(command: str, *args, **options) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(command, *args, stdout=out, stderr=err, **options)
    return out.getvalue(), err.getvalue()


def run_refused(command: str, *args, **options) -> list[str]:
    """Run a command that must be refused; return the lines it printed to stderr."""
    err = StringIO()
    with pytest.raises(CommandError, match="nothing was written"):
        call_command(command, *args, stdout=StringIO(), stderr=err, **options)
    return err.getvalue().splitlines()


@pytest.fixture(autouse=True)
def _fresh_label_cache():
    from annotation.labels import _allowed

    _allowed.cache_clear()
    yield
    _allowed.cache_clear()


# ------------------------------------------------------------------------------------------------------------------
# import_dialogues
# ------------------------------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_import_dialogues_creates_the_corpus_and_reports_counts(tmp_path):
    path = write(tmp_path, "corpus.jsonl", [dialogue("d1"), dialogue("d2", language="zh", report="咳嗽三天了。")])
    out, err = run("import_dialogues", path, "--corpus", "Study A")
    assert 'Created corpus "Study A".' in out
    assert "2 created, 0 updated, 0 flagged" in out
    assert err == ""
    corpus = Corpus.objects.get(name="Study A")
    d1 = Dialogue.objects.get(corpus=corpus, external_id="d1")
    assert d1.source_model == "GPT-4" and d1.split == "test" and d1.meta == {"source": "test"}
    assert [t["role"] for t in d1.turns] == ["patient", "doctor"]
    assert d1.privacy_status == "clear" and d1.privacy_matches == []
    assert AuditEvent.objects.filter(action="corpus.import_dialogues", target_id=str(corpus.pk)).exists()

    # A second file into the existing corpus: no "Created corpus" this time.
    out, _ = run("import_dialogues", write(tmp_path, "more.jsonl", [dialogue("d3")]), "--corpus", "Study A")
    assert "Created corpus" not in out and "1 created" in out
    assert Dialogue.objects.filter(corpus=corpus).count() == 3


@pytest.mark.django_db
def test_no_create_corpus_refuses_a_missing_corpus(tmp_path):
    path = write(tmp_path, "corpus.jsonl", [dialogue("d1")])
    with pytest.raises(CommandError, match="does not exist"):
        run("import_dialogues", path, "--corpus", "Missing", "--no-create-corpus")
    assert not Corpus.objects.exists()
    Corpus.objects.create(name="Present")
    out, _ = run("import_dialogues", path, "--corpus", "Present", "--no-create-corpus")
    assert "1 created" in out


BAD_DIALOGUE_LINES = {
    "invalid JSON": ('{"id": "x", "self_report": "cough", "turns": [}', "invalid JSON"),
    "missing field": ('{"id": "x", "turns": [{"role": "doctor", "text": "Hi"}]}', 'missing field "self_report"'),
    "unknown role": ('{"id": "x", "self_report": "cough", "turns": [{"role": "nurse", "text": "Hi"}]}',
                     "unknown role 'nurse'"),
    "empty turns": ('{"id": "x", "self_report": "cough", "turns": []}', '"turns" must be a non-empty list'),
    "duplicate id in the file": (dialogue("d1"), 'id "d1" already appears on line 1'),
}


@pytest.mark.django_db
@pytest.mark.parametrize("kind", list(BAD_DIALOGUE_LINES))
def test_each_kind_of_bad_dialogue_line_is_reported_and_nothing_is_written(tmp_path, kind):
    bad, message = BAD_DIALOGUE_LINES[kind]
    path = write(tmp_path, "corpus.jsonl", [dialogue("d1"), dialogue("d2"), bad, dialogue("d4")])
    errors = run_refused("import_dialogues", path, "--corpus", "Study A")
    assert len(errors) == 1
    assert errors[0].startswith("line 3: ") and message in errors[0]
    assert not Corpus.objects.exists(), "a refused import leaves no new corpus behind"
    assert not Dialogue.objects.exists()


@pytest.mark.django_db
def test_every_bad_line_is_reported_at_once(tmp_path):
    lines = [dialogue("d1"), "{not json", dialogue("d3"), '{"id": "d4", "turns": []}', "", dialogue("d1")]
    errors = run_refused("import_dialogues", write(tmp_path, "corpus.jsonl", lines), "--corpus", "C")
    assert [e.split(":")[0] for e in errors] == ["line 2", "line 4", "line 6"]
    assert not Dialogue.objects.exists()


@pytest.mark.django_db
def test_id_already_in_the_corpus_needs_update(tmp_path):
    run("import_dialogues", write(tmp_path, "a.jsonl", [dialogue("d1"), dialogue("d2")]), "--corpus", "C")
    path = write(tmp_path, "b.jsonl", [dialogue("d9"), dialogue("d2", report="Now a headache.", split="train",
                                                                 meta={"v": 2}, model="Qwen", language="zh")])
    errors = run_refused("import_dialogues", path, "--corpus", "C")
    assert errors == ['line 2: id "d2" is already in corpus "C" (use --update to replace it)']
    assert set(Dialogue.objects.values_list("external_id", flat=True)) == {"d1", "d2"}

    out, _ = run("import_dialogues", path, "--corpus", "C", "--update")
    assert "1 created, 1 updated" in out
    d2 = Dialogue.objects.get(external_id="d2")
    assert d2.self_report == "Now a headache." and d2.turns[0]["text"] == "Now a headache."
    assert (d2.split, d2.meta, d2.source_model, d2.language) == ("train", {"v": 2}, "Qwen", "zh")
    assert Dialogue.objects.count() == 3


@pytest.mark.django_db
def test_a_deleted_dialogue_cannot_be_replaced(tmp_path, coordinator):
    run("import_dialogues", write(tmp_path, "a.jsonl", [dialogue("d1")]), "--corpus", "C")
    Dialogue.objects.get().soft_delete(coordinator, "duplicate patient")
    errors = run_refused("import_dialogues", write(tmp_path, "b.jsonl", [dialogue("d1", report="new")]),
                         "--corpus", "C", "--update")
    assert errors[0].startswith("line 1: ") and "was deleted" in errors[0]
    assert Dialogue.objects.get().self_report != "new"


@pytest.mark.django_db
def test_a_too_large_file_is_refused_before_it_is_read(tmp_path, settings):
    settings.DIALOGUE_IMPORT_MAX_BYTES = 100
    # Every line is bad: had the file been read, they would be reported too.
    path = write(tmp_path, "big.jsonl", ["{not json"] * 30)
    errors = run_refused("import_dialogues", path, "--corpus", "C")
    assert len(errors) == 1 and errors[0].startswith("file: the file is too large")
    assert "DIALOGUE_IMPORT_MAX_BYTES" in errors[0]
    assert not Corpus.objects.exists()


@pytest.mark.django_db
def test_missing_file_and_deleted_corpus_are_refused(tmp_path, coordinator):
    with pytest.raises(CommandError, match="no such file"):
        run("import_dialogues", str(tmp_path / "nope.jsonl"), "--corpus", "C")
    Corpus.objects.create(name="Old").soft_delete(coordinator, "retired")
    with pytest.raises(CommandError, match="was deleted"):
        run("import_dialogues", write(tmp_path, "a.jsonl", [dialogue("d1")]), "--corpus", "Old")


@pytest.mark.django_db
@pytest.mark.skipif(not HAS_PRIVACY, reason="annotation.privacy is not there yet")
def test_privacy_filter_flags_on_import_and_rescans_on_update(tmp_path):
    private = dialogue("d2", report="Hello doctor. My name is John Smith and I have a cough.")
    out, _ = run("import_dialogues", write(tmp_path, "a.jsonl", [dialogue("d1"), private]), "--corpus", "C")
    assert "2 created, 0 updated, 1 flagged" in out
    d1, d2 = Dialogue.objects.order_by("external_id")
    assert d1.privacy_status == "clear" and d1.privacy_matches == []
    assert d2.privacy_status == "flagged"
    assert any(m["kind"] == "name" and m["text"] == "John Smith" and m["field"] == "self_report"
               for m in d2.privacy_matches)

    # --update re-scans: the cleaned dialogue is clear again, the other one is now flagged.
    lines = [dialogue("d1", report="Call me on 138-0013-8000 please, I have a cough."), dialogue("d2")]
    out, _ = run("import_dialogues", write(tmp_path, "b.jsonl", lines), "--corpus", "C", "--update")
    assert "0 created, 2 updated, 1 flagged" in out
    d1, d2 = Dialogue.objects.order_by("external_id")
    assert d1.privacy_status == "flagged" and any(m["kind"] == "phone" for m in d1.privacy_matches)
    assert d2.privacy_status == "clear" and d2.privacy_matches == []


@pytest.mark.django_db
def test_import_function_counts_flagged():
    corpus = Corpus.objects.create(name="C")
    counts = import_dialogues(corpus, [dialogue("d1").encode()])
    assert counts == {"created": 1, "updated": 0, "flagged": 0}


def test_refused_import_exits_with_status_1(tmp_path, transactional_db, capsys):
    path = write(tmp_path, "corpus.jsonl", [dialogue("d1"), "{oops"])
    with pytest.raises(SystemExit) as exited:
        execute_from_command_line(["manage.py", "import_dialogues", path, "--corpus", "C"])
    assert exited.value.code == 1
    err = capsys.readouterr().err
    assert "line 2: invalid JSON" in err and "nothing was written" in err
    assert not Corpus.objects.exists()


# ------------------------------------------------------------------------------------------------------------------
# import_labels
# ------------------------------------------------------------------------------------------------------------------

HEADER = "dialogue_id,rater,item,value,rater_kind,judge_run,created,comment"  # a file written before the status column


@pytest.fixture
def corpus(db, tmp_path):
    path = write(tmp_path, "corpus.jsonl", [dialogue(f"d{n}") for n in range(1, 4)])
    run("import_dialogues", path, "--corpus", "Study A")
    return Corpus.objects.get(name="Study A")


def label_rows() -> list[str]:
    return [
        HEADER,
        "d1,dr_wang,1.1,1,human,,2023-05-01T09:00:00+08:00,asked about onset",
        "d1,dr_wang,4,3,human,,2023-05-01T09:05:00+08:00,",
        "d1,dr_li,1.1,0,,,,",
        "d1,dr_li,4,2.0,,,,",
        "d2,dr_wang,2.8,1.0,human,,2023-05-02,",
        "d1,dr_p,3.7,1,,,,",
    ]


@pytest.mark.django_db
def test_import_labels_creates_campaign_raters_assignments_labels_and_history(tmp_path, corpus, physician, client):
    path = write(tmp_path, "legacy.csv", label_rows())
    out, err = run("import_labels", path, "--corpus", "Study A")
    assert err == ""
    assert "Imported 6 labels on 2 dialogues by 3 raters" in out
    assert "Created 2 external rater(s)" in out

    campaign = Campaign.objects.get()
    assert campaign.name == "Imported labels: legacy.csv on Study A"
    assert campaign.phase == Campaign.Phase.IMPORTED and campaign.corpus == corpus
    assert campaign.overlap == 3  # d1 has three raters
    newest = ScaleVersion.objects.filter(scale__slug="llm-mini-cex", status="published").order_by("-number").first()
    assert campaign.scale_version == newest

    # External raters: inactive, unusable password, external profile, on the campaign, cannot log in.
    for name in ("dr_wang", "dr_li"):
        user = User.objects.get(username=name)
        assert not user.is_active and not user.has_usable_password()
        assert RaterProfile.objects.get(user=user).is_external
        assert CampaignRater.objects.filter(campaign=campaign, user=user).exists()
        assert not client.login(username=name, password="")
    # A known user is reused, not made external.
    assert not RaterProfile.objects.filter(user=physician, is_external=True).exists()
    assert User.objects.filter(username="dr_p").count() == 1

    assignments = Assignment.objects.filter(campaign=campaign)
    assert assignments.count() == 4  # (d1, wang), (d1, li), (d1, dr_p), (d2, wang)
    assert set(assignments.values_list("status", flat=True)) == {Assignment.Status.SUBMITTED}

    values = {(lab.dialogue.external_id, lab.rater.username, lab.item.code): lab.value
              for lab in Label.objects.select_related("dialogue", "rater", "item")}
    assert values == {("d1", "dr_wang", "1.1"): 1, ("d1", "dr_wang", "4"): 3, ("d1", "dr_li", "1.1"): 0,
                      ("d1", "dr_li", "4"): 2, ("d2", "dr_wang", "2.8"): 1, ("d1", "dr_p", "3.7"): 1}
    first = Label.objects.get(rater__username="dr_wang", item__code="1.1")
    assert first.comment == "asked about onset"
    assert first.created_at == first.updated_at == datetime(2023, 5, 1, 1, 0, tzinfo=UTC)
    wang_d1 = Assignment.objects.get(campaign=campaign, rater__username="dr_wang", dialogue__external_id="d1")
    assert wang_d1.submitted_at == datetime(2023, 5, 1, 1, 5, tzinfo=UTC)

    changes = LabelChange.objects.all()
    assert changes.count() == 6
    assert set(changes.values_list("source", flat=True)) == {LabelChange.Source.IMPORT}
    assert all("legacy.csv" in c.reason for c in changes)
    assert all(c.old_value is None and c.new_value == c.label.value for c in changes)
    assert AuditEvent.objects.filter(action="labels.import").count() == 1


@pytest.mark.django_db
def test_campaign_name_and_version_options(tmp_path, corpus):
    path = write(tmp_path, "legacy.csv", label_rows()[:3])
    out, _ = run("import_labels", path, "--corpus", "Study A", "--campaign", "MedEval 2023", "--version", "1")
    assert 'new campaign "MedEval 2023"' in out
    campaign = Campaign.objects.get(name="MedEval 2023")
    assert campaign.scale_version.number == 1 and campaign.overlap == 1

    # The same campaign takes more labels later; labels it already holds are refused by line.
    more = write(tmp_path, "more.csv", [HEADER, "d3,dr_wang,1.2,1,,,,", "d1,dr_wang,4,1,,,,"])
    errors = run_refused("import_labels", more, "--corpus", "Study A", "--campaign", "MedEval 2023")
    assert len(errors) == 1 and errors[0].startswith("line 3: ") and "already has" in errors[0]
    ok = write(tmp_path, "ok.csv", [HEADER, "d3,dr_wang,1.2,1,,,,", "d1,dr_new,4,1,,,,"])
    out, _ = run("import_labels", ok, "--corpus", "Study A", "--campaign", "MedEval 2023")
    assert 'campaign "MedEval 2023"' in out and "new campaign" not in out
    campaign.refresh_from_db()
    assert campaign.overlap == 2 and Label.objects.filter(campaign=campaign).count() == 4
    assert Assignment.objects.filter(campaign=campaign, rater__username="dr_wang").count() == 2


@pytest.mark.django_db
def test_reimporting_the_same_file_is_refused(tmp_path, corpus):
    path = write(tmp_path, "legacy.csv", label_rows())
    run("import_labels", path, "--corpus", "Study A")
    errors = run_refused("import_labels", path, "--corpus", "Study A")
    assert [e.split(":")[0] for e in errors] == [f"line {n}" for n in range(2, 8)]
    assert Label.objects.count() == 6


@pytest.mark.django_db
def test_bad_options_are_refused(tmp_path, corpus):
    path = write(tmp_path, "legacy.csv", label_rows())
    with pytest.raises(CommandError, match="no version 99"):
        run("import_labels", path, "--corpus", "Study A", "--version", "99")
    with pytest.raises(CommandError, match='no scale "nope"'):
        run("import_labels", path, "--corpus", "Study A", "--scale", "nope")
    with pytest.raises(CommandError, match='no corpus "Other"'):
        run("import_labels", path, "--corpus", "Other")
    Campaign.objects.create(name="Formal", corpus=corpus, scale_version=ScaleVersion.objects.first())
    with pytest.raises(CommandError, match="formal campaign"):
        run("import_labels", path, "--corpus", "Study A", "--campaign", "Formal")
    assert not Label.objects.exists()


BAD_LABEL_ROWS = {
    "unknown dialogue": ("d99,dr_wang,1.1,1,,,,", 'dialogue "d99" is not in corpus "Study A"'),
    "unknown item": ("d1,dr_wang,9.9,1,,,,", 'unknown item "9.9"'),
    "dimension is not a rating item": ("d1,dr_wang,1,1,,,,", 'unknown item "1"'),
    "level instead of item 4": ("d1,dr_wang,4.2,1,,,,", 'use item "4" with value 2'),
    "binary value 2": ("d1,dr_wang,1.1,2,,,,", 'item 1.1 takes binary, 0, 1; got "2"'),
    "binary value 0.5": ("d1,dr_wang,1.1,0.5,,,,", 'got "0.5"'),
    "item 4 value 4": ("d1,dr_wang,4,4,,,,", 'item 4 takes 1, 2, 3; got "4"'),
    "item 4 value 0": ("d1,dr_wang,4,0,,,,", 'item 4 takes 1, 2, 3; got "0"'),
    "value not a number": ("d1,dr_wang,1.1,yes,,,,", 'got "yes"'),
    "empty value": ("d1,dr_wang,1.1,,,,,", "value is empty"),
    "duplicate row": ("d1,dr_a,1.1,0,,,,", 'item 1.1 is already on line 2'),
    "empty rater": ("d1,,1.1,1,,,,", "rater is empty"),
    "bad created": ("d1,dr_wang,1.1,1,,,yesterday,", 'created "yesterday" is not an ISO 8601'),
    "judge run on a physician's row": ("d1,dr_wang,1.1,1,human,run-7,,", "judge_run is set on a physician's row"),
    "unknown rater kind": ("d1,dr_wang,1.1,1,robot,,,", "rater_kind must be human or judge"),
    "wrong number of fields": ("d1,dr_wang,1.1", "3 fields, but the header has 8"),
}


@pytest.mark.django_db
@pytest.mark.parametrize("kind", list(BAD_LABEL_ROWS))
def test_each_kind_of_bad_label_line_is_reported_and_nothing_is_written(tmp_path, corpus, kind):
    bad, message = BAD_LABEL_ROWS[kind]
    users_before = User.objects.count()
    path = write(tmp_path, "legacy.csv", [HEADER, "d1,dr_a,1.1,1,,,,", "d2,dr_a,1.1,1,,,,", bad, "d3,dr_b,4,2,,,,"])
    errors = run_refused("import_labels", path, "--corpus", "Study A")
    assert len(errors) == 1, errors
    assert errors[0].startswith("line 4: ") and message in errors[0], errors[0]
    assert not Campaign.objects.exists() and not Assignment.objects.exists()
    assert not Label.objects.exists() and not LabelChange.objects.exists()
    assert User.objects.count() == users_before, "no external raters are created by a refused import"


@pytest.mark.django_db
def test_the_exports_status_column_imports_submitted_answers_and_refuses_the_others(tmp_path, corpus):
    header = HEADER + ",status"  # the label exports' columns
    rows = [header, "d1,dr_a,1.1,1,human,,,,submitted", "d2,dr_a,1.1,0,,,,,",
            "d3,dr_a,1.1,1,human,,,,in_progress", "d3,dr_b,1.1,1,human,,,,maybe"]
    errors = run_refused("import_labels", write(tmp_path, "export.csv", rows), "--corpus", "Study A")
    assert errors[0].startswith('line 4: status "in_progress": only submitted answers are imported'), errors
    assert "--submitted-only" in errors[0]
    assert errors[1] == 'line 5: status must be "submitted" or empty, not "maybe"'
    assert not Label.objects.exists()
    out, _ = run("import_labels", write(tmp_path, "export.csv", rows[:3]), "--corpus", "Study A")
    assert "Imported 2 labels" in out
    assert set(Assignment.objects.values_list("status", flat=True)) == {Assignment.Status.SUBMITTED}


@pytest.mark.django_db
@pytest.mark.parametrize("header", ["dialogue_id,rater,item", "dialogue,rater,item,value", "rater,item,value"])
def test_missing_required_column_is_reported_on_line_1(tmp_path, corpus, header):
    path = write(tmp_path, "legacy.csv", [header, "d1,dr_a,1.1,1"])
    errors = run_refused("import_labels", path, "--corpus", "Study A")
    assert errors and all(e.startswith("line 1: missing column") for e in errors)
    assert not Label.objects.exists() and not Campaign.objects.exists()


@pytest.mark.django_db
def test_every_bad_label_line_is_reported_at_once(tmp_path, corpus):
    lines = [HEADER, "d1,dr_a,1.1,1,,,,", "d1,dr_a,1.1,0,,,,", "d99,dr_a,1.1,1,,,,", "", "d2,,4,7,,,,"]
    errors = run_refused("import_labels", write(tmp_path, "legacy.csv", lines), "--corpus", "Study A")
    assert [e.split(":")[0] for e in errors] == ["line 3", "line 4", "line 6", "line 6"]
    assert not Label.objects.exists()


@pytest.mark.django_db
def test_empty_and_header_only_files_are_refused(tmp_path, corpus):
    for lines, message in (([HEADER], "file: the file contains no labels"), ([""], "file: the file is empty")):
        path = tmp_path / "legacy.csv"
        path.write_text("\n".join(lines), encoding="utf-8")
        errors = run_refused("import_labels", str(path), "--corpus", "Study A")
        assert errors and errors[0].startswith(message)


@pytest.mark.django_db
def test_minimal_columns_bom_and_quoted_fields(tmp_path, corpus):
    path = tmp_path / "legacy.csv"
    path.write_text('\ufeffDialogue_ID,Rater,Item,Value,Comment\r\n'
                    'd1,Dr Zhang,1.4,1,"said ""CMV"",\nunexplained"\r\n'
                    "d1,Dr Zhang,4,1,\r\n"
                    "d1,Dr Zhang,2.1,5,\r\n", encoding="utf-8")
    # The quoted comment spans lines 2-3, so the bad row (the third label) is line 5.
    assert run_refused("import_labels", str(path), "--corpus", "Study A") == [
        'line 5: item 2.1 takes binary, 0, 1; got "5"']
    path.write_text(path.read_text(encoding="utf-8").replace(",2.1,5,", ",2.1,0,"), encoding="utf-8")
    run("import_labels", str(path), "--corpus", "Study A")
    label = Label.objects.get(item__code="1.4")
    assert label.comment == 'said "CMV",\nunexplained' and label.rater.username == "Dr Zhang"
    assert Label.objects.get(item__code="4").value == 1
    assert Label.objects.get(item__code="2.1").value == 0


@pytest.mark.django_db
def test_label_import_function_accepts_uploaded_bytes_and_reports_lines(corpus):
    rows = [line.encode() + b"\n" for line in label_rows()]
    counts = import_labels(corpus, rows, file_name="upload.csv")
    assert counts["labels"] == 6 and counts["campaign"] == "Imported labels: upload.csv on Study A"
    with pytest.raises(ImportRejected) as rejected:
        import_labels(corpus, [HEADER.encode(), b"d1,x,1.1,\xff,,,,"], file_name="bad.csv")
    assert [e.line for e in rejected.value.errors] == [2]


def test_refused_label_import_exits_with_status_1(tmp_path, transactional_db, instrument, capsys):
    Corpus.objects.create(name="C")
    path = write(tmp_path, "legacy.csv", [HEADER, "d1,dr_a,1.1,1,,,,"])
    with pytest.raises(SystemExit) as exited:
        execute_from_command_line(["manage.py", "import_labels", path, "--corpus", "C"])
    assert exited.value.code == 1
    err = capsys.readouterr().err
    assert 'line 2: dialogue "d1" is not in corpus "C"' in err
    assert not User.objects.filter(username="dr_a").exists()
