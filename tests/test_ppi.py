"""Prediction-powered inference (core.stats.ppi) against the authors' package ppi_py, and by simulation.

ppi_py (Angelopoulos et al.; a test dependency) is called on the same arrays: point estimates, intervals, the
tuned lambda and the sample sizes of its power analysis must be equal. The simulations: 500
synthetic studies of 600 dialogues, 60 labelled at random, on a 0-5 criterion (fixed seeds, one vectorised call).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from core.stats import ppi
from tests.lazy import lazy

ppi_py = lazy("ppi_py", skip_when_missing=True)

# physicians' score distribution on a 0-5 criterion; its mean is the truth the intervals must cover
P_SCORE = np.array([0.05, 0.10, 0.20, 0.30, 0.25, 0.10])
TRUTH = float((np.arange(6) * P_SCORE).sum())


def scenario(seed: int, n: int = 80, big_n: int = 500, bias: float = 0.5, noise: float = 1.0):
    rng = np.random.default_rng(seed)
    y = rng.choice(6, size=n, p=P_SCORE).astype(float)
    y_unlabelled = rng.choice(6, size=big_n, p=P_SCORE).astype(float)
    return y, y + bias + rng.normal(0, noise, n), y_unlabelled + bias + rng.normal(0, noise, big_n)


def ppi_py_ci(*args, **kwargs) -> tuple[float, float]:
    low, high = ppi_py.ppi_mean_ci(*args, **kwargs)
    return float(np.ravel(low)[0]), float(np.ravel(high)[0])


CASES = {
    "biased judge": scenario(1),
    "accurate judge": scenario(2, bias=0.0, noise=0.3),
    "random judge": (scenario(3)[0], np.random.default_rng(103).uniform(0, 5, 80),
                     np.random.default_rng(4).uniform(0, 5, 500)),
    "binary item, binary judge": tuple(np.asarray(a > 2.5, dtype=float) for a in scenario(5)),
    "few labels": scenario(6, n=12, big_n=300),
    "judge better spread than physicians": (scenario(7)[0], *(a * 0.3 for a in scenario(7)[1:])),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("alpha", [0.05, 0.1])
def test_tuned_estimate_and_interval_equal_ppi_py(case, alpha):
    y, yhat, yhat_unlabelled = CASES[case]
    ours = ppi.ppi_mean(y, yhat, yhat_unlabelled, alpha=alpha)
    low, high = ppi_py_ci(y, yhat, yhat_unlabelled, alpha=alpha)
    point = float(np.ravel(ppi_py.ppi_mean_pointestimate(y, yhat, yhat_unlabelled))[0])
    assert ours["value"] == pytest.approx(point, rel=1e-12, abs=1e-12)
    assert ours["ci_low"] == pytest.approx(low, rel=1e-12, abs=1e-12)
    assert ours["ci_high"] == pytest.approx(high, rel=1e-12, abs=1e-12)
    assert 0.0 <= ours["lam"] <= 1.0
    # the tuned lambda is ppi_py's: fixing it reproduces the same interval
    assert ppi_py_ci(y, yhat, yhat_unlabelled, alpha=alpha, lam=ours["lam"]) == pytest.approx((low, high), rel=1e-12)


@pytest.mark.parametrize("lam", [0.0, 0.3, 1.0])
@pytest.mark.parametrize("alternative", ["two-sided", "larger", "smaller"])
def test_fixed_lambda_and_one_sided_intervals_equal_ppi_py(lam, alternative):
    y, yhat, yhat_unlabelled = CASES["biased judge"]
    ours = ppi.ppi_mean_arrays(y, yhat, yhat_unlabelled, lam=lam, alternative=alternative, alpha=0.1)
    low, high = ppi_py_ci(y, yhat, yhat_unlabelled, lam=lam, alternative=alternative, alpha=0.1)
    assert float(ours["ci_low"]) == pytest.approx(low, rel=1e-12)
    assert float(ours["ci_high"]) == pytest.approx(high, rel=1e-12)
    assert float(ours["value"]) == pytest.approx(
        float(np.ravel(ppi_py.ppi_mean_pointestimate(y, yhat, yhat_unlabelled, lam=lam))[0]), rel=1e-12)


def test_lambda_zero_is_the_classical_interval_of_ppi_py():
    y, yhat, yhat_unlabelled = CASES["biased judge"]
    classical = ppi.classical_mean(y)
    assert (classical["ci_low"], classical["ci_high"]) == pytest.approx(
        tuple(float(v) for v in ppi_py.classical_mean_ci(y, alpha=0.05)), rel=1e-12)
    fixed = ppi.ppi_mean(y, yhat, yhat_unlabelled, lam=0.0)
    assert (fixed["value"], fixed["ci_low"], fixed["ci_high"]) == pytest.approx(
        (classical["value"], classical["ci_low"], classical["ci_high"]), rel=1e-12)


def test_constant_judge_gives_the_classical_estimate_with_lambda_zero():
    """ppi_py returns NaN for a judge without variance (0/0 lambda); here lambda is 0 and PPI++ is classical."""
    y, _, _ = CASES["biased judge"]
    out = ppi.ppi_mean(y, np.full(y.size, 3.0), np.full(500, 3.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.isnan(ppi_py_ci(y, np.full(y.size, 3.0), np.full(500, 3.0))[0])
    classical = ppi.classical_mean(y)
    assert out["lam"] == 0.0
    assert (out["value"], out["ci_low"], out["ci_high"]) == (classical["value"], classical["ci_low"],
                                                            classical["ci_high"])
    assert out["gain"] == pytest.approx(0.0, abs=1e-9)
    assert any("same score" in w for w in out["warnings"])


def test_random_judge_adds_almost_nothing():
    y, yhat, yhat_unlabelled = CASES["random judge"]
    out = ppi.ppi_mean(y, yhat, yhat_unlabelled)
    classical = ppi.classical_mean(y)
    assert out["lam"] < 0.2
    width, classical_width = out["ci_high"] - out["ci_low"], classical["ci_high"] - classical["ci_low"]
    assert 0.95 < width / classical_width < 1.05
    assert abs(out["gain"]) < 0.1 * out["n"]


def test_near_constant_and_constant_criterion():
    rng = np.random.default_rng(9)
    y = np.full(60, 4.0)
    y[7] = 3.0  # physicians nearly always give 4
    yhat = y + rng.normal(0, 0.5, 60)
    yhat_unlabelled = 4.0 + rng.normal(0, 0.5, 400)
    out = ppi.ppi_mean(y, yhat, yhat_unlabelled)
    assert out["ci_low"] <= out["value"] <= out["ci_high"]
    assert 0.0 <= out["lam"] <= 1.0 and math.isfinite(out["se"])
    assert (out["ci_low"], out["ci_high"]) == pytest.approx(ppi_py_ci(y, yhat, yhat_unlabelled, alpha=0.05),
                                                            rel=1e-12)
    constant = ppi.ppi_mean(np.full(60, 4.0), yhat, yhat_unlabelled)
    assert constant["effective_n"] is None and constant["gain"] is None
    assert any("zero width" in w for w in constant["warnings"])
    assert ppi.classical_mean(np.full(60, 4.0))["warnings"][0].startswith("Every dialogue has the same score")


def test_undefined_inputs_give_reasons_not_errors():
    assert ppi.ppi_mean([], [], [1.0, 2.0])["value"] is None
    single = ppi.ppi_mean([3.0], [3.5], [1.0, 2.0])
    assert single["value"] == 3.0 and single["ci_low"] is None and single["warnings"]
    census = ppi.ppi_mean([1.0, 2.0, 4.0], [1.5, 2.0, 3.0], [])
    assert census["value"] == pytest.approx(7 / 3) and census["lam"] == 0.0
    assert "adds nothing" in census["warnings"][0]
    assert ppi.classical_mean([2.0])["ci_low"] is None
    with pytest.raises(ValueError):
        ppi.ppi_mean([1.0, 2.0], [1.0], [1.0])
    with pytest.raises(ValueError):
        ppi.ppi_mean([1.0, np.nan], [1.0, 2.0], [1.0])
    with pytest.raises(ValueError):
        ppi.classical_mean([1.0, 2.0], alternative="both")


def test_vectorised_kernel_equals_one_study_at_a_time():
    rng = np.random.default_rng(11)
    y = rng.choice(6, size=(4, 50), p=P_SCORE).astype(float)
    yhat = y + 0.5 + rng.normal(0, 1, y.shape)
    yhat_unlabelled = rng.choice(6, size=(4, 300), p=P_SCORE) + 0.5 + rng.normal(0, 1, (4, 300))
    batch = ppi.ppi_mean_arrays(y, yhat, yhat_unlabelled)
    for s in range(4):
        one = ppi.ppi_mean(y[s], yhat[s], yhat_unlabelled[s])
        assert (one["value"], one["ci_low"], one["ci_high"], one["lam"]) == pytest.approx(
            (batch["value"][s], batch["ci_low"][s], batch["ci_high"][s], batch["lam"][s]), rel=1e-12)


def test_difference_of_independent_estimates():
    a = ppi.ppi_mean(*scenario(21))
    b = ppi.ppi_mean(*scenario(22, bias=0.2))
    diff = ppi.difference(a, b)
    half = lambda e: (e["ci_high"] - e["ci_low"]) / 2  # noqa: E731
    assert diff["value"] == pytest.approx(a["value"] - b["value"])
    assert (diff["ci_high"] - diff["ci_low"]) / 2 == pytest.approx(math.hypot(half(a), half(b)), rel=1e-12)
    assert ppi.difference(a, {"value": None, "se": None})["value"] is None


# ---------------------------------------------------------------------------------------------------------------
# planner
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("half_width", [0.1, 0.2, 0.35])
@pytest.mark.parametrize("n_total", [600, 2000])
def test_sample_size_equals_ppi_py_power_analysis(half_width, n_total):
    """ppi_power's cheapest pair reaching the classical effective sample size n0 under the constraint
    n + N <= n_total (predictions nearly free, so the constraint binds) is the closed form of the planner."""
    y, yhat, _ = scenario(31, n=80)
    ours = ppi.sample_size(y, yhat, half_width, n_total=n_total)
    n0 = y.var() / (half_width / 1.959963984540054) ** 2
    assert ours["physicians_only"] == math.ceil(n0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = ppi_py.ppi_mean_power(y, yhat, cost_Y=1.0, cost_Yhat=1e-9, effective_n=n0, n_max=n_total)
    assert ours["rho"] == pytest.approx(theirs["ppi_corr"], rel=1e-12)
    if n0 > n_total:
        assert ours["with_judge"] is None and ours["physicians_only"] > n_total
        return
    assert round(ours["n_exact"]) == theirs["n"]
    assert ours["with_judge"] == math.ceil(ours["n_exact"] - 1e-9)
    # the planned n reaches the target and one fewer does not
    var = ppi._variance(np.array([ours["with_judge"] - 1, ours["with_judge"]], dtype=float),
                        n_total - np.array([ours["with_judge"] - 1, ours["with_judge"]], dtype=float),
                        y.var(), yhat.var(), ours["rho"] * y.std() * yhat.std())
    target = (half_width / 1.959963984540054) ** 2
    assert var[1] <= target * (1 + 1e-9) < var[0]


def test_planned_sizes_deliver_the_half_width_in_simulation():
    """Label as many dialogues as planned: the PPI++ intervals come out about as wide as asked."""
    y, yhat, _ = scenario(41, n=200)
    plan = ppi.sample_size(y, yhat, 0.15, n_total=1500)
    rng = np.random.default_rng(42)
    scores = rng.choice(6, size=(300, 1500), p=P_SCORE).astype(float)
    judge = scores + 0.5 + rng.normal(0, 1.0, scores.shape)
    n = plan["with_judge"]
    out = ppi.ppi_mean_arrays(scores[:, :n], judge[:, :n], judge[:, n:])
    assert np.median((out["ci_high"] - out["ci_low"]) / 2) == pytest.approx(0.15, rel=0.1)
    assert plan["physicians_only"] > 2 * n


def test_planner_edge_cases():
    y, yhat, _ = scenario(51, n=40)
    constant_judge = ppi.sample_size(y, np.full(40, 2.0), 0.2, n_total=1000)
    assert constant_judge["with_judge"] == constant_judge["physicians_only"]  # lambda 0: the judge adds nothing
    assert constant_judge["rho"] is None and constant_judge["warnings"]
    flat = ppi.sample_size(np.full(40, 3.0), yhat, 0.2, n_total=1000)
    assert flat["physicians_only"] is None and "do not vary" in flat["warnings"][0]
    unlimited = ppi.sample_size(y, yhat, 0.2)
    assert unlimited["with_judge"] == unlimited["with_judge_unlimited"] <= ppi.sample_size(
        y, yhat, 0.2, n_total=1000)["with_judge"]
    assert ppi.sample_size([1.0], [1.0], 0.2)["physicians_only"] is None
    with pytest.raises(ValueError):
        ppi.sample_size(y, yhat, 0.0)


def test_difference_sample_size():
    a, b = scenario(61, n=60)[:2], scenario(62, n=60, bias=0.1)[:2]
    half_width = 0.3
    plan = ppi.difference_sample_size([(*a, 800), (*b, 800)], half_width)
    target = (half_width / 1.959963984540054) ** 2
    assert plan["physicians_only"] == math.ceil((a[0].var() + b[0].var()) / target)
    n = plan["with_judge"]
    assert n < plan["physicians_only"]

    def variance(k: int) -> float:
        total = 0.0
        for y, yhat in (a, b):
            rho = ppi.ppi_corr(y, yhat)
            total += float(ppi._variance(np.array([float(k)]), 800.0 - k, y.var(), yhat.var(),
                                         rho * y.std() * yhat.std())[0])
        return total

    assert variance(n) <= target * (1 + 1e-9) < variance(n - 1)
    unlimited = ppi.difference_sample_size([(*a, None), (*b, None)], half_width)
    assert unlimited["with_judge"] == unlimited["with_judge_unlimited"] <= n


# ---------------------------------------------------------------------------------------------------------------
# coverage by simulation
# ---------------------------------------------------------------------------------------------------------------
def simulate(seed: int, *, studies: int = 500, dialogues: int = 600, labelled: int = 60, bias: float = 0.5,
             noise: float = 1.0) -> dict[str, dict[str, np.ndarray]]:
    """Physicians' scores on a 0-5 criterion and a judge adding ``bias`` with normal noise, for every dialogue of
    every study; ``labelled`` dialogues per study drawn at random."""
    rng = np.random.default_rng(seed)
    scores = rng.choice(6, size=(studies, dialogues), p=P_SCORE).astype(float)
    judge = scores + bias + rng.normal(0.0, noise, scores.shape)
    order = np.argsort(rng.random(scores.shape), axis=1)
    lab, unl = order[:, :labelled], order[:, labelled:]
    y = np.take_along_axis(scores, lab, axis=1)
    return {"judge": ppi.classical_mean_arrays(judge),
            "physicians": ppi.classical_mean_arrays(y),
            "ppi": ppi.ppi_mean_arrays(y, np.take_along_axis(judge, lab, axis=1),
                                       np.take_along_axis(judge, unl, axis=1)),
            "correlation": float(np.corrcoef(scores.ravel(), judge.ravel())[0, 1])}


def coverage(figures: dict[str, np.ndarray]) -> float:
    return float(((figures["ci_low"] <= TRUTH) & (figures["ci_high"] >= TRUTH)).mean())


def test_coverage_of_a_biased_judge():
    """Judge +0.5 with noise: its own interval misses the truth, PPI++ keeps the nominal 95%."""
    sim = simulate(28)
    assert coverage(sim["judge"]) < 0.20
    assert coverage(sim["ppi"]) >= 0.93
    assert coverage(sim["physicians"]) >= 0.92  # the classical CLT interval on 60 dialogues, for reference


def test_judge_correlated_08_narrows_the_interval():
    sd = float(np.sqrt((np.arange(6) ** 2 * P_SCORE).sum() - TRUTH ** 2))
    noise = sd * math.sqrt(1 / 0.8 ** 2 - 1)  # corr(score, score + bias + noise) = 0.8
    sim = simulate(2028, noise=noise)
    assert sim["correlation"] == pytest.approx(0.8, abs=0.01)
    ppi_width = sim["ppi"]["ci_high"] - sim["ppi"]["ci_low"]
    physicians_width = sim["physicians"]["ci_high"] - sim["physicians"]["ci_low"]
    assert ppi_width.mean() < 0.75 * physicians_width.mean()
    assert (ppi_width < physicians_width).mean() > 0.95
    assert coverage(sim["ppi"]) >= 0.93
