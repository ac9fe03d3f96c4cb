"""What the reports say: verdict reasons that follow the interval and never the
opposite of the point estimate; one band boundary for kappa everywhere (0.40 is "moderate", the band the floor
names); p-values that never print as 0.0000; heatmaps whose names never cover the other panel; a key for the box
plot's markers."""

from __future__ import annotations

import numpy as np
import pytest
from django.template import Context, Template

from core import stats
from core.stats import formatting
from scoring.judges import report as judge_report
from scoring.judges.report import KEEP, REPLACE, UNRELIABLE, VerdictSettings
from tests.test_judge_verdict import agreeing_physicians, binary_item, context

LESS = "agrees with the physicians less than they agree with each other"


def assert_reasons_follow_the_estimate(entry: dict) -> None:
    """Whatever the outcome: a reason about non-inferiority names the lower limit and minus the margin, and says
    the judge agrees less only when the point estimate is below minus the margin."""
    decision, difference = entry["decision"], entry["difference"]
    text = " ".join(decision["reasons"] + decision["notes"])
    if decision["checks"]["non_inferior"] is False and difference and difference["value"] is not None:
        assert "Non-inferiority not shown" in text and "minus the margin" in text, text
        low = difference["ci_low"]
        digits = formatting.decimals(difference["value"], low, difference["ci_high"], 2)  # as the report prints it
        assert formatting.number(low, digits, sign=True) in text, text
        assert ("below minus the margin" in text) == (low < -difference["margin"] - 1e-9), text
        assert (LESS in text) == (difference["value"] <= -difference["margin"]), (difference, text)
    if difference and difference["value"] is not None and difference["value"] >= 0:
        assert LESS not in text and "less than" not in text, text


def test_a_judge_as_good_as_a_physician_on_few_dialogues_is_not_said_to_agree_less():
    """The issue's case: differences of +0.04 and +0.02 read "the judge agrees ... less". A judge that answers like
    one more physician, on 40 dialogues: the estimate is near 0, often positive, the interval wide."""
    positive_kept = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        n = 40
        truth = (rng.random(n) < 0.5).astype(int)
        humans = agreeing_physicians(rng, truth, flip=0.12)
        judge = np.where(rng.random(n) < 0.12, 1 - truth, truth)
        entry = judge_report.item_report(binary_item("1.1", judge, humans), context(n, margin=0.05))
        assert_reasons_follow_the_estimate(entry)
        if entry["decision"]["verdict"] == KEEP and entry["difference"]["value"] >= 0:
            positive_kept += 1
            text = " ".join(entry["decision"]["reasons"])
            assert "at least as well as they agree with each other" in text and "too wide" in text, text
    assert positive_kept >= 3  # the case of the issue occurs and is worded by the interval


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_random_and_constant_judges_and_a_near_constant_item_are_worded_by_their_interval(method):
    rng = np.random.default_rng(5)
    n = 80
    truth = (rng.random(n) < 0.5).astype(int)
    humans = agreeing_physicians(rng, truth, flip=0.04)
    random_judge = judge_report.item_report(binary_item("2.1", rng.integers(0, 2, n), humans),
                                            context(n, method=method))
    assert random_judge["decision"]["verdict"] == KEEP
    assert random_judge["difference"]["value"] < -0.1
    assert_reasons_follow_the_estimate(random_judge)
    assert LESS in " ".join(random_judge["decision"]["reasons"])
    constant = judge_report.item_report(binary_item("2.2", np.ones(n, dtype=int), humans), context(n, method=method))
    assert constant["decision"]["verdict"] == KEEP
    assert "No better than a constant answer" in constant["decision"]["reasons"][0]
    assert_reasons_follow_the_estimate(constant)
    # a near-constant item (95% of the physicians' answers are 1): agreement by Gwet's AC1, a judge that follows
    # the physicians is not said to agree less
    near = np.where(rng.random(n) < 0.05, 0, 1)
    humans = agreeing_physicians(rng, near, flip=0.01)
    follower = judge_report.item_report(binary_item("3.1", near, humans), context(n, method=method))
    assert follower["physicians_agreement"]["coefficient"] == "gwet_ac1"
    assert_reasons_follow_the_estimate(follower)
    assert follower["decision"]["verdict"] in (REPLACE, KEEP)


# ------------------------------------------------------------------------------------------------ kappa bands
def decision_at(agreement: float) -> dict:
    """decide() on an item whose physicians agree at exactly ``agreement`` (Cohen's kappa)."""
    figure = {"value": agreement, "ci_low": agreement - 0.1, "ci_high": agreement + 0.1, "warnings": []}
    item = {"n_dialogues": 100,
            "physicians_agreement": {**figure, "coefficient": "kappa", "name": "Cohen's kappa",
                                     "interpretation": stats.interpret(agreement, "landis_koch")},
            "vs_majority": {"accuracy": {"value": 0.9}, "majority_class_rate": 0.5, "majority_class": 1},
            "vs_physicians": {"kappa": {"value": 0.5, "ci_low": 0.4, "ci_high": 0.6}}}
    difference = {"value": 0.0, "ci_low": -0.05, "ci_high": 0.05, "margin": 0.1}
    return judge_report.decide(item, VerdictSettings(), difference)


def test_one_kappa_boundary_everywhere_040_is_moderate_as_the_floor_says():
    assert stats.interpret(0.40, "landis_koch")["label"] == "moderate"
    assert stats.interpret(0.1 + 0.3, "landis_koch")["label"] == "moderate"  # 0.4000000000000001
    assert stats.interpret(0.7 - 0.3, "landis_koch")["label"] == "moderate"  # 0.39999999999999997
    assert stats.interpret(0.3999, "landis_koch")["label"] == "fair"
    floor = stats.band_at(0.40, "landis_koch")
    assert floor["label"] == "moderate" and floor["at_start"] and floor["range"] == "0.40 to < 0.60"
    rule = judge_report.acceptance_rule_text(VerdictSettings())
    assert "below 0.40 (the start of 'moderate' agreement, 0.40 to < 0.60" in rule
    # an item at exactly the floor is "moderate" and reliable; just below it is "fair" and unreliable
    assert decision_at(0.40)["verdict"] != UNRELIABLE
    below = decision_at(0.3999)
    assert below["verdict"] == UNRELIABLE and "(fair), below the floor 0.40 (the start of 'moderate'" in \
        below["reasons"][0]
    # the methods and the agreement report name the same bands
    methods = judge_report.methods(1, 10, VerdictSettings())["physicians_agreement"]
    assert "0.40 to < 0.60 moderate" in methods and "0.20 to < 0.40 fair" in methods
    assert stats.bands_text("landis_koch") == ("< 0.00 poor, 0.00 to < 0.20 slight, 0.20 to < 0.40 fair, 0.40 to "
                                               "< 0.60 moderate, 0.60 to < 0.80 substantial, >= 0.80 almost perfect")
    assert stats.bands_text("koo_li_icc").endswith("0.75 to <= 0.90 good, > 0.90 excellent")
    assert stats.interpret(0.90, "koo_li_icc")["label"] == "good"  # Koo & Li: excellent above .90
    inside = stats.band_at(0.45, "landis_koch")
    assert inside["text"] == "inside 'moderate'" and not inside["at_start"]


# ------------------------------------------------------------------------------------------------------ p-values
@pytest.mark.parametrize("p, text, bare", [
    (0.0, "p < 0.0001", "< 0.0001"), (3.2e-12, "p < 0.0001", "< 0.0001"), (0.00009, "p < 0.0001", "< 0.0001"),
    (0.0001, "p = 0.0001", "0.0001"), (0.01234, "p = 0.0123", "0.0123"), (1.0, "p = 1.0000", "1.0000"),
    (None, "undefined", "undefined"), (float("nan"), "undefined", "undefined"),
])
def test_p_values_never_print_as_zero(p, text, bare):
    assert stats.format_p(p) == text and stats.format_p(p, prefix=False) == bare
    from django.utils.html import escape

    rendered = Template("{% load report_tags %}{{ p|pvalue }}|{{ p|pvalue:'bare' }}").render(Context({"p": p}))
    assert rendered == escape(f"{text}|{bare}")


def test_p_value_templates_use_the_one_filter():
    """Every page that prints a p-value goes through the filter (a template printing one with floatformat or num
    would show 0.0000 again)."""
    import re
    from pathlib import Path

    from django.conf import settings

    pattern = re.compile(r"\bp(_value)?\|(floatformat|num)|bartlett_p\|(floatformat|num)|\.p\|(floatformat|num)")
    offenders = [str(path) for path in Path(settings.BASE_DIR, "templates").rglob("*.html")
                 if pattern.search(path.read_text())]
    assert offenders == []


def test_delphi_export_writes_small_p_values_as_text_not_zero():
    from delphi.exports import _p

    assert _p(1e-9) == "< 0.0001" and _p(0.03456) == 0.0346 and _p(None) == ""


def test_kendall_w_warning_has_no_internal_names():
    import pandas as pd

    ties = pd.DataFrame([[1, 1, 2, 3], [1, 2, 2, 3], [2, 1, 3, 3]])
    warnings = " ".join(stats.kendall_w(ties)["warnings"])
    assert "tie-corrected" in warnings and "w_uncorrected" not in warnings and "(w)" not in warnings


# ---------------------------------------------------------------------------------------------------------- plots
def test_heatmap_names_never_cover_the_other_panel():
    from scoring.reports import plots

    names = [f"Dr. {n} with a long name" for n in "ABCDEFGHIJKL"]
    rng = np.random.default_rng(3)
    values = rng.uniform(-0.1, 1, (len(names), len(names))).round(2).tolist()
    fig = plots.rater_heatmap_figure({"raters": names, "kappa": values, "gwet_ac1": values})
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    assert len(fig.axes) == 3  # two heatmaps and the colorbar
    images = [image.get_window_extent(renderer) for ax in fig.axes for image in ax.get_images()]
    assert len(images) == 2
    labels = [(ax, label.get_window_extent(renderer)) for ax in fig.axes
              for label in ax.get_xticklabels() + ax.get_yticklabels() if label.get_visible() and label.get_text()]
    assert len(labels) >= 3 * len(names)  # both panels' names below, the first panel's on the left
    for own, label in labels:
        covered = images + [ax.get_window_extent(renderer) for ax in fig.axes if ax is not own]
        for area in covered:
            overlap = label.intersection(label, area)
            assert overlap is None or min(overlap.width, overlap.height) < 0.5, (label, area)
    for i, (_, a) in enumerate(labels):
        for _, b in labels[i + 1:]:
            overlap = a.intersection(a, b)
            assert overlap is None or min(overlap.width, overlap.height) < 0.5, (a, b)
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_box_plot_has_a_key_for_its_markers():
    import matplotlib.pyplot as plt

    from scoring.reports import plots

    models = [{"model": "GPT-4", "n_dialogues": 30, "total_scores": [*np.linspace(8, 20, 29), 1.0]},
              {"model": "Qwen", "n_dialogues": 20, "total_scores": list(np.linspace(5, 15, 20))}]
    fig = plots.model_scores_figure(models)
    legend = fig.axes[0].get_legend()
    assert legend is not None and [t.get_text() for t in legend.get_texts()] == list(plots.box_key())
    plt.close(fig)
    svg = plots.model_scores(models)
    assert "median" in svg and "mean" in svg and "beyond the whiskers" in svg and "style=" not in svg
