"""Method comparison: Bland-Altman bias and limits of agreement (Bland & Altman 1986, Lancet 327(8476):307-310).

:func:`bland_altman` gives the point figures with the analytic 95% CIs of the paper (bias: t * s / sqrt(n);
limits: t * sqrt(3 s^2 / n)), the formulas pingouin.plot_blandaltman draws. :func:`bland_altman_sums` is the
vectorised bootstrap kernel for clustered differences (several per dialogue), where those analytic CIs would be
too narrow.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from core.stats import messages as M
from core.stats._common import _num, weighted_sums

#: Limits of agreement: bias +- 1.96 SD (Bland & Altman 1986).
LOA_Z = 1.96


def bland_altman(first: Any, second: Any, *, confidence: float = 0.95) -> dict:
    """Bias (mean of ``first - second``), SD of the differences, limits of agreement bias +- 1.96 SD, with CIs.

    Pairs with a missing value on either side are dropped. CIs (Bland & Altman 1986, sec. 5): bias +- t * s/sqrt(n)
    and limit +- t * sqrt(3 s^2 / n), t on n - 1 df. Returns ``{"bias", "bias_ci_low", "bias_ci_high", "sd",
    "loa_low", "loa_low_ci_low", "loa_low_ci_high", "loa_high", "loa_high_ci_low", "loa_high_ci_high", "n",
    "warnings"}`` (None where undefined, with the reason in ``warnings``).
    """
    a = np.asarray(first, dtype=float).ravel()
    b = np.asarray(second, dtype=float).ravel()
    if a.shape != b.shape:
        raise ValueError(f"first and second differ in length ({a.size} vs {b.size})")
    if not 0 < confidence < 1:
        raise ValueError("confidence must be between 0 and 1")
    keep = np.isfinite(a) & np.isfinite(b)
    diff = a[keep] - b[keep]
    n = int(diff.size)
    keys = ("bias", "bias_ci_low", "bias_ci_high", "sd", "loa_low", "loa_low_ci_low", "loa_low_ci_high",
            "loa_high", "loa_high_ci_low", "loa_high_ci_high")
    out: dict[str, Any] = {key: None for key in keys}
    out.update({"n": n, "warnings": []})
    if n == 0:
        out["warnings"].append(M.say(M.BLAND_ALTMAN_NO_PAIR))
        return out
    out["bias"] = _num(diff.mean())
    if n < 2:
        out["warnings"].append(M.say(M.BLAND_ALTMAN_ONE_PAIR))
        return out
    from scipy.special import stdtrit  # scipy.stats.t.ppf, without importing scipy.stats (seconds)

    sd = float(diff.std(ddof=1))
    t = float(stdtrit(n - 1, 0.5 + confidence / 2.0))
    se_bias = sd / np.sqrt(n)
    se_limit = np.sqrt(3.0 * sd ** 2 / n)
    low, high = out["bias"] - LOA_Z * sd, out["bias"] + LOA_Z * sd
    out.update({"sd": _num(sd), "bias_ci_low": _num(out["bias"] - t * se_bias),
                "bias_ci_high": _num(out["bias"] + t * se_bias), "loa_low": _num(low),
                "loa_low_ci_low": _num(low - t * se_limit), "loa_low_ci_high": _num(low + t * se_limit),
                "loa_high": _num(high), "loa_high_ci_low": _num(high - t * se_limit),
                "loa_high_ci_high": _num(high + t * se_limit)})
    if sd == 0:
        out["warnings"].append(M.say(M.BLAND_ALTMAN_SAME))
    return out


def bland_altman_sums(sums: np.ndarray, freq: Any) -> dict[str, np.ndarray]:
    """Bias and limits of agreement over bootstrap resamples of clusters (dialogues), vectorised.

    ``sums``: (n, 3) per cluster: sum of its differences, sum of their squares, their number. ``freq``: (B, n)
    multiplicities (:func:`core.stats.bootstrap_freq`) or a jackknife. Returns arrays (B,) ``bias``, ``sd``,
    ``loa_low``, ``loa_high`` (NaN where fewer than two differences are drawn).
    """
    total = weighted_sums(freq, np.asarray(sums, dtype=float))
    s1, s2, count = total[:, 0], total[:, 1], total[:, 2]
    with np.errstate(invalid="ignore", divide="ignore"):
        bias = np.where(count > 0, s1 / count, np.nan)
        var = np.where(count > 1, (s2 - count * bias ** 2) / (count - 1), np.nan)
        sd = np.sqrt(np.maximum(var, 0.0))
    return {"bias": bias, "sd": sd, "loa_low": bias - LOA_Z * sd, "loa_high": bias + LOA_Z * sd}


def differences_from_others(values: np.ndarray) -> np.ndarray:
    """Each rater minus the mean of the other raters of the same subject: (R, n) scores (NaN = missing) in, (R, n)
    differences out, NaN where the rater did not rate the subject or nobody else did (the physicians' own
    Bland-Altman: one physician against the mean of the others)."""
    x = np.asarray(values, dtype=float)
    rated = np.isfinite(x)
    total = np.where(rated, x, 0.0).sum(axis=0)
    count = rated.sum(axis=0)
    others = count[None, :] - rated
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_others = (total[None, :] - np.where(rated, x, 0.0)) / others
    return np.where(rated & (others > 0), x - mean_others, np.nan)


def cluster_sums(differences: np.ndarray) -> np.ndarray:
    """(R, n) differences (NaN = none) to the (n, 3) per-subject sums :func:`bland_altman_sums` resamples."""
    d = np.asarray(differences, dtype=float)
    ok = np.isfinite(d)
    z = np.where(ok, d, 0.0)
    return np.column_stack([z.sum(axis=0), (z * z).sum(axis=0), ok.sum(axis=0)])


def bland_altman_clustered(differences: np.ndarray, freq: Any, *, seed: int, jackknife: Any = None,
                           method: str = "percentile") -> dict:
    """:func:`bland_altman` of differences that come in clusters (several per subject: (R, n), NaN = none), with
    the CIs of bias and limits from a bootstrap over subjects (``freq``: (B, n) multiplicities; ``jackknife`` for
    BCa) instead of the analytic ones, which assume independent differences."""
    from core.stats.bootstrap import bootstrap_summary

    d = np.asarray(differences, dtype=float)
    flat = d[np.isfinite(d)]
    out = bland_altman(flat, np.zeros_like(flat))
    out["n_subjects"] = int(np.isfinite(d).any(axis=0).sum())
    sums = cluster_sums(d)
    boot = bland_altman_sums(sums, freq) if freq is not None and out["sd"] is not None else None
    jack = bland_altman_sums(sums, jackknife) if boot is not None and jackknife is not None else None
    for key in ("bias", "loa_low", "loa_high"):
        low, high = f"{key}_ci_low", f"{key}_ci_high"
        out[low] = out[high] = None
        if boot is None or out[key] is None:
            continue
        summary = bootstrap_summary(out[key], boot[key], seed=seed, n_resamples=len(boot[key]),
                                    method=method if jack is not None else "percentile",
                                    jackknife=None if jack is None else jack[key])
        out[low], out[high] = summary["ci_low"], summary["ci_high"]
        out["warnings"] = list(dict.fromkeys(out["warnings"] + summary["warnings"]))
    return out
