"""Reading the figures: numbers with units and the decimals their intervals need, near-degenerate
and undefined figures, warnings and shares in the report's own names, a judge report that fits an answer instrument
(HIVMedQA's rubric, tests/hivmedqa_data.py) with a random rater, a constant rater and a near-constant item, and the
judge's Table 2 from ``judge_report``."""

from __future__ import annotations

import csv
import io
import json
import re

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.template import Context, Template
from django.template.loader import render_to_string

from annotation.importers import import_dialogues
from annotation.instruments import install_shipped
from annotation.label_import import import_labels
from annotation.models import Campaign, Corpus
from core.stats import formatting
from scoring.judges import estimates
from scoring.judges import report as judge_report
from scoring.judges.models import JudgeRun
from scoring.judges.report import VerdictSettings
from tests import hivmedqa_data as hiv
from tests.test_judge_verdict import context

# What the Mini-CEX's reports say and a report on a rubric of answers, rated by raters who are not physicians, must
# not (as tests/test_browser_own_data.py asks of the campaign report).
MINI_CEX_WORDS = ("dialogue", "doctor model", "physician", "binary", "item 4", "table 5", "table 6",
                  "rater × rater", "seeds/")


def render(text: str, **values) -> str:
    return Template("{% load report_tags %}" + text).render(Context(values))


# ---------------------------------------------------------------------------------------------------------------
# 8 and 9. digits follow the interval; units; no -0.00; no value rounded across a band's start
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value, low, high, digits, printed", [
    (0.33273, 0.32908, 0.33273, 2, "0.333 [0.329, 0.333]"),  # the Krippendorff's alpha, never [0.33, 0.33]
    (9.82, 0.031, 19.63, 1, "9.82 [0.03, 19.63]"),  # above 0: "scores higher" must be readable
    (-11.46, -22.96, 0.034, 1, "-11.46 [-22.96, 0.03]"),  # includes 0: "no difference shown"
    (0.9998, 0.9996, 1.0, 3, "0.9998 [0.9996, 1.0000]"),  # never "1.000 [1.000, 1.000]"
    (-0.001, -0.12, 0.11, 2, "-0.001 [-0.120, 0.110]"),  # never "-0.00"
    (0.0, -0.0001, 0.0, 2, "0.0000 [-0.0001, 0.0000]"),
    (0.52, 0.41, 0.63, 2, "0.52 [0.41, 0.63]"),  # an ordinary interval keeps its digits
])
def test_an_interval_prints_with_the_decimals_it_needs(value, low, high, digits, printed):
    assert formatting.estimate(value, low, high, digits) == printed
    assert "-0.00 " not in formatting.estimate(-0.0000001, None, None, 2) + " "
    assert formatting.number(-0.0, 2) == "0.00" and formatting.number(-0.0004, 2, sign=True) == "0.00"


def test_figures_in_pages_follow_their_interval_and_band():
    near = {"value": 0.33273, "ci_low": 0.32908, "ci_high": 0.33273}
    assert render("{{ f|fig:2 }}", f=near).startswith('0.333 <small class="muted">[0.329, 0.333]</small>')
    assert render("{{ f|ci:2 }}", f=near) == "[0.329, 0.333]"
    # 0.1996 is "slight" (fair starts at 0.20): its printed value stays below 0.20
    from core import stats

    slight = {"value": 0.1996, "ci_low": 0.10, "ci_high": 0.30,
              "interpretation": stats.interpret(0.1996, "landis_koch")}
    assert render("{{ f|fig:2 }}", f=slight).startswith("0.1996 ") and "slight" in render("{{ f|fig:2 }}", f=slight)
    assert render("{{ x|num:2 }}", x=-0.0001) == "0.00"
    # a share and its interval on one scale (the generation page said "33%" beside "CI 0.097-0.700")
    assert render("{{ r.accuracy|pct }} {{ r|pct_ci }}", r={"accuracy": 1 / 3, "ci_low": 0.097, "ci_high": 0.7}) \
        == "33.3% 9.7%–70.0%"


def ranking_of(differences: list[tuple[str, str, float, float, float]]) -> str:
    """The model ranking sentence for hand-made PPI++ differences (a, b, value, low, high) on a % score."""
    scope = estimates.Scope("all", "All binary items (the Average column of Table 6)", "overall", "%", 0.0, 100.0,
                            ["1.1"])
    models = sorted({m for d in differences for m in d[:2]})
    scores = estimates.Scores(dialogue_ids=np.arange(3), models=np.asarray(models, dtype=object), scopes=[scope],
                              physicians={}, judge={}, in_sample=np.ones(3, bool), sample=None)
    per_model = {m: {"all": {"ppi": {"available": True, "value": 60.0 - n, "ci_low": 50.0 - n, "ci_high": 70.0 - n,
                                     "reason": None}}} for n, m in enumerate(models)}
    entries = []
    for a, b, value, low, high in differences:
        ppi = {"value": value, "ci_low": low, "ci_high": high}
        ppi["verdict"] = estimates._verdict(ppi, a, b).text
        entries.append({"scope": "all", "a": a, "b": b, "ppi": ppi, "judge": {"verdict": ppi["verdict"]}})
    return estimates._ranking(scores, per_model, entries)["text"]


def test_model_differences_have_units_and_show_their_side_of_zero():
    text = ranking_of([("demo-doctor-A", "demo-doctor-B", -11.46, -22.96, 0.034),
                       ("demo-doctor-B", "demo-doctor-C", 9.82, 0.031, 19.63)])
    assert "demo-doctor-B above demo-doctor-C by 9.82 percentage points [0.03, 19.63]" in text, text
    assert "No difference shown (the interval includes 0) between demo-doctor-A and demo-doctor-B " \
           "(demo-doctor-A - demo-doctor-B -11.46 percentage points [-22.96, +0.03])" in text, text
    assert "(the interval excludes 0)" in text
    assert "[0.0," not in text and "-0.00" not in text


# ---------------------------------------------------------------------------------------------------------------
# 9. undefined figures, shares and names
# ---------------------------------------------------------------------------------------------------------------
def levels_item(judge, humans, code="4") -> judge_report.ItemData:
    return judge_report.ItemData(code=code, text="Overall", dimension="4", dimension_name="Overall",
                                 response_type="ordinal", values=[1, 2, 3], judge=np.asarray(judge),
                                 humans=np.asarray(humans))


def test_a_defined_weighted_kappa_never_carries_undefined_and_an_undefined_one_is_null():
    rng = np.random.default_rng(3)
    n = 60
    humans = rng.integers(0, 3, (3, n))
    constant = judge_report.item_report(levels_item(np.ones(n, dtype=int), humans), context(n, raters=3))
    figure = constant["vs_majority"]["weighted_kappa"]
    assert figure["value"] == pytest.approx(0.0)  # a constant answer: weighted kappa 0, defined
    assert not any("undefined" in w.lower() for w in figure["warnings"]), figure["warnings"]
    same = np.ones((3, n), dtype=int)
    flat = judge_report.item_report(levels_item(np.ones(n, dtype=int), same), context(n, raters=3))
    undefined = flat["vs_majority"]["weighted_kappa"]
    assert undefined["value"] is None and undefined["ci_low"] is None
    assert any("undefined" in w for w in undefined["warnings"])


def test_an_undefined_agreement_is_said_once():
    agreement = {"value": None, "ci_low": None, "ci_high": None, "coefficient": "kappa", "name": "Cohen's kappa",
                 "warnings": ["Undefined: no pair of physicians shares a dialogue."]}
    item = {"n_dialogues": 60, "physicians_agreement": agreement,
            "vs_majority": {"accuracy": {"value": 0.9}, "majority_class_rate": 0.5, "majority_class": 1},
            "vs_physicians": {"kappa": {"value": 0.5, "ci_low": 0.4, "ci_high": 0.6}}}
    reason = judge_report.decide(item, VerdictSettings(), None)["reasons"][0]
    assert reason == ("The physicians' own agreement cannot be measured (Cohen's kappa is undefined: no pair of "
                      "physicians shares a dialogue).")
    assert not re.search(r"undefined:\s*undefined", reason, re.I)
    agreement["warnings"] = ["Cohen's kappa is undefined for every pair of physicians: no variation."]
    reason = judge_report.decide(item, VerdictSettings(), None)["reasons"][0]
    assert reason.count("undefined") == 1, reason


def test_a_near_constant_item_gives_its_counts_not_a_rounded_100_percent():
    """1,102 of 1,104 scores are 5: "1,102 of 1,104 (99.8%)", never "100% of the physicians' scores are 5"."""
    n = 552
    humans = np.full((2, n), 5)
    humans[0, 7] = humans[1, 300] = 4
    item = judge_report.ItemData(code="bias", text="Bias", dimension="b", dimension_name="b", response_type="scale",
                                 values=[0, 1, 2, 3, 4, 5], judge=np.full(n, 5), humans=humans)
    entry = judge_report.item_report(item, context(n, raters=2))
    agreement = entry["physicians_agreement"]
    assert agreement["coefficient"] == "gwet_ac2" and agreement["most_frequent_text"] == "1,102 of 1,104 (99.8%)"
    assert agreement["why"].startswith("1,102 of 1,104 (99.8%) of the physicians' scores are 5 ")
    assert "100%" not in agreement["why"]
    assert formatting.share(1104, 1104) == "1,104 of 1,104 (100.0%)" and formatting.share(1, 20000) == \
        "1 of 20,000 (0.01%)"


# ---------------------------------------------------------------------------------------------------------------
# 10. a report on answers, rated by raters who are not physicians: a random rater, a constant rater, a near-constant
# item (bias), in the instrument's words
# ---------------------------------------------------------------------------------------------------------------
def lines(text: str) -> list[bytes]:
    return io.BytesIO(text.encode()).readlines()


@pytest.fixture
def hiv_study(db):
    """HIVMedQA's answers, the judge's scores and three raters: one close to the judge, one random, one constant."""
    version = install_shipped("hivmedqa-medgpt")[0]
    corpus = Corpus.objects.create(name="HIVMedQA answers")
    import_dialogues(corpus, hiv.answers_jsonl())
    scores = hiv.judge_scores()
    rng = np.random.default_rng(35)
    rows = []
    for answer, rater, code, value in hiv.physician_scores(scores):
        if rater == "dr_berg" and code != "bias":
            value = float(rng.integers(0, 6))  # a random rater
        elif rater == "dr_chen" and code != "bias":
            value = 3.0  # a constant rater
        rows.append((answer, rater, code, value))
    import_labels(corpus, lines(hiv.physicians_csv(rows)), file_name="raters.csv", scale_version=version,
                  campaign_name="Raters", random_sample=True)
    counts = import_labels(corpus, lines(hiv.judge_csv(scores)), file_name="judge.csv", scale_version=version)
    return JudgeRun.objects.get(pk=counts["judge_runs"][0]["id"]), Campaign.objects.get(name="Raters"), corpus


def visible_text(html: str) -> str:
    html = re.sub(r"<style.*?</style>", "", html, flags=re.S)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).replace("&#x27;", "'").replace("&amp;", "&")


def test_the_judge_report_on_answers_speaks_of_answers_models_and_raters(hiv_study):
    run, campaign, _ = hiv_study
    report = judge_report.judge_vs_physicians(run, campaign, n_resamples=200)
    assert report["words"]["unit"] == "answer" and report["words"]["raters"] == "raters"
    html = render_to_string("scoring/judge_report_standalone.html", {
        "run": run, "campaign": campaign, "report": report, "css": "body{}"})
    text = visible_text(html).lower()
    for word in MINI_CEX_WORDS:
        assert word not in text, (word, text[max(0, text.find(word) - 200):text.find(word) + 200])
    assert "judge vs raters" in text and "answers" in text and "models' scores" in text
    # no empty Table 6 of binary items, no paper's rule of the Mini-CEX, methods of what the instrument has
    assert all("all" not in m["dimensions"] for m in report["models"])
    assert "paper_rule" not in report["methods"] and report["acceptance_rule"]["paper_rule"] is None
    assert 'data-testid="judge-models"' not in html and 'data-testid="judge-criteria"' in html
    # the headline figures with a random rater, a constant rater and a near-constant item
    items = {item["code"]: item for item in report["items"]}
    bias = items["bias"]["physicians_agreement"]
    assert bias["coefficient"] == "gwet_ac2" and re.fullmatch(r"[\d,]+ of [\d,]+ \(\d+\.\d%\)",
                                                               bias["most_frequent_text"])
    assert bias["why"].startswith(bias["most_frequent_text"] + " of the raters' scores are 5")
    for code in ("comprehension", "reasoning", "knowledge", "harm"):  # random and constant raters: no agreement
        assert items[code]["decision"]["outcome"] in ("unreliable", "keep"), items[code]["decision"]
        assert items[code]["physicians_agreement"]["value"] < 0.4
    # every warning names raters as the report does (pseudonyms), never by their row in a matrix
    names = set(report["physicians"])
    warnings = []

    def collect(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "warnings":
                    warnings.extend(value)
                else:
                    collect(value)
        elif isinstance(node, list):
            for value in node:
                collect(value)

    collect(report)
    flagged = [w for w in warnings if "rater(s) '" in w]
    assert flagged, "the constant rater is flagged"
    for warning in flagged:
        named = re.findall(r"'([^']+)'", warning.split("rater(s)", 1)[1].split("gave", 1)[0])
        assert named and set(named) <= names | {"judge"}, (warning, names)
    assert not any("undefined: undefined" in " ".join(e["decision"]["reasons"]).lower() for e in report["items"])
    json.dumps(report, allow_nan=False)
    # the Mini-CEX report keeps the paper's layouts
    assert "Table 5" in judge_report.methods(1, 10, VerdictSettings())["vs_majority"]


def test_degenerate_intervals_are_null_in_the_model_estimates_as_in_the_judges_scores(hiv_study):
    """A criterion every answer of a model scores 5: the judge's own scores (/scores/) give no limits, and so do
    the model estimates (they gave [5.0, 5.0])."""
    from annotation.models import Dialogue
    from scoring.judges.models import JudgeResult

    run, campaign, corpus = hiv_study
    model_a = Dialogue.objects.filter(corpus=corpus, source_model="model-a")
    JudgeResult.objects.filter(run=run, item__code="bias", dialogue__in=model_a).update(value=5)
    own = judge_report.judge_scores(run, n_resamples=200)
    scores = next(m for m in own["models"] if m["model"] == "model-a")["criteria"]["bias"]
    block = estimates.model_estimates(run, campaign)
    judge = next(m for m in block["models"] if m["model"] == "model-a")["scopes"]["bias"]["judge"]
    assert scores["mean"] == judge["value"] == 5.0
    for figure in (scores, judge):
        assert figure["ci_low"] is None and figure["ci_high"] is None and figure["ci_note"], figure
    for figure in judge_report_figures(block):
        assert figure.get("ci_note") is None or (figure["ci_low"] is None and figure["ci_high"] is None), figure


def judge_report_figures(node):
    if isinstance(node, dict):
        if "ci_low" in node and "ci_high" in node:
            yield node
        for value in node.values():
            yield from judge_report_figures(value)
    elif isinstance(node, list):
        for value in node:
            yield from judge_report_figures(value)


# ---------------------------------------------------------------------------------------------------------------
# 11. judge_report gives the judge's Table 2, with or without physicians
# ---------------------------------------------------------------------------------------------------------------
def test_judge_report_gives_the_judges_scores_and_table_2(hiv_study, client, analyst, tmp_path):
    run, _, corpus = hiv_study
    out = tmp_path / "scores.json"
    call_command("judge_report", "--corpus", corpus.name, "--judge", hiv.JUDGE, "--scores", "--out", str(out))
    from_cli = json.loads(out.read_text())
    client.force_login(analyst)
    from_api = client.get(f"/api/judge-runs/{run.pk}/scores/").json()
    assert from_cli == from_api  # the same JSON as the API
    table2 = from_cli["replicates"]
    assert table2["n_replicates"] == hiv.REPLICATES and len(table2["models"]) == len(hiv.MODELS)
    text = io.StringIO()
    call_command("judge_report", "--corpus", corpus.name, "--judge", str(run.pk), "--scores", "--format", "csv",
                 stdout=text)
    rows = list(csv.reader(io.StringIO(text.getvalue())))
    assert rows[0][:4] == ["section", "scope", "statistic", "value"]
    means = [r for r in rows if r[0] == "judge scores"]
    assert len(means) == len(hiv.MODELS) * len(hiv.CRITERIA)
    sd_rows = [r for r in rows if r[0] == "replicates (judge)" and r[2].endswith("SD over replicates")]
    assert len(sd_rows) == len(hiv.MODELS) * len(hiv.CRITERIA)
    first = table2["models"][0]
    row = next(r for r in sd_rows if r[1] == first["model"] and r[2] == "comprehension SD over replicates")
    assert float(row[3]) == pytest.approx(first["criteria"]["comprehension"]["sd"])
    # without a campaign rating the corpus, the comparison says where the judge's own scores are
    from django.utils import timezone

    Campaign.objects.filter(corpus=corpus).update(deleted_at=timezone.now())
    with pytest.raises(CommandError, match="--scores gives the judge's own scores and Table 2"):
        call_command("judge_report", "--corpus", corpus.name, "--judge", str(run.pk))
    with pytest.raises(CommandError, match="JSON or CSV"):
        call_command("judge_report", "--corpus", corpus.name, "--judge", str(run.pk), "--scores", "--format", "html")


# ---------------------------------------------------------------------------------------------------------------
# 8. Delphi: the round's coefficients explained; "Keep", not the paper's "Reserve"
# ---------------------------------------------------------------------------------------------------------------
def test_delphi_coefficients_are_explained_and_keep_is_keep(client, instrument, coordinator):
    from django.urls import reverse

    from delphi.exports import round_table
    from delphi.models import ItemDecision
    from tests.test_delphi import run_round_one

    study, r1, _ = run_round_one(coordinator)
    client.force_login(coordinator)
    page = visible_text(client.get(reverse("delphi:round", args=[r1.pk])).content.decode())
    assert 'response rate (the Delphi "positive coefficient": completed / invited)' in page
    assert "authority coefficient Cr" in page and "= (Ca + Cs) / 2" in page
    assert "basis of judgement (Ca" in page and "familiarity with the topic (Cs" in page
    assert "Ca 0." not in page.replace("(Ca 0.", "")  # never the bare "Ca 0.867 · Cs 1.000 · Cr 0.933"
    assert '<option value="reserve" selected>Keep</option>' in client.get(
        reverse("delphi:round", args=[r1.pk])).content.decode()
    rows = round_table(r1)
    assert {row["Modify"] for row in rows} <= {"Keep", "Revise", "Delete", "Merge", "Add"}
    assert rows[0]["Modify"] == "Keep" and "Reserve" not in {row["Modify"] for row in rows}
    assert ItemDecision(action="reserve").get_action_display() == "Keep"


def test_the_campaign_report_gives_a_near_constant_items_share_with_its_counts(hiv_study):
    from scoring.reports import agreement as reports

    _, campaign, _ = hiv_study
    report = reports.compute(reports.load_study([campaign]), n_resamples=50, plots=False)
    bias = next(item for item in report["items"] if item["code"] == "bias")
    match = re.fullmatch(r"([\d,]+) of ([\d,]+) \((\d+\.\d+)%\)", bias["most_frequent_text"])
    count, total = (int(match.group(n).replace(",", "")) for n in (1, 2))
    assert count < total and float(match.group(3)) == pytest.approx(100 * count / total, abs=0.05)
    assert float(match.group(3)) < 100
    body = render_to_string("scoring/partials/report_body.html", {"report": report})
    assert f"{bias['most_frequent_text']} of the labels are one score" in body
