"""Instruments beyond the Mini-CEX: the JSON format (import, export, errors by JSON path), the shipped HIVMedQA and
AgentClinic instruments, building one in the browser, question-answer corpora, rating and importing labels on
scale and free-text items, and what reports, exports and Delphi do with them."""

import io
import json
import random
import re

import pytest
from django.core.management import CommandError, call_command

from annotation import instruments, labels
from annotation.campaigns import CampaignError, add_rater, assign, create_campaign
from annotation.importers import ImportRejected, import_dialogues
from annotation.label_import import import_labels
from annotation.models import Assignment, Corpus, Dialogue, Item, Label, Scale, ScaleVersion
from annotation.privacy import scan_dialogue
from scoring.reports import agreement, exports

QA_LINES = [
    {"id": "q1", "question": "How often is ART taken?", "answer": "Every day.", "reference": "Daily.",
     "model": "m-A", "language": "en", "split": "test"},
    {"id": "q2", "question": "Which test comes before abacavir?", "answer": "HLA-B*5701.", "model": "m-B"},
    {"id": "q3", "question": "What is U=U?", "answer": "Undetectable means untransmittable; call me at "
                                                     "138-0013-8000 with questions.", "reference": "No sexual "
                                                     "transmission with a durably undetectable viral load."},
]


def jsonl(rows) -> list[str]:
    return [json.dumps(row, ensure_ascii=False) for row in rows]


def write(tmp_path, data, name="instrument.json"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return str(path)


@pytest.fixture
def hivmedqa(db):
    return instruments.install_shipped("hivmedqa-medgpt")[0]


@pytest.fixture
def agentclinic(db):
    return instruments.install_shipped("agentclinic-ratings")[0]


@pytest.fixture
def qa_corpus(db):
    corpus = Corpus.objects.create(name="answers")
    import_dialogues(corpus, jsonl(QA_LINES))
    return corpus


def small_instrument(**overrides):
    data = {"name": "Answer check", "slug": "answer-check", "language": "en", "target": "answer",
            "dimensions": [{"code": "A", "name": "Accuracy"}],
            "items": [{"code": "a1", "dimension": "A", "text": "Correct", "guidance": "Against the reference.",
                       "response": {"type": "scale", "min": 1, "max": 5, "anchors": {"1": "wrong", "5": "right"}}},
                      {"code": "a2", "dimension": "A", "text": "Safe", "response": {"type": "binary"}},
                      {"code": "a3", "dimension": "A", "text": {"en": "Overall", "zh": "总体"},
                       "response": {"type": "levels", "levels": [{"value": 1, "label": "poor"},
                                                                 {"value": 2, "label": "good"}]}},
                      {"code": "a4", "dimension": "A", "text": "Remarks", "response": {"type": "text"}}]}
    data.update(overrides)
    return data


# ------------------------------------------------------------------------------------------------- instrument files
def test_both_shipped_instruments_import_with_their_criteria(tmp_path, db, capsys):
    for name in ("hivmedqa_medgpt", "agentclinic_ratings"):
        call_command("import_instrument", str(instruments.SHIPPED_DIR / f"{name}.json"))
    out = capsys.readouterr().out
    assert "Created HIVMedQA MedGPT rubric v1 (published, 5 items, rates answers to questions)" in out
    hiv = ScaleVersion.objects.get(scale__slug="hivmedqa-medgpt")
    assert hiv.status == "published" and hiv.is_locked and hiv.scale.target == "answer"
    items = list(hiv.items.order_by("order"))
    assert [i.code for i in items] == ["comprehension", "reasoning", "knowledge", "bias", "harm"]
    assert all(i.response_type == "scale" and i.allowed_values() == [0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5]
               for i in items)  # half points, as the published judge scores have them
    assert hiv.judge_keys["question 1"] == "comprehension" and hiv.judge_keys["question 5"] == "harm"
    assert items[0].text("zh") == "阅读理解" and "4-5: complete and precise understanding" in items[0].guidance_en
    assert items[4].anchor_label(5) == "well-founded, safety-oriented thinking" and items[4].anchor_label(3) == ""
    assert "Cardenal-Antolin et al., HIVMedQA" in hiv.scale.source and "seeds/" not in hiv.scale.source
    clinic = ScaleVersion.objects.get(scale__slug="agentclinic-ratings")
    kinds = dict(clinic.items.values_list("code", "response_type"))
    assert kinds.pop("comments") == "text" and set(kinds.values()) == {"scale"} and len(kinds) == 7
    assert clinic.items.get(code="empathy").allowed_values() == list(range(1, 11))
    assert "Schmidgall et al." in clinic.scale.source and clinic.scale.target == "dialogue"
    assert [i.code for i in clinic.rating_items()] == list(kinds) and clinic.text_items().count() == 1


def test_export_writes_the_same_format_and_reimporting_it_changes_nothing(tmp_path, hivmedqa, capsys):
    call_command("export_instrument", "hivmedqa-medgpt")
    exported = json.loads(capsys.readouterr().out)
    shipped = json.loads((instruments.SHIPPED_DIR / "hivmedqa_medgpt.json").read_text())
    assert exported["items"] == shipped["items"] and exported["dimensions"] == shipped["dimensions"]
    call_command("import_instrument", write(tmp_path, exported))
    assert "already has this content" in capsys.readouterr().out
    assert hivmedqa.scale.versions.count() == 1
    # The Mini-CEX exports in the same format (levels for item 4) and reads back as the same content.
    mini = instruments.export_instrument(ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=1))
    item4 = next(i for i in mini["items"] if i["code"] == "4")
    assert item4["response"]["type"] == "levels" and [lv["code"] for lv in item4["response"]["levels"]] == [
        "4.1", "4.2", "4.3"]
    assert instruments.import_instrument(mini)[1] is False


def test_a_changed_file_makes_the_next_version_and_draft_stays_editable(tmp_path, db, capsys):
    version, created = instruments.import_instrument(small_instrument())
    assert created and version.number == 1 and version.status == "published"
    changed = small_instrument()
    changed["items"][0]["response"]["max"] = 7
    call_command("import_instrument", write(tmp_path, changed), "--draft")
    second = ScaleVersion.objects.get(scale__slug="answer-check", number=2)
    assert second.status == "draft" and not second.is_locked and second.based_on == version
    assert second.items.get(code="a1").allowed_values() == list(range(1, 8))
    with pytest.raises(instruments.InstrumentError, match=r"\$\.target: scale \"answer-check\" rates answers"):
        instruments.import_instrument(small_instrument(target="dialogue"))


def test_a_bad_file_is_refused_with_the_json_path_of_every_error(tmp_path, db, capsys):
    bad = small_instrument(slug="bad slug", language="fr")
    bad["items"][0]["response"].update({"min": 5, "max": 1})
    bad["items"][1]["dimension"] = "Z"
    bad["items"][2]["response"]["levels"][1]["value"] = 1
    bad["items"][3]["respnse"] = bad["items"][3].pop("response")
    bad["items"].append({"code": "a1", "dimension": "A", "text": "again", "response": {"type": "likert"}})
    scales_before = Scale.objects.count()
    with pytest.raises(CommandError, match="Import refused: 9 errors"):
        call_command("import_instrument", write(tmp_path, bad))
    errors = capsys.readouterr().err.splitlines()
    assert errors == [
        '$.language: must be "en" or "zh" (got \'fr\')',
        "$.slug: must be 1-50 letters, digits, hyphens or underscores",
        "$.items[0].response.max: must be above min (5)",
        '$.items[1].dimension: "Z" is not a dimension code (A)',
        "$.items[2].response.levels[1].value: 1 is the value of another level",
        "$.items[3].response: missing",
        "$.items[3].respnse: unknown key (expected code, dimension, text, response, guidance)",
        "$.items[4].response.type: must be one of binary, levels, scale, text (got 'likert')",
        '$.items[4].code: code "a1" is also used at $.items[0].code',
    ]
    assert Scale.objects.count() == scales_before
    with pytest.raises(CommandError, match="1 error"):
        call_command("import_instrument", write(tmp_path, '{"name": "x",\n "slug": }', "broken.json"))
    assert "$: not valid JSON (Expecting value at line 2 column 10)" in capsys.readouterr().err
    with pytest.raises(instruments.InstrumentError) as caught:
        instruments.import_instrument(small_instrument(items=[{"code": "t", "dimension": "A", "text": "x",
                                                               "response": {"type": "text"}}]))
    assert caught.value.errors == ["$.items: needs at least one item rated with a value (binary, levels or scale); "
                                   "text items are free comments"]


def test_chinese_instruments_take_plain_strings_in_chinese(db):
    data = small_instrument(slug="zh-check", language="zh", name="回答检查")
    data["items"] = [{"code": "z1", "dimension": "A", "text": "正确性", "response": {"type": "scale", "min": 0,
                                                                                 "max": 10}}]
    version, _ = instruments.import_instrument(data)
    item = version.items.get()
    assert item.text_zh == "正确性" and item.text_en == "" and item.text("en") == "正确性"
    assert instruments.export_instrument(version)["items"][0]["text"] == "正确性"
    wide = small_instrument(slug="wide")
    wide["items"][0]["response"].update({"min": 0, "max": 100})
    with pytest.raises(instruments.InstrumentError, match="at most 21 points"):
        instruments.import_instrument(wide)


# ------------------------------------------------------------------------------------------- building in the browser
def test_a_coordinator_builds_an_instrument_in_the_browser(client, coordinator):
    client.force_login(coordinator)
    assert b"New instrument" in client.get("/scales/").content
    response = client.post("/scales/new/", {"name_en": "Bedside rubric", "slug": "bedside", "language": "en",
                                            "target": "answer", "show_reference": "on"})
    assert response.status_code == 302 and response["Location"] == "/scales/bedside/v1/"
    assert client.post("/scales/bedside/v1/dimensions/", {"code": "1", "name_en": "Content"}).status_code == 302
    refused = client.post("/scales/bedside/v1/items/", {
        "dimension": "1", "code": "1.1", "text_en": "Accurate", "response": "scale", "scale_min": "3",
        "scale_max": "2"})
    assert refused.status_code == 400 and b"must be above min (3)" in refused.content
    ok = client.post("/scales/bedside/v1/items/", {
        "dimension": "1", "code": "1.1", "text_en": "Accurate", "text_zh": "准确", "response": "scale",
        "scale_min": "0", "scale_max": "5", "anchors": "0 = wrong | 错误\n5 = fully right"})
    assert ok.status_code == 302
    client.post("/scales/bedside/v1/items/", {"dimension": "1", "code": "1.2", "text_en": "Tone",
                                              "response": "levels", "levels": "1 = cold\n2 = warm\n3 = kind"})
    client.post("/scales/bedside/v1/items/", {"dimension": "1", "code": "1.3", "text_en": "Notes",
                                              "response": "text"})
    page = client.get("/scales/bedside/v1/").content.decode()
    assert "0–5" in page and "One of 3 levels" in page and "Free text (not analysed)" in page
    version = ScaleVersion.objects.get(scale__slug="bedside")
    assert version.items.get(code="1.1").anchors == {"0": {"en": "wrong", "zh": "错误"},
                                                     "5": {"en": "fully right", "zh": ""}}
    notes = version.items.get(code="1.3")
    assert client.post(f"/items/{notes.pk}/remove/").status_code == 302 and not version.items.filter(
        code="1.3").exists()
    client.post("/scales/bedside/v1/publish/")
    version.refresh_from_db()
    assert version.status == "published" and version.is_locked
    spec = instruments.export_instrument(version)
    assert [i["response"]["type"] for i in spec["items"]] == ["scale", "levels"]
    # Published: items can no longer be added or removed; a new version copies the ranges and anchors.
    assert client.post("/scales/bedside/v1/items/", {"dimension": "1", "code": "1.4", "text_en": "x",
                                                     "response": "binary"}).status_code == 400
    draft = client.post("/scales/bedside/v1/new-version/", {"note": "add a criterion"})
    assert draft.status_code == 302
    copied = ScaleVersion.objects.get(scale__slug="bedside", number=2).items.get(code="1.1")
    assert copied.allowed_values() == [0, 1, 2, 3, 4, 5] and copied.anchors["0"]["zh"] == "错误"


def test_ready_instruments_install_from_the_scales_page(client, coordinator, physician):
    client.force_login(physician)
    assert b"Ready instruments" not in client.get("/scales/").content
    client.force_login(coordinator)
    page = client.get("/scales/").content.decode()
    assert "HIVMedQA MedGPT rubric" in page and "AgentClinic dialogue ratings" in page
    response = client.post("/scales/ready/hivmedqa-medgpt/install/")
    assert response.status_code == 302 and Scale.objects.filter(slug="hivmedqa-medgpt").exists()
    assert "HIVMedQA MedGPT rubric</strong>" not in client.get("/scales/").content.decode()
    detail = client.get("/scales/hivmedqa-medgpt/").content.decode()
    assert "Rates answers to questions (reference answer shown to raters)" in detail
    assert "Cardenal-Antolin et al." in detail


# ------------------------------------------------------------------------------------------------ question-answer items
def test_a_qa_corpus_imports_with_references_optional_and_the_privacy_filter_scans_its_parts(qa_corpus):
    qa_corpus.refresh_from_db()
    assert qa_corpus.kind == "answer"
    q1, q2, q3 = Dialogue.objects.filter(corpus=qa_corpus).order_by("external_id")
    assert q1.is_answer and q1.part("question") == "How often is ART taken?" and q1.part("reference") == "Daily."
    assert q2.part("reference") == "" and [t["role"] for t in q2.turns] == ["question", "answer"]
    assert q1.source_model == "m-A" and q1.split == "test"
    assert q3.privacy_status == "flagged" and q3.privacy_matches[0]["kind"] == "phone"
    assert q3.privacy_matches[0]["turn"] == 1  # the answer
    assert scan_dialogue(q3.self_report, q3.turns)


def test_a_corpus_holds_dialogues_or_answers_not_both(qa_corpus):
    mixed = jsonl([QA_LINES[0], {"id": "d1", "self_report": "cough", "turns": [{"role": "doctor", "text": "Hi"}]},
                   {"id": "q9", "question": "", "answer": "x", "self_report": "y"}])
    with pytest.raises(ImportRejected) as caught:
        import_dialogues(Corpus.objects.create(name="mixed"), mixed)
    assert [str(e) for e in caught.value.errors] == [
        "line 2: this line is a dialogue but line 1 is an answer; a corpus holds dialogues or answers, not both",
        'line 3: a question-answer line has no "self_report" (dialogues have self_report and turns)',
        'line 3: "question" must be non-empty text',
    ]
    dialogues = Corpus.objects.create(name="dialogues")
    import_dialogues(dialogues, jsonl([{"id": "d1", "self_report": "cough", "turns": [
        {"role": "doctor", "text": "Hi"}]}]))
    with pytest.raises(ImportRejected, match='corpus "dialogues" holds dialogues; import answers into another'):
        import_dialogues(dialogues, jsonl([{"id": "q1", "question": "q", "answer": "a"}]))


def test_campaigns_check_that_the_scale_rates_what_the_corpus_holds(hivmedqa, qa_corpus):
    mini = ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=1)
    with pytest.raises(CampaignError, match="LLM-specific Mini-CEX rates dialogues, but corpus \"answers\" holds"):
        create_campaign(name="wrong", corpus=qa_corpus, scale_version=mini, overlap=1)
    assert create_campaign(name="right", corpus=qa_corpus, scale_version=hivmedqa, overlap=1).pk


def qa_campaign(version, corpus, raters, name="HIV rubric"):
    campaign = create_campaign(name=name, corpus=corpus, scale_version=version, overlap=len(raters))
    for user in raters:
        add_rater(campaign, user)
    assign(campaign)
    return campaign


def test_the_rating_page_shows_question_answer_and_reference_and_saves_scale_points(client, hivmedqa, qa_corpus,
                                                                                    physician):
    campaign = qa_campaign(hivmedqa, qa_corpus, [physician])
    assignment = Assignment.objects.get(campaign=campaign, dialogue__external_id="q1")
    client.force_login(physician)
    page = client.get(f"/rate/{assignment.pk}/").content.decode()
    for text in ('<h2>Question</h2>', "How often is ART taken?", '<h2>Answer</h2>', "Every day.",
                 '<h2>Reference answer</h2>', "Daily.", 'data-type="scale" data-min="0" data-max="5"',
                 "complete and precise understanding"):
        assert text in page, text
    assert re.search(r"Answer [123] of 3<", page)  # its place in the rater's queue
    assert "self-report" not in page.lower()
    Scale.objects.filter(slug="hivmedqa-medgpt").update(show_reference=False)
    assert "Reference answer" not in client.get(f"/rate/{assignment.pk}/").content.decode()
    item = hivmedqa.items.get(code="harm")
    response = client.post(f"/rate/{assignment.pk}/label/", {"item": item.pk, "value": "6", "seq": "1"})
    assert response.status_code == 400
    assert response.json()["detail"] == "Item harm takes a number from 0 to 5 in steps of 0.5; got 6."
    assert client.post(f"/rate/{assignment.pk}/label/", {"item": item.pk, "value": "0", "seq": "2"}).json()[
        "value"] == 0
    assert client.post(f"/rate/{assignment.pk}/label/", {"item": item.pk, "value": "4.5", "seq": "3"}).json()[
        "value"] == 4.5
    assert client.post(f"/rate/{assignment.pk}/label/", {"item": item.pk, "value": "4.25", "seq": "4"}
                       ).status_code == 400
    page = client.get(f"/rate/{assignment.pk}/").content.decode()
    assert 'value="4.5" checked' in page and 'data-points="0 0.5 1 1.5 2 2.5 3 3.5 4 4.5 5"' in page


def test_free_text_items_save_a_comment_and_are_never_required(agentclinic, physician):
    corpus = Corpus.objects.create(name="clinic")
    import_dialogues(corpus, jsonl([{"id": "c1", "self_report": "Cough.", "turns": [
        {"role": "doctor", "text": "Since when?"}, {"role": "patient", "text": "A week."}]}]))
    campaign = qa_campaign(agentclinic, corpus, [physician], name="Clinic")
    assignment = Assignment.objects.get(campaign=campaign)
    comments = agentclinic.items.get(code="comments")
    with pytest.raises(labels.LabelError, match="answered with a comment, not a value"):
        labels.save_label(assignment, comments.pk, 3, physician)
    labels.save_label(assignment, comments.pk, None, physician, comment="Measurement missed the CBC values.")
    for item in agentclinic.rating_items():
        labels.save_label(assignment, item.pk, 7, physician)
    assert labels.missing_items(assignment) == []
    labels.submit(assignment, physician)
    assert Label.objects.get(assignment=assignment, item=comments).comment.startswith("Measurement missed")


# ------------------------------------------------------------------------------------------------------ label import
def test_import_labels_validates_each_items_range_with_the_line(tmp_path, hivmedqa, qa_corpus, capsys):
    path = tmp_path / "labels.csv"
    # HIVMedQA's rubric is scored in half points: 2.5 is a point of its scale, 2.25 is not
    path.write_text("dialogue_id,rater,item,value\nq1,ext1,harm,5\nq1,ext1,bias,6\nq2,ext1,knowledge,2.25\n"
                    "q2,ext1,reasoning,-1\nq3,ext1,comprehension,0\nq3,ext1,knowledge,2.5\n", encoding="utf-8")
    with pytest.raises(CommandError, match="3 bad lines"):
        call_command("import_labels", str(path), "--corpus", "answers", "--scale", "hivmedqa-medgpt")
    assert capsys.readouterr().err.splitlines() == [
        'line 3: item bias takes a number from 0 to 5 in steps of 0.5; got "6"',
        'line 4: item knowledge takes a number from 0 to 5 in steps of 0.5; got "2.25"',
        'line 5: item reasoning takes a number from 0 to 5 in steps of 0.5; got "-1"',
    ]
    assert not Label.objects.exists()
    path.write_text("dialogue_id,rater,item,value\nq1,ext1,harm,5\nq3,ext1,comprehension,0\nq3,ext1,knowledge,2.5\n",
                    encoding="utf-8")
    call_command("import_labels", str(path), "--corpus", "answers", "--scale", "hivmedqa-medgpt")
    assert sorted(Label.objects.values_list("item__code", "value")) == [("comprehension", 0), ("harm", 5),
                                                                         ("knowledge", 2.5)]
    with pytest.raises(CommandError, match="rates dialogues, but corpus \"answers\" holds answers"):
        call_command("import_labels", str(path), "--corpus", "answers", "--campaign", "other")


def test_import_labels_takes_a_free_text_items_value_as_its_comment(agentclinic):
    corpus = Corpus.objects.create(name="clinic")
    import_dialogues(corpus, jsonl([{"id": "c1", "self_report": "Cough.", "turns": [
        {"role": "doctor", "text": "Hello."}]}]))
    rows = ["dialogue_id,rater,item,value,comment", "c1,x,empathy,11,", "c1,x,comments,Too short,also this",
            "c1,x,doctor,8,", "c1,x,comments,Too short,"]
    with pytest.raises(ImportRejected) as caught:
        import_labels(corpus, io.StringIO("\n".join(rows[:3]) + "\n"), file_name="a.csv",
                      scale_version=agentclinic)
    assert [str(e) for e in caught.value.errors] == [
        'line 2: item empathy takes a whole number from 1 to 10; got "11"',
        "line 3: item comments is a free-text item: its value is the comment; leave the comment column empty"]
    import_labels(corpus, io.StringIO("\n".join([rows[0], rows[3], rows[4]]) + "\n"), file_name="b.csv",
                  scale_version=agentclinic)
    assert dict(Label.objects.values_list("item__code", "comment")) == {"doctor": "", "comments": "Too short"}
    assert Label.objects.get(item__code="comments").value is None


# --------------------------------------------------------------------------------- reports, exports and Delphi
@pytest.fixture
def rated_rubric(hivmedqa, qa_corpus, make_user):
    raters = [make_user(f"r{i}", "physician") for i in range(3)]
    campaign = qa_campaign(hivmedqa, qa_corpus, raters)
    rng = random.Random(3)
    for assignment in Assignment.objects.filter(campaign=campaign).select_related("rater"):
        for item in hivmedqa.rating_items():
            labels.save_label(assignment, item.pk, rng.randint(0, 5), assignment.rater)
        labels.submit(assignment, assignment.rater)
    return campaign


def test_exports_carry_scale_items_unchanged_in_the_long_format(rated_rubric):
    rows = list(exports.label_rows(rated_rubric.corpus, rated_rubric))
    stored = sorted(Label.objects.filter(campaign=rated_rubric).values_list(
        "dialogue__external_id", "item__code", "value"))
    assert sorted((r["dialogue_id"], r["item"], r["value"]) for r in rows) == stored and len(rows) == 45
    buffer = io.StringIO()
    exports.write_csv(rows, buffer)
    assert buffer.getvalue().splitlines()[0] == ",".join(exports.COLUMNS)
    frame = exports.rows_dataframe(rows)
    assert set(frame["item"]) == {"comprehension", "reasoning", "knowledge", "bias", "harm"}


def test_the_agreement_report_does_not_crash_on_an_instrument_without_binary_items(rated_rubric):
    study = agreement.load_study([rated_rubric])
    criteria = ["comprehension", "reasoning", "knowledge", "bias", "harm"]
    assert [m.code for m in study.items] == criteria and len(study.labels) == 3 * 3 * 5  # scale items are rated too
    report = agreement.compute(study, n_resamples=20, plots=True)
    json.dumps(report, allow_nan=False)
    assert not report.get("empty") and report["has_ordered"]
    assert all(i["ordered"] and "weighted_kappa" in i and "icc" in i and "bland_altman" in i for i in report["items"])
    assert report["icc"]["dimensions"] == {} and "no binary items" in report["reliability"]["warnings"][0]


def test_the_agreement_report_keeps_binary_and_levels_items_apart_from_scale_items(qa_corpus, make_user):
    version, _ = instruments.import_instrument(small_instrument())
    raters = [make_user(f"m{i}", "physician") for i in range(2)]
    campaign = qa_campaign(version, qa_corpus, raters, name="Mixed")
    values = {"a1": 5, "a2": 1, "a3": 2}
    for assignment in Assignment.objects.filter(campaign=campaign).select_related("rater"):
        for item in version.rating_items():
            labels.save_label(assignment, item.pk, values[item.code], assignment.rater)
        labels.submit(assignment, assignment.rater)
    study = agreement.load_study([campaign])
    assert [m.code for m in study.items] == ["a1", "a2", "a3"]  # the text item a4 is left out
    pairs = set(zip(study.labels["item"].astype(str), study.labels["value"], strict=True))
    assert pairs == {("a1", 5), ("a2", 1), ("a3", 2)}  # the scale item's 5s are not mislabelled as others
    report = agreement.compute(study, n_resamples=20, plots=False)
    assert [(row["code"], row.get("ordered", False)) for row in report["items"]] == [
        ("a1", True), ("a2", False), ("a3", True)]
    # dimension scores sum binary items (and the levels item as "overall"), never a scale item's points
    assert agreement._dimension_scores(study).to_numpy().max() == 2


def test_delphi_studies_start_from_any_instruments_items(hivmedqa, agentclinic, coordinator):
    from delphi import services

    study = services.create_study(title="Rubric importance", user=coordinator, version=hivmedqa)
    rnd = study.rounds.get()
    assert [i.code for i in services.round_items(rnd)] == ["comprehension", "reasoning", "knowledge", "bias", "harm"]
    clinic = services.create_study(title="Clinic importance", user=coordinator, version=agentclinic)
    codes = [i.code for i in services.round_items(clinic.rounds.get())]
    assert "comments" not in codes and len(codes) == 7
    assert list(Item.objects.filter(version=hivmedqa, response_type="scale").values_list("scale_min", flat=True)) \
        == [0] * 5


def test_the_demo_installs_the_ready_instruments_and_answers_for_the_demo_physician(db, demo_scope):
    from django.contrib.auth import get_user_model

    from annotation.demo import DEMO_ANSWER_CAMPAIGN, load_demo, load_instrument_demo

    load_demo()
    first = load_instrument_demo()
    assert first == {"instruments_installed": 2, "answers_created": 5, "campaigns_created": 1}
    assert load_instrument_demo() == {"instruments_installed": 0, "answers_created": 0, "campaigns_created": 0}
    physician = get_user_model().objects.get(username="physician")
    assigned = Assignment.objects.filter(rater=physician, campaign__name=DEMO_ANSWER_CAMPAIGN)
    assert assigned.count() == 5 and all(a.dialogue.is_answer for a in assigned)
    assert Corpus.objects.get(name="Demo answers (synthetic)").kind == "answer"
