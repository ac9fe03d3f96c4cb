"""Delphi statistics (delphi.consensus) against hand-computed values."""

import math

import numpy as np
import pandas as pd
import pytest

from delphi import consensus

RULE = {"min_mean": 3.5, "max_cv": 0.25, "min_agreement": None, "agreement_level": 4}


def test_item_statistics_by_hand():
    s = consensus.item_statistics([5, 4, 4, 3, 5, None], RULE)
    assert s["n"] == 5
    assert s["mean"] == pytest.approx(4.2)
    # SD (n - 1): deviations .8 -.2 -.2 -1.2 .8 -> squares sum 2.8 -> sqrt(2.8 / 4)
    assert s["sd"] == pytest.approx(math.sqrt(0.7))
    assert s["cv"] == pytest.approx(math.sqrt(0.7) / 4.2)
    assert s["full_mark_ratio"] == pytest.approx(0.4)
    assert s["median"] == 4
    # type 7 quartiles of 3 4 4 5 5: Q1 at position 1 -> 4, Q3 at position 3 -> 5
    assert (s["q1"], s["q3"], s["iqr"]) == (4.0, 5.0, 1.0)
    assert s["agreement"] == pytest.approx(80.0)
    assert s["distribution"] == {1: 0, 2: 0, 3: 1, 4: 2, 5: 2}
    assert s["consensus"] is True
    assert s["quantile_method"] == "linear"


def test_type7_interpolates_between_ratings():
    s = consensus.item_statistics([1, 2, 3, 4], {})
    # positions .75 and 2.25 -> 1.75 and 3.25
    assert s["q1"] == pytest.approx(1.75) and s["q3"] == pytest.approx(3.25) and s["iqr"] == pytest.approx(1.5)
    assert s["consensus"] is None  # no rule set


def test_consensus_rule_fails_on_cv_and_agreement():
    s = consensus.item_statistics([5, 1, 5, 1], {"min_mean": 2.0, "max_cv": 0.25, "min_agreement": 70,
                                                 "agreement_level": 4})
    assert s["mean"] == 3.0
    assert s["cv"] == pytest.approx(np.std([5, 1, 5, 1], ddof=1) / 3)
    assert s["agreement"] == 50.0
    assert s["consensus"] is False
    assert any("CV" in c for c in s["consensus_checks"])


def test_undefined_statistics_are_none_with_reason():
    empty = consensus.item_statistics([], RULE)
    assert empty["n"] == 0 and empty["mean"] is None and empty["consensus"] is None and empty["warnings"]
    one = consensus.item_statistics([4], RULE)
    assert one["mean"] == 4 and one["sd"] is None and one["cv"] is None
    assert one["consensus"] is False  # CV undefined cannot meet "CV <= .25"
    same = consensus.item_statistics([4, 4, 4], RULE)
    assert same["sd"] == 0 and "No variation" in same["warnings"][0]


def test_ratings_outside_likert_are_rejected():
    with pytest.raises(ValueError):
        consensus.item_statistics([0, 6], RULE)


def test_authority_coefficient_by_hand():
    a = {"familiarity": 5, "practice": "high", "theory": "medium", "literature": "low", "intuition": "high"}
    b = {"familiarity": 3, "practice": "medium", "theory": "low", "literature": "medium", "intuition": "low"}
    incomplete = {"familiarity": 4, "practice": "high", "theory": "", "literature": "low", "intuition": "low"}
    res = consensus.authority([a, b, incomplete])
    # Ca: a = .5 + .2 + .05 + .1 = .85; b = .4 + .1 + .1 + .1 = .7 -> .775; Cs: (1.0 + .6) / 2 = .8
    assert res["ca"] == pytest.approx(0.775)
    assert res["cs"] == pytest.approx(0.8)
    assert res["cr"] == pytest.approx(0.7875)
    assert res["n"] == 2 and res["warnings"]
    assert consensus.authority([])["cr"] is None


def test_round_statistics_kendall_w_and_positive_coefficient():
    # 3 panelists rank 4 items identically -> W = 1; chi2 = m (n - 1) W = 9 on 3 df
    wide = pd.DataFrame([[1, 2, 3, 4], [1, 2, 3, 4], [1, 2, 3, 4]], columns=list("abcd"))
    res = consensus.round_statistics(invited=4, responded=3, completed=3, wide=wide, assessments=[])
    assert res["positive_coefficient"] == pytest.approx(0.75)
    assert res["kendall_w"] == pytest.approx(1.0)
    assert res["chi2"] == pytest.approx(9.0) and res["dof"] == 3
    assert res["p"] == pytest.approx(0.029283, abs=1e-5)


def test_kendall_w_by_hand_without_ties():
    # ranks: r1 1 2 3, r2 1 3 2, r3 2 1 3 -> column sums 4 6 8, S = (4-6)^2 + 0 + (8-6)^2 = 8
    # W = 12 S / (m^2 (n^3 - n)) = 96 / (9 * 24) = 0.4444
    wide = pd.DataFrame([[1, 2, 3], [1, 3, 2], [2, 1, 3]])
    res = consensus.round_statistics(invited=3, responded=3, completed=3, wide=wide, assessments=[])
    assert res["kendall_w"] == pytest.approx(4 / 9)
    assert res["kendall_w_uncorrected"] == pytest.approx(4 / 9)  # no ties: the two are equal
    assert res["chi2"] == pytest.approx(3 * 2 * 4 / 9)


def test_kendall_w_names_a_panelist_dropped_for_a_missing_rating_and_reports_both_ws():
    # P002 left item c unrated and is left out; P001 and P003 rate with ties (1, 1, 3 and 1, 2, 2)
    wide = pd.DataFrame([[1, 1, 3], [2, 5, None], [1, 2, 2]], index=["P001", "P002", "P003"], columns=list("abc"))
    res = consensus.round_statistics(invited=3, responded=3, completed=3, wide=wide, assessments=[])
    assert res["w_raters"] == 2 and res["w_dropped"] == ["P002"]
    assert any(w.startswith("Panelist P002 left out of Kendall's W") and "'c'" in w for w in res["warnings"])
    # by hand: ranks (1.5, 1.5, 3) and (1, 2.5, 2.5); rank sums 2.5 4 5.5, S = 2.25 + 0 + 2.25 = 4.5
    # uncorrected W = 12 S / (m^2 (n^3 - n)) = 54 / (4 * 24) = 0.5625; each rater has one tie of 2,
    # T_j = 2^3 - 2 = 6: corrected W = 12 S / (m^2 (n^3 - n) - m sum_j T_j) = 54 / (96 - 2 * 12) = 0.75
    assert res["kendall_w_uncorrected"] == pytest.approx(0.5625)
    assert res["kendall_w"] == pytest.approx(0.75)


def test_validation_report_layout():
    rng = np.random.default_rng(3)
    latent = rng.normal(size=200)
    data = {}
    for code in ["1.1", "1.2", "1.3", "2.1", "2.2", "2.3"]:
        data[code] = np.clip(np.round(3 + latent + rng.normal(scale=0.6, size=200)), 1, 5)
    wide = pd.DataFrame(data)
    dims = {c: c.split(".")[0] for c in wide.columns}
    rep = consensus.validation_report(wide, dims, {"1": "Interviewing", "2": "Care"})
    assert [r["code"] for r in rep["dimensions"]] == ["1", "2"]
    assert rep["dimensions"][0]["n_items"] == 3 and rep["total"]["n_items"] == 6
    from core import stats
    assert rep["total"]["alpha"] == pytest.approx(stats.cronbach_alpha(wide)["alpha"])
    assert rep["dimensions"][0]["alpha_if_deleted"]["1.1"] == pytest.approx(
        stats.cronbach_alpha(wide[["1.2", "1.3"]])["alpha"])
    assert rep["kmo"] == pytest.approx(stats.kmo(wide)["overall"])
    assert rep["bartlett_dof"] == 15 and rep["bartlett_p"] < 0.001
    assert rep["total"]["alpha"] > 0.8


def test_validation_report_undefined_with_too_few_respondents():
    wide = pd.DataFrame({"1.1": [5, 4], "1.2": [4, 4], "1.3": [5, 3]})
    rep = consensus.validation_report(wide, {c: "1" for c in wide.columns})
    assert rep["kmo"] is None and rep["kmo_warnings"]
