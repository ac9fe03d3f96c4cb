"""Bootstrap confidence intervals over rows (dialogues) with a recorded seed: percentile, basic and BCa."""

from __future__ import annotations

import warnings as _warnings
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import pandas as pd

from core.stats import messages as M
from core.stats._common import LeaveOneOut, _num, _py
from core.stats.formatting import short

#: Interval methods: Efron's percentile, the basic (reverse percentile) and the bias-corrected and accelerated
#: interval (BCa; Efron 1987, Efron & Tibshirani 1993 sec. 14.3), as in scipy.stats.bootstrap.
CI_METHODS = ("percentile", "basic", "bca")
CI_METHOD_NAMES = {
    "percentile": "percentile bootstrap (Efron 1979)",
    "basic": "basic (reverse percentile) bootstrap",
    "bca": "bias-corrected and accelerated (BCa) bootstrap (Efron 1987; Efron & Tibshirani 1993, sec. 14.3)",
}
#: Below about this many resampled units (dialogues) bootstrap intervals are rough and the percentile interval
#: undercovers (Efron & Tibshirani 1993, ch. 14; Carpenter & Bithell 2000).
SMALL_SAMPLE = 30
#: A bootstrap interval whose resamples all give the same value is not an interval: reported with this note instead of
#: [x, x] (``ci_note`` of :func:`bootstrap_summary`).
NO_VARIATION = "not estimable (no variation)"
NO_VARIATION_TOL = 1e-12


def small_sample_warning(n: int, method: str, units: str = "dialogue(s)") -> str | None:
    """The warning a report shows when fewer than :data:`SMALL_SAMPLE` units are resampled."""
    if n >= SMALL_SAMPLE:
        return None
    return M.say(M.SMALL_SAMPLE_BCA if method == "bca" else M.SMALL_SAMPLE_PERCENTILE, n=n, units=units,
                 limit=SMALL_SAMPLE)


def jackknife_freq(n: int) -> LeaveOneOut:
    """The jackknife counterpart of :func:`bootstrap_freq`: pass it as ``freq`` to the vectorised kernels to get
    the n leave-one-out values of a statistic (for the BCa acceleration)."""
    return LeaveOneOut(n)


def bca_interval(estimate: float, replicates: np.ndarray, jackknife: np.ndarray,
                 confidence: float = 0.95) -> tuple[float, float, float, float]:
    """BCa confidence limits from bootstrap replicates and jackknife values.

    Follows Efron & Tibshirani (1993) eqs. 14.14-14.15 exactly as scipy.stats.bootstrap does: bias correction
    z0 = Phi^-1(share of replicates below the estimate, ties counted half), acceleration
    a = sum U^3 / (6 (sum U^2)^1.5) with U_i = (n - 1)(mean of jackknife values - jackknife value i), and the
    limits are the replicates' quantiles at Phi(z0 + (z0 + z) / (1 - a (z0 + z))) for z = Phi^-1(alpha/2),
    Phi^-1(1 - alpha/2).  Returns ``(low, high, z0, a)``; NaN limits when undefined (e.g. every replicate on one
    side of the estimate).  ``a`` is 0 when every jackknife value is the same.
    """
    from scipy.special import ndtr, ndtri

    reps = np.asarray(replicates, dtype=float)
    jack = np.asarray(jackknife, dtype=float)
    share = ((reps < estimate).sum() + (reps <= estimate).sum()) / (2.0 * reps.size)
    z0 = float(ndtri(share))
    u = (jack.size - 1) * (jack.mean() - jack)
    denominator = float((u ** 2).sum())
    a = float((u ** 3).sum() / (6.0 * denominator ** 1.5)) if denominator > 0 else 0.0
    alpha = (1.0 - confidence) / 2.0
    limits = []
    for z in (float(ndtri(alpha)), float(ndtri(1.0 - alpha))):
        shifted = z0 + z
        limits.append(float(ndtr(z0 + shifted / (1.0 - a * shifted))))
    if not all(np.isfinite(limits)):
        return float("nan"), float("nan"), z0, a
    low, high = np.quantile(reps, limits)
    return float(low), float(high), z0, a


# --------------------------------------------------------------------------------------
# bootstrap
# --------------------------------------------------------------------------------------
def bootstrap_indices(n: int, n_resamples: int = 1000, seed: int | None = 0) -> np.ndarray:
    """``(n_resamples, n)`` matrix of row indices drawn with replacement (numpy PCG64).

    Reuse the same matrix across items / statistics so that all per-item CIs come from
    the same resampled dialogues.
    """
    rng = np.random.default_rng(seed)
    return rng.integers(0, n, size=(int(n_resamples), int(n)))


def bootstrap_summary(estimate: Any, values: Iterable[Any], *, confidence: float = 0.95,
                      method: str = "percentile", seed: int | None = None,
                      n_resamples: int | None = None,
                      warnings: list[str] | None = None,
                      jackknife: Iterable[Any] | None = None) -> dict:
    """Turn an estimate and its bootstrap replicates into the :func:`bootstrap_ci` dict.

    Non-finite replicates (undefined statistics) are dropped and counted.  When every finite replicate is the same
    value, or the percentile limits coincide, the interval is not estimable: ``ci_low``/``ci_high`` stay None and
    ``ci_note`` is :data:`NO_VARIATION` (never [x, x]).  ``method``:
    "percentile" (Efron), "basic" (reverse percentile, 2*estimate - quantiles) or "bca"
    (:func:`bca_interval`; needs ``jackknife``, the n leave-one-out values of the statistic).
    When the BCa acceleration cannot be computed (an undefined jackknife value) or its limits
    are undefined, the percentile interval is given instead and ``method`` says so.
    """
    if method not in CI_METHODS:
        raise ValueError(f"method must be one of {CI_METHODS}")
    if method == "bca" and jackknife is None:
        raise ValueError("method='bca' needs the jackknife values of the statistic")
    if not 0 < confidence < 1:
        raise ValueError("confidence must be between 0 and 1")
    vals = np.asarray([np.nan if v is None else v for v in values], dtype=float).ravel()
    warns = list(warnings or [])
    total = int(vals.size if n_resamples is None else n_resamples)
    finite = vals[np.isfinite(vals)]
    est = _num(estimate)
    out = {"estimate": est, "ci_low": None, "ci_high": None, "n_resamples": total,
           "n_valid": int(finite.size), "seed": _py(seed), "method": method,
           "confidence": float(confidence), "warnings": warns}
    dropped = total - finite.size
    if dropped:
        warns.append(M.say(M.RESAMPLES_DROPPED, n=dropped, total=total))
    if est is None:
        warns.append(M.say(M.ESTIMATE_UNDEFINED))
        return out
    if finite.size < 2:
        warns.append(M.say(M.TOO_FEW_RESAMPLES))
        return out
    if finite.size < 0.9 * total:
        warns.append(M.say(M.MANY_RESAMPLES_UNDEFINED))
    if float(finite.max() - finite.min()) <= NO_VARIATION_TOL * max(1.0, abs(float(est))):
        # Every resample gives the same value (e.g. perfect agreement, a constant judge): an interval [x, x] would
        # claim a precision the data cannot give.
        out["ci_note"] = NO_VARIATION
        warns.append(M.say(M.RESAMPLES_ALL_SAME, n=finite.size, value=short(est)))
        return out
    if method == "bca":
        jack = np.asarray([np.nan if v is None else v for v in jackknife], dtype=float).ravel()
        if jack.size >= 2 and np.isfinite(jack).all():
            lo_q, hi_q, z0, a = bca_interval(est, finite, jack, confidence)
            out["bias_correction"], out["acceleration"] = _num(z0), _num(a)
            if np.isfinite(lo_q) and np.isfinite(hi_q):
                if float(hi_q - lo_q) <= NO_VARIATION_TOL * max(1.0, abs(float(est))):
                    out["ci_note"] = NO_VARIATION
                    warns.append(M.say(M.BCA_LIMITS_COINCIDE, value=short(lo_q)))
                    return out
                out["ci_low"], out["ci_high"] = _num(lo_q), _num(hi_q)
                return out
            warns.append(M.say(M.BCA_LIMITS_UNDEFINED))
        else:
            warns.append(M.say(M.BCA_ACCELERATION_UNDEFINED))
        out["method"] = "percentile (BCa undefined)"
    lo_q, hi_q = np.percentile(finite, [50 * (1 - confidence), 50 * (1 + confidence)])
    if float(hi_q - lo_q) <= NO_VARIATION_TOL * max(1.0, abs(float(est))):
        # The middle 95% of the resamples give one value (a discrete statistic, e.g. a ranking that holds in nearly
        # every resample): no interval width to report either.
        out["ci_note"] = NO_VARIATION
        warns.append(M.say(M.MIDDLE_RESAMPLES_SAME, share=f"{confidence:.0%}", value=short(lo_q)))
        return out
    if method == "basic":
        lo_q, hi_q = 2 * est - hi_q, 2 * est - lo_q
    out["ci_low"], out["ci_high"] = _num(lo_q), _num(hi_q)
    return out


def bootstrap_freq(indices: np.ndarray, n: int) -> np.ndarray:
    """``(B, n)`` multiplicity matrix: how often row i is drawn in resample b.

    For statistics that are functions of sums over subjects (kappa, AC1, Fleiss, percent
    agreement) a resample is fully described by these counts, and the kernels
    (:func:`cohen_kappa_codes`, :func:`gwet_ac1_counts`, ...) evaluate all resamples with
    one matrix product when given ``freq=``.  Compute once and reuse across items.
    """
    idx = np.asarray(indices)
    b = idx.shape[0]
    flat = (idx + (np.arange(b) * n)[:, None]).ravel()
    return np.bincount(flat, minlength=b * n).reshape(b, n).astype(float)


def _take(arr: Any, idx: np.ndarray) -> Any:
    if isinstance(arr, pd.DataFrame | pd.Series):
        return arr.iloc[idx].reset_index(drop=True)
    return arr[idx]


def _resamples(n: int, n_resamples: int, seed: int | None, indices: np.ndarray | None, freq: np.ndarray | None,
               vectorized: bool | str) -> tuple[np.ndarray | None, np.ndarray | None, int]:
    """The resamples of :func:`bootstrap_ci` over ``n`` rows, checked: ``(indices, None, B)`` (drawn from ``seed``
    unless given), or with ``freq`` (``vectorized="freq"`` only) ``(None, freq, B)``."""
    if freq is not None:
        if vectorized != "freq":
            raise ValueError("freq is only used with vectorized='freq'")
        freq = np.asarray(freq, dtype=float)
        if freq.ndim != 2 or freq.shape[1] != n:
            raise ValueError("freq must be a (n_resamples, n) matrix")
        return None, freq, int(freq.shape[0])
    if indices is None:
        idx = bootstrap_indices(n, n_resamples, seed)
    else:
        idx = np.asarray(indices)
        if idx.ndim != 2 or (idx.size and (idx.min() < 0 or idx.max() >= n)):
            raise ValueError("indices must be a (n_resamples, n) matrix of valid row indices")
    return idx, None, int(idx.shape[0])


def bootstrap_ci(fn: Callable[..., Any], *arrays: Any, n_resamples: int = 1000,
                 seed: int | None = 0, confidence: float = 0.95, method: str = "percentile",
                 indices: np.ndarray | None = None, vectorized: bool | str = False,
                 batch_size: int | None = None, freq: np.ndarray | None = None) -> dict:
    """Bootstrap confidence interval resampling dialogues (rows).

    The same row indices are applied to every array / DataFrame in ``arrays`` (so paired
    data stay paired).  ``fn(*resampled) -> float``; resamples where it returns NaN /
    None are dropped and counted (``n_valid``).  The estimate is ``fn`` on the full data.
    Returns ``{"estimate", "ci_low", "ci_high", "n_resamples", "n_valid", "seed",
    "method", "confidence", "warnings"}``.  ``method="bca"`` also evaluates ``fn`` on the n
    leave-one-out samples (jackknife) for the acceleration and adds ``bias_correction`` and
    ``acceleration``; the result then matches ``scipy.stats.bootstrap(method="BCa")`` drawing
    the same resamples (same seed; tested).

    Fast paths:

    * ``indices``: a precomputed ``(B, n)`` index matrix (:func:`bootstrap_indices`),
      shared across items so every item is resampled identically; ``seed`` is then only
      recorded.
    * ``vectorized=True``: ``fn`` receives arrays with a leading resample axis
      ``(b, n, ...)`` and returns ``b`` values -- e.g.
      ``lambda a, b: cohen_kappa_codes(a, b, 2)``.  Resamples are processed in batches of
      ``batch_size`` (default: about 2e7 elements per batch).
    * ``vectorized="freq"``: ``fn(freq, *arrays)`` receives a ``(b, n)`` multiplicity
      matrix (:func:`bootstrap_freq`) and the *original* arrays and returns ``b`` values,
      e.g. ``lambda f, t: gwet_ac1_counts(t, freq=f)``.  Fastest for sum-decomposable
      statistics; pass a precomputed ``freq`` matrix to share it across items.
    """
    if not arrays:
        raise ValueError("at least one array is required")
    arrays = tuple(a if isinstance(a, pd.DataFrame | pd.Series | np.ndarray) else np.asarray(a)
                   for a in arrays)
    if vectorized not in (False, True, "freq"):
        raise ValueError("vectorized must be False, True or 'freq'")
    n = len(arrays[0])
    for a in arrays[1:]:
        if len(a) != n:
            raise ValueError("all arrays must have the same number of rows")
    idx, freq, n_boot = _resamples(n, n_resamples, seed, indices, freq, vectorized)
    warns: list[str] = []
    if n == 0:
        warns.append(M.say(M.NOTHING_TO_RESAMPLE))
        return bootstrap_summary(None, [], confidence=confidence, method=method, seed=seed,
                                 n_resamples=n_boot, warnings=warns, jackknife=[])

    def as_float(v: Any) -> float:
        try:
            return float("nan") if v is None else float(v)
        except (TypeError, ValueError):
            return float("nan")

    def first(v: Any) -> float:
        return as_float(np.asarray(v, dtype=float).ravel()[0])

    with _warnings.catch_warnings(), np.errstate(all="ignore"):
        _warnings.simplefilter("ignore", RuntimeWarning)
        if vectorized:
            arrs = [a.to_numpy() if isinstance(a, pd.DataFrame | pd.Series) else np.asarray(a)
                    for a in arrays]
            if vectorized == "freq":
                estimate = first(fn(np.ones((1, n)), *arrs))
                per_row = n
            else:
                estimate = first(fn(*[a[None, ...] for a in arrs]))
                per_row = max(1, sum(int(np.prod(a.shape[1:])) for a in arrs) * n)
            size = batch_size or max(1, int(2e7 // per_row))
            chunks = []
            for start in range(0, n_boot, size):
                if vectorized == "freq":
                    sub_f = (freq[start:start + size] if freq is not None
                             else bootstrap_freq(idx[start:start + size], n))
                    res = fn(sub_f, *arrs)
                    m = sub_f.shape[0]
                else:
                    sub = idx[start:start + size]
                    res = fn(*[a[sub] for a in arrs])
                    m = sub.shape[0]
                res = np.asarray(res, dtype=float).ravel()
                if res.size != m:
                    raise ValueError("vectorized fn must return one value per resample")
                chunks.append(res)
            values = np.concatenate(chunks) if chunks else np.array([])
        else:
            estimate = as_float(fn(*arrays))
            values = np.fromiter((as_float(fn(*[_take(a, row) for a in arrays]))
                                  for row in idx), dtype=float, count=n_boot)
        jackknife = None
        if method == "bca":
            if vectorized == "freq":
                jackknife = np.asarray(fn(LeaveOneOut(n), *arrs), dtype=float).ravel()
            else:
                leave_out = np.array([np.delete(np.arange(n), i) for i in range(n)]) if n > 1 else None
                if leave_out is None:
                    jackknife = np.array([np.nan])
                elif vectorized:
                    jackknife = np.asarray(fn(*[a[leave_out] for a in arrs]), dtype=float).ravel()
                else:
                    jackknife = np.array([as_float(fn(*[_take(a, row) for a in arrays])) for row in leave_out])
    return bootstrap_summary(estimate, values, confidence=confidence, method=method,
                             seed=seed, n_resamples=n_boot, warnings=warns, jackknife=jackknife)
