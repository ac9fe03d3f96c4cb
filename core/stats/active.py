"""Active statistical inference for a mean score: the judge's uncertainty chooses what physicians label.

Active inference (Zrnic and Candès, "Active Statistical Inference", ICML 2024) draws each dialogue i for physician
labelling independently with its own inclusion probability pi_i (a Poisson sample: xi_i ~ Bernoulli(pi_i)), high
where the judge is unsure and low where it is sure, and corrects by inverse-probability weights, so the estimate of
the physicians' mean stays unbiased whatever the judge and the interval stays valid. Its variance is smallest when
pi_i is proportional to the judge's expected error size sqrt(E[(Y - Yhat)^2 | dialogue]); pass the judge's
uncertainty on that scale (a standard deviation of its score, or the square root of its probability of being wrong
on a binary item).

:func:`sampling_probabilities` builds the rule: proportional to the uncertainty, mixed with a uniform rule by a
declared share (which bounds what a useless uncertainty can cost), clipped to [pi_min, 1] with the clipped mass
spread over the other dialogues, summing to the budget (the expected number of labels).

:func:`active_mean` offers two estimators on the same draw, both power-tuned:

* ``estimator="ipw"`` (default): the paper's estimator,
  theta = (1/N) sum_i [g_i + (Y_i - g_i) xi_i / pi_i] for a prediction g, standard error sd(terms) / sqrt(N)
  (population sd, as ppi_py), with the paper's power tuning: the lambda that minimises the variance of the terms,
  Cov(A, B) / Var(B) (sample moments, not clipped). As printed in the paper (``centred=False``) g = lambda Yhat,
  A = Y xi/pi and B = Yhat (xi/pi - 1). By default (``centred=True``) g = c + lambda (Yhat - c) with c the judge's
  mean over every dialogue (known without a label), A = Y xi/pi - c (xi/pi - 1) and B = (Yhat - c)(xi/pi - 1):
  lambda then weighs the judge's information, not its level, so a judge that says nothing gets lambda near 0
  (a random judge: about 1.1 times the physicians' own width, against 1.5 times as printed, where lambda stands in
  for the mean). The paper's argument holds for any prediction fixed up to the tuned lambda. Counting the randomness
  of the number of labels drawn, with every probability equal its point estimate at a fixed lambda is PPI's with the
  judge's scores of *all* dialogues as the imputed part (tested against ppi_py), and its interval is a little wider
  than PPI++'s on a fixed-size sample.
* ``estimator="ratio"``: the inverse-probability-weighted PPI++ estimate
  ``lambda * m_U(Yhat) + m_L(Y - lambda * Yhat)``, where m_L is the mean over the labelled dialogues weighted by
  1/pi and m_U the mean over the unlabelled ones weighted by 1/(1 - pi) (Hajek means: the weights divided by their
  sum), with the standard error sqrt(lambda^2 V_U(Yhat) + V_L(Y - lambda Yhat)) of the two weighted means
  (V_S(x) = sum_S w^2 (x - m_S(x))^2 / (sum_S w)^2) and lambda the PPI++ plug-in
  n_L C_L(Y, Yhat) / ((1 + n_L / n_U) var(Yhat)), n the Kish effective sizes (sum w)^2 / sum w^2, C_L the weighted
  covariance as V_L, var(Yhat) over all dialogues (ddof 1), clipped to [0, 1] and 0 for a judge whose scores do not
  vary. With every probability equal it *is* PPI++ (``core.stats.ppi.ppi_mean`` with the unlabelled dialogues
  as its unlabelled set; tested to 1e-12). Under active sampling its tuned lambda, fitted on few heavily weighted
  labels, undercovers (about 92% in the benchmark), so the app uses the paper's estimator.

Both are valid only for labels drawn by the recorded rule: every labelled dialogue's pi is the probability it had
when drawn, and a drawn dialogue left unlabelled (skipped, unfinished) breaks the design unless its absence is
unrelated to its score. The kernels work along the last axis with any leading batch axes (simulations run thousands
of studies at once); :func:`active_mean` returns a plain dict like ``ppi.ppi_mean``. Pure: numpy only.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from core.stats import messages as M
from core.stats._common import _num
from core.stats.ppi import SMALL_N, _check, difference, ndtri, z_interval

__all__ = ["ESTIMATORS", "sampling_probabilities", "draw", "active_mean_arrays", "active_mean", "difference",
           "by_decile"]

ESTIMATORS = ("ipw", "ratio")
#: Defaults chosen by ``bench/bench_active.py`` (docs/statistics.md): 55% of the budget spread uniformly (which
#: bounds the loss when the uncertainty says nothing about the errors) and no dialogue below a tenth of the uniform
#: rate's probability (which bounds the weights).
UNIFORM_SHARE = 0.55
PI_MIN_FACTOR = 0.1
_EPS = 1e-12


# ---------------------------------------------------------------------------------------------------------------
# the sampling rule
# ---------------------------------------------------------------------------------------------------------------
def sampling_probabilities(uncertainty: Any, budget: float, *, uniform_share: float = UNIFORM_SHARE,
                           pi_min: float | None = None) -> np.ndarray:
    """Inclusion probabilities for a Poisson sample of expected size ``budget`` (along the last axis).

    The rule r = budget * ((1 - s) u / sum(u) + s / N) with s = ``uniform_share``; then pi = clip(c r, ``pi_min``,
    1) with the factor c that makes the sum ``budget`` (units clipped at 1 give their excess to the others, units
    raised to pi_min take theirs from them, in proportion to the rule). ``pi_min`` None: ``PI_MIN_FACTOR`` times the
    uniform rate budget / N. An uncertainty of 0 everywhere gives the uniform rule.
    """
    u = np.asarray(uncertainty, dtype=float)
    if u.ndim == 0 or u.shape[-1] == 0:
        raise ValueError("uncertainty must have one value per dialogue")
    if not np.isfinite(u).all() or (u < 0).any():
        raise ValueError("uncertainty must be finite and non-negative (one value per dialogue)")
    if not 0 <= uniform_share <= 1:
        raise ValueError("uniform_share must be between 0 and 1")
    big_n = u.shape[-1]
    if not 0 < budget <= big_n:
        raise ValueError(f"the budget must be between 0 and the number of dialogues ({big_n})")
    rate = budget / big_n
    pi_min = PI_MIN_FACTOR * rate if pi_min is None else float(pi_min)
    if not 0 < pi_min <= rate:
        raise ValueError("pi_min must be positive and at most budget / N (else the budget cannot be met)")
    total = u.sum(axis=-1, keepdims=True)
    share = np.where(total > _EPS, u / np.where(total > _EPS, total, 1.0), 1.0 / big_n)
    rule = budget * ((1.0 - uniform_share) * share + uniform_share / big_n)
    # a dialogue of zero uncertainty with no uniform share still gets its turn once the others are at 1
    rule = np.maximum(rule, 1e-9 * rule.max(axis=-1, keepdims=True))
    # pi = clip(c * rule, pi_min, 1) with the c that makes the sum the budget (the sum grows with c: bisection)
    low = np.zeros(rule.shape[:-1] + (1,))
    positive = np.where(rule > 0, rule, np.inf).min(axis=-1, keepdims=True)
    high = np.where(np.isfinite(positive), 1.0 / positive, 1.0)
    for _ in range(200):
        mid = (low + high) / 2
        over = np.clip(mid * rule, pi_min, 1.0).sum(axis=-1, keepdims=True) > budget
        low, high = np.where(over, low, mid), np.where(over, mid, high)
        if (high - low <= 1e-15 * high).all():
            break
    pi = np.clip(high * rule, pi_min, 1.0)
    # the last rounding: put the remainder on the units strictly inside the bounds
    free = (pi > pi_min) & (pi < 1.0)
    rest = budget - pi.sum(axis=-1, keepdims=True)
    count = free.sum(axis=-1, keepdims=True)
    return np.where(free, pi + rest / np.maximum(count, 1), pi)


def draw(pi: Any, seed: int | np.random.Generator) -> np.ndarray:
    """The Poisson sample: dialogue i labelled with probability pi_i, independently (a boolean mask)."""
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    pi = np.asarray(pi, dtype=float)
    return rng.random(pi.shape) < pi


# ---------------------------------------------------------------------------------------------------------------
# vectorised kernels (last axis = dialogues)
# ---------------------------------------------------------------------------------------------------------------
def _inputs(y: Any, yhat: Any, pi: Any, labelled: Any) -> tuple[np.ndarray, ...]:
    yhat, pi = np.asarray(yhat, dtype=float), np.asarray(pi, dtype=float)
    labelled = np.asarray(labelled, dtype=bool)
    y = np.broadcast_to(np.asarray(y, dtype=float), yhat.shape)
    if not (yhat.shape == pi.shape == labelled.shape):
        raise ValueError("y, yhat, pi and labelled must have one value per dialogue (the same shape)")
    if not np.isfinite(yhat).all():
        raise ValueError("yhat must be a finite judge score for every dialogue")
    if not ((pi > 0) & (pi <= 1)).all():
        raise ValueError("every inclusion probability must be in (0, 1]")
    if not np.isfinite(np.where(labelled, y, 0.0)).all():
        raise ValueError("y must be a finite physician score for every labelled dialogue")
    if (~labelled & (pi >= 1.0)).any():
        raise ValueError("a dialogue drawn with probability 1 is unlabelled: the sample was not drawn by the rule")
    return np.where(labelled, y, 0.0), yhat, pi, labelled


def _hajek(x: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Weighted (Hajek) mean, its linearised variance and the Kish effective size; w = 0 outside the group."""
    total = w.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = (w * x).sum(axis=-1) / total
        var = (w ** 2 * (x - mean[..., None]) ** 2).sum(axis=-1) / total ** 2
        n_eff = total ** 2 / (w ** 2).sum(axis=-1)
    return mean, var, n_eff


def _ratio(y, yhat, pi, labelled, lam):
    a = np.where(labelled, 1.0 / pi, 0.0)
    b = np.where(labelled, 0.0, 1.0 / np.where(labelled, 0.5, 1.0 - pi))
    m_yl, v_yl, n_l = _hajek(y, a)
    m_fl, v_fl, _ = _hajek(yhat, a)
    m_fu, v_fu, n_u = _hajek(yhat, b)
    census = ~(b > 0).any(axis=-1)  # every dialogue labelled: the judge adds nothing, lambda 0
    m_fu, v_fu, n_u = (np.where(census, 0.0, x) for x in (m_fu, v_fu, n_u))
    with np.errstate(invalid="ignore", divide="ignore"):
        c_l = (a ** 2 * (y - m_yl[..., None]) * (yhat - m_fl[..., None])).sum(axis=-1) / a.sum(axis=-1) ** 2
    if lam is None:
        var_f = np.var(yhat, axis=-1, ddof=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            raw = n_l * c_l / ((1.0 + n_l / n_u) * var_f)
        lam = np.where((var_f > _EPS) & ~census, np.clip(np.nan_to_num(raw), 0.0, 1.0), 0.0)
    lam = np.where(census, 0.0, np.broadcast_to(np.asarray(lam, dtype=float), m_yl.shape))
    value = lam * m_fu + m_yl - lam * m_fl
    variance = lam ** 2 * v_fu + v_yl - 2 * lam * c_l + lam ** 2 * v_fl
    return value, np.sqrt(np.maximum(variance, 0.0)), lam, np.sqrt(v_yl), np.zeros(value.shape)


def _moment(x: np.ndarray, z: np.ndarray) -> np.ndarray:
    return ((x - x.mean(axis=-1, keepdims=True)) * (z - z.mean(axis=-1, keepdims=True))).mean(axis=-1)


def _ipw(y, yhat, pi, labelled, lam, centred=True):
    w = np.where(labelled, 1.0 / pi, 0.0)
    c1 = w - 1.0                   # xi / pi - 1, mean zero
    # the prediction g = offset + lambda Yhat; centred: offset = (1 - lambda) mean(Yhat over every dialogue)
    centre = yhat.mean(axis=-1, keepdims=True) if centred else np.zeros(yhat.shape[:-1] + (1,))
    a = y * w - centre * c1        # Y xi/pi - centre (xi/pi - 1)
    c2 = (yhat - centre) * c1      # (Yhat - centre) (xi/pi - 1)
    if lam is None:
        var_c2 = _moment(c2, c2)
        with np.errstate(invalid="ignore", divide="ignore"):
            lam = np.where(var_c2 > _EPS, _moment(c2, a) / np.where(var_c2 > _EPS, var_c2, 1.0), 0.0)
    lam = np.broadcast_to(np.asarray(lam, dtype=float), a.shape[:-1])
    terms = a - lam[..., None] * c2   # g + (Y - g) xi / pi
    big_n = terms.shape[-1]
    offset = (1.0 - lam) * centre[..., 0]
    var_c1 = _moment(c1, c1)
    with np.errstate(invalid="ignore", divide="ignore"):
        weighted = np.where(var_c1 > _EPS, _moment(c1, y * w) / np.where(var_c1 > _EPS, var_c1, 1.0), 0.0)
    physicians = y * w - weighted[..., None] * c1   # physicians only: the intercept alone
    return (terms.mean(axis=-1), terms.std(axis=-1) / math.sqrt(big_n), lam,
            physicians.std(axis=-1) / math.sqrt(big_n), offset)


def active_mean_arrays(y: Any, yhat: Any, pi: Any, labelled: Any, *, alpha: float = 0.05,
                       lam: float | np.ndarray | None = None, estimator: str = "ipw", centred: bool = True,
                       alternative: str = "two-sided") -> dict[str, np.ndarray]:
    """The active estimate of the mean of Y along the last axis (every dialogue, labelled or not).

    ``y``: physicians' scores (anything, e.g. NaN, where unlabelled); ``yhat``: the judge's scores; ``pi``: each
    dialogue's inclusion probability as drawn; ``labelled``: the drawn dialogues with physician labels.
    ``lam=None`` tunes lambda; a number fixes it. ``centred``: see the module docstring (``"ipw"`` only). Returns
    ``value``, ``se``, ``ci_low``, ``ci_high``, ``lam``, ``offset`` (the constant of the prediction g, (1 - lambda)
    c) and ``classical_se`` (physicians only, weighted by the sampling probabilities).
    """
    _check(alpha, alternative)
    if estimator not in ESTIMATORS:
        raise ValueError(f"estimator must be one of {ESTIMATORS}")
    y, yhat, pi, labelled = _inputs(y, yhat, pi, labelled)
    if estimator == "ratio":
        value, se, lam_, classical_se, offset = _ratio(y, yhat, pi, labelled, lam)
    else:
        value, se, lam_, classical_se, offset = _ipw(y, yhat, pi, labelled, lam, centred)
    low, high = z_interval(value, se, alpha, alternative)
    return {"value": value, "se": se, "ci_low": low, "ci_high": high, "lam": np.asarray(lam_, dtype=float),
            "offset": np.asarray(offset, dtype=float), "classical_se": classical_se}


def active_mean(y: Any, yhat: Any, pi: Any, labelled: Any, *, alpha: float = 0.05, lam: float | None = None,
                estimator: str = "ipw", centred: bool = True, alternative: str = "two-sided") -> dict:
    """Active estimate of the physicians' mean score as a dict.

    ``{"value", "ci_low", "ci_high", "se", "lam", "n", "n_unlabeled", "expected_n", "classical_se",
    "effective_n", "gain", "estimator", "warnings"}``: ``n`` labelled of ``n + n_unlabeled`` dialogues,
    ``expected_n`` the budget (sum of pi); ``effective_n`` the number of uniformly drawn physician labels the
    physicians-only interval would need to be as narrow, and ``gain`` = effective_n - n.
    """
    _check(alpha, alternative)
    yhat_ = np.asarray(yhat, dtype=float).ravel()
    y_ = np.asarray(y, dtype=float).ravel()
    pi_ = np.asarray(pi, dtype=float).ravel()
    lab = np.asarray(labelled, dtype=bool).ravel()
    n, big_n = int(lab.sum()), int(lab.size)
    out: dict[str, Any] = {"value": None, "ci_low": None, "ci_high": None, "se": None, "lam": None,
                           "offset": None, "n": n,
                           "n_unlabeled": big_n - n, "expected_n": _num(pi_.sum()) if pi_.size else None,
                           "classical_se": None, "effective_n": None, "gain": None, "estimator": estimator,
                           "warnings": []}
    if n == 0:
        out["warnings"].append(M.say(M.ACTIVE_NO_LABELS))
        return out
    if n < 2:
        out["warnings"].append(M.say(M.ACTIVE_ONE_LABEL))
        return out
    if n == big_n:
        out["warnings"].append(M.say(M.ACTIVE_ALL_LABELLED))
    figures = active_mean_arrays(y_, yhat_, pi_, lab, alpha=alpha, lam=lam, estimator=estimator,
                                 centred=centred, alternative=alternative)
    for key in ("value", "se", "ci_low", "ci_high", "lam", "offset", "classical_se"):
        out[key] = _num(figures[key])
    if float(np.var(yhat_)) <= _EPS:
        out["warnings"].append(M.say(M.ACTIVE_CONSTANT_JUDGE))
    labelled_y, weights = y_[lab], 1.0 / pi_[lab]
    var_y = float(np.average((labelled_y - np.average(labelled_y, weights=weights)) ** 2, weights=weights))
    if var_y <= _EPS:
        out["warnings"].append(M.say(M.ACTIVE_CONSTANT_LABELS))
    elif out["se"] is not None and out["se"] > _EPS:
        out["effective_n"] = var_y / out["se"] ** 2
        out["gain"] = out["effective_n"] - n
    if n < SMALL_N:
        out["warnings"].append(M.say(M.FEW_LABELLED, n=n, limit=SMALL_N))
    return out


def by_decile(uncertainty: Any, disagreement: Any, groups: int = 10) -> dict:
    """Is the judge's uncertainty informative? The (dialogue, item) answers in ``groups`` equal-sized groups by
    uncertainty (ascending; ties kept in input order), each with its count, uncertainty range and mean, and the mean
    observed ``disagreement`` with the physicians; and Spearman's rho between the two over all answers (None when
    either does not vary). An informative uncertainty shows disagreement rising with it."""
    u = np.asarray(uncertainty, dtype=float).ravel()
    d = np.asarray(disagreement, dtype=float).ravel()
    if u.shape != d.shape:
        raise ValueError("uncertainty and disagreement must have one value per answer")
    keep = np.isfinite(u) & np.isfinite(d)
    u, d = u[keep], d[keep]
    order = np.argsort(u, kind="stable")
    rows = []
    for k, part in enumerate(np.array_split(order, min(groups, u.size)) if u.size else []):
        rows.append({"group": k + 1, "n": int(part.size), "uncertainty_min": float(u[part].min()),
                     "uncertainty_max": float(u[part].max()), "uncertainty_mean": float(u[part].mean()),
                     "disagreement": float(d[part].mean())})
    rho = None
    if u.size > 2 and np.ptp(u) > _EPS and np.ptp(d) > _EPS:
        from scipy.stats import spearmanr

        rho = _num(spearmanr(u, d).statistic)
    return {"groups": rows, "n": int(u.size), "spearman": rho}


def _planned_variance(errors: np.ndarray, pi: np.ndarray, var_y: float) -> float:
    """Var of the paper's estimator, (1/N) [Var(Y) + mean(E[(Y - g)^2] (1/pi - 1))], for expected squared errors
    ``errors`` and probabilities ``pi`` of every dialogue."""
    return float((var_y + np.mean(errors * (1.0 / pi - 1.0))) / errors.size)


def _weighted_residuals(y: np.ndarray, yhat: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Squared residuals of the weighted least-squares line of ``y`` on ``yhat``."""
    my, mf = np.average(y, weights=w), np.average(yhat, weights=w)
    var_f = float(np.average((yhat - mf) ** 2, weights=w))
    slope = float(np.average((y - my) * (yhat - mf), weights=w) / var_f) if var_f > _EPS else 0.0
    return ((y - my) - slope * (yhat - mf)) ** 2


def _error_model(squared: np.ndarray, u2: np.ndarray) -> tuple[float, float]:
    """Least squares of ``squared`` on [1, u2] with both coefficients non-negative (the better of the two
    one-coefficient fits when the joint one has a negative coefficient)."""
    design = np.column_stack([np.ones(u2.size), u2])
    (base, k), *_ = np.linalg.lstsq(design, squared, rcond=None)
    if base >= 0 and k >= 0:
        return float(base), float(k)
    only_base = (float(squared.mean()), 0.0)
    only_k = (0.0, float((squared * u2).sum() / (u2 ** 2).sum())) if (u2 ** 2).sum() > _EPS else only_base
    loss = [float(((squared - b - c * u2) ** 2).sum()) for b, c in (only_base, only_k)]
    return only_base if loss[0] <= loss[1] else only_k


def sample_size(y: Any, yhat: Any, uncertainty_labelled: Any, uncertainty: Any, half_width: float, *,
                uniform_share: float = UNIFORM_SHARE, pi_min_factor: float = PI_MIN_FACTOR,
                alpha: float = 0.05) -> dict:
    """Physician labels needed for a two-sided interval of ``half_width`` on a mean score, drawn uniformly and by
    the active rule, planned from a pilot: ``y``/``yhat``/``uncertainty_labelled`` on the pilot's labelled
    dialogues, ``uncertainty`` on every dialogue the judge scores (N).

    The judge's squared error is modelled as base + k u^2 (fitted on the pilot by least squares with base, k >= 0,
    e the squared residual of the pilot's least-squares line of Y on Yhat, weighted by 1 / pi for the active design:
    an uncertainty unrelated to the errors gets k near 0 and the plan no saving); the variance
    of the estimate with probabilities pi is then (1/N) [Var(Y) + mean(k u^2 (1/pi - 1))], for the uniform rule
    (pi = n/N) and for the active rule with its defaults; the smallest n whose variance reaches (h / z)^2. Returns
    ``uniform``, ``active`` (None when not reachable with N labels), ``base``, ``k``, ``rho`` (Spearman of u and e
    on the pilot) and ``warnings``."""
    _check(alpha, "two-sided")
    if not half_width > 0:
        raise ValueError("the half-width must be positive")
    y, yhat = np.asarray(y, dtype=float).ravel(), np.asarray(yhat, dtype=float).ravel()
    u_lab = np.asarray(uncertainty_labelled, dtype=float).ravel()
    u_all = np.asarray(uncertainty, dtype=float).ravel()
    out: dict[str, Any] = {"half_width": float(half_width), "n_total": int(u_all.size), "n_pilot": int(y.size),
                           "uniform": None, "active": None, "base": None, "k": None, "rho": None,
                           "warnings": []}
    if not (y.size == yhat.size == u_lab.size) or y.size < 3 or u_all.size < 2:
        out["warnings"].append(M.say(M.ACTIVE_PILOT_TOO_SMALL))
        return out
    if not (np.isfinite(y).all() and np.isfinite(yhat).all() and np.isfinite(u_lab).all()
            and np.isfinite(u_all).all()):
        raise ValueError("the pilot's scores and uncertainties must be finite numbers")
    var_y = float(y.var())
    if var_y <= _EPS:
        out["warnings"].append(M.say(M.PILOT_NO_VARIATION))
        return out
    # the uniform design weighs every dialogue alike; the active one weighs the sure ones more (1 / pi), and the
    # estimator's lambda follows: the residuals of each design's weighted least-squares line
    mean_u = float(u_all.mean()) if u_all.mean() > _EPS else 1.0
    relative = uniform_share + (1.0 - uniform_share) * u_lab / mean_u
    squared = _weighted_residuals(y, yhat, np.ones(y.size))
    squared_active = _weighted_residuals(y, yhat, 1.0 / relative)
    base, k = _error_model(squared, u_lab ** 2)
    base_a, k_a = _error_model(squared_active, u_lab ** 2)
    out["base"], out["k"] = base_a, k_a
    errors, errors_active = base + k * u_all ** 2, base_a + k_a * u_all ** 2
    if k_a <= _EPS:
        out["warnings"].append(M.say(M.ACTIVE_NO_GAIN))
    if np.ptp(u_lab) > _EPS and np.ptp(squared_active) > _EPS:
        from scipy.stats import spearmanr

        out["rho"] = _num(spearmanr(u_lab, squared_active).statistic)
    target = (half_width / float(ndtri(1 - alpha / 2.0))) ** 2
    big_n = u_all.size

    def smallest(variance_at) -> int | None:
        if variance_at(big_n) > target * (1 + 1e-12):
            return None
        low, high = 1, big_n  # variance falls with n: bisection
        while low < high:
            mid = (low + high) // 2
            if variance_at(mid) <= target * (1 + 1e-12):
                high = mid
            else:
                low = mid + 1
        return low

    out["uniform"] = smallest(lambda n: _planned_variance(errors, np.full(big_n, n / big_n), var_y))
    min_u = float(u_all.max()) if u_all.max() > 0 else 1.0
    rule_u = np.maximum(u_all, 0.0) if u_all.max() > 0 else np.full(big_n, min_u)
    out["active"] = smallest(lambda n: _planned_variance(
        errors_active, sampling_probabilities(rule_u, n, uniform_share=uniform_share, pi_min=pi_min_factor * n / big_n),
        var_y))
    if out["n_pilot"] < SMALL_N:
        out["warnings"].append(M.say(M.PILOT_ROUGH, n=out["n_pilot"]))
    return out


difference = difference  # models' dialogues are disjoint: independent estimates, variances add (ppi.difference)
