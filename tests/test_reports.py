"""Campaign reports: figures match the statistics engine, undefined cases explained, JSON-safe."""

import json
import random

import numpy as np
import pandas as pd
import pytest

from annotation import labels
from annotation.models import Assignment
from scoring import stats
from scoring.reports import agreement as reports
from tests.factories import campaign_with, rating_items


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


@pytest.fixture
def rated(make_user):
    raters = [make_user(f"r{i}", "physician") for i in range(4)]
    campaign = campaign_with(raters, n=12, overlap=3, name="Report")
    rate_everything(campaign, random.Random(7))
    return campaign


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
    assert "ICC1" in report["icc"]["dimensions"]["1"] and "slots" in report["icc"]["design"]
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


def test_plots_render_as_svg(rated):
    report = reports.compute(reports.load_study([rated]), n_resamples=50)
    assert set(report["plots"]) == {"item_agreement", "rater_heatmap", "model_scores"}
    assert all(svg.startswith("<svg") for svg in report["plots"].values())


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
