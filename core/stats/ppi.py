"""Prediction-powered inference (PPI++) for a mean score: physicians label a random sample, a judge labels all.

Prediction-powered inference (Angelopoulos, Bates, Fannjiang, Jordan and Zrnic, "Prediction-powered inference",
Science 2023) estimates the mean of a label Y -- here the physicians' score of a dialogue -- from a judge's
predictions on every dialogue, corrected by the judge's error measured on the dialogues physicians labelled. Its
power-tuned form PPI++ (Angelopoulos, Duchi and Zrnic, "PPI++: Efficient prediction-powered inference", 2023)
weighs the judge by lambda in [0, 1], chosen from the data to make the interval as narrow as possible:

    theta = lambda * mean(judge, unlabelled) + mean(physicians - lambda * judge, labelled)

lambda = 0 is the physicians' own (classical) mean; lambda = 1 is the original PPI. However biased the judge is,
the interval stays valid, provided that the labelled dialogues are a random sample of the same population as the
unlabelled ones and that judge and physicians labelled the same labelled dialogues.

Conventions are those of the authors' package ``ppi_py`` (``ppi_mean_pointestimate``, ``ppi_mean_ci``,
``classical_mean_ci``, ``ppi_mean_power``/``ppi_power``); ``tests/test_ppi.py`` checks every figure against it on
the same arrays (ppi_py is a test dependency only: it pulls numba and scikit-learn into the web process):

* lambda (``lam=None``): estimated at the lambda = 1 point estimate as cov(Y, Yhat) / ((1 + n/N) var(Yhat)), the
  covariance over the labelled dialogues (divided by n), the variance over labelled and unlabelled judge scores
  together (divided by n + N - 1), then clipped to [0, 1];
* standard errors with population standard deviations (``np.std``, ddof 0) and normal (CLT) intervals;
  ``alternative`` "two-sided", "larger" (lower limit only) or "smaller" (upper limit only) as statsmodels'
  ``_zconfint_generic``.

Departures, each for a case ppi_py leaves undefined: a judge whose scores do not vary carries no information and
gets lambda = 0 (ppi_py: NaN), so the estimate is the classical one; with no unlabelled dialogue the estimate is the
classical one (ppi_py divides by zero); an interval needs at least two labelled dialogues.

The kernels (:func:`ppi_mean_arrays`, :func:`classical_mean_arrays`) work along the last axis with any leading
batch axes (simulations run thousands of studies in one call); the rest returns plain dicts. Pure: numpy and scipy
only, importable without Django.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from core.stats import messages as M
from core.stats._common import _num


def ndtri(p):
    """The standard normal quantile (scipy.stats.norm.ppf through scipy.special, imported on first use: importing
    scipy.special costs about 0.5 s, which the judge report page paid on its first view for a module it imports)."""
    from scipy.special import ndtri as quantile

    return quantile(p)


ALTERNATIVES = ("two-sided", "larger", "smaller")
#: Variances at or below this are "no variation" (a constant judge or criterion).
_EPS = 1e-12
#: Below this many labelled dialogues a normal interval is rough.
SMALL_N = 30


def _check(alpha: float, alternative: str) -> None:
    if not 0 < alpha < 1:
        raise ValueError("alpha must be between 0 and 1")
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative must be one of {ALTERNATIVES}")


def z_interval(mean: Any, se: Any, alpha: float = 0.05, alternative: str = "two-sided"
               ) -> tuple[np.ndarray, np.ndarray]:
    """Normal interval ``mean -+ z se`` (statsmodels' ``_zconfint_generic``: one-sided ones are open on one end)."""
    _check(alpha, alternative)
    mean = np.asarray(mean, dtype=float)
    se = np.asarray(se, dtype=float)
    if alternative == "two-sided":
        z = ndtri(1 - alpha / 2.0)
        return mean - z * se, mean + z * se
    if alternative == "larger":
        return mean + ndtri(alpha) * se, np.full(mean.shape, np.inf)
    return np.full(mean.shape, -np.inf), mean + ndtri(1 - alpha) * se


# ---------------------------------------------------------------------------------------------------------------
# vectorised kernels (last axis = dialogues)
# ---------------------------------------------------------------------------------------------------------------
def tuned_lambda(y: np.ndarray, yhat: np.ndarray, yhat_unlabeled: np.ndarray) -> np.ndarray:
    """PPI++'s power-tuning lambda for a mean (ppi_py's ``_calc_lam_glm`` with ``clip=True``), 0 for a judge whose
    scores do not vary; vectorised over leading axes."""
    y, yhat, yhat_unlabeled = (np.asarray(a, dtype=float) for a in (y, yhat, yhat_unlabeled))
    n, big_n = y.shape[-1], yhat_unlabeled.shape[-1]
    cov = ((y - y.mean(axis=-1, keepdims=True)) * (yhat - yhat.mean(axis=-1, keepdims=True))).mean(axis=-1)
    var_all = np.var(np.concatenate([yhat, yhat_unlabeled], axis=-1), axis=-1, ddof=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        lam = cov / ((1.0 + n / big_n) * var_all)
    return np.where(var_all > _EPS, np.clip(lam, 0.0, 1.0), 0.0)


def classical_mean_arrays(y: np.ndarray, *, alpha: float = 0.05, alternative: str = "two-sided", ddof: int = 0
                          ) -> dict[str, np.ndarray]:
    """The classical mean and its CLT interval (ppi_py's ``classical_mean_ci``, which takes the SD with ddof 0),
    along the last axis; ``ddof=1``: the sample SD, as a report's own interval of a mean takes it."""
    y = np.asarray(y, dtype=float)
    n = y.shape[-1]
    value = y.mean(axis=-1)
    se = y.std(axis=-1, ddof=ddof) / math.sqrt(n)
    low, high = z_interval(value, se, alpha, alternative)
    return {"value": value, "se": se, "ci_low": low, "ci_high": high}


def ppi_mean_arrays(y: np.ndarray, yhat: np.ndarray, yhat_unlabeled: np.ndarray, *, alpha: float = 0.05,
                    lam: float | np.ndarray | None = None, alternative: str = "two-sided") -> dict[str, np.ndarray]:
    """PPI++ point estimate, standard error and interval of the mean of ``y`` along the last axis.

    ``y``/``yhat``: physicians' and judge's scores of the labelled dialogues (same order); ``yhat_unlabeled``: the
    judge's scores of the other dialogues. ``lam=None`` tunes lambda (:func:`tuned_lambda`); a number fixes it
    (0: classical, 1: PPI without tuning). Also returns the classical standard error of ``y`` for comparison.
    """
    _check(alpha, alternative)
    y, yhat, yhat_unlabeled = (np.asarray(a, dtype=float) for a in (y, yhat, yhat_unlabeled))
    if y.shape != yhat.shape:
        raise ValueError("y and yhat must have the same shape (the labelled dialogues, in the same order)")
    n, big_n = y.shape[-1], yhat_unlabeled.shape[-1]
    if n < 1 or big_n < 1:
        raise ValueError("PPI needs at least one labelled and one unlabelled dialogue")
    lam = tuned_lambda(y, yhat, yhat_unlabeled) if lam is None else np.broadcast_to(
        np.asarray(lam, dtype=float), y.shape[:-1])
    lam_ = np.asarray(lam)[..., None]
    imputed = lam_ * yhat_unlabeled
    rectifier = y - lam_ * yhat
    value = imputed.mean(axis=-1) + rectifier.mean(axis=-1)
    se = np.sqrt(imputed.var(axis=-1) / big_n + rectifier.var(axis=-1) / n)
    low, high = z_interval(value, se, alpha, alternative)
    return {"value": value, "se": se, "ci_low": low, "ci_high": high, "lam": np.asarray(lam, dtype=float),
            "classical_se": y.std(axis=-1) / math.sqrt(n)}


# ---------------------------------------------------------------------------------------------------------------
# one estimate at a time: plain dicts
# ---------------------------------------------------------------------------------------------------------------
def _vector(values: Sequence[float] | np.ndarray, name: str) -> np.ndarray:
    arr = np.asarray(values, dtype=float).ravel()
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} must be finite numbers (drop missing scores first)")
    return arr


def _limits(low: Any, high: Any) -> tuple[float | None, float | None]:
    return _num(low), _num(high)


def classical_mean(y: Sequence[float] | np.ndarray, *, alpha: float = 0.05, alternative: str = "two-sided",
                   ddof: int = 0) -> dict:
    """``{"value", "ci_low", "ci_high", "se", "n", "warnings"}`` of the mean of ``y`` (CLT interval; ``ddof`` of the
    SD as :func:`classical_mean_arrays`)."""
    _check(alpha, alternative)
    y = _vector(y, "y")
    n = int(y.size)
    out: dict[str, Any] = {"value": None, "ci_low": None, "ci_high": None, "se": None, "n": n, "warnings": []}
    if n == 0:
        out["warnings"].append(M.say(M.MEAN_NO_LABELS))
        return out
    out["value"] = float(y.mean())
    if n < 2:
        out["warnings"].append(M.say(M.MEAN_ONE_DIALOGUE))
        return out
    figures = classical_mean_arrays(y, alpha=alpha, alternative=alternative, ddof=ddof)
    out["se"] = float(figures["se"])
    out["ci_low"], out["ci_high"] = _limits(figures["ci_low"], figures["ci_high"])
    if figures["se"] <= _EPS:
        out["warnings"].append(M.say(M.MEAN_NO_VARIATION))
    elif n < SMALL_N:
        out["warnings"].append(M.say(M.MEAN_FEW_DIALOGUES, n=n, limit=SMALL_N))
    return out


def ppi_mean(y: Sequence[float] | np.ndarray, yhat: Sequence[float] | np.ndarray,
             yhat_unlabeled: Sequence[float] | np.ndarray, *, alpha: float = 0.05, lam: float | None = None,
             alternative: str = "two-sided") -> dict:
    """PPI++ estimate of the mean of ``y`` as a dict.

    ``{"value", "ci_low", "ci_high", "se", "n", "n_unlabeled", "lam", "classical_se", "effective_n", "gain",
    "warnings"}``: ``n`` labelled and ``n_unlabeled`` unlabelled dialogues; ``effective_n`` the number of
    physician-labelled dialogues the classical interval would need to be as narrow (n times the ratio of the
    classical to the PPI++ variance); ``gain`` = effective_n - n, what the judge's labels are worth.
    """
    _check(alpha, alternative)
    y, yhat, yhat_unlabeled = _vector(y, "y"), _vector(yhat, "yhat"), _vector(yhat_unlabeled, "yhat_unlabeled")
    if y.size != yhat.size:
        raise ValueError("y and yhat must have the same length (the labelled dialogues, in the same order)")
    n, big_n = int(y.size), int(yhat_unlabeled.size)
    out: dict[str, Any] = {"value": None, "ci_low": None, "ci_high": None, "se": None, "n": n,
                           "n_unlabeled": big_n, "lam": None, "classical_se": None, "effective_n": None,
                           "gain": None, "warnings": []}
    if n == 0:
        out["warnings"].append(M.say(M.PPI_NO_LABELS))
        return out
    if big_n == 0:
        classical = classical_mean(y, alpha=alpha, alternative=alternative)
        out.update({k: classical[k] for k in ("value", "ci_low", "ci_high", "se")}, lam=0.0,
                   classical_se=classical["se"], effective_n=float(n), gain=0.0)
        out["warnings"] = [M.say(M.PPI_ALL_LABELLED), *classical["warnings"]]
        return out
    if n < 2:
        out["value"] = _num(ppi_mean_arrays(y, yhat, yhat_unlabeled, alpha=alpha, lam=0.0)["value"])
        out["warnings"].append(M.say(M.PPI_ONE_LABEL))
        return out
    figures = ppi_mean_arrays(y, yhat, yhat_unlabeled, alpha=alpha, lam=lam, alternative=alternative)
    out["value"], out["se"] = _num(figures["value"]), _num(figures["se"])
    out["ci_low"], out["ci_high"] = _limits(figures["ci_low"], figures["ci_high"])
    out["lam"], out["classical_se"] = _num(figures["lam"]), _num(figures["classical_se"])
    if float(np.var(np.concatenate([yhat, yhat_unlabeled]))) <= _EPS:
        out["warnings"].append(M.say(M.PPI_CONSTANT_JUDGE))
    if out["se"] is not None and out["se"] > _EPS and out["classical_se"] is not None and out["classical_se"] > _EPS:
        out["effective_n"] = n * (out["classical_se"] / out["se"]) ** 2
        out["gain"] = out["effective_n"] - n
    elif out["classical_se"] is not None and out["classical_se"] <= _EPS:
        out["warnings"].append(M.say(M.PPI_CONSTANT_LABELS))
    if n < SMALL_N:
        out["warnings"].append(M.say(M.FEW_LABELLED, n=n, limit=SMALL_N))
    return out


def difference(a: dict, b: dict, *, alpha: float = 0.05) -> dict:
    """Estimate and two-sided interval of ``a - b`` for two estimates on disjoint dialogues (independent):
    standard error sqrt(se_a^2 + se_b^2). ``a``/``b``: dicts with ``value`` and ``se`` (None when undefined)."""
    _check(alpha, "two-sided")
    out: dict[str, Any] = {"value": None, "ci_low": None, "ci_high": None, "se": None}
    if a.get("value") is None or b.get("value") is None:
        return out
    out["value"] = float(a["value"] - b["value"])
    if a.get("se") is None or b.get("se") is None:
        return out
    out["se"] = math.sqrt(a["se"] ** 2 + b["se"] ** 2)
    out["ci_low"], out["ci_high"] = _limits(*z_interval(out["value"], out["se"], alpha))
    return out


# ---------------------------------------------------------------------------------------------------------------
# planning: physician-labelled dialogues needed for a given interval half-width
# ---------------------------------------------------------------------------------------------------------------
def ppi_corr(y: Sequence[float] | np.ndarray, yhat: Sequence[float] | np.ndarray) -> float | None:
    """Correlation of physicians' and judge's scores on the labelled dialogues as ppi_py's power analysis uses it
    (population moments, capped at 1 - 1/n so that a perfect pilot never promises zero labels); None when either
    side does not vary."""
    y, yhat = _vector(y, "y"), _vector(yhat, "yhat")
    n = y.size
    if n < 2:
        return None
    var_y, var_f = float(y.var()), float(yhat.var())
    if var_y <= _EPS or var_f <= _EPS:
        return None
    cov = float(((y - y.mean()) * (yhat - yhat.mean())).mean())
    return min(cov / math.sqrt(var_y * var_f), 1.0 - 1.0 / n)


def _variance(n: np.ndarray, n_unlabeled: np.ndarray | float, var_y: float, var_f: float, cov: float) -> np.ndarray:
    """Smallest variance of the PPI++ mean over lambda in [0, 1] with ``n`` labelled and ``n_unlabeled`` unlabelled
    dialogues (``np.inf``: unlimited), for population moments var(Y), var(Yhat) and cov(Y, Yhat)."""
    n = np.asarray(n, dtype=float)
    big_n = np.broadcast_to(np.asarray(n_unlabeled, dtype=float), n.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv_big = np.where(big_n > 0, 1.0 / np.where(big_n > 0, big_n, 1.0), np.inf)
        lam = np.where(np.isfinite(inv_big) & (var_f > _EPS),
                       np.clip(cov / (var_f * (1.0 + n * np.where(np.isfinite(inv_big), inv_big, 0.0))), 0.0, 1.0),
                       0.0)
        imputed = np.where(lam > 0, lam ** 2 * var_f * np.where(np.isfinite(inv_big), inv_big, 0.0), 0.0)
        return imputed + (var_y - 2 * lam * cov + lam ** 2 * var_f) / n


def _moments(y: np.ndarray, yhat: np.ndarray) -> tuple[float, float, float, float | None]:
    """var(Y), var(Yhat), the covariance implied by :func:`ppi_corr` (0 for no or negative correlation) and rho."""
    var_y, var_f = float(y.var()), float(yhat.var())
    rho = ppi_corr(y, yhat)
    cov = rho * math.sqrt(var_y * var_f) if rho is not None and rho > 0 else 0.0
    return var_y, var_f, cov, rho


def _smallest_n(parts: list[tuple[float, float, float, int | None]], target: float) -> int | None:
    """Smallest n per group such that the sum over groups of the PPI++ variance (n labelled, total - n unlabelled,
    or unlimited) is at most ``target``; None when no n up to the smallest total reaches it."""
    if all(total is None for *_, total in parts):
        per_dialogue = sum(float(_variance(np.array([1.0]), np.inf, vy, vf, c)[0]) for vy, vf, c, _ in parts)
        return max(1, math.ceil(per_dialogue / target * (1 - 1e-12)))
    limit = min(total for *_, total in parts if total is not None)
    if limit < 1:
        return None
    n = np.arange(1, limit + 1, dtype=float)
    variance = sum(_variance(n, np.inf if total is None else total - n, vy, vf, c) for vy, vf, c, total in parts)
    ok = np.flatnonzero(variance <= target * (1 + 1e-12))
    return int(n[ok[0]]) if ok.size else None


def _classical_n(var_y: float, target: float) -> int:
    return max(1, math.ceil(var_y / target * (1 - 1e-12)))


def sample_size(y: Sequence[float] | np.ndarray, yhat: Sequence[float] | np.ndarray, half_width: float, *,
                n_total: int | None = None, alpha: float = 0.05) -> dict:
    """Physician-labelled dialogues needed for a two-sided interval of half-width ``half_width`` on a mean score,
    planned from a pilot (``y``, ``yhat``: physicians' and judge's scores of the dialogues labelled so far).

    ``n_total``: the dialogues the judge scores (labelled ones included; None: as many as needed). Returns
    ``physicians_only`` (classical interval), ``with_judge`` (PPI++ with tuned lambda, the others unlabelled),
    ``with_judge_unlimited`` (if the judge scored unlimited dialogues), ``n_exact`` (PPI++'s closed form
    n0 M (1 - rho^2) / (M - rho^2 n0) of ppi_py's ``ppi_power``, when lambda is not clipped at 1), the pilot's
    ``rho``, ``sd`` and ``n_pilot`` and ``warnings``. ``with_judge`` is None when not even labels on all
    ``n_total`` dialogues reach the half-width (then ``physicians_only`` exceeds ``n_total`` too).
    """
    _check(alpha, "two-sided")
    if not half_width > 0:
        raise ValueError("the half-width must be positive")
    y, yhat = _vector(y, "y"), _vector(yhat, "yhat")
    if y.size != yhat.size:
        raise ValueError("y and yhat must have the same length (the pilot's labelled dialogues, in the same order)")
    out: dict[str, Any] = {"half_width": float(half_width), "n_total": n_total, "n_pilot": int(y.size),
                           "physicians_only": None, "with_judge": None, "with_judge_unlimited": None,
                           "n_exact": None, "rho": None, "sd": None, "warnings": []}
    if y.size < 2:
        out["warnings"].append(M.say(M.PILOT_TOO_SMALL))
        return out
    var_y, var_f, cov, rho = _moments(y, yhat)
    out["rho"], out["sd"] = rho, math.sqrt(var_y)
    if var_y <= _EPS:
        out["warnings"].append(M.say(M.PILOT_NO_VARIATION))
        return out
    target = (half_width / ndtri(1 - alpha / 2.0)) ** 2
    n0 = var_y / target
    out["physicians_only"] = _classical_n(var_y, target)
    out["with_judge_unlimited"] = _smallest_n([(var_y, var_f, cov, None)], target)
    if n_total is None:
        out["with_judge"] = out["with_judge_unlimited"]
    else:
        out["with_judge"] = _smallest_n([(var_y, var_f, cov, int(n_total))], target)
        if rho is not None and rho > 0 and n_total > rho ** 2 * n0:
            exact = n0 * n_total * (1 - rho ** 2) / (n_total - rho ** 2 * n0)
            lam = cov / (var_f * (1 + exact / max(n_total - exact, 1e-12)))
            if lam <= 1 and exact <= n_total:
                out["n_exact"] = float(exact)
    if rho is None or rho <= 0:
        out["warnings"].append(M.say(M.PILOT_NO_CORRELATION))
    if out["n_pilot"] < SMALL_N:
        out["warnings"].append(M.say(M.PILOT_ROUGH, n=out["n_pilot"]))
    return out


def difference_sample_size(pilots: Sequence[tuple[Any, Any, int | None]], half_width: float, *,
                           alpha: float = 0.05) -> dict:
    """Physician-labelled dialogues needed per model (the same number in each) for a two-sided interval of
    half-width ``half_width`` on the difference of two models' mean scores; ``pilots``: per model (y, yhat,
    n_total) as in :func:`sample_size`. Returns ``physicians_only`` and ``with_judge`` per model (None when not
    reachable within the smaller ``n_total``), ``with_judge_unlimited`` and ``warnings``."""
    _check(alpha, "two-sided")
    if not half_width > 0:
        raise ValueError("the half-width must be positive")
    out: dict[str, Any] = {"half_width": float(half_width), "physicians_only": None, "with_judge": None,
                           "with_judge_unlimited": None, "warnings": []}
    parts = []
    for y, yhat, total in pilots:
        y, yhat = _vector(y, "y"), _vector(yhat, "yhat")
        if y.size < 2 or y.size != yhat.size:
            out["warnings"].append(M.say(M.PILOTS_TOO_SMALL))
            return out
        var_y, var_f, cov, _ = _moments(y, yhat)
        parts.append((var_y, var_f, cov, None if total is None else int(total)))
    if sum(p[0] for p in parts) <= _EPS:
        out["warnings"].append(M.say(M.PILOT_NO_VARIATION))
        return out
    target = (half_width / ndtri(1 - alpha / 2.0)) ** 2
    out["physicians_only"] = _classical_n(sum(p[0] for p in parts), target)
    out["with_judge_unlimited"] = _smallest_n([(*p[:3], None) for p in parts], target)
    out["with_judge"] = _smallest_n(parts, target)
    return out
