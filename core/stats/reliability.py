"""Scale reliability and factorability: Cronbach's alpha (and alpha if item deleted, a cluster-bootstrap
kernel, ordinal alpha), tetrachoric correlations, KMO and Bartlett's test of sphericity."""

from __future__ import annotations

import warnings as _warnings
from typing import Any

import numpy as np

from core.stats import messages as M
from core.stats._common import (
    _EPS,
    SINGULAR_COND,
    _fmt_names,
    _num,
    _numeric_frame,
    _zero_variance,
    weighted_sums,
)

CORRELATIONS = ("pearson", "tetrachoric")


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
        warns.append(M.say(M.SUBJECTS_NO_ITEM_SCORES, n=int(all_nan.sum())))
        data = data.loc[~all_nan]
    if nan_policy == "listwise" and data.isna().any().any():
        before = len(data)
        data = data.dropna(how="any")
        warns.append(M.say(M.SUBJECTS_INCOMPLETE, n=before - len(data)))
    n, k = data.shape
    out["n"], out["k"] = int(n), int(k)
    if k < 2:
        warns.append(M.say(M.CRONBACH_TWO_ITEMS, n=k))
        return out
    if n < 2:
        warns.append(M.say(M.CRONBACH_TWO_SUBJECTS, n=n))
        return out
    zero = _zero_variance(data)
    if zero:
        warns.append(M.say(M.ZERO_VARIANCE_ITEMS, names=_fmt_names(zero)))
    cov = data.cov()
    total_var = float(np.nansum(cov.to_numpy()))
    if not np.isfinite(total_var) or total_var <= _EPS or cov.isna().any().any():
        warns.append(M.say(M.CRONBACH_NO_VARIANCE))
        return out
    import pingouin as pg

    alpha, _ = pg.cronbach_alpha(data=data, nan_policy=nan_policy, ci=confidence)
    alpha = _num(alpha)
    if alpha is None:
        warns.append(M.say(M.CRONBACH_UNDEFINED))
        return out
    out["alpha"] = alpha
    df1 = n - 1
    df2 = df1 * (k - 1)
    tail = 1.0 - confidence
    from scipy import stats as _sps  # here, not at import: scipy.stats alone takes seconds to import

    out["ci_low"] = _num(1 - (1 - alpha) * _sps.f.isf(tail / 2, df1, df2))
    out["ci_high"] = _num(1 - (1 - alpha) * _sps.f.isf(1 - tail / 2, df1, df2))
    if alpha < 0:
        warns.append(M.say(M.CRONBACH_NEGATIVE))
    return out


def alpha_if_deleted(df: Any, nan_policy: str = "pairwise") -> dict:
    """``{item: alpha of the scale without that item}`` (None where undefined).

    Complete data (no missing value): every value from one covariance matrix C, alpha_-i = (k-1)/(k-2) *
    (1 - (tr C - C_ii) / (sum C - 2 sum_j C_ij + C_ii)) -- Cronbach's formula on the remaining items, the same
    value as calling :func:`cronbach_alpha` k times (tested), in one pass instead of k.  With missing values,
    :func:`cronbach_alpha` per item (pairwise or listwise as asked).
    """
    data = _numeric_frame(df, "df")
    result: dict[str, float | None] = {}
    k = data.shape[1]
    if k >= 3 and len(data) >= 2 and not data.isna().any().any():
        cov = np.cov(data.to_numpy(dtype=float), rowvar=False)
        diag = np.diag(cov)
        total = cov.sum() - 2.0 * cov.sum(axis=1) + diag
        with np.errstate(invalid="ignore", divide="ignore"):
            values = (k - 1) / (k - 2) * (1.0 - (diag.sum() - diag) / total)
        for col, value, rest in zip(data.columns, values, total, strict=True):
            result[str(col)] = _num(value) if rest > _EPS else None
        return result
    for col in data.columns:
        rest = data.drop(columns=[col])
        result[str(col)] = cronbach_alpha(rest, nan_policy=nan_policy)["alpha"]
    return result


# --------------------------------------------------------------------------------------
# cluster bootstrap kernel and ordinal alpha
# --------------------------------------------------------------------------------------
def _cluster_sums(x: np.ndarray, clusters: np.ndarray, n_clusters: int) -> np.ndarray:
    return np.stack([np.bincount(clusters, weights=col, minlength=n_clusters) for col in x.T], axis=1)


def cronbach_alpha_clustered(data: Any, clusters: Any, freq: Any = None) -> np.ndarray | float:
    """Cronbach's alpha of rows that come in clusters (ratings of the same dialogue), vectorised for the cluster
    bootstrap.

    ``data``: complete rows x items (numbers); ``clusters``: the cluster index (0..C-1) of each row.  Without
    ``freq`` this is Cronbach's alpha of all rows (the same value as :func:`cronbach_alpha`); with ``freq`` a
    ``(B, C)`` matrix of how often each *cluster* is drawn (:func:`bootstrap_freq` over clusters), or
    :func:`jackknife_freq` for leave-one-cluster-out values, it returns one alpha per resample, every row of a
    drawn cluster counted as often as the cluster.  alpha = k/(k-1) (1 - sum_i var_i / var_total), from the
    weighted sums of x, x^2, the total and its square (the n-1 denominators cancel).  NaN where undefined.
    """
    x = np.asarray(data, dtype=float)
    groups = np.asarray(clusters, dtype=np.int64)
    n_rows, k = x.shape
    n_clusters = int(groups.max()) + 1 if groups.size else 0
    total = x.sum(axis=1)
    columns = np.column_stack([np.ones(n_rows), x, x * x, total, total * total])
    per_cluster = _cluster_sums(columns, groups, n_clusters) if n_rows else np.zeros((0, columns.shape[1]))
    sums = per_cluster.sum(axis=0)[None, :] if freq is None else weighted_sums(freq, per_cluster)
    w, s1, s2 = sums[:, 0], sums[:, 1:k + 1], sums[:, k + 1:2 * k + 1]
    t1, t2 = sums[:, 2 * k + 1], sums[:, 2 * k + 2]
    with np.errstate(invalid="ignore", divide="ignore"):
        item_ss = (s2 - s1 * s1 / w[:, None]).sum(axis=1)
        total_ss = t2 - t1 * t1 / w
        alpha = np.where((w >= 2) & (total_ss > _EPS) & (k >= 2),
                         k / (k - 1.0) * (1.0 - item_ss / total_ss), np.nan)
    return float(alpha[0]) if freq is None else alpha


def ordinal_alpha(df: Any) -> dict:
    """Ordinal alpha on binary items: the standardised alpha of the tetrachoric correlation matrix,
    k r / (1 + (k - 1) r) with r the mean off-diagonal tetrachoric correlation (Zumbo, Gadermann & Zeisser
    2007; Gadermann, Guhn & Zumbo 2012).  Returns ``{"alpha", "mean_r", "k", "n", "warnings"}``."""
    data = _numeric_frame(df, "df").dropna(how="any")
    warns: list[str] = []
    out = {"alpha": None, "mean_r": None, "k": int(data.shape[1]), "n": int(len(data)), "warnings": warns}
    if data.shape[1] < 2 or len(data) < 2:
        warns.append(M.say(M.ORDINAL_TOO_SMALL))
        return out
    r, cwarns = tetrachoric_matrix(data)
    warns.extend(cwarns)
    k = r.shape[0]
    off = r[~np.eye(k, dtype=bool)]
    if not np.isfinite(off).all():
        warns.append(M.say(M.ORDINAL_CORRELATION))
        return out
    mean_r = float(off.mean())
    out["mean_r"] = mean_r
    out["alpha"] = _num(k * mean_r / (1 + (k - 1) * mean_r))
    return out


def tetrachoric_clustered(data: Any, clusters: Any, freq: Any = None, correct: float = 0.5) -> np.ndarray:
    """Tetrachoric correlations of every pair of 0/1 columns (order of ``np.triu_indices(k, 1)``), from rows in
    clusters, vectorised for the cluster bootstrap like :func:`cronbach_alpha_clustered` (each pair's 2x2 table is a
    sum over clusters).  Returns ``(1, pairs)`` without ``freq``, else ``(B, pairs)``."""
    x = np.asarray(data, dtype=float)
    groups = np.asarray(clusters, dtype=np.int64)
    n_rows, k = x.shape
    n_clusters = int(groups.max()) + 1 if groups.size else 0
    i, j = np.triu_indices(k, 1)
    columns = np.column_stack([np.ones(n_rows), x, x[:, i] * x[:, j]])
    per_cluster = _cluster_sums(columns, groups, n_clusters)
    sums = per_cluster.sum(axis=0)[None, :] if freq is None else weighted_sums(freq, per_cluster)
    n, ones, both = sums[:, :1], sums[:, 1:k + 1], sums[:, k + 1:]
    return tetrachoric_counts(n - ones[:, i] - ones[:, j] + both, ones[:, j] - both, ones[:, i] - both, both,
                              correct)


def standardized_alpha(mean_r: Any, k: int) -> Any:
    """k r / (1 + (k - 1) r): alpha from the mean inter-item correlation (ordinal alpha on tetrachoric r)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return k * np.asarray(mean_r, dtype=float) / (1 + (k - 1) * np.asarray(mean_r, dtype=float))


def ordinal_alpha_clustered(data: Any, clusters: Any, freq: Any = None, correct: float = 0.5
                            ) -> np.ndarray | float:
    """:func:`ordinal_alpha` on 0/1 rows in clusters, vectorised for the cluster bootstrap."""
    k = np.asarray(data).shape[1]
    alpha = standardized_alpha(tetrachoric_clustered(data, clusters, freq, correct).mean(axis=1), k)
    return float(alpha[0]) if freq is None else alpha


# --------------------------------------------------------------------------------------
# tetrachoric correlation
# --------------------------------------------------------------------------------------
def bivariate_normal_cdf(h: Any, k: Any, rho: Any) -> np.ndarray:
    """P(X <= h, Y <= k) for standard bivariate normal X, Y with correlation rho (vectorised).

    Owen's (1956) formula with Owen's T function (scipy.special.owens_t, a ufunc)::

        Phi2(h, k; rho) = Phi(h)/2 + Phi(k)/2 - T(h, a_h) - T(k, a_k) - beta,
        a_h = (k - rho h) / (h sqrt(1 - rho^2)),  a_k = (h - rho k) / (k sqrt(1 - rho^2)),
        beta = 1/2 if h k < 0 else 0

    (Owen 1956, Ann Math Stat 27:1075-1090, eq. 3.1).  A threshold of exactly 0 is moved to 1e-15 (Phi2 is
    continuous there; the formula's a_h is not); |rho| = 1 gives the limits min(Phi(h), Phi(k)) and
    max(0, Phi(h) + Phi(k) - 1).  Tested against scipy.stats.multivariate_normal and Kirk (1973).
    """
    from scipy.special import ndtr, owens_t

    h, k, rho = np.broadcast_arrays(np.asarray(h, float), np.asarray(k, float), np.asarray(rho, float))
    h = np.where(h == 0, 1e-15, h)
    k = np.where(k == 0, 1e-15, k)
    scale = np.sqrt(np.maximum(1.0 - rho * rho, 0.0))
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        a_h = (k - rho * h) / (h * scale)
        a_k = (h - rho * k) / (k * scale)
        value = 0.5 * ndtr(h) + 0.5 * ndtr(k) - owens_t(h, a_h) - owens_t(k, a_k) - np.where(h * k < 0, 0.5, 0.0)
    value = np.where(rho >= 1.0, np.minimum(ndtr(h), ndtr(k)), value)
    return np.where(rho <= -1.0, np.maximum(0.0, ndtr(h) + ndtr(k) - 1.0), value)


def tetrachoric_counts(n00: Any, n01: Any, n10: Any, n11: Any, correct: float = 0.5) -> np.ndarray:
    """Tetrachoric correlations of 2x2 tables given by their cells (vectorised; n_xy = count of x = x, y = y).

    Two-step estimator (Olsson 1979; R ``psych::tetrachoric``): thresholds from the marginal proportions,
    tau_x = Phi^-1(P(x = 0)), tau_y = Phi^-1(P(y = 0)); then rho solves Phi2(tau_x, tau_y; rho) = P(x = 0,
    y = 0), the maximum-likelihood estimate given the thresholds (a 2x2 table with fixed margins has one free
    cell).  Solved by bisection on (-1, 1) (Phi2 increases with rho), polished by Newton steps.
    ``correct``: added to empty cells, as psych's default continuity correction (0.5).  NaN when a variable does
    not vary.
    """
    from scipy.special import ndtri

    cells = [np.asarray(c, dtype=float) for c in np.broadcast_arrays(n00, n01, n10, n11)]
    if correct:
        cells = [np.where(c == 0, correct, c) for c in cells]
    a, b, c, d = cells  # 00, 01, 10, 11
    n = a + b + c + d
    with np.errstate(invalid="ignore", divide="ignore"):
        px0 = (a + b) / n
        py0 = (a + c) / n
        target = a / n
        defined = (np.minimum(a + b, c + d) > 0) & (np.minimum(a + c, b + d) > 0) & (n > 0)
        tx = ndtri(np.where(defined, px0, 0.5))
        ty = ndtri(np.where(defined, py0, 0.5))
    lo = np.full(a.shape, -1.0)
    hi = np.full(a.shape, 1.0)
    target = np.where(defined, target, 0.25)
    for _ in range(10):  # bisection to within 2^-10, then safeguarded Newton steps
        mid = (lo + hi) / 2.0
        above = bivariate_normal_cdf(tx, ty, mid) > target
        hi = np.where(above, mid, hi)
        lo = np.where(above, lo, mid)
    rho = (lo + hi) / 2.0
    for _ in range(6):
        # d Phi2 / d rho = phi2(h, k; rho), the bivariate normal density (Plackett 1954)
        one_minus = 1.0 - rho * rho
        density = np.exp(-(tx * tx - 2.0 * rho * tx * ty + ty * ty) / (2.0 * one_minus)) / (
            2.0 * np.pi * np.sqrt(one_minus))
        with np.errstate(invalid="ignore", divide="ignore"):
            step = (bivariate_normal_cdf(tx, ty, rho) - target) / density
        proposal = rho - np.where(np.isfinite(step), step, 0.0)
        rho = np.where((proposal > lo) & (proposal < hi), proposal, rho)
    return np.where(defined, rho, np.nan)


def tetrachoric_detail(x: Any, y: Any, correct: float = 0.5) -> dict:
    """Tetrachoric correlation of two 0/1 variables (pairs with a missing value dropped); see
    :func:`tetrachoric_counts`.  Returns ``{"value", "table", "thresholds", "n", "warnings"}``."""
    a = np.asarray(x, dtype=float).ravel()
    b = np.asarray(y, dtype=float).ravel()
    if a.shape != b.shape:
        raise ValueError("x and y differ in length")
    keep = ~(np.isnan(a) | np.isnan(b))
    a, b = a[keep], b[keep]
    if not np.isin(a, (0, 1)).all() or not np.isin(b, (0, 1)).all():
        raise ValueError("tetrachoric correlations need 0/1 variables")
    table = [[int(((a == 0) & (b == 0)).sum()), int(((a == 0) & (b == 1)).sum())],
             [int(((a == 1) & (b == 0)).sum()), int(((a == 1) & (b == 1)).sum())]]
    warns: list[str] = []
    out = {"value": None, "table": table, "thresholds": [None, None], "n": int(a.size), "warnings": warns}
    if a.size == 0 or np.ptp(a) == 0 or np.ptp(b) == 0:
        warns.append(M.say(M.TETRACHORIC_NO_VARIATION))
        return out
    if correct and min(min(row) for row in table) == 0:
        warns.append(M.say(M.TETRACHORIC_EMPTY_CELL, correction=f"{correct:g}"))
    from scipy.special import ndtri

    t = np.asarray(table, dtype=float)
    if correct:
        t = np.where(t == 0, correct, t)
    out["thresholds"] = [_num(ndtri(t[0].sum() / t.sum())), _num(ndtri(t[:, 0].sum() / t.sum()))]
    out["value"] = _num(tetrachoric_counts(*np.asarray(table, dtype=float).ravel(), correct=correct))
    return out


def tetrachoric_matrix(df: Any, correct: float = 0.5) -> tuple[np.ndarray, list[str]]:
    """Matrix of tetrachoric correlations of 0/1 columns (complete rows), diagonal 1; with the warnings."""
    data = _numeric_frame(df, "df").dropna(how="any")
    x = data.to_numpy(dtype=float)
    if not np.isin(x, (0, 1)).all():
        raise ValueError("tetrachoric correlations need 0/1 items")
    k = x.shape[1]
    i, j = np.triu_indices(k, 1)
    n11 = (x[:, i] * x[:, j]).sum(axis=0)
    ones = x.sum(axis=0)
    n = x.shape[0]
    rho = tetrachoric_counts(n - ones[i] - ones[j] + n11, ones[j] - n11, ones[i] - n11, n11, correct)
    r = np.eye(k)
    r[i, j] = r[j, i] = rho
    warns = []
    empty = int(((np.stack([n - ones[i] - ones[j] + n11, ones[j] - n11, ones[i] - n11, n11]) == 0)
                 .any(axis=0)).sum())
    if empty and correct:
        warns.append(M.say(M.TETRACHORIC_EMPTY_CELLS, n=empty, correction=f"{correct:g}"))
    return r, warns


def correlation_matrix(df: Any, correlation: str = "pearson") -> tuple[np.ndarray, list[str]]:
    """Pearson (on 0/1 items: phi) or tetrachoric correlation matrix of complete rows."""
    if correlation not in CORRELATIONS:
        raise ValueError(f"correlation must be one of {CORRELATIONS}")
    if correlation == "tetrachoric":
        return tetrachoric_matrix(df)
    data = _numeric_frame(df, "df").dropna(how="any")
    return np.corrcoef(data.to_numpy(dtype=float), rowvar=False), []


# --------------------------------------------------------------------------------------
# KMO and Bartlett's test of sphericity
# --------------------------------------------------------------------------------------
def _factorability_checks(df: Any, correlation: str = "pearson"
                          ) -> tuple[np.ndarray | None, np.ndarray | None, list[str], list[str]]:
    """Shared checks: listwise deletion, n > p, zero variance, singular correlation.

    Returns ``(x, r, warnings, columns)``: the complete rows and their correlation matrix (Pearson or
    tetrachoric), or ``None`` with the reason.
    """
    if correlation not in CORRELATIONS:
        raise ValueError(f"correlation must be one of {CORRELATIONS}")
    data = _numeric_frame(df, "df")
    warns: list[str] = []
    cols = [str(c) for c in data.columns]
    if data.isna().any().any():
        before = len(data)
        data = data.dropna(how="any")
        warns.append(M.say(M.ROWS_INCOMPLETE, n=before - len(data)))
    n, p = data.shape
    if p < 2:
        warns.append(M.say(M.TWO_VARIABLES, n=p))
        return None, None, warns, cols
    if n <= p:
        warns.append(M.say(M.N_NOT_ABOVE_P, n=n, p=p))
        return None, None, warns, cols
    zero = _zero_variance(data)
    if zero:
        warns.append(M.say(M.ZERO_VARIANCE_VARIABLES, names=_fmt_names(zero)))
        return None, None, warns, cols
    x = data.to_numpy(dtype=float)
    r, cwarns = correlation_matrix(data, correlation)
    warns.extend(cwarns)
    if not np.isfinite(r).all():
        warns.append(M.say(M.CORRELATION_UNDEFINED))
        return None, None, warns, cols
    rank = int(np.linalg.matrix_rank(r))
    cond = float(np.linalg.cond(r))
    if rank < p or not np.isfinite(cond) or cond > SINGULAR_COND:
        warns.append(M.say(M.SINGULAR, rank=rank, p=p, condition=f"{cond:.3g}"))
        return None, None, warns, cols
    if correlation == "tetrachoric" and np.linalg.eigvalsh(r).min() <= 0:
        warns.append(M.say(M.NOT_POSITIVE_DEFINITE))
        return None, None, warns, cols
    return x, r, warns, cols


def kmo_from_correlations(r: np.ndarray) -> tuple[np.ndarray, float]:
    """KMO per variable and overall from a correlation matrix (Kaiser 1970/1974): sum r_ij^2 / (sum r_ij^2 +
    sum q_ij^2) with q the partial (anti-image) correlations -R^-1_ij / sqrt(R^-1_ii R^-1_jj), the same formula
    as factor_analyzer's ``calculate_kmo`` (tested equal on Pearson matrices)."""
    inv = np.linalg.inv(r)
    scale = np.sqrt(np.outer(np.diag(inv), np.diag(inv)))
    partial = -inv / scale
    off = ~np.eye(r.shape[0], dtype=bool)
    r2 = np.where(off, r, 0.0) ** 2
    q2 = np.where(off, partial, 0.0) ** 2
    per_item = r2.sum(axis=0) / (r2.sum(axis=0) + q2.sum(axis=0))
    return per_item, float(r2.sum() / (r2.sum() + q2.sum()))


def bartlett_from_correlations(r: np.ndarray, n: int) -> tuple[float, int, float]:
    """Bartlett's (1950) test of sphericity from a correlation matrix and the number of independent
    observations n: chi2 = -(n - 1 - (2p + 5) / 6) ln det R on p (p - 1) / 2 df (the formula of factor_analyzer's
    ``calculate_bartlett_sphericity``, tested equal)."""
    p = r.shape[0]
    sign, logdet = np.linalg.slogdet(r)
    dof = p * (p - 1) // 2
    if sign <= 0:
        return float("nan"), dof, float("nan")
    chi2 = -(n - 1 - (2 * p + 5) / 6.0) * logdet
    from scipy.special import chdtrc  # scipy.stats.chi2.sf, without importing scipy.stats

    return float(chi2), dof, float(chdtrc(dof, chi2))


def kmo(df: Any, correlation: str = "pearson") -> dict:
    """Kaiser-Meyer-Olkin measure of sampling adequacy.

    Pearson correlations (phi on 0/1 items, the default): factor_analyzer.calculate_kmo.  Tetrachoric:
    :func:`kmo_from_correlations` on :func:`tetrachoric_matrix`.  Returns ``{"overall", "items": {column:
    msa}, "correlation", "warnings"}``.  factor_analyzer falls back to a pseudo-inverse for a (near-)singular
    correlation matrix; we detect n <= p, zero-variance variables and singularity (rank / condition number >
    1e12) first and return ``None`` with the reason instead.
    """
    x, r, warns, cols = _factorability_checks(df, correlation)
    out = {"overall": None, "items": {c: None for c in cols}, "correlation": correlation, "warnings": warns}
    if x is None:
        return out
    if correlation == "pearson":
        from factor_analyzer.factor_analyzer import calculate_kmo

        with _warnings.catch_warnings():
            _warnings.simplefilter("ignore")
            per_item, overall = calculate_kmo(x)
    else:
        per_item, overall = kmo_from_correlations(r)
    out["overall"] = _num(overall)
    out["items"] = {c: _num(v) for c, v in zip(cols, np.asarray(per_item).ravel(), strict=True)}
    return out


def bartlett_sphericity(df: Any, correlation: str = "pearson", n: int | None = None) -> dict:
    """Bartlett's (1950) test of sphericity.

    Pearson correlations and ``n`` = the number of rows: factor_analyzer.calculate_bartlett_sphericity.
    ``n``: the number of *independent* observations when rows are not independent (e.g. several raters'
    ratings of each dialogue: pass the number of dialogues; the statistic grows with n, so counting every
    rating as independent makes p too small).  Tetrachoric or a given ``n``: :func:`bartlett_from_correlations`.
    Returns ``{"chi2", "dof", "p", "n", "correlation", "warnings"}``; ``None`` with a reason when undefined
    (same checks as :func:`kmo`).
    """
    x, r, warns, cols = _factorability_checks(df, correlation)
    p_vars = len(cols)
    out = {"chi2": None, "dof": int(p_vars * (p_vars - 1) // 2), "p": None, "n": None,
           "correlation": correlation, "warnings": warns}
    if x is None:
        return out
    rows = int(x.shape[0])
    used_n = rows if n is None else int(n)
    out["n"] = used_n
    if used_n - 1 - (2 * p_vars + 5) / 6.0 <= 0:
        warns.append(M.say(M.BARTLETT_TOO_SMALL, n=used_n, p=p_vars))
        return out
    if correlation == "pearson" and used_n == rows:
        from factor_analyzer.factor_analyzer import calculate_bartlett_sphericity

        with _warnings.catch_warnings():
            _warnings.simplefilter("ignore")
            chi2, p = calculate_bartlett_sphericity(x)
    else:
        chi2, _, p = bartlett_from_correlations(r, used_n)
    out["chi2"], out["p"] = _num(chi2), _num(p)
    if out["chi2"] is None:
        warns.append(M.say(M.BARTLETT_DETERMINANT))
        out["p"] = None
    return out
