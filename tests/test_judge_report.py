"""Judge vs physicians report (scoring.judge_report) and judge labels in exports (scoring.judge_labels).

Three physicians rate six dialogues; a judge run is written directly (no LLM calls) with known answers, so every
figure below is computed by hand or with the statistics engine on matrices built here.
"""

from __future__ import annotations

import json
import re
import time
from datetime import datetime

import numpy as np
import pandas as pd
import pytest
from django.template.loader import render_to_string

from annotation import labels
from annotation.campaigns import create_campaign
from annotation.models import Assignment, Corpus
from core import stats
from projects.scoping import in_project
from scoring.judges import report as judge_report
from scoring.judges.models import JudgeConfig, JudgeResult, JudgeRun
from scoring.judges.report import (
    KEEP,
    NOT_ENOUGH,
    OUTCOMES,
    UNRELIABLE,
    JudgeReportError,
    VerdictSettings,
    compare_modes,
    judge_vs_physicians,
)
from scoring.judges.runs import config_snapshot, default_prompt_set
from tests.conftest import module_world
from tests.factories import campaign_with, default_project, mini_cex, rating_items

# physicians' answers per dialogue d000..d005 as (r0, r1, r2); every other item: binary 1, item 4 = 2
HUMAN = {
    "1.1": [(1, 1, 1), (0, 0, 0), (1, 0, 1), (0, 0, 1), (1, 1, 0), (0, 1, 0)],  # majority 1 0 1 0 1 0
    "1.2": [(1, 1, 1), (1, 1, 0), (0, 0, 0), (0, 1, 0), (1, 0, 0), (1, 1, 1)],  # majority 1 1 0 0 0 1
    "4": [(1, 2, 3), (2, 2, 3), (3, 3, 1), (1, 1, 1), (2, 3, 1), (2, 2, 2)],  # majority tie 2 3 1 tie 2
}
# the judge's answers per dialogue; every other item: binary 1, item 4 = 2
JUDGE = {
    "1.1": [1, 0, 1, 0, 1, 0],  # identical to the majority
    "1.2": [1, 1, 1, 1, 1, 1],  # always 1 on a mixed majority
    "2.1": [0, 0, 0, 0, 0, 0],  # physicians all 1: ceiling kappa undefined, accuracy 0
    "4": [2, 2, 3, 2, 1, 2],
}
NOT_DONE = {("3.1", 5): JudgeResult.Status.UNSCORED, ("3.2", 4): JudgeResult.Status.FAILED,
            ("3.3", 3): JudgeResult.Status.PENDING}


@pytest.fixture(autouse=True)
def _fresh_item_cache():
    labels._allowed.cache_clear()
    yield
    labels._allowed.cache_clear()


def make_config(name: str, mode: str = JudgeConfig.Mode.PER_ITEM, **fields) -> JudgeConfig:
    return JudgeConfig.objects.create(name=name, model=fields.pop("model", "judge-model"), mode=mode,
                                      prompt_set=default_prompt_set(mini_cex()), **fields)


def make_run(config: JudgeConfig, corpus, answers: dict[str, list[int]], not_done=None) -> JudgeRun:
    """A finished run with one result per dialogue and item, written directly."""
    run = JudgeRun.objects.create(config=config, corpus=corpus, snapshot=config_snapshot(config),
                                  status=JudgeRun.Status.SUCCEEDED)
    not_done = not_done or {}
    rows = []
    for dialogue in corpus.dialogues.order_by("external_id"):
        index = int(dialogue.external_id[1:])
        for item in mini_cex().rating_items():
            status = not_done.get((item.code, index), JudgeResult.Status.DONE)
            value = answers[item.code][index] if item.code in answers else (1 if item.response_type == "binary"
                                                                            else 2)
            rows.append(JudgeResult(run=run, dialogue=dialogue, item=item, status=status,
                                    value=value if status == JudgeResult.Status.DONE else None))
    JudgeResult.objects.bulk_create(rows)
    return run


def build_study():
    from django.contrib.auth import get_user_model

    from projects.roles import assign_role

    raters = []
    for i in range(3):
        user = get_user_model().objects.create_user(username=f"phys{i}", password=None)
        assign_role(user, "physician")
        raters.append(user)
    campaign = campaign_with(raters, n=6, overlap=3, name="JR")
    items = rating_items(campaign)
    for assignment in Assignment.objects.filter(campaign=campaign).select_related("dialogue", "rater"):
        d = int(assignment.dialogue.external_id[1:])
        r = raters.index(assignment.rater)
        for item in items:
            default = 1 if item.response_type == "binary" else 2
            value = HUMAN[item.code][d][r] if item.code in HUMAN else default
            labels.save_label(assignment, item.pk, value, assignment.rater)
        labels.submit(assignment, assignment.rater)
    run = make_run(make_config("judge-x"), campaign.corpus, JUDGE, NOT_DONE)
    return campaign, run


@pytest.fixture(scope="module")
def shared(django_db_setup, django_db_blocker):
    """Built once for the module inside a transaction that is rolled back at the end (each test still runs in its
    own savepoint through the ``db`` fixture); the report is computed once too."""
    def build():
        with in_project(default_project()):  # as the tests' own scope (tests/conftest.py)
            campaign, run = build_study()
            reports = (judge_vs_physicians(run, campaign, n_resamples=200, seed=5),
                       judge_vs_physicians(run, campaign, n_resamples=200, seed=5,
                                           verdict=VerdictSettings(min_dialogues=2, ci_method="bca")))
        return (campaign, run, *reports)

    yield from module_world(django_db_blocker, build)


@pytest.fixture
def study(shared, db):
    campaign, run = shared[:2]
    campaign.refresh_from_db()
    run.refresh_from_db()
    return campaign, run


@pytest.fixture
def report(shared, db):
    return shared[2]


@pytest.fixture
def lenient(shared, db):
    """The same report with a minimum of 2 dialogues (so verdicts go past "not enough data") and BCa intervals."""
    return shared[3]


def by_code(rep) -> dict:
    return {e["code"]: e for e in rep["items"]}


def column(code: str, r: int) -> list[int]:
    return [row[r] for row in HUMAN[code]]


# ---------------------------------------------------------------------------------------------------------------
def test_report_is_json_and_counts_units(report):
    json.dumps(report, allow_nan=False)
    assert report["kind"] == "judge_vs_physicians"
    units = report["counts"]["units"]
    assert units == {"pending": 1, "done": 6 * 24 - 3, "unscored": 1, "failed": 1, "total": 144}
    assert report["counts"]["dialogues_compared"] == 6 and report["counts"]["physicians"] == 3
    assert report["counts"]["items"] == 24 and len(report["physicians"]) == 3
    items = by_code(report)
    assert [items[c]["n_dialogues"] for c in ("3.1", "3.2", "3.3", "3.4")] == [5, 5, 5, 6]
    assert any("1 unscored, 1 failed and 1 pending" in w for w in report["warnings"])
    summary = report["summary"]
    assert set().union(*(summary[k] for k in ("replace", "keep", "unreliable", "not_enough"))) == set(items)
    # six dialogues: below the default minimum of 30, so no item gets a verdict on the judge
    assert summary["n_not_enough"] == 24 and summary["counts"]["not_enough"] == 24
    assert report["settings"] == {"floor": 0.4, "min_dialogues": 30, "margin": 0.1, "ci_method": "percentile",
                                  "paper_accuracy": 0.8}
    assert report["outcomes"] == list(OUTCOMES)
    assert any("Only 6 dialogue(s) are resampled" in w for w in report["warnings"])
    assert items["1.1"]["level"] == "nominal" and items["4"]["level"] == "ordinal"


def test_judge_identical_to_majority_can_replace(report, study):
    from django.contrib.auth import get_user_model

    from projects.pseudonyms import pseudonym

    item = by_code(report)["1.1"]
    table5 = item["vs_majority"]
    assert table5["n"] == 6 and table5["n_tied"] == 0
    for key in ("accuracy", "precision", "recall", "f1"):
        assert table5[key]["value"] == pytest.approx(1.0)
    assert (table5["tp"], table5["fp"], table5["fn"], table5["tn"]) == (3, 0, 0, 3)
    # kappa vs each physician: r0 is the majority (1), r1 and r2 agree on 4 of 6 with balanced margins (1/3)
    assert item["vs_physicians"]["kappa"]["value"] == pytest.approx((1 + 1 / 3 + 1 / 3) / 3)
    raters = {pseudonym(study[0].project_id, get_user_model().objects.get(username=f"phys{i}")): i for i in range(3)}
    kappa = {raters[p["rater"]]: p["kappa"] for p in item["vs_physicians"]["per_physician"]}  # random pseudonyms
    assert [kappa[i] for i in range(3)] == pytest.approx([1, 1 / 3, 1 / 3])
    assert item["ceiling"]["kappa"]["value"] == pytest.approx((1 / 3 + 1 / 3 - 1 / 3) / 3)
    decision = item["decision"]
    assert decision["verdict"] == NOT_ENOUGH and decision["replace"] is False
    assert "Only 6 dialogue(s)" in decision["reasons"][0] and "30" in decision["reasons"][0]
    assert item["paper_rule"]["met"] and item["paper_rule"]["flag"] is None  # majority class only 50%
    fig = item["vs_physicians"]["kappa"]
    assert fig["ci_low"] <= fig["value"] <= fig["ci_high"]


def test_judge_always_one_on_mixed_majority(report):
    item = by_code(report)["1.2"]
    table5 = item["vs_majority"]
    # majority 1 1 0 0 0 1, judge all 1: TP 3, FP 3, FN 0, TN 0
    assert (table5["tp"], table5["fp"], table5["fn"], table5["tn"]) == (3, 3, 0, 0)
    assert table5["accuracy"]["value"] == pytest.approx(0.5)
    assert table5["precision"]["value"] == pytest.approx(0.5)
    assert table5["recall"]["value"] == pytest.approx(1.0)
    assert table5["f1"]["value"] == pytest.approx(2 / 3)
    assert table5["positive_class"] == 1
    # a constant judge has kappa 0 against every physician who varies
    assert item["vs_physicians"]["kappa"]["value"] == pytest.approx(0.0)
    assert any("zero variance" in w for w in item["vs_physicians"]["warnings"])
    assert any("'judge'" in w for w in item["krippendorff_alpha"]["with_judge"]["warnings"])
    assert item["decision"]["verdict"] == NOT_ENOUGH
    assert not item["paper_rule"]["met"] and item["vs_majority"]["majority_class_rate"] == pytest.approx(0.5)


def test_ceiling_equals_manual_pairwise_computation(report):
    from sklearn.metrics import f1_score

    item = by_code(report)["1.2"]
    pairs = [(0, 1), (0, 2), (1, 2)]
    kappas = [stats.cohen_kappa(column("1.2", a), column("1.2", b)) for a, b in pairs]
    assert kappas == pytest.approx([0.25, 0.4, 0.4])
    ac1 = [stats.gwet_ac1(np.column_stack([column("1.2", a), column("1.2", b)]), categories=[0, 1]) for a, b in pairs]
    f1 = [f1_score(column("1.2", b), column("1.2", a), average="macro") for a, b in pairs]
    agree = [np.mean(np.equal(column("1.2", a), column("1.2", b))) for a, b in pairs]
    ceiling = item["ceiling"]
    assert ceiling["n_pairs"] == 3 and [p["n"] for p in ceiling["pairs"]] == [6, 6, 6]
    assert ceiling["kappa"]["value"] == pytest.approx(np.mean(kappas))  # equal n: weighted mean = mean
    assert ceiling["gwet_ac1"]["value"] == pytest.approx(np.mean(ac1))
    assert ceiling["macro_f1"]["value"] == pytest.approx(np.mean(f1))
    assert ceiling["accuracy"]["value"] == pytest.approx(np.mean(agree))
    assert "weighted" in ceiling["averaging"]
    assert ceiling["kappa"]["interpretation"]["source"].startswith("Landis")
    # judge vs each physician, same definitions
    judge = JUDGE["1.2"]
    vs = item["vs_physicians"]
    assert vs["gwet_ac1"]["value"] == pytest.approx(np.mean(
        [stats.gwet_ac1(np.column_stack([judge, column("1.2", r)]), categories=[0, 1]) for r in range(3)]))
    assert vs["macro_f1"]["value"] == pytest.approx(np.mean(
        [f1_score(column("1.2", r), judge, average="macro") for r in range(3)]))


def test_ordinal_item_excludes_and_counts_tied_majorities(report):
    from sklearn.metrics import f1_score, precision_score, recall_score

    table5 = by_code(report)["4"]["vs_majority"]
    assert table5["n_tied"] == 2 and table5["n"] == 4 and "tied" in table5["ties"]
    assert any("tied" in w for w in table5["warnings"])
    # untied: d001 d002 d003 d005, majority 2 3 1 2, judge 2 3 2 2
    reference, judge = [2, 3, 1, 2], [2, 3, 2, 2]
    assert table5["accuracy"]["value"] == pytest.approx(0.75)
    assert table5["f1"]["value"] == pytest.approx(0.6)  # (0 + 0.8 + 1) / 3
    assert table5["f1"]["value"] == pytest.approx(f1_score(reference, judge, average="macro"))
    assert table5["precision"]["value"] == pytest.approx(
        precision_score(reference, judge, average="macro", zero_division=0))
    assert table5["recall"]["value"] == pytest.approx(recall_score(reference, judge, average="macro",
                                                                   zero_division=0))
    assert table5["positive_class"] is None and "macro" in table5["averaging"]
    assert table5["confusion"]["counts"] == [[0, 0, 0], [1, 2, 0], [0, 0, 1]]


def test_undefined_kappa_and_the_papers_rule(report):
    items = by_code(report)
    item = items["2.1"]  # physicians all 1, judge all 0
    assert item["vs_majority"]["accuracy"]["value"] == 0.0
    precision = item["vs_majority"]["precision"]
    assert precision["value"] is None and precision["ci_low"] is None
    assert any("never predicted" in w for w in precision["warnings"])
    assert item["ceiling"]["kappa"]["value"] is None
    assert any("no variation" in w for w in item["ceiling"]["kappa"]["warnings"])
    # physicians and judge all 1: kappa undefined, AC1 1
    same = items["2.2"]
    assert same["vs_physicians"]["kappa"]["value"] is None and same["ceiling"]["kappa"]["value"] is None
    assert same["vs_physicians"]["gwet_ac1"]["value"] == pytest.approx(1.0)
    assert same["paper_rule"]["met"] and same["paper_rule"]["constant_would_meet"] and same["paper_rule"]["flag"]


def test_verdicts_past_the_minimum(lenient):
    items = by_code(lenient)
    assert lenient["ci_method"] == "bca" and "BCa" in lenient["methods"]["ci"]
    # 1.1: the physicians' own kappa is (1/3 + 1/3 - 1/3) / 3 = 0.11, below the floor
    first = items["1.1"]
    assert first["physicians_agreement"]["coefficient"] == "kappa"
    assert first["physicians_agreement"]["value"] == pytest.approx(1 / 9)
    assert first["decision"]["verdict"] == UNRELIABLE
    assert "Delphi panel" in first["decision"]["reasons"][0] and "0.40" in first["decision"]["reasons"][0]
    # 2.1: physicians all 1 (prevalence 100%: AC1 = 1, reliable), judge all 0: kept, with both reasons
    item = items["2.1"]
    assert item["physicians_agreement"]["coefficient"] == "gwet_ac1" and "prevalence" in \
        item["physicians_agreement"]["why"]
    assert item["physicians_agreement"]["value"] == pytest.approx(1.0)
    decision = item["decision"]
    assert decision["verdict"] == KEEP and decision["checks"]["reliable"] is True
    assert any(r.startswith("No better than a constant answer") for r in decision["reasons"])
    assert any("less than they agree with each other" in r for r in decision["reasons"])
    assert item["difference"]["value"] == pytest.approx(-2.0)
    # 2.2: judge and physicians all 1: as good as a physician, but no better than a constant answer
    same = items["2.2"]
    assert same["difference"]["value"] == pytest.approx(0.0)
    assert same["decision"]["verdict"] == KEEP and same["decision"]["checks"]["non_inferior"] is True
    assert same["decision"]["reasons"][0].startswith("No better than a constant answer")
    summary = lenient["summary"]
    assert sum(summary["counts"].values()) == 24 and summary["n_replace"] == 0
    json.dumps(lenient, allow_nan=False)


def test_krippendorff_with_and_without_judge(report):
    items = by_code(report)
    for code, level in (("1.1", "nominal"), ("4", "ordinal"), ("1.2", "nominal")):
        physicians = np.array(HUMAN[code], dtype=float).T  # raters x dialogues
        with_judge = np.vstack([physicians, np.array(JUDGE[code], dtype=float)[None, :]])
        domain = [1, 2, 3] if code == "4" else [0, 1]
        entry = items[code]["krippendorff_alpha"]
        assert entry["level"] == level and entry["n_units"] == 6
        assert entry["physicians"]["value"] == pytest.approx(stats.krippendorff_alpha(physicians, level, domain))
        assert entry["with_judge"]["value"] == pytest.approx(stats.krippendorff_alpha(with_judge, level, domain))
        assert entry["with_judge"]["n_raters"] == 4
        assert entry["change"] == pytest.approx(entry["with_judge"]["value"] - entry["physicians"]["value"])
    # the bootstrap kernel agrees with the package on the full sample
    table = stats.count_table(np.array(HUMAN["4"]) - 1, 3)
    assert stats.krippendorff_alpha_counts(table, [1, 2, 3], "ordinal") == pytest.approx(
        items["4"]["krippendorff_alpha"]["physicians"]["value"])


def test_table_6_per_model(report):
    models = {m["model"]: m for m in report["models"]}
    assert set(models) == {"model-A", "model-B"}
    a = models["model-A"]  # d001, d003, d005
    dim1 = a["dimensions"]["1"]
    # humans: 1.1 -> 0 + 1/3 + 1/3, 1.2 -> 2/3 + 1/3 + 1, six more items all 1; judge: 1.1 -> 0, 1.2 -> 3, rest 18
    assert dim1["n_cells"] == 24 and dim1["n_items"] == 8 and dim1["n_dialogues"] == 3
    assert dim1["human_pct"] == pytest.approx(100 * (2 / 3 + 2 + 18) / 24)
    assert dim1["judge_pct"] == pytest.approx(100 * 21 / 24)
    assert dim1["difference_pct"] == pytest.approx(dim1["judge_pct"] - dim1["human_pct"])
    dim3 = a["dimensions"]["3"]  # 3.1 on d005 unscored and 3.3 on d003 pending: their cells drop
    assert dim3["n_cells"] == 7 * 3 - 2 and dim3["human_pct"] == 100.0 and dim3["judge_pct"] == 100.0
    dim2 = a["dimensions"]["2"]  # 2.1: physicians 1, judge 0
    assert dim2["human_pct"] == 100.0 and dim2["judge_pct"] == pytest.approx(100 * 21 / 24)
    pooled = a["dimensions"]["all"]
    assert pooled["n_cells"] == 24 + 24 + 19
    assert pooled["human_pct"] == pytest.approx(100 * (2 / 3 + 2 + 18 + 24 + 19) / 67)
    # item 4 on model-A: humans mean (7/3 + 1 + 2) / 3, judge (2 + 2 + 2) / 3
    assert a["overall"]["human_mean"] == pytest.approx((7 / 3 + 1 + 2) / 3)
    assert a["overall"]["judge_mean"] == pytest.approx(2.0)


def test_run_and_campaign_must_match(study):
    campaign, run = study
    other = Corpus.objects.create(name="elsewhere")
    foreign = create_campaign(name="Other", corpus=other, scale_version=mini_cex(), overlap=1)
    with pytest.raises(JudgeReportError, match="same corpus"):
        judge_vs_physicians(run, foreign)
    assert issubclass(JudgeReportError, ValueError)


def test_compare_modes(study):
    campaign, run_a = study
    flipped = dict(JUDGE, **{"1.1": [0, 0, 1, 0, 1, 0]})
    config_b = make_config("judge-x per-dialogue", JudgeConfig.Mode.PER_DIALOGUE, concurrency=2)
    run_b = make_run(config_b, campaign.corpus, flipped)
    result = compare_modes(run_a, run_b, campaign)
    json.dumps(result, allow_nan=False)
    items = by_code(result)
    first = items["1.1"]
    assert first["n"] == 6 and first["run_a"]["accuracy"] == 1.0
    assert first["run_b"]["accuracy"] == pytest.approx(5 / 6)
    assert first["run_a"]["kappa"] == pytest.approx(1.0)
    assert first["run_b"]["kappa"] == pytest.approx(stats.cohen_kappa(flipped["1.1"], [1, 0, 1, 0, 1, 0]))
    assert first["agreement"]["n"] == 6 and first["agreement"]["n_changed"] == 1
    assert first["agreement"]["percent_agreement"] == pytest.approx(5 / 6)
    assert first["agreement"]["kappa"] == pytest.approx(stats.cohen_kappa(JUDGE["1.1"], flipped["1.1"]))
    assert items["3.1"]["agreement"]["n"] == 5  # run a left d005 unscored
    assert items["4"]["n_tied"] == 2 and items["4"]["n"] == 4
    assert result["summary"]["items_better_a"] == 1 and result["summary"]["items_better_b"] == 0
    assert result["run_a"]["mode"] == "per-item" and result["run_b"]["mode"] == "per-dialogue"
    # a configuration differing in more than mode, or two runs with the same mode, cannot be compared
    other_model = make_run(make_config("other", JudgeConfig.Mode.PER_DIALOGUE, model="another-model"),
                           campaign.corpus, JUDGE)
    with pytest.raises(JudgeReportError, match="model"):
        compare_modes(run_a, other_model, campaign)
    same_mode = make_run(make_config("judge-y"), campaign.corpus, JUDGE)
    with pytest.raises(JudgeReportError, match="both use mode"):
        compare_modes(run_a, same_mode, campaign)
    from django.utils import translation

    with translation.override("zh-hans"), pytest.raises(JudgeReportError) as refused:
        compare_modes(run_a, same_mode, campaign)
    assert str(refused.value) == (f"运行 #{run_a.pk} 与运行 #{same_mode.pk} 都使用 'per-item' 方式："
                                  "方式比较需要一次逐条目运行和一次逐对话运行。")


def test_judge_labels_in_exports(study):
    import scoring.judges.labels  # noqa: F401 - registers the label source
    from scoring.judges.labels import judge_label_rows
    from scoring.reports import exports

    campaign, run = study
    assert exports.LABEL_SOURCES.count(judge_label_rows) == 1
    rows = list(exports.label_rows(campaign.corpus))
    human = [r for r in rows if r["rater_kind"] == "human"]
    judge = [r for r in rows if r["rater_kind"] == "judge"]
    assert len(human) == 6 * 3 * 24 and len(judge) == 6 * 24 - 3
    assert rows[len(human):] == judge  # judge rows follow the physicians'
    assert {r["rater"] for r in judge} == {f"judge-x (run {run.pk})"}
    assert {r["judge_run"] for r in judge} == {str(run.pk)}
    by_key = {(r["dialogue_id"], r["item"]): r for r in judge}
    assert by_key[("d000", "2.1")]["value"] == 0 and by_key[("d002", "4")]["value"] == 3
    assert ("d005", "3.1") not in by_key and ("d004", "3.2") not in by_key and ("d003", "3.3") not in by_key
    stamp = by_key[("d000", "1.1")]["created"]
    assert stamp.endswith("+00:00") and datetime.fromisoformat(stamp)
    # one campaign: only its dialogues (this one rates model-A only)
    only_a = create_campaign(name="JR model-A", corpus=campaign.corpus, scale_version=mini_cex(), overlap=1,
                             filter_model="model-A")
    scoped = [r for r in exports.label_rows(campaign.corpus, only_a) if r["rater_kind"] == "judge"]
    assert {r["dialogue_id"] for r in scoped} == {"d001", "d003", "d005"}
    assert len(scoped) == 3 * 24 - 2  # d005 3.1 unscored, d003 3.3 pending
    buffer = __import__("io").StringIO()
    assert exports.write_csv(exports.label_rows(campaign.corpus), buffer) == len(rows)
    assert ",judge," in buffer.getvalue()


# ---------------------------------------------------------------------------------------------------------------
# the vectorised kernels and the MedEval-sized workload
# ---------------------------------------------------------------------------------------------------------------
def test_table_kernels_match_the_statistics_engine():
    from sklearn.metrics import f1_score

    rng = np.random.default_rng(1)
    for q in (2, 3):
        a = rng.integers(-1, q, size=(5, 40))
        b = rng.integers(-1, q, size=(5, 40))
        point, boot = stats.pairwise_tables(a, b, q), stats.pairwise_tables(a, b, q, np.ones((2, 40)))
        figs = judge_report.table_figures(point)
        assert np.allclose(figs["kappa"], stats.cohen_kappa_codes(a, b, q), equal_nan=True)
        both = (a >= 0) & (b >= 0)
        counts = (stats.count_table(np.where(both, a, -1)[..., None], q)
                  + stats.count_table(np.where(both, b, -1)[..., None], q))
        assert np.allclose(figs["gwet_ac1"], stats.gwet_ac1_counts(counts))
        for p in range(5):
            keep = both[p]
            assert figs["macro_f1"][p] == pytest.approx(f1_score(b[p][keep], a[p][keep], average="macro"))
        assert np.allclose(judge_report.table_figures(boot)["kappa"], figs["kappa"][None, :], equal_nan=True)
        freq = stats.bootstrap_freq(stats.bootstrap_indices(40, 50, 3), 40)
        boot = stats.pairwise_tables(a[:1], b[:1], q, freq)
        assert np.allclose(judge_report.table_figures(boot)["kappa"][:, 0],
                           stats.cohen_kappa_codes(a[0], b[0], q, freq=freq), equal_nan=True)


def test_medeval_sized_workload_is_fast():
    """24 items x 500 dialogues x 1000 resamples, 3 of 8 physicians per dialogue."""
    rng = np.random.default_rng(0)
    n, raters = 500, 8
    freq = stats.bootstrap_freq(stats.bootstrap_indices(n, 1000, 1), n)
    context = judge_report.ReportContext(freq=freq, seed=1, n_resamples=1000,
                                         rater_names=[f"R{i}" for i in range(raters)])
    items = []
    for k in range(24):
        q = 3 if k == 23 else 2
        truth = rng.integers(0, q, n)
        humans = np.full((raters, n), -1)
        for d in range(n):
            who = rng.choice(raters, 3, replace=False)
            humans[who, d] = np.where(rng.random(3) < 0.8, truth[d], rng.integers(0, q, 3))
        judge = np.where(rng.random(n) < 0.85, truth, rng.integers(0, q, n))
        items.append(judge_report.ItemData(code=str(k), text="", dimension="1", dimension_name="",
                                           response_type="ordinal" if q == 3 else "binary",
                                           values=[1, 2, 3] if q == 3 else [0, 1], judge=judge, humans=humans))
    started = time.monotonic()
    entries = [judge_report.item_report(item, context) for item in items]
    seconds = time.monotonic() - started
    print(f"24 items x {n} dialogues x 1000 resamples: {seconds:.2f} s")
    assert seconds < 30
    json.dumps(entries, allow_nan=False)
    kappa = entries[0]["vs_physicians"]["kappa"]
    assert kappa["ci_low"] < kappa["value"] < kappa["ci_high"]
    assert entries[0]["ceiling"]["n_pairs"] == raters * (raters - 1) // 2
    assert pd.Series([e["decision"]["verdict"] for e in entries]).isin(OUTCOMES).all()


def test_campaign_without_labels_gives_undefined_figures(study):
    campaign, run = study
    empty = create_campaign(name="JR empty", corpus=campaign.corpus, scale_version=mini_cex(), overlap=1)
    result = judge_vs_physicians(run, empty, n_resamples=50)
    json.dumps(result, allow_nan=False)
    assert result["counts"]["dialogues_compared"] == 0 and result["counts"]["physicians"] == 0
    assert result["summary"]["n_not_enough"] == 24 and result["models"] == []
    assert any("No dialogue has both" in w for w in result["warnings"])
    item = by_code(result)["1.1"]
    assert item["vs_majority"]["accuracy"]["value"] is None and item["vs_majority"]["accuracy"]["warnings"]
    assert item["krippendorff_alpha"]["physicians"]["value"] is None
    assert item["decision"]["verdict"] == NOT_ENOUGH and "Only 0 dialogue(s)" in item["decision"]["reasons"][0]


def test_disagreement_by_uncertainty_decile(report, study):
    """Without log-probabilities the report says there is nothing to show; with an uncertainty that is high where
    the judge and the physicians' mean part, the deciles rise and Spearman's rho is positive."""
    from scoring.judges import uncertainty
    from scoring.reports.agreement import load_study

    assert report["uncertainty"]["groups"] == [] and "no uncertainty" in report["uncertainty"]["warnings"][0]
    campaign, run = study
    labels_frame = load_study([campaign]).labels
    physicians = labels_frame.groupby(["dialogue", "item"])["value"].mean()
    results = list(JudgeResult.objects.filter(run=run, status=JudgeResult.Status.DONE).select_related("item"))
    for r in results:
        gap = abs(float(r.value) - float(physicians.get((r.dialogue_id, r.item.code), r.value)))
        r.uncertainty = 0.05 + gap + 0.001 * (r.pk % 7)
    JudgeResult.objects.bulk_update(results, ["uncertainty"])
    section = uncertainty.deciles(run, labels_frame)
    assert section["basis"] == uncertainty.LOGPROBS and len(section["groups"]) == 10
    assert section["n"] == sum(g["n"] for g in section["groups"]) == len(results)
    assert section["groups"][-1]["disagreement"] > section["groups"][0]["disagreement"] == 0.0
    assert section["spearman"] > 0.5 and not section["warnings"]
    rows = list(uncertainty.csv_rows(section))
    assert rows[0][:3] == ["uncertainty", "decile 1", "observed disagreement"] and len(rows) == 11
    # the page: each decile's figure in the table, its bar an SVG width (the policy allows no inline style)
    html = render_to_string("scoring/partials/judge_report_extra.html", {"report": {"uncertainty": section}})
    bars = re.findall(r'<svg class="share-bar"[^>]*aria-hidden="true".*?<rect width="(\d+)" height="10" '
                      r'fill="currentColor"></rect></svg>', html)
    assert [int(b) for b in bars] == [round(100 * g["disagreement"]) for g in section["groups"]]
    assert "style=" not in html
    # unrelated: the same values shuffled against the answers
    rng = np.random.default_rng(3)
    values = rng.permutation([r.uncertainty for r in results])
    for r, u in zip(results, values, strict=True):
        r.uncertainty = float(u)
    JudgeResult.objects.bulk_update(results, ["uncertainty"])
    assert abs(uncertainty.deciles(run, labels_frame)["spearman"]) < 0.3
