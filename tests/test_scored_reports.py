"""Reports on levels and scale items: weighted kappa, Krippendorff's alpha (ordinal and interval), ICC of
item scores, Bland-Altman and mean scores per criterion, on a HIVMedQA 0-5 rubric; Bland-Altman against the
published example."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pandas as pd
import pytest
from django.core.management import call_command

from annotation import labels
from annotation.campaigns import add_rater, assign, create_campaign
from annotation.importers import import_dialogues
from annotation.instruments import install_shipped
from annotation.models import Assignment, Corpus
from core import stats
from projects.pseudonyms import pseudonym
from scoring.judges import report as judge_report
from scoring.reports import agreement as reports

# Bland & Altman (1986) Lancet 327(8476):307-310, Table 1: PEFR (l/min), Wright and mini Wright meters, first reading
WRIGHT = [494, 395, 516, 434, 476, 557, 413, 442, 650, 433, 417, 656, 267, 478, 178, 423, 427]
MINI_WRIGHT = [512, 430, 520, 428, 500, 600, 364, 380, 658, 445, 432, 626, 260, 477, 259, 350, 451]
CRITERIA = ["comprehension", "reasoning", "knowledge", "bias", "harm"]


def test_bland_altman_reproduces_the_published_example():
    ba = stats.bland_altman(WRIGHT, MINI_WRIGHT)
    # the paper: mean difference -2.1, SD 38.8; 95% CI of the bias -2.1 +- 2.12 x 9.4 = -22.0 to 17.8;
    # SE of a limit sqrt(3 s^2 / n) = 16.3, so each limit +- 2.12 x 16.3 = +-34.6
    assert ba["n"] == 17 and ba["bias"] == pytest.approx(-2.1, abs=0.05) and ba["sd"] == pytest.approx(38.8, abs=0.05)
    assert ba["bias_ci_low"] == pytest.approx(-22.0, abs=0.1) and ba["bias_ci_high"] == pytest.approx(17.8, abs=0.1)
    assert ba["loa_low"] == pytest.approx(ba["bias"] - 1.96 * ba["sd"])
    assert ba["loa_high"] == pytest.approx(ba["bias"] + 1.96 * ba["sd"])
    for side in ("loa_low", "loa_high"):
        assert ba[f"{side}_ci_high"] - ba[side] == pytest.approx(34.6, abs=0.15)
        assert ba[side] - ba[f"{side}_ci_low"] == pytest.approx(34.6, abs=0.15)
    # the limits pingouin draws (annotated to two decimals)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pingouin as pg

    ax = pg.plot_blandaltman(np.asarray(WRIGHT, float), np.asarray(MINI_WRIGHT, float))
    drawn = {t.get_text() for t in ax.texts}
    plt.close("all")
    assert {f"{ba['bias']:.2f}", f"{ba['loa_high']:.2f}", f"{ba['loa_low']:.2f}"} <= drawn


def test_bland_altman_undefined_cases_and_clustered_kernel():
    assert stats.bland_altman([], [])["bias"] is None
    one = stats.bland_altman([3], [1])
    assert one["bias"] == 2 and one["sd"] is None and one["warnings"]
    same = stats.bland_altman([1, 2, 3], [0, 1, 2])
    assert same["sd"] == 0 and same["loa_low"] == same["loa_high"] == 1 and same["warnings"]
    with pytest.raises(ValueError):
        stats.bland_altman([1, 2], [1])
    # the bootstrap kernel on per-cluster sums equals bland_altman on the drawn differences
    rng = np.random.default_rng(1)
    diffs = np.where(rng.random((3, 20)) < 0.7, rng.normal(0.5, 1, (3, 20)), np.nan)
    freq = stats.bootstrap_freq(stats.bootstrap_indices(20, 5, 2), 20)
    reps = stats.bland_altman_sums(stats.cluster_sums(diffs), freq)
    for b in range(5):
        drawn = np.concatenate([diffs[:, d][np.isfinite(diffs[:, d])]
                                for d in range(20) for _ in range(int(freq[b, d]))])
        direct = stats.bland_altman(drawn, np.zeros_like(drawn))
        assert reps["bias"][b] == pytest.approx(direct["bias"]) and reps["loa_high"][b] == pytest.approx(
            direct["loa_high"])
    # one rater against the mean of the others
    values = np.array([[1.0, 2.0, np.nan], [3.0, 2.0, 4.0], [5.0, np.nan, np.nan]])
    out = stats.differences_from_others(values)
    assert out[:, 0].tolist() == [1 - 4, 3 - 3, 5 - 2]  # each against the mean of the other two
    assert out[0, 1] == out[1, 1] == 0 and np.isnan(out[2, 1]) and np.isnan(out[:, 2]).all()  # nobody else


def test_pairwise_weighted_kappa_kernels_match_the_engine():
    rng = np.random.default_rng(3)
    a = np.where(rng.random((4, 50)) < 0.9, rng.integers(0, 6, (4, 50)), -1)
    b = np.where(rng.random((4, 50)) < 0.9, np.clip(a + rng.integers(-1, 2, (4, 50)), 0, 5), -1)
    tables = stats.pairwise_tables(a, b, 6)
    kappas = stats.kappa_from_tables(tables, "quadratic")
    assert kappas == pytest.approx(stats.cohen_kappa_codes(a, b, 6, "quadratic"))
    values = list(range(6))
    first = np.asarray(values)[np.clip(a[0], 0, 5)]
    second = np.asarray(values)[np.clip(b[0], 0, 5)]
    ok = (a[0] >= 0) & (b[0] >= 0)
    assert kappas[0] == pytest.approx(stats.cohen_kappa(first[ok], second[ok], weights="quadratic",
                                                        categories=values))
    freq = stats.bootstrap_freq(stats.bootstrap_indices(50, 7, 1), 50)
    boot = stats.pairwise_tables(a, b, 6, freq)
    assert boot.shape == (7, 4, 6, 6)
    assert stats.kappa_from_tables(boot[:, 0], "quadratic") == pytest.approx(
        stats.cohen_kappa_codes(a[0], b[0], 6, "quadratic", freq=freq))
    jack = stats.pairwise_tables(a, b, 6, stats.jackknife_freq(50))
    assert jack.shape == (50, 4, 6, 6) and jack[3].sum() == tables.sum() - ((a[:, 3] >= 0) & (b[:, 3] >= 0)).sum()


# ---------------------------------------------------------------------------------------------------------------
# the campaign report on a HIVMedQA 0-5 rubric
# ---------------------------------------------------------------------------------------------------------------
def qa_corpus(n: int) -> Corpus:
    corpus = Corpus.objects.create(name="hiv answers")
    lines = [json.dumps({"id": f"q{i:02d}", "question": f"Question {i}?", "answer": f"Answer {i}.",
                         "reference": f"Reference {i}.", "model": "model-A" if i % 2 else "model-B"})
             for i in range(n)]
    import_dialogues(corpus, lines)
    return corpus


def rate(campaign, scores: dict[tuple[str, int, str], int]) -> None:
    """``scores[(external_id, rater index, criterion)]``; every assignment submitted."""
    raters = sorted({a.rater_id for a in Assignment.objects.filter(campaign=campaign)})
    items = {i.code: i.pk for i in campaign.scale_version.rating_items()}
    for assignment in Assignment.objects.filter(campaign=campaign).select_related("dialogue", "rater"):
        r = raters.index(assignment.rater_id)
        for code in CRITERIA:
            labels.save_label(assignment, items[code], scores[(assignment.dialogue.external_id, r, code)],
                              assignment.rater)
        labels.submit(assignment, assignment.rater)


def physician_scores(n: int, n_raters: int, seed: int = 5) -> dict:
    """A true 0-5 score per answer and criterion; physicians give it +- 1 most of the time."""
    rng = np.random.default_rng(seed)
    out = {}
    for i in range(n):
        for code in CRITERIA:
            truth = int(rng.integers(0, 6))
            for r in range(n_raters):
                out[(f"q{i:02d}", r, code)] = int(np.clip(truth + rng.choice([-1, 0, 0, 0, 1]), 0, 5))
    return out


N_ANSWERS = 24


@pytest.fixture
def hiv_campaign(make_user):
    labels._allowed.cache_clear()
    version = install_shipped("hivmedqa-medgpt")[0]
    corpus = qa_corpus(N_ANSWERS)
    raters = [make_user(f"doc{i}", "physician") for i in range(3)]
    campaign = create_campaign(name="HIV rubric", corpus=corpus, scale_version=version, overlap=3)
    for user in raters:
        add_rater(campaign, user)
    assign(campaign)
    rate(campaign, physician_scores(N_ANSWERS, 3))
    yield campaign
    labels._allowed.cache_clear()


def test_campaign_report_on_a_0_to_5_item_has_icc_weighted_kappa_and_bland_altman(hiv_campaign):
    study = reports.load_study([hiv_campaign])
    assert len(study.labels) == N_ANSWERS * 3 * 5 and {m.response_type for m in study.items} == {"scale"}
    report = reports.compute(study, n_resamples=200, seed=3, plots=False)
    json.dumps(report, allow_nan=False)
    items = {i["code"]: i for i in report["items"]}
    assert set(items) == set(CRITERIA)
    harm = items["harm"]
    assert harm["ordered"] and harm["level"] == "ordinal"
    frame = study.labels[study.labels["item"] == "harm"]
    wide = frame.pivot_table(index="dialogue", columns="rater", values="value")
    # quadratic weighted kappa: mean over the three pairs (every pair shares every answer)
    pairs = [(0, 1), (0, 2), (1, 2)]
    expected = np.mean([stats.cohen_kappa(wide.iloc[:, a], wide.iloc[:, b], weights="quadratic",
                                          categories=list(range(6))) for a, b in pairs])
    kappa = harm["weighted_kappa"]
    assert kappa["value"] == pytest.approx(expected) and kappa["n_pairs"] == 3 and kappa["weights"] == "quadratic"
    assert kappa["ci_low"] < kappa["value"] < kappa["ci_high"]
    assert kappa["interpretation"]["source"].startswith("Landis")
    assert harm["krippendorff_alpha"]["value"] == pytest.approx(
        stats.krippendorff_alpha(wide.T, level="ordinal", value_domain=list(range(6))))
    assert harm["krippendorff_interval"]["value"] == pytest.approx(
        stats.krippendorff_alpha(wide.T, level="interval", value_domain=list(range(6))))
    assert harm["krippendorff_interval"]["ci_low"] < harm["krippendorff_interval"]["value"]
    # ICC of the item's scores: every answer rated by the same three physicians, so all six forms
    icc = harm["icc"]
    assert icc["crossed"] and icc["forms"] == list(stats.ICC_FORMS)
    long = frame.rename(columns={"dialogue": "t", "rater": "r", "value": "y"})
    direct = stats.icc(long, "t", "r", "y")
    for form in stats.ICC_FORMS:
        assert icc[form]["icc"] == pytest.approx(direct[form]["icc"])
    assert icc["ICC2"]["icc"] > 0.5 and icc["ICC2"]["interpretation"]["source"].startswith("Koo")
    # Bland-Altman: each physician against the mean of the other two
    ba = harm["bland_altman"]
    values = wide.to_numpy(dtype=float)
    first = values[:, 0] - values[:, 1:].mean(axis=1)
    assert ba["per_rater"][0]["bias"] == pytest.approx(first.mean())
    assert ba["per_rater"][0]["sd"] == pytest.approx(first.std(ddof=1))
    pooled = np.concatenate([values[:, r] - np.delete(values, r, axis=1).mean(axis=1) for r in range(3)])
    assert ba["pooled"]["bias"] == pytest.approx(0, abs=1e-9)
    assert ba["pooled"]["loa_high"] == pytest.approx(1.96 * pooled.std(ddof=1))
    assert ba["pooled"]["loa_high_ci_low"] < ba["pooled"]["loa_high"] < ba["pooled"]["loa_high_ci_high"]
    # no binary items: no dimension ICC or KR-20, said in words
    assert report["icc"]["dimensions"] == {} and "no binary items" in report["icc"]["warnings"][0]
    assert "no binary items" in report["reliability"]["warnings"][0]
    # model comparison: mean score per criterion with a bootstrap CI
    models = {m["model"]: m for m in report["models"]}
    assert set(models) == {"model-A", "model-B"}
    a = models["model-A"]["criteria"]["harm"]
    ids = [d for d, m in study.dialogue_model.items() if m == "model-A"]
    assert a["mean"] == pytest.approx(wide.loc[ids].mean(axis=1).mean()) and a["n_dialogues"] == len(ids)
    assert a["ci_low"] < a["mean"] < a["ci_high"] and (a["min"], a["max"]) == (0, 5)


def test_agreement_cli_covers_scale_items(hiv_campaign, capsys):
    call_command("agreement", "--corpus", "hiv answers", "--resamples", "50")
    report = json.loads(capsys.readouterr().out)
    harm = next(i for i in report["items"] if i["code"] == "harm")
    assert harm["weighted_kappa"]["value"] is not None and harm["icc"]["ICC2"]["icc"] is not None
    call_command("agreement", "--corpus", "hiv answers", "--resamples", "50", "--format", "csv")
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    statistics = {(r[1], r[2]) for r in rows[1:]}
    for name in ("weighted kappa (quadratic)", "Krippendorff alpha (interval)", "ICC2", "Bland-Altman bias",
                 "Bland-Altman lower limit", "Bland-Altman upper limit"):
        assert ("harm", name) in statistics, name
    assert ("model-A", "harm mean score") in statistics


def test_report_page_shows_the_scale_item_figures(hiv_campaign, client, analyst):
    from django.urls import reverse

    from tests.test_report_pages import run_pending

    client.force_login(analyst)
    client.get(reverse("campaign-report", args=[hiv_campaign.pk]))
    run_pending()
    html = client.get(reverse("campaign-report", args=[hiv_campaign.pk])).content.decode()
    for heading in ("Weighted kappa (quadratic)", "Krippendorff's α (interval)", "ICC of the item's scores",
                    "Physician minus the other physicians", "Mean score per criterion", "limits of agreement",
                    "ICC2", 'data-testid="scored-items"', 'data-testid="item-icc"',
                    'data-testid="criteria"'):
        assert heading in html, heading
    # no binary items: no dimension percentages, dimension ICC or KR-20 tables, and no words about their absence
    # (a report fits its instrument)
    assert 'data-testid="models"' not in html and 'data-testid="reliability"' not in html
    assert 'data-testid="icc-none"' not in html and "binary" not in html.lower()


# ---------------------------------------------------------------------------------------------------------------
# judge vs physicians on a 0-5 item
# ---------------------------------------------------------------------------------------------------------------
def scale_item(judge_kind: str, n: int = 120, seed: int = 11) -> judge_report.ItemData:
    """Three physicians give the true 0-5 score +- 1; the judge is 'good' (the same noise), 'random' (uniform 0-5)
    or 'constant' (always 3)."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 6, n)
    humans = np.clip(truth[None, :] + rng.choice([-1, 0, 0, 0, 1], (3, n)), 0, 5)
    judge = {"good": np.clip(truth + rng.choice([-1, 0, 0, 0, 1], n), 0, 5), "random": rng.integers(0, 6, n),
             "constant": np.full(n, 3)}[judge_kind]
    return judge_report.ItemData(code="harm", text="Possibility of harm", dimension="", dimension_name="",
                                 response_type="scale", values=list(range(6)), judge=judge, humans=humans)


def context(n: int = 120) -> judge_report.ReportContext:
    freq = stats.bootstrap_freq(stats.bootstrap_indices(n, 400, 2), n)
    return judge_report.ReportContext(freq=freq, seed=2, n_resamples=400, rater_names=["A", "B", "C"])


def test_judge_report_on_a_0_to_5_item_has_weighted_kappa_alpha_and_bland_altman():
    item = scale_item("good")
    entry = judge_report.item_report(item, context())
    json.dumps(entry, allow_nan=False)
    # weighted kappa against each physician: the engine's kernel on each pair, averaged (every pair shares all)
    direct = [stats.cohen_kappa_codes(item.judge, item.humans[r], 6, "quadratic") for r in range(3)]
    assert entry["vs_physicians"]["weighted_kappa"]["value"] == pytest.approx(np.mean(direct))
    ceiling = [stats.cohen_kappa_codes(item.humans[a], item.humans[b], 6, "quadratic")
               for a, b in ((0, 1), (0, 2), (1, 2))]
    assert entry["ceiling"]["weighted_kappa"]["value"] == pytest.approx(np.mean(ceiling))
    median = np.median(item.humans, axis=0)  # three physicians: the median is one of their answers
    assert entry["vs_median"]["weighted_kappa"]["value"] == pytest.approx(
        stats.cohen_kappa_codes(item.judge, median.astype(int), 6, "quadratic"))
    interval = entry["krippendorff_interval"]
    assert interval["physicians"]["value"] == pytest.approx(
        stats.krippendorff_alpha(item.humans.astype(float), level="interval", value_domain=list(range(6))))
    assert interval["with_judge"]["value"] == pytest.approx(stats.krippendorff_alpha(
        np.vstack([item.humans, item.judge]).astype(float), level="interval", value_domain=list(range(6))))
    ba = entry["bland_altman"]["judge"]
    expected = stats.bland_altman(item.judge, item.humans.mean(axis=0))
    assert ba["bias"] == pytest.approx(expected["bias"]) and ba["loa_high"] == pytest.approx(expected["loa_high"])
    assert ba["bias_ci_low"] < ba["bias"] < ba["bias_ci_high"]
    ceiling_ba = entry["bland_altman"]["ceiling"]
    assert ceiling_ba["bias"] == pytest.approx(0, abs=1e-9) and ceiling_ba["loa_low"] < 0 < ceiling_ba["loa_high"]
    assert ceiling_ba["loa_high_ci_low"] < ceiling_ba["loa_high"] < ceiling_ba["loa_high_ci_high"]
    assert len(entry["bland_altman"]["per_physician"]) == 3
    # ICC of the scores, physicians alone and with the judge as a fourth rater (same physicians on every dialogue:
    # two-way forms, ICC2 the headline), as pingouin computes it
    import pingouin

    def pingouin_icc2(matrix):
        long = pd.DataFrame([(d, r, float(v)) for r, row in enumerate(matrix) for d, v in enumerate(row)],
                            columns=["d", "r", "v"])
        table = pingouin.intraclass_corr(long, targets="d", raters="r", ratings="v").set_index("Type")
        return table.loc["ICC(A,1)", "ICC"]  # pingouin's name for Shrout & Fleiss' ICC2

    icc = entry["icc"]
    assert icc["form"] == "ICC2" and icc["physicians"]["crossed"] and set(icc["physicians"]["forms"]) == set(
        stats.ICC_FORMS)
    assert icc["headline"]["physicians"]["value"] == pytest.approx(pingouin_icc2(item.humans))
    assert icc["headline"]["with_judge"]["value"] == pytest.approx(
        pingouin_icc2(np.vstack([item.humans, item.judge])))
    assert icc["headline"]["with_judge"]["ci_low"] < icc["headline"]["with_judge"]["value"]
    # the verdict uses weighted kappa, and a judge as good as a physician may replace them
    assert entry["physicians_agreement"]["coefficient"] == "weighted_kappa"
    assert entry["physicians_agreement"]["name"] == judge_report.WEIGHTED_KAPPA
    assert entry["difference"]["coefficient"] == "weighted_kappa"
    assert entry["decision"]["verdict"] == judge_report.REPLACE, entry["decision"]
    assert any("weighted kappa" in note for note in entry["decision"]["reasons"])


@pytest.mark.parametrize("kind", ["random", "constant"])
def test_random_or_constant_judge_on_a_0_to_5_item_is_not_acceptable(kind):
    entry = judge_report.item_report(scale_item(kind), context())
    decision = entry["decision"]
    assert decision["verdict"] == judge_report.KEEP and not decision["replace"]
    assert decision["checks"]["reliable"] and not decision["checks"]["beats_constant"]
    assert not decision["checks"]["non_inferior"]
    assert any("does not exclude 0" in r or "undefined" in r for r in decision["reasons"])
    kappa = entry["vs_physicians"]["weighted_kappa"]
    if kind == "constant":
        assert kappa["value"] == pytest.approx(0) and entry["bland_altman"]["judge"]["sd"] > 0
    else:
        assert kappa["ci_low"] < 0 < kappa["ci_high"]
    # the judge's limits of agreement are wider than a physician's against the others
    width = entry["bland_altman"]["loa_width"]
    assert width["judge"] > width["physicians"]
    # adding a judge that does not score like a physician lowers the ICC of the scores
    icc = entry["icc"]["headline"]
    assert icc["with_judge"]["value"] < icc["physicians"]["value"] - 0.05, icc


def test_random_physicians_make_a_0_to_5_item_unreliable():
    rng = np.random.default_rng(4)
    item = judge_report.ItemData(code="bias", text="", dimension="", dimension_name="", response_type="scale",
                                 values=list(range(6)), judge=rng.integers(0, 6, 120),
                                 humans=rng.integers(0, 6, (3, 120)))
    entry = judge_report.item_report(item, context())
    assert entry["decision"]["verdict"] == judge_report.UNRELIABLE
    assert "quadratic weighted kappa" in entry["decision"]["reasons"][0]


def test_judge_vs_physicians_report_and_page_on_the_hivmedqa_rubric(hiv_campaign, client, coordinator):
    from django.urls import reverse

    from scoring.judges.models import JudgeConfig, JudgeResult, JudgeRun
    from scoring.judges.runs import config_snapshot, default_prompt_set

    version = hiv_campaign.scale_version
    config = JudgeConfig.objects.create(name="rubric", model="judge-model", mode=JudgeConfig.Mode.PER_DIALOGUE,
                                        prompt_set=default_prompt_set(version))
    run = JudgeRun.objects.create(config=config, corpus=hiv_campaign.corpus, snapshot=config_snapshot(config),
                                  status=JudgeRun.Status.SUCCEEDED)
    scores = physician_scores(N_ANSWERS, 3)
    items = {i.code: i for i in version.rating_items()}
    JudgeResult.objects.bulk_create([
        JudgeResult(run=run, dialogue=d, item=items[code], status=JudgeResult.Status.DONE,
                    value=scores[(d.external_id, 0, code)])  # the judge answers as the first physician
        for d in hiv_campaign.corpus.dialogues.all() for code in CRITERIA])
    report = judge_report.judge_vs_physicians(run, hiv_campaign, n_resamples=200,
                                              verdict=judge_report.VerdictSettings(min_dialogues=10))
    json.dumps(report, allow_nan=False)
    harm = next(i for i in report["items"] if i["code"] == "harm")
    assert harm["response_type"] == "scale" and harm["n_dialogues"] == N_ANSWERS
    assert harm["vs_physicians"]["weighted_kappa"]["value"] is not None
    assert harm["bland_altman"]["judge"]["n"] == N_ANSWERS and harm["bland_altman"]["ceiling"]["sd"] > 0
    assert report["has_ordered"] and harm["decision"]["coefficient"] == "weighted_kappa"
    assert harm["icc"]["headline"]["physicians"]["value"] is not None
    assert harm["icc"]["with_judge"]["n_raters"] == harm["icc"]["physicians"]["n_raters"] + 1
    criteria = {m["model"]: m["criteria"] for m in report["models"]}
    assert set(criteria) == {"model-A", "model-B"}
    harm_a = criteria["model-A"]["harm"]
    assert harm_a["physicians"]["ci_low"] <= harm_a["physicians"]["mean"] <= harm_a["physicians"]["ci_high"]
    assert harm_a["judge"]["mean"] is not None and harm_a["n_dialogues"] == N_ANSWERS // 2
    from tests.test_report_pages import run_pending

    client.force_login(coordinator)
    client.get(reverse("judge-run-report", args=[run.pk]), {"campaign": hiv_campaign.pk, "min_dialogues": 10})
    run_pending("judge_report")
    html = client.get(reverse("judge-run-report", args=[run.pk]),
                      {"campaign": hiv_campaign.pk, "min_dialogues": 10}).content.decode()
    for marker in ('data-testid="judge-scored-items"', "Weighted kappa vs each physician",
                   "Judge minus physicians' mean", "Physician minus the other physicians",
                   "limits of agreement", 'data-testid="judge-criteria"', "Physicians' mean score",
                   "ICC of the scores (single rater, absolute agreement)"):
        assert marker in html, marker


def test_exports_carry_the_0_to_5_labels_unchanged_in_the_long_format(hiv_campaign, tmp_path):
    from annotation.models import Label
    from scoring.reports import exports

    rows = list(exports.label_rows(hiv_campaign.corpus, hiv_campaign))
    saved = {(label.dialogue.external_id, pseudonym(label.campaign.project_id, label.rater),
              label.item.code): label.value
             for label in Label.objects.filter(campaign=hiv_campaign).select_related("dialogue", "item",
                                                                                    "rater__rater_profile")}
    assert len(rows) == len(saved) == N_ANSWERS * 3 * 5
    assert {(r["dialogue_id"], r["rater"], r["item"]): r["value"] for r in rows} == saved
    assert {r["value"] for r in rows} == set(range(6)) and {r["item"] for r in rows} == set(CRITERIA)
    path = tmp_path / "labels.csv"
    with path.open("w", newline="") as handle:
        exports.write_csv(rows, handle)
    back = list(csv.DictReader(path.open()))
    assert [(r["item"], int(r["value"])) for r in back] == [(r["item"], r["value"]) for r in rows]


def test_a_rubric_without_binary_items_is_ranked_over_all_criteria_rescaled():
    """HIVMedQA-like: a 0-5 and a 1-10 criterion, three doctor models of rising quality. A judge scoring like the
    physicians orders the models as they do over all criteria (each rescaled to 0-1); a constant judge cannot."""
    rng = np.random.default_rng(12)
    quality = {"model-A": 0.2, "model-B": 0.5, "model-C": 0.8}
    dialogue_model = {d: name for d, name in enumerate(np.repeat(list(quality), 40))}
    truth = np.array([quality[dialogue_model[d]] for d in range(120)]) + rng.normal(0, 0.1, 120)

    def item(code: str, low: int, high: int, constant: bool = False) -> judge_report.ItemData:
        q = high - low + 1
        codes = np.clip(np.rint(truth * (q - 1)), 0, q - 1).astype(int)
        humans = np.clip(codes[None, :] + rng.choice([-1, 0, 0, 1], (3, 120)), 0, q - 1)
        judge = np.full(120, q // 2) if constant else np.clip(codes + rng.choice([-1, 0, 1], 120), 0, q - 1)
        return judge_report.ItemData(code=code, text="", dimension="", dimension_name="", response_type="scale",
                                     values=list(range(low, high + 1)), judge=judge, humans=humans)

    for constant, expected in ((False, 1.0), (True, None)):
        items = [item("accuracy", 0, 5, constant), item("realism", 1, 10, constant)]
        ranking = judge_report.model_ranking(items, list(range(120)), dialogue_model, context(120))
        scopes = {s["scope"]: s for s in ranking["scopes"]}
        assert set(scopes) == {"all", "accuracy", "realism"}
        overall = scopes["all"]
        assert overall["name"] == "All criteria (scores rescaled to 0-1)"
        assert all(0 <= v <= 1 for v in overall["physicians"])
        summary = judge_report._summary([], ranking)["ranking"]
        if expected is None:
            assert overall["tau"]["value"] is None and "cannot be compared" in summary
        else:
            assert overall["tau"]["value"] == pytest.approx(expected) and overall["same_order"]
            assert summary.startswith("Over all criteria (scores rescaled to 0-1) the judge orders the 3 doctor "
                                      "models exactly as the physicians do")
