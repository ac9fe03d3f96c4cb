"""Pure statistics of preference studies (core.stats): Bradley-Terry, Wilson intervals, MT-Bench agreement,
position bias."""

import math

import numpy as np
import pytest

from core import stats


def games(table):
    comps = []
    for a, b, wins_a, wins_b in table:
        comps += [(a, b, 1.0)] * wins_a + [(a, b, 0.0)] * wins_b
    return comps


def test_bradley_terry_recovers_hand_computed_strengths():
    # Strengths 1 : 2 : 4 with 15 games per pair; the observed wins equal their expectations
    # (x-y 5:10, x-z 3:12, y-z 5:10), so the score equations hold exactly at p = (1, 2, 4) / 7.
    result = stats.bradley_terry(games([("x", "y", 5, 10), ("x", "z", 3, 12), ("y", "z", 5, 10)]))
    assert result["converged"]
    assert result["strength"] == pytest.approx({"x": 1 / 7, "y": 2 / 7, "z": 4 / 7}, abs=1e-8)
    assert result["log_strength"]["z"] - result["log_strength"]["x"] == pytest.approx(math.log(4), abs=1e-7)


def test_two_sources_give_the_win_share_and_ties_count_half():
    result = stats.bradley_terry([("a", "b", 1.0)] * 3 + [("a", "b", 0.5)] * 2 + [("a", "b", 0.0)])
    # a: 3 + 1 = 4 half-wins of 6 -> p_a / (p_a + p_b) = 4/6
    assert result["strength"]["a"] == pytest.approx(4 / 6, abs=1e-9)


def test_bradley_terry_matches_direct_likelihood_maximisation():
    rng = np.random.default_rng(5)
    true = {"a": 0.0, "b": 0.7, "c": -0.4, "d": 1.2}
    names = list(true)
    comps = []
    for _ in range(400):
        i, j = rng.choice(4, 2, replace=False)
        a, b = names[i], names[j]
        p = 1 / (1 + math.exp(true[b] - true[a]))
        u = rng.random()
        comps.append((a, b, 1.0 if u < p * 0.85 else 0.5 if u < p * 0.85 + 0.15 else 0.0))
    mm = stats.bradley_terry(comps, names)

    def nll(theta):
        t = np.concatenate([[0.0], theta])
        idx = {n: k for k, n in enumerate(names)}
        total = 0.0
        for a, b, s in comps:
            d = t[idx[a]] - t[idx[b]]
            total -= s * d - np.logaddexp(0, d)
        return total

    from scipy.optimize import minimize  # here, not when the tests are collected

    fit = minimize(nll, np.zeros(3), method="BFGS")
    theta = np.concatenate([[0.0], fit.x])
    theta -= theta.mean()
    for k, name in enumerate(names):
        assert mm["log_strength"][name] == pytest.approx(theta[k], abs=1e-4)


def test_bradley_terry_is_undefined_when_a_source_never_wins():
    result = stats.bradley_terry(games([("x", "y", 4, 0), ("y", "z", 3, 1)]))
    assert result["strength"] is None and "never beats" in result["warnings"][0]
    assert stats.bradley_terry([], ["x"])["strength"] is None


def test_bootstrap_intervals_cover_the_estimate():
    rows = []
    for unit in range(30):
        rows += [(unit, "x", "y", 1.0 if unit % 3 else 0.0), (unit, "y", "z", 0.5), (unit, "x", "z", 1.0 if unit % 2
                                                                                   else 0.0)]
    result = stats.bradley_terry_bootstrap(rows, n_resamples=200, seed=1)
    for name in ("x", "y", "z"):
        ci = result["ci"][name]["strength"]
        assert ci["ci_low"] <= result["strength"][name] <= ci["ci_high"]
        assert ci["seed"] == 1


def test_wilson_interval_matches_the_published_formula():
    # Wilson (1927) / Newcombe (1998) example: 81 of 263 -> 0.2553 to 0.3662 (95%).
    ci = stats.wilson_ci(81, 263)
    assert (ci["ci_low"], ci["ci_high"]) == pytest.approx((0.2553, 0.3662), abs=1e-4)
    assert stats.wilson_ci(0, 0)["value"] is None


def test_win_tie_loss_and_vote_agreement():
    wtl = stats.win_tie_loss(["first", "first", "tie", "second"])
    assert wtl["counts"] == {"first": 2, "tie": 1, "second": 1}
    assert wtl["first_score"]["value"] == pytest.approx(2.5 / 4)
    with pytest.raises(ValueError):
        stats.win_tie_loss(["left"])
    agreement = stats.vote_agreement([("first", "first"), ("first", "tie"), ("second", "first"), ("tie", "tie")])
    assert agreement["with_ties"] == {"value": 0.5, "n": 4}
    assert agreement["without_ties"] == {"value": 0.5, "n": 2}
    bias = stats.position_bias(["A"] * 8 + ["B"] * 2 + ["tie"] * 5)
    assert bias["share_a_decisive"]["value"] == 0.8 and bias["p_value"] == pytest.approx(0.109375)


def _resampled_comparisons(rows, n_resamples, seed):
    """Each bootstrap resample's comparisons: the drawn units (items) with all their comparisons."""
    from core.stats.bootstrap import bootstrap_indices

    by_unit: dict = {}
    for unit, a, b, s in rows:
        by_unit.setdefault(unit, []).append((a, b, s))
    units = list(by_unit)
    return [[c for k in row for c in by_unit[units[k]]] for row in bootstrap_indices(len(units), n_resamples, seed)]


def _bootstrap_one_fit_at_a_time(rows, sources, n_resamples, seed):
    """The reference: every resample fitted on its own by ``bradley_terry`` (how the bootstrap was computed before
    its fits were stacked)."""
    strengths, logs = [], []
    for comps in _resampled_comparisons(rows, n_resamples, seed):
        fit = stats.bradley_terry(comps, sources, tol=1e-8, max_iter=2000)
        defined = fit["strength"] is not None
        strengths.append([fit["strength"][s] if defined else np.nan for s in sources])
        logs.append([fit["log_strength"][s] if defined else np.nan for s in sources])
    return np.array(strengths), np.array(logs)


@pytest.mark.parametrize("data", ["random", "constant", "near-constant", "rare-winner"])
def test_stacked_bootstrap_fits_equal_one_fit_per_resample(data):
    """The bootstrap fits every resample at once; each resample's strengths equal its own fit's to 1e-9, including
    resamples where the MLE does not exist (a source that never wins or ties in them) and a near-constant study."""
    from core.stats.preference import _bradley_terry_many, _bt_matrix

    rng = np.random.default_rng(11)
    sources = ["a", "b", "c", "d"]
    rows = []
    for unit in range(40):
        i, j = rng.choice(4, 2, replace=False)
        if data == "random":
            score = rng.choice([0.0, 0.5, 1.0])
        elif data == "constant":  # the earlier-listed source always wins: every resample is undefined
            score = 1.0 if i < j else 0.0
        elif data == "near-constant":  # one tie in forty: most resamples lose it
            score = 0.5 if unit == 7 else (1.0 if i < j else 0.0)
        else:  # "d" wins rarely: some resamples have no win of "d"
            score = (0.0 if unit % 13 == 0 else 1.0) if sources[j] == "d" else rng.choice([0.0, 1.0])
            score = (1.0 - score) if sources[i] == "d" and unit % 13 else score
        rows.append((unit, sources[i], sources[j], float(score)))
    expected, expected_logs = _bootstrap_one_fit_at_a_time(rows, sources, 300, 4)
    result = stats.bradley_terry_bootstrap(rows, sources, n_resamples=300, seed=4)
    wins = np.stack([_bt_matrix(comps, sources)[0] for comps in _resampled_comparisons(rows, 300, 4)])
    strengths, logs = _bradley_terry_many(wins, tol=1e-8, max_iter=2000)
    np.testing.assert_allclose(strengths, expected, rtol=0, atol=1e-9)
    np.testing.assert_allclose(logs, expected_logs, rtol=0, atol=1e-9)
    undefined = int(np.isnan(expected[:, 0]).sum())
    if data == "constant":
        assert undefined == 300 and result["strength"] is None and result["ci"] is None
    elif data == "rare-winner":
        assert 0 < undefined < 300
    if result["ci"] is not None:  # the summary counts the undefined resamples as dropped
        assert result["ci"]["a"]["strength"]["n_valid"] == 300 - undefined
