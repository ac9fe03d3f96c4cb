"""Scale reliability and factorability: Cronbach's alpha (and alpha if item deleted), KMO and
Bartlett's test of sphericity."""

from __future__ import annotations

import warnings as _warnings
from typing import Any

import numpy as np
from scipy import stats as _sps

from scoring.stats._common import _EPS, SINGULAR_COND, _fmt_names, _num, _numeric_frame, _zero_variance


# --------------------------------------------------------------------------------------
# Cronbach's alpha, alpha-if-deleted
# --------------------------------------------------------------------------------------
def cronbach_alpha(df: Any, nan_policy: str = "pairwise", confidence: float = 0.95) -> dict:
    """Cronbach's alpha with Feldt's confidence interval (pingouin.cronbach_alpha).

    ``df`` is wide: rows subjects (dialogues), columns items.  Missing values are handled
    ``"pairwise"`` (default; R ``psych::alpha(use="pairwise")`` and pingouin's default) or
    ``"listwise"``.  Alpha comes from :func:`pingouin.cronbach_alpha`; the CI uses the same
    Feldt, Woodruff & Salih (1987) F-distribution formula as pingouin / R psych but is not
    rounded (pingouin rounds it to 3 decimals).  With ``"listwise"`` the CI's degrees of
    freedom use the complete cases actually analysed (``n`` in the result); pingouin (and,
    per its docs, psych) keep the pre-deletion row count there, which gives a narrower
    interval than the data support.

    Returns ``{"alpha", "ci_low", "ci_high", "n", "k", "warnings"}`` (``None`` where
    undefined).
    """
    if nan_policy not in ("pairwise", "listwise"):
        raise ValueError("nan_policy must be 'pairwise' or 'listwise'")
    data = _numeric_frame(df, "df")
    warns: list[str] = []
    out = {"alpha": None, "ci_low": None, "ci_high": None, "n": 0, "k": int(data.shape[1]),
           "warnings": warns}
    all_nan = data.isna().all(axis=1)
    if all_nan.any():
        warns.append(f"{int(all_nan.sum())} subject(s) with no item scores were ignored.")
        data = data.loc[~all_nan]
    if nan_policy == "listwise" and data.isna().any().any():
        before = len(data)
        data = data.dropna(how="any")
        warns.append(f"{before - len(data)} subject(s) with missing item scores removed "
                     "(listwise deletion).")
    n, k = data.shape
    out["n"], out["k"] = int(n), int(k)
    if k < 2:
        warns.append("Cronbach's alpha is undefined: at least two items are required "
                     f"(got {k}).")
        return out
    if n < 2:
        warns.append("Cronbach's alpha is undefined: at least two subjects are required "
                     f"(got {n}).")
        return out
    zero = _zero_variance(data)
    if zero:
        warns.append(f"Zero-variance item(s): {_fmt_names(zero)} (no variation across "
                     "subjects; they add nothing to the total-score variance).")
    cov = data.cov()
    total_var = float(np.nansum(cov.to_numpy()))
    if not np.isfinite(total_var) or total_var <= _EPS or cov.isna().any().any():
        warns.append("Cronbach's alpha is undefined: the total-score variance is zero or "
                     "cannot be estimated (no variation / too few overlapping scores).")
        return out
    import pingouin as pg

    alpha, _ = pg.cronbach_alpha(data=data, nan_policy=nan_policy, ci=confidence)
    alpha = _num(alpha)
    if alpha is None:
        warns.append("Cronbach's alpha is undefined for these data.")
        return out
    out["alpha"] = alpha
    df1 = n - 1
    df2 = df1 * (k - 1)
    tail = 1.0 - confidence
    out["ci_low"] = _num(1 - (1 - alpha) * _sps.f.isf(tail / 2, df1, df2))
    out["ci_high"] = _num(1 - (1 - alpha) * _sps.f.isf(1 - tail / 2, df1, df2))
    if alpha < 0:
        warns.append("Negative alpha: items are negatively correlated on average "
                     "(check reverse-keyed items).")
    return out


def alpha_if_deleted(df: Any, nan_policy: str = "pairwise") -> dict:
    """``{item: alpha of the scale without that item}`` (None where undefined)."""
    data = _numeric_frame(df, "df")
    result: dict[str, float | None] = {}
    for col in data.columns:
        rest = data.drop(columns=[col])
        result[str(col)] = cronbach_alpha(rest, nan_policy=nan_policy)["alpha"]
    return result


# --------------------------------------------------------------------------------------
# KMO and Bartlett's test of sphericity
# --------------------------------------------------------------------------------------
def _factorability_checks(df: Any) -> tuple[np.ndarray | None, list[str], list[str]]:
    """Shared checks: listwise deletion, n > p, zero variance, singular correlation."""
    data = _numeric_frame(df, "df")
    warns: list[str] = []
    cols = [str(c) for c in data.columns]
    if data.isna().any().any():
        before = len(data)
        data = data.dropna(how="any")
        warns.append(f"{before - len(data)} row(s) with missing values removed "
                     "(listwise deletion).")
    n, p = data.shape
    if p < 2:
        warns.append(f"Undefined: at least two variables are required (got {p}).")
        return None, warns, cols
    if n <= p:
        warns.append(f"Undefined: n <= p ({n} complete observation(s) for {p} variables); "
                     "the correlation matrix is necessarily singular.")
        return None, warns, cols
    zero = _zero_variance(data)
    if zero:
        warns.append(f"Undefined: zero-variance variable(s) {_fmt_names(zero)} have no "
                     "correlation with anything.")
        return None, warns, cols
    x = data.to_numpy(dtype=float)
    r = np.corrcoef(x, rowvar=False)
    rank = int(np.linalg.matrix_rank(r))
    cond = float(np.linalg.cond(r))
    if rank < p or not np.isfinite(cond) or cond > SINGULAR_COND:
        warns.append(f"Undefined: the correlation matrix is singular (rank {rank} of {p}, "
                     f"condition number {cond:.3g}); some variables are linear combinations "
                     "of others. No pseudo-inverse value is reported.")
        return None, warns, cols
    return x, warns, cols


def kmo(df: Any) -> dict:
    """Kaiser-Meyer-Olkin measure of sampling adequacy (factor_analyzer.calculate_kmo).

    Returns ``{"overall", "items": {column: msa}, "warnings"}``.  factor_analyzer falls
    back to a pseudo-inverse for a (near-)singular correlation matrix; we detect n <= p,
    zero-variance variables and singularity (rank / condition number > 1e12) first and
    return ``None`` with the reason instead.
    """
    x, warns, cols = _factorability_checks(df)
    out = {"overall": None, "items": {c: None for c in cols}, "warnings": warns}
    if x is None:
        return out
    from factor_analyzer.factor_analyzer import calculate_kmo

    with _warnings.catch_warnings():
        _warnings.simplefilter("ignore")
        per_item, overall = calculate_kmo(x)
    out["overall"] = _num(overall)
    out["items"] = {c: _num(v) for c, v in zip(cols, np.asarray(per_item).ravel(), strict=True)}
    return out


def bartlett_sphericity(df: Any) -> dict:
    """Bartlett's (1950) test of sphericity (factor_analyzer.calculate_bartlett_sphericity).

    Returns ``{"chi2", "dof", "p", "warnings"}``; ``None`` with a reason when undefined
    (same checks as :func:`kmo`).
    """
    x, warns, cols = _factorability_checks(df)
    p_vars = len(cols)
    out = {"chi2": None, "dof": int(p_vars * (p_vars - 1) // 2), "p": None, "warnings": warns}
    if x is None:
        return out
    from factor_analyzer.factor_analyzer import calculate_bartlett_sphericity

    with _warnings.catch_warnings():
        _warnings.simplefilter("ignore")
        chi2, p = calculate_bartlett_sphericity(x)
    out["chi2"], out["p"] = _num(chi2), _num(p)
    if out["chi2"] is None:
        warns.append("Undefined: determinant of the correlation matrix is not positive.")
        out["p"] = None
    return out
