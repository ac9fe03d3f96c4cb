"""What the workbench writes for a journal is true: the methods text (page, methods.md, methods.docx) and the
TRIPOD-LLM checklist state only what the study's recorded provenance licenses, in the instrument's words, with one
number formatter.

- A table-driven test over the kinds of provenance (labels rated in the app with and without assured blinding,
  imported labels with their file and SHA-256, a drawn vs a declared random sample, a live vs an imported judge,
  physicians vs LLM scoring iterations as raters, a dialogue vs an answer instrument): each view's text holds the
  true sentence and none of the false ones. These run on views (plain dicts), without a database.
- A HIVMedQA-shaped study (answers with replicates, an imported judge, LLM scoring iterations imported as raters with
  ``--rater-kind llm``) built and exported once for the module: its prose files hold no Mini-CEX word, its methods
  say what its records say, and the rater kind is recorded by ``import_labels`` and the campaign page's form.
- The number formatter's cases (near-degenerate, zero, negative zero, noise around zero, bounded scale) in the
  formatter and in the methods' tables, with a random rater, a constant rater and a near-constant item.

Run this file in both modes."""

from __future__ import annotations

import copy
import io
import re
import zipfile

import numpy as np
import pytest
from django.urls import reverse

from core.stats import formatting
from tests import hivmedqa_data as hiv

ITERATIONS = ("gpt4o-iteration-1", "gpt4o-iteration-2", "gpt4o-iteration-3")
RATERS_FILE = "hivmedqa_iterations.csv"
JUDGE_FILE = "hivmedqa_medgpt.csv"
#: Words of the Mini-CEX and its paper that must not appear in the prose of a study whose instrument rates answers
#: and whose raters are LLM scoring iterations.
MINI_CEX_WORDS = ("dialogue", "physician", "Shi et al", "Mini-CEX", "doctor model", "Table 6", "Table 2: scores",
                  "paper's rule", "patient case", "a answer")


def _words(text: str) -> str:
    """``text`` without the archive's file and column names (the format's names, not words about the study)."""
    return re.sub(r"data/dialogues\.csv|dialogue_template|per_dialogue_instruction|Mini-CEX Workbench", "", text)


# --- views of each kind of provenance (no database) -----------------------------------------------------------------
def _view(target: str = "answer", campaigns=(), samples=(), runs=(), reports=(), settings=None) -> dict:
    source = ("Cardenal-Antolin et al., HIVMedQA: Benchmarking large language models" if target == "answer"
              else "")
    slug = "hivmedqa-medgpt" if target == "answer" else "llm-mini-cex"
    return {"project": "P", "counts": {"data/dialogues.csv": 450, "data/corpora.csv": 1, "data/labels.csv": 30,
                                       "data/raters.csv": 3},
            "reports": list(reports), "settings": settings or {"campaign_reports": [], "judge_reports": []},
            "provenance": {"target": target, "campaigns": list(campaigns), "samples": list(samples),
                           "judge_runs": list(runs), "software": {"Python": "3.11.2", "numpy": "2.0.0"},
                           "instruments": [{"key": f"{slug}@v1", "slug": slug, "name": "Instrument",
                                            "target": target, "source": source}]}}


APP_BLIND = {"name": "C", "origin": "app", "labels": 30, "raters": 3, "rater_kind": "physicians",
             "model_visible_raters": 0, "files": []}
APP_SEEN = {**APP_BLIND, "model_visible_raters": 2}
IMPORTED_LLM = {"name": "C", "origin": "imported", "labels": 30, "raters": 3, "rater_kind": "llm",
                "model_visible_raters": 0, "files": [{"file": "iterations.csv", "sha256": "ab" * 32}]}
IMPORTED_UNKNOWN = {**IMPORTED_LLM, "rater_kind": ""}
IMPORTED_PHYSICIANS = {**IMPORTED_LLM, "rater_kind": "physicians"}
DRAWN = {"campaign": "C", "kind": "drawn", "size": 36, "seed": 20261127, "population": 450, "stratified": True}
DECLARED = {"campaign": "C", "kind": "declared", "size": 90, "seed": None, "population": 0, "stratified": False}
LIVE = {"key": "run-1", "name": "App judge", "source": "live", "model": "gpt-4o-mini", "results": 2250,
        "temperature": 0.0, "max_tokens": 800, "seed": 7, "mode": "per-dialogue", "prompt_set": "Default@v1",
        "prompts": 5, "calls": 450, "requests_sent": 450}
IMPORTED_JUDGE = {"key": "run-1", "name": "MedGPT judge", "source": "imported", "model": "gpt-4o-2024-08-06",
                  "results": 2250, "file": "medgpt.csv", "sha256": "cd" * 32, "prompts_given": 0}

CASES = {
    # name: (view, sentences that must be there, sentences that must not)
    "rated in the app, blinded": (
        _view(campaigns=[APP_BLIND]),
        ["rated in the app", "the raters were blinded to the model", "physicians (raters holding the project's "
                                                                     "physician role)"],
        ["blinding to the model is not assured", "imported from", "whether they were blinded"]),
    "rated in the app, blinding not assured": (
        _view(campaigns=[APP_SEEN]),
        ["rated in the app", "2 of the raters also hold a coordinator's or analyst's role",
         "blinding to the model is not assured"],
        ["the raters were blinded"]),
    "imported labels of LLM iterations": (
        _view(campaigns=[IMPORTED_LLM]),
        ["LLM scoring iterations, as the coordinator stated on importing", "imported from iterations.csv (SHA-256 "
         + "ab" * 32, "whether they were blinded to the model is not recorded"],
        ["rated in the app", "blinded to the model:", "physician"]),
    "imported labels, raters not recorded": (
        _view(campaigns=[IMPORTED_UNKNOWN]),
        ["who the raters are (physicians, other experts, LLM iterations) is not recorded"],
        ["LLM scoring iterations, as", "physicians, as", "rated in the app"]),
    "imported labels of physicians": (
        _view(campaigns=[IMPORTED_PHYSICIANS]),
        ["physicians, as the coordinator stated on importing"],
        ["LLM scoring iterations, as", "rated in the app"]),
    "drawn sample": (
        _view(campaigns=[APP_BLIND], samples=[DRAWN]),
        ["36 of 450 answers, drawn in the app with seed 20261127, stratified by model"],
        ["declared a random sample", "seed, population) is not recorded", "none is recorded"]),
    "declared sample": (
        _view(campaigns=[IMPORTED_LLM], samples=[DECLARED]),
        ["its 90 labelled answers were declared a random sample on importing; how they were drawn (seed, "
         "population) is not recorded"],
        ["drawn in the app with seed", "with seed and population"]),
    "no sample": (
        _view(campaigns=[APP_BLIND]),
        ["Random sample: none is recorded"],
        ["drawn in the app", "declared a random sample"]),
    "live judge": (
        _view(runs=[LIVE]),
        ["run in the app with model gpt-4o-mini (temperature 0.0, maximum tokens 800, seed 7",
         'prompt set "Default@v1" with 5 item prompts', "450 request(s) with their raw answers"],
        ["imported from", "prompts not recorded", "The app sent no request"]),
    "imported judge": (
        _view(runs=[IMPORTED_JUDGE]),
        ["imported from medgpt.csv (SHA-256 " + "cd" * 32, "model as the file names it: gpt-4o-2024-08-06",
         "parameters (temperature, maximum tokens, seed) not recorded", "prompts not recorded",
         "The app sent no request for it"],
        ["run in the app", "with their raw answers (data/llm_calls.csv)", "item prompts"]),
    "dialogue instrument": (
        _view(target="dialogue", campaigns=[APP_BLIND], samples=[DRAWN]),
        ["450 dialogues in 1 corpora", "stratified by doctor model", "rating dialogues",
         "Shi et al. LLM-Mini-CEX"],
        ["answers", "Cardenal-Antolin", "HIVMedQA"]),
    "answer instrument": (
        _view(target="answer", campaigns=[IMPORTED_LLM], samples=[DECLARED]),
        ["450 answers in 1 corpora", "rating answers to questions", "Cardenal-Antolin et al. HIVMedQA"],
        ["dialogue", "Shi et al", "doctor model", "physician"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_kind_of_provenance_gives_the_true_sentence_and_no_false_one(case):
    from studies.methods import methods_docx, methods_markdown, tripod_markdown

    view, true, false = CASES[case]
    text = methods_markdown(view)
    checklist = tripod_markdown(view)
    for sentence in true:
        assert sentence in text, (case, sentence)
    for sentence in false:
        assert sentence not in _words(text), (case, sentence)
        if sentence in ("physician", "dialogue", "Shi et al", "doctor model"):
            assert sentence not in _words(checklist), (case, sentence)
    if case == "answer instrument":
        assert _docx_text(methods_docx(view)).count("HIVMedQA") >= 1


def _msgids(sentence) -> list[str]:
    """A stored sentence's message ids, the outer one first, then those of its parts in order."""
    out = [sentence["msgid"]]
    for value in (sentence.get("params") or {}).values():
        if isinstance(value, dict) and "sentence" in value:
            out += _msgids(value["sentence"])
        elif isinstance(value, dict) and "join" in value:
            for part in value["join"]:
                if isinstance(part, dict) and "sentence" in part:
                    out += _msgids(part["sentence"])
    return out


def _page_sentences(html_text: str) -> list[str]:
    """The methods page's sentences in document order: the sections' paragraphs, the checklist's answers."""
    import html

    sections = html_text.split('data-testid="methods-sections"', 1)[1].split('<h2 id="tripod">', 1)[0]
    body = html_text.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    paragraphs = re.findall(r"<p(?: [^>]*)?>(.*?)</p>", sections, re.S)
    answers = [row[-1] for row in (re.findall(r"<td>(.*?)</td>", r, re.S) for r in body.split("</tr>")) if row]
    return [html.unescape(re.sub(r"<[^>]+>", "", text)) for text in paragraphs + answers]


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_chinese_page_says_the_archives_sentences_and_no_others(case):
    """For each kind of provenance the methods page in Chinese says, sentence for sentence, the sentences of the
    archive's methods.md and tripod-llm.md: each built once as message ids with parameters, the English page their
    English text word for word, the Chinese page the translation of the same message ids in the same order, every
    message id translated, and "not recorded" (or "none is recorded") where and only where the English says it
    (未记录)."""
    from django.template.loader import render_to_string
    from django.utils import translation

    from scoring.templatetags.sentence_tags import in_language
    from studies.methods import (
        CITATIONS,
        TRIPOD_SOURCE,
        applicability,
        checklist,
        methods_markdown,
        sections,
        tripod_markdown,
    )

    view = CASES[case][0]
    built = [p for s in sections(view) for p in s["paragraphs"] if hasattr(p, "msgid")]
    built += [row["said"]["answer"] for row in checklist(view)]
    archive = methods_markdown(view) + tripod_markdown(view)
    pages = {}
    for language in ("en", "zh-hans"):
        with translation.override(language):
            pages[language] = _page_sentences(render_to_string("studies/methods.html", {
                "sections": sections(view), "checklist": checklist(view), "figures": {"stored": True},
                "tripod_source": TRIPOD_SOURCE, "tripod_applicability": applicability(view)}))
    english, chinese = ([p for p in pages[language] if p not in CITATIONS.values()]  # references: as published
                        for language in ("en", "zh-hans"))
    assert english == [str(s) for s in built], case  # the English page: the archive's sentences
    assert all(sentence in archive for sentence in english), case
    with translation.override("zh-hans"):
        said = [in_language(s.stored()) for s in built]
        for sentence in built:
            for msgid in _msgids(sentence.stored()):
                if re.sub(r"%\(\w+\)s|[\W\d_]", "", msgid):  # words to translate, not only placeholders
                    assert translation.gettext(msgid) != msgid, (case, msgid)
    assert chinese == said, case  # the same message ids in the same order, in Chinese
    for en, zh in zip(english, chinese, strict=True):
        assert bool(re.search(r"\b(not|none is|no \w+ is) recorded", en)) == ("未记录" in zh), (case, en, zh)


def test_the_checklist_answers_each_item_by_the_records():
    from studies.methods import TRIPOD_ITEMS, checklist

    imported = checklist(_view(campaigns=[IMPORTED_UNKNOWN], runs=[IMPORTED_JUDGE]))
    live = checklist(_view(campaigns=[APP_BLIND], runs=[LIVE]))
    assert [row["item"] for row in imported] == [item[0] for item in TRIPOD_ITEMS]
    assert len(imported) == 49 and {"1", "6a", "7d", "14f", "19g"} <= {row["item"] for row in imported}
    for row in imported + live:
        assert re.match(r"(reported at |not applicable because |not recorded)", row["answer"]), row
    by = {row["item"]: row["answer"] for row in imported}
    live_by = {row["item"]: row["answer"] for row in live}
    # development-only items do not apply to an evaluation; nor summarisation's or classification's
    for item in ("6b", "11", "10", "6e"):
        assert by[item].startswith("not applicable because"), item
    # a judge whose prompts and parameters came from a file: not recorded; a live one: reported
    assert by["6c"].startswith("not recorded: parameters") and "(the 1 imported judge run(s))" in by["6c"]
    assert live_by["6c"].startswith("reported at data/judges.csv") and "(the 1 judge run(s) in the app)" in live_by[
        "6c"]
    assert "reported at data/llm_calls.csv" in live_by["12"] and "not recorded" in by["12"]
    # who the raters are: not recorded for the imported labels, physicians for the app's
    assert "raters: not recorded" in by["8c"] and "raters: physicians" in live_by["8c"]
    for item in ("1", "2", "13", "14a", "14b", "19a", "19b"):
        assert by[item] == "not recorded", item
    # a dialogue instrument's task (diagnostic conversation) is none of the guideline's: 7a does not apply to it
    dialogues = {row["item"]: row["answer"] for row in checklist(_view(target="dialogue", campaigns=[APP_BLIND]))}
    assert dialogues["7a"].startswith("not applicable because the task evaluated (diagnostic conversation)")
    assert by["7a"].startswith("reported at")


# --- the number formatter --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value, low, high, digits, scale, expected", [
    (0.3321, 0.3285, 0.3321, 2, None, "0.332 [0.329, 0.332]"),  # near-degenerate: the limits print apart
    (0.33, 0.33, 0.33, 2, None, "0.33 (CI not estimable)"),  # degenerate: never [x, x]
    (0.0, 0.0, 0.0, 2, None, "0.00 (CI not estimable)"),  # zero
    (-0.0, -0.0001, 0.0001, 2, None, "0.0000 [-0.0001, 0.0001]"),  # negative zero
    (-1e-17, -1e-17, 7.24e-18, 2, None, "0.00 (CI not estimable)"),  # noise around a zero by construction
    (4.989, 4.968, 5.010, 2, (0, 5), "4.99 [4.97, 5.00]"),  # bounded scale: clipped
    (0.02, -0.01, 0.06, 2, (0, 5), "0.02 [0.00, 0.06]"),
])
def test_the_number_formatter(value, low, high, digits, scale, expected):
    assert formatting.estimate(value, low, high, digits, scale=scale) == expected
    assert not re.search(r"-0\.0+(?![0-9])", formatting.estimate(value, low, high, digits, scale=scale))


def test_figures_print_with_their_note_and_the_warning_prints_zero_as_zero():
    from core.stats.bootstrap import bootstrap_summary

    out = bootstrap_summary(7.24e-18, [7.24e-18] * 1000, n_resamples=1000)
    assert out["ci_note"] and "give 0:" in " ".join(out["warnings"]) and "e-18" not in " ".join(out["warnings"])
    assert formatting.figure({"value": 0.5, "ci_note": "x", "ci_low": None, "ci_high": None}) == \
        "0.50 (CI not estimable)"
    assert formatting.figure({"mean": None}) == "undefined"
    assert formatting.figure({"score_pct": 99.96, "ci_low": 99.9, "ci_high": 100.02}, 1, value_key="score_pct",
                             scale=(0, 100)) == "100.0 [99.9, 100.0]"
    assert formatting.short(-7.24e-18) == "0" and formatting.short(0.000123456) == "0.000123"


def _agreement_report(rng: np.random.Generator, kind: str) -> dict:
    """An agreement report's per-model means as the report gives them, for a random, a constant and a near-constant
    rater's scores on a 0-5 scale (a near-constant item's normal interval runs past 5)."""
    if kind == "random":
        scores = rng.integers(0, 6, 90).astype(float)
    elif kind == "constant":
        scores = np.full(90, 5.0)
    else:
        scores = np.full(90, 5.0)
        scores[rng.choice(90, 2, replace=False)] = 4.0  # 98% fives, as HIVMedQA's bias criterion
    mean = float(scores.mean())
    half = 1.96 * float(scores.std(ddof=1)) / np.sqrt(scores.size)
    figure = ({"mean": mean, "ci_low": None, "ci_high": None, "ci_note": "not estimable (no variation)"}
              if half == 0 else {"mean": mean, "ci_low": mean - half, "ci_high": mean + half})
    return {"n_labels": 90, "n_dialogues": 90, "n_raters": 1, "n_resamples": 1000, "seed": 1, "methods": {},
            "items": [], "models": [{"model": "m", "n_dialogues": 90, "dimensions": {},
                                     "criteria": {"bias": {**figure, "min": 0, "max": 5}}}]}


@pytest.mark.parametrize("kind", ["random", "constant", "near-constant"])
def test_the_methods_tables_print_through_the_formatter(kind):
    from studies.methods import methods_markdown

    report = _agreement_report(np.random.default_rng(3), kind)
    view = _view(campaigns=[IMPORTED_LLM], reports=[{"figure": "agreement C [percentile, pearson]",
                                                     "kind": "agreement", "report": report,
                                                     "fingerprint": "f" * 64}],
                 settings={"campaign_reports": [{"campaign": "C"}], "judge_reports": []})
    text = methods_markdown(view)
    row = next(line for line in text.splitlines() if line.startswith("| m |"))
    assert not re.search(r"-0\.0+(?![0-9])", row) and not re.search(r"\[(\d+\.\d+), \1\]", row)
    limits = [float(x) for x in re.findall(r"\[([-\d.]+), ([-\d.]+)\]", row)[0]] if "[" in row else []
    assert all(0 <= x <= 5 for x in limits), row
    if kind == "constant":
        assert "5.00 (CI not estimable)" in row
    if kind == "near-constant":
        assert row.count("5.00]") == 1  # the upper limit past the scale prints as the scale's top
    assert "Table 2" not in text and "Scores per model from the raters' labels" in text


# --- a HIVMedQA-shaped study ----------------------------------------------------------------------------------------
def _build(path) -> dict:
    from annotation.importers import import_dialogues
    from annotation.instruments import install_shipped
    from annotation.label_import import import_labels
    from annotation.models import Corpus
    from projects import scoping
    from projects.services import create_project
    from studies.export import export_study
    from studies.figures import methods_view

    with scoping.scopes_disabled():
        project = create_project("HIVMedQA words")
    scores = hiv.judge_scores()
    rows = [(answer, ITERATIONS[hiv.PHYSICIANS.index(who)], code, value)
            for answer, who, code, value in hiv.physician_scores(scores, replicates=(1, 2))]
    with scoping.in_project(project):
        version = install_shipped("hivmedqa-medgpt")[0]
        corpus = Corpus.objects.create(project=project, name="HIVMedQA answers")
        import_dialogues(corpus, hiv.answers_jsonl())
        import_labels(corpus, io.BytesIO(hiv.judge_csv(scores).encode()).readlines(), file_name=JUDGE_FILE,
                      scale_version=version)
        counts = import_labels(corpus, io.BytesIO(hiv.physicians_csv(rows).encode()).readlines(),
                               file_name=RATERS_FILE, scale_version=version, rater_kind="llm")
        view = methods_view(project)
        export_study(project, path)
    return {"project": project.pk, "counts": counts, "view": view}


@pytest.fixture(scope="module")
def hiv_archive(django_db_setup, django_db_blocker, tmp_path_factory):
    from django.db import transaction

    path = tmp_path_factory.mktemp("words") / "hivmedqa.zip"
    with django_db_blocker.unblock(), transaction.atomic():
        facts = _build(path)
        transaction.set_rollback(True)
    return path, facts


def _docx_text(data: bytes) -> str:
    from docx import Document

    doc = Document(io.BytesIO(data))
    return "\n".join([p.text for p in doc.paragraphs]
                     + [cell.text for table in doc.tables for row in table.rows for cell in row.cells])


def _prose(path) -> dict[str, str]:
    with zipfile.ZipFile(path) as zf:
        return {"methods/methods.md": zf.read("methods/methods.md").decode(),
                "methods/tripod-llm.md": zf.read("methods/tripod-llm.md").decode(),
                "methods/methods.docx": _docx_text(zf.read("methods/methods.docx"))}


def test_the_hivmedqa_study_is_written_in_its_own_words(db, hiv_archive):
    path, facts = hiv_archive
    for name, text in _prose(path).items():
        # file names of the archive's tables are the format's, not words about the study
        for word in MINI_CEX_WORDS:
            assert not re.search(r"\b" + re.escape(word), _words(text), re.IGNORECASE), (name, word)


def test_the_hivmedqa_methods_say_what_the_records_say(db, hiv_archive):
    path, facts = hiv_archive
    prose = _prose(path)
    methods, checklist = prose["methods/methods.md"], prose["methods/tripod-llm.md"]
    assert facts["counts"]["rater_kind"] == "llm"
    assert "LLM scoring iterations, as the coordinator stated on importing" in methods
    assert f"imported from {RATERS_FILE} (SHA-256 {facts['counts']['sha256']})" in methods
    assert f"imported from {JUDGE_FILE}" in methods and "prompts not recorded" not in methods  # the file had them
    assert "the prompt text as the file gave it for 2,250 of the scores" in methods
    assert "Random sample: none is recorded" in methods and "seed and population" not in methods
    assert "Cardenal-Antolin et al. HIVMedQA" in methods
    assert "Mean and SD over replicates per model from the raters' labels" in methods
    assert "Judge vs raters: verdicts per item, on the statistic each verdict rests on" in methods
    # the verdict table's statistic is the one the verdict rests on (weighted kappa or AC2 on a 0-5 scale)
    verdicts = methods.split("Judge vs raters: verdicts per item")[1].split("\n\n")[1]
    assert "| bias |" in verdicts and not re.search(r"\| bias \| \d+ \| (Cohen's )?kappa \|", verdicts)
    assert "prediction-powered" not in methods.lower()  # no random sample: no PPI paragraph
    # the estimates of a 0-5 criterion stay on the scale
    estimates = methods.split("**Model estimates")[1].split("\n\n")[1]
    limits = [float(x) for pair in re.findall(r"\[([-\d.]+), ([-\d.]+)\]", estimates) for x in pair]
    assert limits and all(0 <= x <= 5 for x in limits)
    assert "software: Python" in methods and "numpy" in methods
    assert "task: long-form question answering (QA)" in checklist
    assert "| 7d |" in checklist and "raters: LLM scoring iterations" in checklist


def test_the_archive_carries_who_the_raters_are(db, hiv_archive):
    """campaigns.csv holds the rater kind, and a study loaded from the archive states it again."""
    import csv

    from projects import scoping
    from studies.load import import_study
    from studies.provenance import study_provenance

    path = hiv_archive[0]
    with zipfile.ZipFile(path) as zf:
        rows = list(csv.DictReader(io.StringIO(zf.read("data/campaigns.csv").decode())))
    assert [row["rater_kind"] for row in rows] == ["llm"]
    project = import_study(path, "HIVMedQA words, loaded").project
    with scoping.in_project(project):
        entry = study_provenance(project)["campaigns"][0]
    assert entry["origin"] == "imported" and entry["rater_kind"] == "llm"
    assert entry["files"] == []  # the import's audit entry stays behind: its file reads "not recorded"


def test_the_hivmedqa_report_files_use_its_words(db, hiv_archive):
    """The judge report's CSV sections and figure names, and its JSON's paper rule: no Mini-CEX word."""
    from scoring.judges.report_csv import csv_rows

    view = hiv_archive[1]["view"]
    report = next(e["report"] for e in view["reports"] if e["kind"] == "judge")
    assert all(item["paper_rule"] is None for item in report["items"])  # the 80% rule is the Mini-CEX's
    rows = list(csv_rows(report))
    names = {str(row[0]) for row in rows[1:]} | {str(row[2]) for row in rows[1:]}
    assert "judge vs raters" in names and "vs rater majority" in names
    assert not [name for name in names if "physician" in name or "dialogue" in name]


def test_import_labels_and_the_campaign_page_record_who_the_raters_are(client, db):
    """``import_labels --rater-kind`` records it, refuses a contradiction, and the coordinator states it on the
    imported campaign's page (audited); the command's message uses the instrument's words."""
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.core.management.base import CommandError

    from annotation.importers import import_dialogues
    from annotation.instruments import install_shipped
    from annotation.models import Campaign, Corpus
    from projects import scoping
    from projects.models import AuditEvent
    from projects.roles import assign_role
    from projects.services import create_project

    with scoping.scopes_disabled():
        project = create_project("Rater kinds")
    with scoping.in_project(project):
        install_shipped("hivmedqa-medgpt")
        corpus = Corpus.objects.create(project=project, name="Answers")
        import_dialogues(corpus, hiv.answers_jsonl()[:6])
    rows = [(hiv.answer_id("model-a", 1, r), rater, "bias", 5.0) for r in (1, 2) for rater in ITERATIONS[:2]]
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as handle:
        handle.write(hiv.physicians_csv(rows))
    out = io.StringIO()
    call_command("import_labels", handle.name, corpus="Answers", scale="hivmedqa-medgpt", rater_kind="llm",
                 project="Rater kinds", stdout=out)
    assert "labels on 2 answers by 2 raters" in out.getvalue() and "dialogue" not in out.getvalue()
    with scoping.in_project(project):
        campaign = Campaign.objects.get(phase=Campaign.Phase.IMPORTED)
        assert campaign.rater_kind == "llm"
    with pytest.raises(CommandError, match="holds labels of llm scoring iterations, not physicians"):
        call_command("import_labels", handle.name, corpus="Answers", scale="hivmedqa-medgpt",
                     rater_kind="physicians", campaign=campaign.name, project="Rater kinds", stdout=io.StringIO())

    coordinator = get_user_model().objects.create_user("kinds-coordinator", password="pw-kinds-123")
    assign_role(coordinator, "coordinator", project)
    client.force_login(coordinator)
    session = client.session
    session["project_id"] = project.pk
    session.save()
    page = client.get(reverse("campaign-detail", args=[campaign.pk]), HTTP_X_PROJECT=str(project.pk))
    assert page.status_code == 200 and 'data-testid="rater-kind"' in page.content.decode()
    answer = client.post(reverse("campaign-rater-kind", args=[campaign.pk]), {"rater_kind": "experts"})
    assert answer.status_code == 302
    with scoping.in_project(project):
        campaign.refresh_from_db()
        assert campaign.rater_kind == "experts"
        event = AuditEvent.objects.filter(action="campaign.rater_kind").get()
        assert event.data == {"before": "llm", "after": "experts"}
    assert client.post(reverse("campaign-rater-kind", args=[campaign.pk]), {"rater_kind": "aliens"}).status_code == 302
    with scoping.in_project(project):
        campaign.refresh_from_db()
        assert campaign.rater_kind == "experts"
    # an imported judge's run page offers the comparison in the instrument's words
    scores = {answer: values for answer, values in hiv.judge_scores().items() if answer.startswith("model-a-q01")}
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as judge_file:
        judge_file.write(hiv.judge_csv(scores))
    call_command("import_labels", judge_file.name, corpus="Answers", scale="hivmedqa-medgpt", project="Rater kinds",
                 stdout=out)
    assert "scores on 5 answers as run #" in out.getvalue()
    from scoring.judges.models import JudgeRun

    with scoping.in_project(project):
        run = JudgeRun.objects.get(source=JudgeRun.Source.IMPORTED)
    page = client.get(reverse("judge-run", args=[run.pk])).content.decode()
    assert "Compare with raters" in page and "Judge vs raters of" in page and "physician" not in page.lower()


def test_the_methods_page_shows_tables_not_template_source(client, db, hiv_archive):
    """The page renders each table's lines (never the template's join filter) and the numbered checklist."""
    from studies.methods import methods_markdown

    view = copy.deepcopy(hiv_archive[1]["view"])
    text = methods_markdown(view)
    assert "table.lines" not in text
    from django.template.loader import render_to_string

    from studies.methods import TRIPOD_SOURCE, applicability, checklist, sections

    html = render_to_string("studies/methods.html", {"sections": sections(view), "checklist": checklist(view),
                                                     "figures": {"stored": True},  # a worker computed them
                                                     "tripod_source": TRIPOD_SOURCE,
                                                     "tripod_applicability": applicability(view)})
    assert "table.lines" not in html and "join:" not in html
    assert html.count("<pre>") == sum(len(s["tables"]) for s in sections(view)) >= 3
    assert '<th scope="row">7d</th>' in html


def test_the_pages_print_through_the_same_formatter():
    """The report pages' filters: a bounded score's interval clipped to its scale, limits that coincide not
    estimable, no "-0.00"."""
    from django.template import Context, Template

    template = Template("{% load report_tags %}{{ f|on_scale:s|fig:2 }}|{{ f|on_scale:s|ci:2 }}|{{ z|fig:2 }}|"
                        "{{ same|ci:2 }}")
    text = template.render(Context({"f": {"value": 4.989, "ci_low": 4.968, "ci_high": 5.010},
                                    "s": {"min": 0, "max": 5},
                                    "z": {"value": -1e-17, "ci_low": -0.0001, "ci_high": 0.0001},
                                    "same": {"value": 0.33, "ci_low": 0.33, "ci_high": 0.33}}))
    assert "4.99" in text and "[4.97, 5.00]" in text and "5.01" not in text
    assert "[CI not estimable]" in text and not re.search(r"-0\.0+(?![0-9])", text)


@pytest.mark.parametrize("kind", ["random", "constant", "near-constant"])
def test_the_raters_only_interval_takes_the_sample_sd(kind):
    """The raters-only (and judge-only) normal interval of a model's mean: the sample SD (ddof 1) for a random
    rater, zero width with a warning for a constant one, and a near-constant 0-5 item's upper limit, past 5 as
    computed, printed at the scale's top."""
    from core.stats import ppi

    rng = np.random.default_rng(5)
    scores = {"random": rng.integers(0, 6, 40).astype(float), "constant": np.full(40, 3.0),
              "near-constant": np.where(np.arange(40) < 39, 5.0, 4.0)}[kind]
    figure = ppi.classical_mean(scores, ddof=1)
    half = 1.959963984540054 * scores.std(ddof=1) / np.sqrt(scores.size)
    assert figure["ci_high"] - figure["value"] == pytest.approx(half)
    assert ppi.classical_mean(scores)["ci_high"] - figure["value"] == pytest.approx(half * np.sqrt(39 / 40))
    text = formatting.figure(figure, 2, scale=(0, 5))
    if kind == "constant":
        assert text == "3.00 (CI not estimable)" and any("same score" in w for w in figure["warnings"])
    if kind == "near-constant":
        assert figure["ci_high"] > 5 and text.endswith("5.00]")
    if kind == "random":
        assert re.fullmatch(r"\d\.\d+ \[\d\.\d+, \d\.\d+\]", text)


def test_the_provenance_of_labels_rated_in_the_app(db):
    """study_provenance: labels rated in the app by physicians, one of whom also coordinates the project (so blinding
    to the model is not assured for that rater), on a sample drawn with a seed."""
    from django.contrib.auth import get_user_model

    from annotation import labels
    from annotation.campaigns import add_rater, assign, create_campaign
    from annotation.importers import import_dialogues
    from annotation.instruments import install_shipped
    from annotation.models import Assignment, Corpus
    from annotation.sampling import draw_sample
    from projects import scoping
    from projects.roles import assign_role
    from projects.services import create_project
    from studies.methods import data_paragraphs
    from studies.provenance import study_provenance

    with scoping.scopes_disabled():
        project = create_project("Rated here")
    with scoping.in_project(project):
        version = install_shipped("hivmedqa-medgpt")[0]
        corpus = Corpus.objects.create(project=project, name="Answers")
        import_dialogues(corpus, hiv.answers_jsonl()[:30])
        campaign = create_campaign(name="Here", corpus=corpus, scale_version=version, overlap=2)
        draw_sample(campaign, size=6, stratified=False, seed=77)
        users = []
        for name in ("rater-one", "rater-two"):
            user = get_user_model().objects.create_user(username=name)
            assign_role(user, "physician", project)
            add_rater(campaign, user)
            users.append(user)
        assign_role(users[1], "coordinator", project)  # sees the models on the corpus pages
        assign(campaign)
        bias = next(i.pk for i in version.rating_items() if i.code == "bias")
        for user in users:  # two answers each
            for assignment in Assignment.objects.filter(campaign=campaign, rater=user).order_by("pk")[:2]:
                labels.save_label(assignment, bias, 5, user)
        prov = study_provenance(project)
    entry = next(c for c in prov["campaigns"] if c["name"] == "Here")
    assert entry["origin"] == "app" and entry["rater_kind"] == "physicians" and entry["labels"] == 4
    assert entry["raters"] == 2 and entry["model_visible_raters"] == 1
    assert prov["samples"] == [{"campaign": "Here", "kind": "drawn", "size": 6, "seed": 77, "population": 30,
                                "stratified": False}]
    text = " ".join(map(str, data_paragraphs({"counts": {}, "provenance": prov})))
    assert "drawn in the app with seed 77" in text
    assert "physicians (raters holding the project's physician role)" in text
    assert "1 of the raters also holds a coordinator's or analyst's role" in text
    assert "blinding to the model is not assured" in text and "were blinded" not in text


@pytest.mark.parametrize("unlabelled", [0, 40])
def test_no_ppi_paragraph_when_every_text_is_labelled(unlabelled):
    """With every text labelled (no unlabelled text for the judge to add), PPI adds nothing: no paragraph, no
    column, no reference."""
    from studies.methods import methods_markdown

    figure = {"value": 3.2, "ci_low": 3.0, "ci_high": 3.4}
    report = {"methods": {}, "items": [], "model_estimates": {
        "available": True, "citation": "Angelopoulos et al.", "scopes": [{"key": "bias", "min": 0, "max": 5}],
        "models": [{"model": "m", "scopes": {"bias": {"physicians": figure, "judge": figure,
                                                      "ppi": {**figure, "n_unlabeled": unlabelled}}}}]}}
    view = _view(campaigns=[APP_BLIND], reports=[{"figure": "judge run-1 vs C", "kind": "judge", "report": report,
                                                  "fingerprint": "f" * 64}],
                 settings={"campaign_reports": [], "judge_reports": [{"campaign": "C", "run": "run-1"}]})
    text = methods_markdown(view)
    assert ("prediction-powered" in text) == bool(unlabelled)
    assert ("PPI [95% CI]" in text) == bool(unlabelled) and ("Angelopoulos AN" in text) == bool(unlabelled)


@pytest.mark.parametrize("target", ["dialogue", "answer"])
def test_the_reports_methods_are_said_in_the_pages_language_and_stored_ones_stay_english(target):
    """The agreement and judge reports' methods store message ids beside their English: a page in English says the
    English word for word, one in Chinese a translation of every entry (the judge's acceptance rule, written
    elsewhere, excepted); a report stored before, without them, shows its English."""
    import importlib

    from django.utils import translation

    from scoring.judges.verdicts import VerdictSettings
    from scoring.reports import agreement
    from scoring.reports.sentences import KEY
    from scoring.reports.wording import words_for
    from scoring.templatetags.sentence_tags import said

    judge_methods = importlib.import_module("scoring.judges.report.methods")
    items = [agreement.ItemMeta(code, "", "", "", kind, [0, 1]) for code, kind in
             (("1", "binary"), ("4", "ordinal"), ("5", "scale"))]
    reports = [agreement.methods(7, 999, "bca", "tetrachoric", items=items, words=words_for(target)),
               judge_methods.methods(7, 999, VerdictSettings(ci_method="bca"), words_for(target, True))]
    for methods in reports:
        texts = {k: v for k, v in methods.items() if isinstance(v, str) and v}
        assert set(methods[KEY]) == set(texts)
        for key, english in texts.items():
            with translation.override("en"):
                assert said(methods, key) == english
            with translation.override("zh-hans"):
                chinese = said(methods, key)
                assert chinese != english and re.search(r"[\u4e00-\u9fff]", chinese), key
                assert said({k: v for k, v in methods.items() if k != KEY}, key) == english
