"""Campaign reports: figures match the statistics engine, undefined cases explained, JSON-safe."""

import json
import random

import numpy as np
import pandas as pd
import pytest

from annotation import labels
from annotation.models import Assignment
from core import stats
from scoring.reports import agreement as reports
from tests.conftest import module_world
from tests.factories import campaign_with, default_project, make_account, rating_items


def rate_everything(campaign, rng: random.Random, agree: float = 0.8):
    """Each dialogue has a 'true' answer per item; raters give it with probability ``agree``."""
    truth = {}
    for assignment in Assignment.objects.filter(campaign=campaign).select_related("rater"):
        for item in rating_items(campaign):
            key = (assignment.dialogue_id, item.pk)
            values = item.allowed_values()
            truth.setdefault(key, rng.choice(values))
            value = truth[key] if rng.random() < agree else rng.choice(values)
            labels.save_label(assignment, item.pk, value, assignment.rater)
        labels.submit(assignment, assignment.rater)


@pytest.fixture(scope="module")
def _rated(django_db_setup, django_db_blocker):
    """A campaign of 4 physicians, 12 dialogues, 3 ratings each, every item answered: built once for the module
    (864 labels; each test runs in a savepoint of its own, rolled back)."""
    from projects.scoping import in_project

    def build():
        project = default_project()
        with in_project(project):
            raters = [make_account(f"r{i}", "physician", project) for i in range(4)]
            campaign = campaign_with(raters, n=12, overlap=3, name="Report")
            rate_everything(campaign, random.Random(7))
        return campaign

    yield from module_world(django_db_blocker, build)


@pytest.fixture
def rated(_rated, db):
    _rated.refresh_from_db()
    return _rated


def test_report_matches_the_statistics_engine(rated):
    study = reports.load_study([rated])
    assert len(study.labels) == 12 * 3 * 24
    report = reports.compute(study, n_resamples=200, seed=3, plots=False)
    json.dumps(report, allow_nan=False)
    assert report["n_dialogues"] == 12 and report["n_raters"] == 4
    items = {i["code"]: i for i in report["items"]}
    assert len(items) == 24 and items["4"]["level"] == "ordinal" and items["1.1"]["level"] == "nominal"
    frame = study.labels[study.labels["item"] == "2.3"]
    wide = frame.pivot_table(index="dialogue", columns="rater", values="value")
    assert items["2.3"]["fleiss_kappa"]["value"] == pytest.approx(stats.fleiss_kappa(wide, categories=[0, 1]))
    assert items["2.3"]["gwet_ac1"]["value"] == pytest.approx(stats.gwet_ac1(wide, categories=[0, 1]))
    assert items["2.3"]["krippendorff_alpha"]["value"] == pytest.approx(
        stats.krippendorff_alpha(wide.T, level="nominal", value_domain=[0, 1]))
    fig = items["2.3"]["gwet_ac1"]
    assert fig["ci_low"] <= fig["value"] <= fig["ci_high"]
    assert fig["interpretation"]["source"].startswith("Landis")
    assert set(report["icc"]["dimensions"]) == {"1", "2", "3", "overall"}
    # raters differ between dialogues (4 raters, 3 per dialogue): the one-way forms only, with the reason
    icc1 = report["icc"]["dimensions"]["1"]
    assert "ICC1" in icc1 and "ICC1k" in icc1 and "ICC2" not in icc1 and "ICC3k" not in icc1
    assert report["icc"]["forms"] == ["ICC1", "ICC1k"] and "rating slots" in report["icc"]["left_out"]
    band = icc1["ICC1"]["interpretation"]
    assert band["source"].startswith("Koo") and band["label"] == (
        band["low"] if band["low"] == band["high"] else f"{band['low']} to {band['high']}")
    assert band["low"] == stats.interpret(icc1["ICC1"]["ci_low"], "koo_li_icc")["label"]
    assert report["reliability"]["cronbach_alpha"]["k"] == 23
    assert set(report["reliability"]["dimensions"]) == {"1", "2", "3"}
    assert {m["model"] for m in report["models"]} == {"model-A", "model-B"}
    assert len(report["rater_matrix"]["raters"]) == 4
    assert all(name.startswith("R") for name in report["rater_matrix"]["raters"])


def test_model_scores_follow_table_6_definition(rated):
    study = reports.load_study([rated])
    report = reports.compute(study, n_resamples=100, seed=1, plots=False)
    labels_ = study.labels
    model_a = [d for d, m in study.dialogue_model.items() if m == "model-A"]
    dim1 = [i.code for i in study.items if i.dimension == "1"]
    sub = labels_[labels_["dialogue"].isin(model_a) & labels_["item"].isin(dim1)]
    per_item = sub.groupby(["dialogue", "item"], observed=True)["value"].mean()
    expected = 100 * per_item.sum() / (len(dim1) * len(model_a))
    entry = next(m for m in report["models"] if m["model"] == "model-A")
    assert entry["dimensions"]["1"]["score_pct"] == pytest.approx(expected)
    assert entry["n_dialogues"] == len(model_a)


def test_perfect_agreement_without_variation_is_undefined_not_zero(make_user):
    raters = [make_user(f"u{i}", "physician") for i in range(2)]
    campaign = campaign_with(raters, n=5, overlap=2, name="Same")
    for assignment in Assignment.objects.filter(campaign=campaign).select_related("rater"):
        for item in rating_items(campaign):
            labels.save_label(assignment, item.pk, 1, assignment.rater)
        labels.submit(assignment, assignment.rater)
    report = reports.compute(reports.load_study([campaign]), n_resamples=50, plots=False)
    item = report["items"][0]
    assert item["percent_agreement"]["value"] == 1.0
    assert item["fleiss_kappa"]["value"] is None and item["fleiss_kappa"]["warnings"]
    assert item["krippendorff_alpha"]["value"] is None
    assert item["fleiss_kappa"]["interpretation"]["label"] == "undefined"
    assert report["reliability"]["cronbach_alpha"]["alpha"] is None
    json.dumps(report, allow_nan=False)


def test_empty_campaign_report_says_what_will_appear(make_user):
    campaign = campaign_with([make_user("x", "physician")], n=2, overlap=1, name="Empty")
    report = reports.compute(reports.load_study([campaign]), plots=False)
    assert report["empty"] and "fills in" in report["warnings"][0]


def test_fingerprint_changes_when_a_label_changes(rated):
    before = reports.study_fingerprint([rated])
    assignment = Assignment.objects.filter(campaign=rated).first()
    labels.return_for_reannotation(assignment, None, "check")
    assert reports.study_fingerprint([rated]) != before


def test_plots_render_as_svg_in_each_language(rated):
    report = reports.compute(reports.load_study([rated]), n_resamples=50)
    assert set(report["plots"]) == {"en", "zh-hans"}  # the site's languages
    for plots in report["plots"].values():
        # item 4 (levels) also gets the models' mean level with CIs (criterion means per model)
        assert set(plots) == {"item_agreement", "rater_heatmap", "model_scores", "criterion_means"}
        assert all(svg.startswith("<svg") for svg in plots.values())
        assert "<metadata" not in plots["item_agreement"]  # no date: the same report draws the same bytes
    english, chinese = report["plots"]["en"], report["plots"]["zh-hans"]
    assert "Agreement among physicians per item" in english["item_agreement"]
    assert "Rater x rater agreement (mean over items)" in english["rater_heatmap"]
    assert "各条目的医师间一致性" in chinese["item_agreement"] and "Agreement among" not in chinese["item_agreement"]
    assert "Noto Sans CJK SC" in chinese["item_agreement"] and "Noto Sans CJK SC" not in english["item_agreement"]
    for name in ("rater_heatmap", "model_scores", "criterion_means"):
        assert not any(english_word in chinese[name] for english_word in ("Agreement", "per item", "Mean score"))


def test_a_plot_drawn_once_is_not_drawn_again_for_the_reports_other_variant(rated, monkeypatch):
    """A report's variants with and without the raters' names share every plot but the rater matrix: a worker
    computing one after the other draws those once per language."""
    from scoring.reports import plots

    report = reports.compute(reports.load_study([rated]), n_resamples=50, plots=False)
    drawn = []
    svg = plots._svg
    monkeypatch.setattr(plots, "_svg", lambda fig: drawn.append(fig) or svg(fig))
    monkeypatch.setattr(plots, "_DRAWN", plots.OrderedDict())
    first = plots.plots_by_language(report)
    assert len(drawn) == 8  # four plots, two languages
    renamed = json.loads(json.dumps(report))
    renamed["rater_matrix"]["raters"] = [f"R{n}" for n, _ in enumerate(renamed["rater_matrix"]["raters"])]
    second = plots.plots_by_language(renamed)
    assert len(drawn) == 10  # only the rater matrix again, in each language
    assert all(second[code][name] == first[code][name] for code in first for name in first[code]
               if name != "rater_heatmap")
    assert plots.plots_by_language(report) == first and len(drawn) == 10


def test_plots_without_the_chinese_font_stay_english(rated, monkeypatch):
    """A machine without the CJK font draws no Chinese plots (their glyphs would be boxes): the Chinese page shows
    the English ones."""
    from scoring.reports import plots, wording

    monkeypatch.setattr(plots, "FONTS", {"zh-hans": "No Such Font CJK"})
    report = reports.compute(reports.load_study([rated]), n_resamples=50)
    assert set(report["plots"]) == {"en"}
    shown = wording.plots_in(report["plots"], "zh-hans")
    assert shown == report["plots"]["en"] and "Agreement among physicians per item" in shown["item_agreement"]


def test_the_chinese_plots_titles_through_the_figures():
    """The figures' own texts in Chinese (what the SVG writes as text)."""
    import matplotlib.pyplot as plt
    from django.utils import translation

    from scoring.reports import plots

    models = [{"model": "GPT-4", "n_dialogues": 3, "total_scores": [8.0, 12.0, 20.0]}]
    with translation.override("zh-hans"):
        fig = plots.model_scores_figure(models, 23)
        heatmap = plots.rater_heatmap_figure({"raters": ["a", "b"], "kappa": [[1, 0.5], [0.5, 1]],
                                              "gwet_ac1": [[1, 0.5], [0.5, 1]]})
    ax = fig.axes[0]
    assert ax.get_title() == "各医生模型的二分类条目总分"
    assert ax.get_ylabel() == "每个对话 23 个二分类条目的总分（0-23）"
    assert ax.get_legend().get_title().get_text() == "图例"
    assert heatmap.get_suptitle() == "评分者 × 评分者一致性（各条目的均值）"
    assert [a.get_title() for a in heatmap.axes[:2]] == ["各条目 Cohen kappa 系数的均值", "各条目 Gwet AC1 系数的均值"]
    plt.close(fig)
    plt.close(heatmap)


def test_krippendorff_counts_kernel_matches_the_package():
    import krippendorff

    rng = np.random.default_rng(5)
    for level, cats in (("nominal", [0, 1]), ("ordinal", [1, 2, 3]), ("interval", [1, 2, 3])):
        data = rng.choice(cats, size=(6, 50)).astype(float)
        data[rng.random(data.shape) < 0.25] = np.nan
        codes, _ = stats.encode_labels(pd.DataFrame(data.T), categories=cats)
        table = stats.count_table(codes, len(cats))
        expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level, value_domain=cats)
        assert stats.krippendorff_alpha_counts(table, cats, level) == pytest.approx(expected)
        freq = stats.bootstrap_freq(stats.bootstrap_indices(50, 5, seed=1), 50)
        idx = stats.bootstrap_indices(50, 5, seed=1)
        for b in range(5):
            resampled = data[:, idx[b]]
            ref = krippendorff.alpha(reliability_data=resampled, level_of_measurement=level, value_domain=cats)
            assert stats.krippendorff_alpha_counts(table, cats, level, freq)[b] == pytest.approx(ref)


# ---------------------------------------------------------------------------------------------------------------
# Honest units and intervals
# ---------------------------------------------------------------------------------------------------------------
def test_reliability_counts_dialogues_not_ratings(rated):
    study = reports.load_study([rated])
    report = reports.compute(study, n_resamples=200, seed=3, plots=False)
    rel = report["reliability"]
    assert (rel["n_ratings"], rel["n_dialogues"], rel["n_raters"]) == (36, 12, 4)
    assert "clustered by dialogue" in rel["unit"] and "KR-20" in rel["coefficient"]
    whole = rel["cronbach_alpha"]
    assert "cluster bootstrap over dialogues" in whole["ci_method"]
    # the point estimate is the paper's (pooled ratings); the interval resamples whole dialogues
    binary = [m.code for m in study.items if m.response_type == "binary"]
    wide = (study.labels[study.labels["item"].isin(binary)]
            .pivot_table(index=["dialogue", "rater"], columns="item", values="value", observed=True)[binary])
    assert whole["alpha"] == pytest.approx(stats.cronbach_alpha(wide)["alpha"])
    clusters, _ = pd.factorize(wide.index.get_level_values("dialogue"))
    freq = stats.bootstrap_freq(stats.bootstrap_indices(12, 200, 3), 12)
    replicates = stats.cronbach_alpha_clustered(wide.to_numpy(), clusters, freq)
    expected = np.percentile(replicates[np.isfinite(replicates)], [2.5, 97.5])
    assert [whole["ci_low"], whole["ci_high"]] == pytest.approx(list(expected))
    # Bartlett counts the 12 dialogues, not the 36 ratings
    bartlett = rel["bartlett"]
    assert bartlett["n"] == 12 and "dialogues" in bartlett["n_note"]
    r = np.corrcoef(wide.to_numpy(dtype=float), rowvar=False)
    if bartlett["chi2"] is not None:
        assert bartlett["chi2"] == pytest.approx(stats.bartlett_from_correlations(r, 12)[0])
    # per rater: that rater's dialogues, Feldt CI, pseudonyms
    per_rater = rel["per_rater"]
    assert len(per_rater) == 4 and all(p["rater"].startswith("R") for p in per_rater)
    assert sum(p["n_dialogues"] for p in per_rater) == 36
    assert "cluster bootstrap" in report["methods"]["reliability"]


def test_cluster_bootstrap_kernel_is_alpha_of_the_resampled_rows():
    import pingouin as pg

    rng = np.random.default_rng(3)
    x = (rng.random((60, 5)) < 0.6).astype(float)
    x[:, 1] = np.where(rng.random(60) < 0.7, x[:, 0], x[:, 1])
    clusters = np.repeat(np.arange(20), 3)
    idx = stats.bootstrap_indices(20, 4, seed=2)
    freq = stats.bootstrap_freq(idx, 20)
    replicates = stats.cronbach_alpha_clustered(x, clusters, freq)
    for b in range(4):
        rows = np.concatenate([np.flatnonzero(clusters == c) for c in idx[b]])
        assert replicates[b] == pytest.approx(pg.cronbach_alpha(pd.DataFrame(x[rows]))[0])
    jack = stats.cronbach_alpha_clustered(x, clusters, stats.jackknife_freq(20))
    assert jack[5] == pytest.approx(pg.cronbach_alpha(pd.DataFrame(x[clusters != 5]))[0])


def test_bca_and_tetrachoric_options_are_named(rated):
    study = reports.load_study([rated])
    report = reports.compute(study, n_resamples=200, seed=3, plots=False, ci_method="bca", correlation="tetrachoric")
    json.dumps(report, allow_nan=False)
    assert report["ci_method"] == "bca" and "BCa" in report["methods"]["ci"]
    assert "tetrachoric" in report["methods"]["reliability"] and "ordinal alpha" in report["reliability"]["coefficient"]
    fig = next(i for i in report["items"] if i["code"] == "2.3")["gwet_ac1"]
    assert fig["ci_low"] <= fig["value"] <= fig["ci_high"]
    assert report["reliability"]["kmo"]["correlation"] == "tetrachoric"
    # twelve dialogues: the report says the intervals are rough
    assert any("fewer than about 30" in w for w in report["warnings"])
    with pytest.raises(reports.ReportError, match="interval method"):
        reports.compute(study, ci_method="normal")


def test_rater_matrix_averages_per_item_coefficients(rated):
    study = reports.load_study([rated])
    matrix = reports.compute(study, n_resamples=50, plots=False)["rater_matrix"]
    assert "Mean over the binary items" in matrix["note"] and matrix["n_items"] == 23
    ids = {name: rid for rid, name in study.rater_names.items()}
    a, b = matrix["raters"][0], matrix["raters"][1]
    labels_ = study.labels
    kappas, ac1s = [], []
    for meta in study.items:
        if meta.response_type != "binary":
            continue
        sub = labels_[labels_["item"] == meta.code].pivot_table(index="dialogue", columns="rater", values="value")
        pair = sub[[ids[a], ids[b]]].dropna()
        if pair.empty:
            continue
        k = stats.cohen_kappa(pair.iloc[:, 0], pair.iloc[:, 1], categories=[0, 1])
        if np.isfinite(k):
            kappas.append(k)
        ac1s.append(stats.gwet_ac1(pair.to_numpy(), categories=[0, 1]))
    assert matrix["kappa"][0][1] == pytest.approx(np.mean(kappas))
    assert matrix["n_items_kappa"][0][1] == len(kappas)
    assert matrix["gwet_ac1"][0][1] == pytest.approx(np.mean(ac1s))


def test_warnings_name_raters_by_pseudonym(make_user):
    """A constant rater is flagged under the name the report shows, never the database id."""
    raters = [make_user(f"p{i}", "physician") for i in range(3)]
    campaign = campaign_with(raters, n=6, overlap=3, name="Pseudonyms")
    rng = random.Random(3)
    for assignment in Assignment.objects.filter(campaign=campaign).select_related("rater"):
        for item in rating_items(campaign):
            value = 1 if assignment.rater == raters[0] else rng.choice(item.allowed_values())
            labels.save_label(assignment, item.pk, value, assignment.rater)
        labels.submit(assignment, assignment.rater)
    study = reports.load_study([campaign])
    report = reports.compute(study, n_resamples=50, plots=False)
    pseudonym = study.rater_names[raters[0].pk]
    warnings = [w for item in report["items"] for key in ("fleiss_kappa", "gwet_ac1", "krippendorff_alpha")
                for w in item[key]["warnings"]]
    flagged = [w for w in warnings if "Zero-variance rater" in w]
    assert flagged and all(f"'{pseudonym}'" in w for w in flagged)
    assert not any(f"'{raters[0].pk}'" in w for w in warnings)


def test_alpha_if_deleted_is_not_shown_when_alpha_is_undefined(make_user):
    raters = [make_user(f"s{i}", "physician") for i in range(2)]
    campaign = campaign_with(raters, n=5, overlap=2, name="Undefined alpha")
    for assignment in Assignment.objects.filter(campaign=campaign).select_related("rater"):
        for item in rating_items(campaign):
            labels.save_label(assignment, item.pk, 1, assignment.rater)
        labels.submit(assignment, assignment.rater)
    rel = reports.compute(reports.load_study([campaign]), n_resamples=50, plots=False)["reliability"]
    assert rel["cronbach_alpha"]["alpha"] is None
    assert rel["alpha_if_deleted"] == {} and "undefined" in rel["alpha_if_deleted_note"]


def test_an_items_dialogue_by_rater_table_is_pivot_tables():
    """The report's wide table of one item (without pandas' group-by) equals
    ``pivot_table(aggfunc="first")``: sorted dialogues and raters, the first value of a repeated pair, missing cells
    and unrated dialogues or raters as pivot_table leaves them."""
    rng = np.random.default_rng(2)
    frame = pd.DataFrame({"dialogue": rng.integers(100, 160, 400), "rater": rng.integers(1, 9, 400),
                          "value": rng.integers(0, 4, 400).astype(float)})
    frame.loc[rng.random(400) < 0.1, "value"] = np.nan
    frame.loc[len(frame)] = [999, 42, np.nan]  # a dialogue and a rater with no value: left out
    want = frame.pivot_table(index="dialogue", columns="rater", values="value", aggfunc="first")
    pd.testing.assert_frame_equal(reports._dialogue_by_rater(frame), want, check_exact=True)
