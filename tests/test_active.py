"""Active statistical inference (core.stats.active): the sampling rule, the estimators against direct
implementations of their formulas, PPI++ as the equal-probability case, and the raters the figures must survive
(random, constant, near-constant). Simulations are small here; the 2,000-study table is bench/bench_active.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

from core.stats import active, ppi
from tests.lazy import lazy

ppi_py = lazy("ppi_py", skip_when_missing=True)

Z95 = 1.959963984540054
P_SCORE = np.array([0.05, 0.10, 0.20, 0.30, 0.25, 0.10])


def world(seed: int, big_n: int = 400, budget: float = 60.0, informative: bool = True):
    """0-5 physicians' scores, a judge off by noise whose size varies by dialogue, its uncertainty that size (or
    shuffled), probabilities from the default rule and one Poisson draw."""
    rng = np.random.default_rng(seed)
    y = rng.choice(6, size=big_n, p=P_SCORE).astype(float)
    size = np.where(rng.random(big_n) < 0.7, 0.2, 1.5)
    yhat = y + 0.3 + rng.normal(0.0, size)
    uncertainty = size if informative else rng.permutation(size)
    pi = active.sampling_probabilities(uncertainty, budget)
    labelled = active.draw(pi, rng)
    return np.where(labelled, y, np.nan), yhat, pi, labelled, y


# ---------------------------------------------------------------------------------------------------------------
# the sampling rule
# ---------------------------------------------------------------------------------------------------------------
def test_probabilities_sum_to_the_budget_within_bounds_and_follow_the_rule():
    rng = np.random.default_rng(1)
    u = rng.gamma(0.5, 1.0, size=(3, 500))
    u[0, :5] = 80.0  # a few dialogues the rule would give more than 1
    pi = active.sampling_probabilities(u, 50, uniform_share=0.2, pi_min=0.02)
    assert pi.sum(axis=-1) == pytest.approx([50.0] * 3, abs=1e-9)
    assert pi.min() >= 0.02 - 1e-15 and pi.max() <= 1.0
    assert (pi[0, :5] == 1.0).all()
    # inside the bounds pi is one factor times the mixed rule
    rule = 0.8 * u / u.sum(axis=-1, keepdims=True) + 0.2 / 500
    inside = (pi > 0.02 + 1e-12) & (pi < 1.0 - 1e-12)
    for s in range(3):
        ratio = pi[s][inside[s]] / rule[s][inside[s]]
        assert ratio.max() == pytest.approx(ratio.min(), rel=1e-9)
    # raising dialogues to pi_min takes mass from the others, clipping at 1 gives it to them
    assert (pi[:, :] >= 0.02 - 1e-15).all()


def test_uniform_cases_and_bad_input():
    assert active.sampling_probabilities(np.full(200, 0.3), 40) == pytest.approx(np.full(200, 0.2))
    assert active.sampling_probabilities(np.zeros(200), 40) == pytest.approx(np.full(200, 0.2))
    assert active.sampling_probabilities(np.arange(200.0), 40, uniform_share=1.0) == pytest.approx(np.full(200, 0.2))
    # the default pi_min is a tenth of the uniform rate
    pi = active.sampling_probabilities(np.r_[np.ones(100), np.full(100, 0.01)], 40, uniform_share=0.0)
    assert pi[100:] == pytest.approx(np.full(100, 0.02)) and pi[:100] == pytest.approx(np.full(100, 0.38))
    # dialogues of no uncertainty and no uniform share take what the others cannot
    pi = active.sampling_probabilities(np.r_[np.zeros(199), 1.0], 40, uniform_share=0.0)
    assert pi[-1] == 1.0 and pi[:-1] == pytest.approx(np.full(199, 39 / 199)) and pi.sum() == pytest.approx(40.0)
    for bad in ({"budget": 0}, {"budget": 201}, {"budget": 40, "uniform_share": 1.5},
                {"budget": 40, "pi_min": 0.5}, {"budget": 40, "pi_min": 0.0}):
        with pytest.raises(ValueError):
            active.sampling_probabilities(np.ones(200), **bad)
    with pytest.raises(ValueError):
        active.sampling_probabilities(np.r_[np.ones(199), np.nan], 40)
    with pytest.raises(ValueError):
        active.sampling_probabilities(np.r_[np.ones(199), -1.0], 40)


def test_draw_is_reproducible_from_the_seed():
    pi = active.sampling_probabilities(np.random.default_rng(2).random(1000), 100)
    assert (active.draw(pi, 7) == active.draw(pi, 7)).all()
    assert abs(int(active.draw(pi, 7).sum()) - 100) < 35


# ---------------------------------------------------------------------------------------------------------------
# the estimators against their formulas, written out one dialogue at a time
# ---------------------------------------------------------------------------------------------------------------
def paper_direct(y, yhat, pi, labelled):
    """Zrnic and Candès's estimator, power-tuned, in plain Python."""
    big_n = len(yhat)
    w = [(1.0 / pi[i]) if labelled[i] else 0.0 for i in range(big_n)]
    a = [(y[i] * w[i]) if labelled[i] else 0.0 for i in range(big_n)]
    b = [yhat[i] * (w[i] - 1.0) for i in range(big_n)]
    mean_a, mean_b = sum(a) / big_n, sum(b) / big_n
    cov = sum((a[i] - mean_a) * (b[i] - mean_b) for i in range(big_n)) / big_n
    var = sum((b[i] - mean_b) ** 2 for i in range(big_n)) / big_n
    lam = cov / var
    terms = [lam * yhat[i] + ((y[i] - lam * yhat[i]) * w[i] if labelled[i] else 0.0) for i in range(big_n)]
    value = sum(terms) / big_n
    se = math.sqrt(sum((t - value) ** 2 for t in terms) / big_n) / math.sqrt(big_n)
    return value, se, lam


def ratio_direct(y, yhat, pi, labelled):
    """The inverse-probability-weighted PPI++ (Hajek means), in plain Python."""
    lab = [i for i in range(len(yhat)) if labelled[i]]
    unl = [i for i in range(len(yhat)) if not labelled[i]]
    a = {i: 1.0 / pi[i] for i in lab}
    b = {i: 1.0 / (1.0 - pi[i]) for i in unl}
    sa, sb = sum(a.values()), sum(b.values())
    m = lambda x, w, s: sum(w[i] * x[i] for i in w) / s  # noqa: E731
    my, mf, mu = m(y, a, sa), m(yhat, a, sa), m(yhat, b, sb)
    c_l = sum(a[i] ** 2 * (y[i] - my) * (yhat[i] - mf) for i in lab) / sa ** 2
    v_yl = sum(a[i] ** 2 * (y[i] - my) ** 2 for i in lab) / sa ** 2
    v_fl = sum(a[i] ** 2 * (yhat[i] - mf) ** 2 for i in lab) / sa ** 2
    v_fu = sum(b[i] ** 2 * (yhat[i] - mu) ** 2 for i in unl) / sb ** 2
    n_l = sa ** 2 / sum(v ** 2 for v in a.values())
    n_u = sb ** 2 / sum(v ** 2 for v in b.values())
    mean_all = sum(yhat) / len(yhat)
    var_f = sum((v - mean_all) ** 2 for v in yhat) / (len(yhat) - 1)
    lam = min(max(n_l * c_l / ((1 + n_l / n_u) * var_f), 0.0), 1.0)
    value = lam * mu + my - lam * mf
    se = math.sqrt(lam ** 2 * v_fu + v_yl - 2 * lam * c_l + lam ** 2 * v_fl)
    return value, se, lam


def centred_direct(y, yhat, pi, labelled):
    """The same with the prediction c + lambda (Yhat - c), c the judge's mean over every dialogue."""
    big_n = len(yhat)
    c = sum(yhat) / big_n
    w = [(1.0 / pi[i]) if labelled[i] else 0.0 for i in range(big_n)]
    a = [((y[i] * w[i]) if labelled[i] else 0.0) - c * (w[i] - 1.0) for i in range(big_n)]
    b = [(yhat[i] - c) * (w[i] - 1.0) for i in range(big_n)]
    mean_a, mean_b = sum(a) / big_n, sum(b) / big_n
    lam = (sum((a[i] - mean_a) * (b[i] - mean_b) for i in range(big_n))
           / sum((b[i] - mean_b) ** 2 for i in range(big_n)))
    g = [c + lam * (yhat[i] - c) for i in range(big_n)]
    terms = [g[i] + ((y[i] - g[i]) * w[i] if labelled[i] else 0.0) for i in range(big_n)]
    value = sum(terms) / big_n
    se = math.sqrt(sum((t - value) ** 2 for t in terms) / big_n) / math.sqrt(big_n)
    return value, se, lam


@pytest.mark.parametrize("seed", [3, 4, 5])
@pytest.mark.parametrize("informative", [True, False])
def test_the_paper_estimator_equals_its_formulas(seed, informative):
    y, yhat, pi, labelled, _ = world(seed, informative=informative)
    value, se, lam = centred_direct(list(y), list(yhat), list(pi), list(labelled))
    out = active.active_mean(y, yhat, pi, labelled)
    assert out["estimator"] == "ipw"
    assert (out["value"], out["se"], out["lam"]) == pytest.approx((value, se, lam), rel=1e-12, abs=1e-12)
    value, se, lam = paper_direct(list(y), list(yhat), list(pi), list(labelled))
    out = active.active_mean(y, yhat, pi, labelled, centred=False)
    assert (out["value"], out["se"], out["lam"]) == pytest.approx((value, se, lam), rel=1e-12, abs=1e-12)
    assert (out["ci_low"], out["ci_high"]) == pytest.approx((value - Z95 * se, value + Z95 * se), rel=1e-12)
    assert out["n"] == int(labelled.sum()) and out["expected_n"] == pytest.approx(60.0)


@pytest.mark.parametrize("seed", [6, 7])
def test_the_ratio_estimator_equals_its_formulas(seed):
    y, yhat, pi, labelled, _ = world(seed)
    value, se, lam = ratio_direct(list(y), list(yhat), list(pi), list(labelled))
    out = active.active_mean(y, yhat, pi, labelled, estimator="ratio")
    assert (out["value"], out["se"], out["lam"]) == pytest.approx((value, se, lam), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("alpha", [0.05, 0.1])
def test_equal_probabilities_are_uniform_ppi_plus_plus(alpha):
    """With every probability equal the ratio estimator is PPI++ (ours and ppi_py's); the paper's estimator at a
    fixed lambda is PPI's point estimate with the judge's scores of every dialogue as the imputed part."""
    rng = np.random.default_rng(8)
    y = rng.choice(6, size=500, p=P_SCORE).astype(float)
    yhat = y + 0.5 + rng.normal(0, 1, 500)
    labelled = np.zeros(500, dtype=bool)
    labelled[rng.choice(500, 70, replace=False)] = True
    pi = np.full(500, 70 / 500)
    ours = active.active_mean(np.where(labelled, y, np.nan), yhat, pi, labelled, alpha=alpha, estimator="ratio")
    theirs = ppi.ppi_mean(y[labelled], yhat[labelled], yhat[~labelled], alpha=alpha)
    for key in ("value", "ci_low", "ci_high", "se", "lam", "classical_se"):
        assert ours[key] == pytest.approx(theirs[key], rel=1e-12, abs=1e-12), key
    point = float(np.ravel(ppi_py.ppi_mean_pointestimate(y[labelled], yhat[labelled], yhat[~labelled]))[0])
    assert ours["value"] == pytest.approx(point, rel=1e-12)
    for lam in (0.0, 0.4, 1.0):
        paper = active.active_mean(y, yhat, pi, labelled, lam=lam, centred=False)
        expected = float(np.ravel(ppi_py.ppi_mean_pointestimate(y[labelled], yhat[labelled], yhat, lam=lam))[0])
        assert paper["value"] == pytest.approx(expected, rel=1e-12)


def test_vectorised_kernel_equals_one_study_at_a_time():
    studies = [world(seed) for seed in range(10, 14)]
    stacked = [np.stack([s[k] for s in studies]) for k in range(4)]
    for estimator in active.ESTIMATORS:
        batch = active.active_mean_arrays(*stacked, estimator=estimator)
        for s, one in enumerate(studies):
            single = active.active_mean(*one[:4], estimator=estimator)
            assert (single["value"], single["ci_low"], single["ci_high"], single["lam"]) == pytest.approx(
                (batch["value"][s], batch["ci_low"][s], batch["ci_high"][s], batch["lam"][s]), rel=1e-12)


# ---------------------------------------------------------------------------------------------------------------
# validity and the raters every headline figure is tested with
# ---------------------------------------------------------------------------------------------------------------
def simulate(seed: int, *, studies: int = 400, big_n: int = 400, budget: int = 40, judge: str = "good"):
    rng = np.random.default_rng(seed)
    y = rng.choice(6, size=(studies, big_n), p=P_SCORE).astype(float)
    size = np.where(rng.random(y.shape) < 0.75, 0.2, 1.5)
    if judge == "good":
        yhat, uncertainty = y + rng.normal(0.0, size), size
    elif judge == "random":
        yhat, uncertainty = rng.uniform(0, 5, y.shape), rng.random(y.shape)
    else:  # constant
        yhat, uncertainty = np.full(y.shape, 3.0), np.ones(y.shape)
    pi = active.sampling_probabilities(uncertainty, budget)
    labelled = active.draw(pi, rng)
    out = active.active_mean_arrays(np.where(labelled, y, np.nan), yhat, pi, labelled)
    order = np.argsort(rng.random(y.shape), axis=-1)
    take = lambda a, idx: np.take_along_axis(a, idx, axis=-1)  # noqa: E731
    lab, unl = order[:, :budget], order[:, budget:]
    uniform = ppi.ppi_mean_arrays(take(y, lab), take(yhat, lab), take(yhat, unl))
    classical = ppi.classical_mean_arrays(take(y, lab))
    return out, uniform, classical


TRUTH = float((np.arange(6) * P_SCORE).sum())


def coverage(figures) -> float:
    return float(((figures["ci_low"] <= TRUTH) & (figures["ci_high"] >= TRUTH)).mean())


def width(figures) -> float:
    return float((figures["ci_high"] - figures["ci_low"]).mean())


def test_an_informative_uncertainty_narrows_valid_intervals():
    out, uniform, _ = simulate(56)
    assert coverage(out) >= 0.92
    assert width(out) < 0.9 * width(uniform)


def test_random_judge_costs_little_against_physicians_only():
    """A judge whose scores and uncertainty are noise: the interval stays valid and about as wide as the
    physicians' own on a uniform sample of the same size; as printed in the paper (no centring) lambda stands in
    for the mean and the judge's noise widens the interval."""
    out, _, classical = simulate(57, judge="random")
    assert coverage(out) >= 0.92
    assert abs(float(np.median(out["lam"]))) < 0.1
    assert width(out) < 1.15 * width(classical)


def test_constant_judge_stays_valid_and_says_so():
    out, _, classical = simulate(58, judge="constant")
    assert coverage(out) >= 0.92
    assert width(out) < 1.15 * width(classical)
    y, _, pi, labelled, _ = world(59)
    one = active.active_mean(y, np.full(y.size, 3.0), pi, labelled)
    assert math.isfinite(one["se"]) and one["ci_low"] <= one["value"] <= one["ci_high"]
    assert any("same score" in w for w in one["warnings"])


def test_near_constant_and_constant_item():
    y, yhat, pi, labelled, _ = world(60)
    near = np.where(labelled, 4.0, np.nan)
    near[np.flatnonzero(labelled)[3]] = 3.0  # physicians nearly always give 4
    out = active.active_mean(near, yhat, pi, labelled)
    assert out["ci_low"] <= out["value"] <= out["ci_high"] and math.isfinite(out["se"])
    assert out["effective_n"] is not None
    constant = active.active_mean(np.where(labelled, 4.0, np.nan), yhat, pi, labelled)
    assert any("same score" in w and "zero width" in w for w in constant["warnings"])
    assert constant["effective_n"] is None and constant["gain"] is None


def test_undefined_inputs_give_reasons_or_errors():
    y, yhat, pi, labelled, _ = world(61)
    none = active.active_mean(y, yhat, pi, np.zeros(y.size, dtype=bool))
    assert none["value"] is None and "No physician-labelled" in none["warnings"][0]
    one = np.zeros(y.size, dtype=bool)
    one[np.flatnonzero(labelled)[0]] = True
    assert active.active_mean(y, yhat, pi, one)["value"] is None
    with pytest.raises(ValueError, match="probability 1"):
        active.active_mean(y, yhat, np.where(labelled, pi, 1.0), labelled)
    with pytest.raises(ValueError, match="finite physician score"):
        active.active_mean(np.full(y.size, np.nan), yhat, pi, labelled)
    with pytest.raises(ValueError):
        active.active_mean(y, yhat, pi, labelled, estimator="magic")
    with pytest.raises(ValueError):
        active.active_mean(y, yhat[:-1], pi, labelled)


def test_difference_of_two_models():
    a = active.active_mean(*world(62)[:4])
    b = active.active_mean(*world(63)[:4])
    diff = active.difference(a, b)
    assert diff["value"] == pytest.approx(a["value"] - b["value"])
    assert diff["se"] == pytest.approx(math.hypot(a["se"], b["se"]))


def test_deciles_of_an_informative_random_and_constant_uncertainty():
    rng = np.random.default_rng(70)
    u = rng.random(1000)
    informative = active.by_decile(u, (rng.random(1000) < u).astype(float))
    shares = [g["disagreement"] for g in informative["groups"]]
    assert len(shares) == 10 and shares[-1] > shares[0] + 0.5 and informative["spearman"] > 0.5
    assert sum(g["n"] for g in informative["groups"]) == 1000
    unrelated = active.by_decile(u, (rng.random(1000) < 0.3).astype(float))
    assert abs(unrelated["spearman"]) < 0.1
    constant = active.by_decile(np.full(50, 0.2), rng.random(50))
    assert constant["spearman"] is None and len(constant["groups"]) == 10
    assert active.by_decile([], [])["groups"] == [] and active.by_decile([0.1, np.nan], [1.0, 0.0])["n"] == 1


def test_answer_uncertainty_from_log_probabilities():
    from types import SimpleNamespace

    from annotation.models import Item
    from scoring.judges.prompts import answer_uncertainty
    from scoring.llm import fake

    def response(top):
        return {"choices": [{"logprobs": {"content": [{"token": top[0][0], "logprob": math.log(top[0][1]),
                                                       "top_logprobs": [{"token": t, "logprob": math.log(p)}
                                                                        for t, p in top]}]}}]}

    binary = SimpleNamespace(response_type=Item.ResponseType.BINARY, allowed_values=lambda: [0, 1])
    scale = SimpleNamespace(response_type=Item.ResponseType.SCALE, allowed_values=lambda: [0, 1, 2, 3, 4, 5])
    assert answer_uncertainty(response([("Yes", 0.9), ("No", 0.1)]), binary, 1) == pytest.approx(math.sqrt(0.1))
    assert answer_uncertainty(response([("No", 0.8), ("Yes", 0.2)]), binary, 0) == pytest.approx(math.sqrt(0.2))
    # 4 with 0.6, 3 and 5 with 0.2 each: sqrt(0.2 + 0.2); "x" is not a score and is left out
    got = answer_uncertainty(response([("4", 0.6), ("3", 0.2), ("5", 0.15), ("x", 0.05)]), scale, 4)
    assert got == pytest.approx(math.sqrt((0.2 + 0.15) / 0.95))
    assert answer_uncertainty({"choices": [{}]}, scale, 4) is None
    assert answer_uncertainty(response([("4", 1.0)]), scale, None) is None
    assert answer_uncertainty(response([("4", 1.0)]), scale, 4) == 0.0
    # the built-in fake endpoint returns log-probabilities when asked, consistent with its answer
    body = {"model": "fake", "logprobs": True, "top_logprobs": 5,
            "messages": [{"role": "user", "content": "Item 1: Was it kind? Answer Yes or No, then the reason."}]}
    answer = fake.completion(body)
    content = answer["choices"][0]["message"]["content"]
    u = answer_uncertainty(answer, binary, 1 if content.startswith("Yes") else 0)
    assert u is not None and 0 < u < math.sqrt(0.45) + 1e-9
    assert "logprobs" not in fake.completion({**body, "logprobs": False})["choices"][0]


def test_planned_labels_deliver_the_half_width():
    """Plan from a uniform pilot of 100, then draw as many labels as planned, actively, in 300 studies: the
    intervals come out about as wide as asked, and the active plan needs fewer labels than the uniform one; an
    uncertainty unrelated to the errors plans no saving."""
    rng = np.random.default_rng(71)
    big_n = 600
    size = np.where(rng.random(big_n) < 0.8, 0.2, 1.6)
    y = rng.normal(3.0, 1.0, big_n)
    yhat = y + rng.normal(0.0, size)
    pilot = rng.choice(big_n, 100, replace=False)
    plan = active.sample_size(y[pilot], yhat[pilot], size[pilot], size, 0.12)
    assert plan["active"] < 0.8 * plan["uniform"] and plan["k"] > 0
    studies = 300
    ys = rng.normal(3.0, 1.0, (studies, big_n))
    yhats = ys + rng.normal(0.0, np.broadcast_to(size, ys.shape))
    pi = active.sampling_probabilities(np.broadcast_to(size, ys.shape), plan["active"])
    labelled = active.draw(pi, rng)
    out = active.active_mean_arrays(np.where(labelled, ys, np.nan), yhats, pi, labelled)
    assert np.median((out["ci_high"] - out["ci_low"]) / 2) == pytest.approx(0.12, rel=0.15)
    unrelated = active.sample_size(y[pilot], yhat[pilot], rng.permutation(size)[pilot], size, 0.12)
    assert unrelated["active"] >= 0.95 * unrelated["uniform"]
    flat = active.sample_size(np.full(50, 3.0), yhat[:50], size[:50], size, 0.12)
    assert flat["uniform"] is None and "do not vary" in flat["warnings"][0]
    assert active.sample_size([1.0, 2.0], [1.0, 2.0], [0.1, 0.2], size, 0.1)["uniform"] is None
    with pytest.raises(ValueError):
        active.sample_size(y[pilot], yhat[pilot], size[pilot], size, 0.0)


def test_self_consistency_spread_of_the_built_in_fake():
    """The built-in fake endpoint answers n draws that differ; their spread around the first is the uncertainty."""
    from types import SimpleNamespace

    from annotation.models import Item
    from scoring.judges.prompts import draws_uncertainty, parse_item
    from scoring.llm import fake

    binary = SimpleNamespace(response_type=Item.ResponseType.BINARY, allowed_values=lambda: [0, 1])
    spreads = []
    for k in range(20):
        body = {"model": "fake", "n": 5, "messages": [
            {"role": "user", "content": f"Dialogue {k}. Item 1: Was it kind? Answer Yes or No, then the reason."}]}
        answer = fake.completion(body)
        values = [parse_item(c["message"]["content"], binary)[0] for c in answer["choices"]]
        assert len(values) == 5 and answer["usage"]["completion_tokens"] >= 5
        spread = draws_uncertainty(answer, binary, values[0])
        assert spread == pytest.approx(math.sqrt(sum((v - values[0]) ** 2 for v in values) / 5))
        spreads.append(spread)
    assert 0 < max(spreads) <= 1 and min(spreads) == 0.0  # some unanimous, some split
    single = fake.completion({**body, "n": 1})
    assert draws_uncertainty(single, binary, 1) is None and draws_uncertainty(single, binary, None) is None
