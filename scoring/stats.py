"""Reliability, agreement and accuracy statistics for the Mini-CEX Workbench.

Pure module: pandas / numpy in, plain JSON-serialisable values out (Python ``float``,
``int``, ``str``, ``None``, ``list`` and ``dict`` only -- never numpy scalars).  It must stay
importable without Django; nothing here touches the ORM or settings.

Conventions (DESIGN.md section 4 "Statistics conventions")
---------------------------------------------------------
* Statistics are delegated to established libraries wherever one exists:
  pingouin (Cronbach's alpha, ICC, Kendall's W via Friedman), krippendorff (Krippendorff's
  alpha), statsmodels (Cohen's and Fleiss' kappa), factor_analyzer (KMO, Bartlett) and scipy.
  Gwet's AC1 has no implementation in those libraries; it is implemented here from
  Gwet (2008), see :func:`gwet_ac1_counts`.
* A statistic that is undefined for the data (empty input, no variation, a single rater,
  n <= p, singular correlation matrix, ...) is reported as undefined with a human-readable
  reason -- ``None`` inside dicts, ``float('nan')`` from the float-returning functions --
  never as 0, 1 or a pseudo-inverse value.  Zero-variance items / raters are flagged by
  name in ``warnings``.  Every float-returning coefficient has a ``*_detail`` companion that
  returns ``{"value": float | None, "warnings": [...], ...}`` so reports can show the reason.
* Programming errors (unknown column, non-numeric ratings where numbers are required,
  mismatched lengths, unknown option) raise ``ValueError``; data-dependent undefinedness
  never raises.
* Bootstrap confidence intervals resample dialogues (rows) with a recorded seed.  For speed
  the agreement coefficients also exist as vectorised numpy kernels working on integer
  codes / count tables (:func:`cohen_kappa_codes`, :func:`gwet_ac1_counts`,
  :func:`fleiss_kappa_counts`, :func:`percent_agreement_counts`) which accept a leading
  batch axis or bootstrap multiplicities (``freq=``), so :func:`bootstrap_ci` can evaluate
  all resamples in one call (``vectorized=True`` or ``vectorized="freq"``).
"""

from __future__ import annotations

import math
import threading
import warnings as _warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as _sps

__all__ = [
    "alpha_if_deleted",
    "bartlett_sphericity",
    "bootstrap_ci",
    "bootstrap_freq",
    "bootstrap_indices",
    "bootstrap_summary",
    "classification_report",
    "cohen_kappa",
    "cohen_kappa_codes",
    "cohen_kappa_detail",
    "count_table",
    "cronbach_alpha",
    "encode_labels",
    "fleiss_kappa",
    "fleiss_kappa_counts",
    "fleiss_kappa_detail",
    "gwet_ac1",
    "gwet_ac1_counts",
    "gwet_ac1_detail",
    "icc",
    "interpret",
    "kendall_w",
    "kmo",
    "krippendorff_alpha",
    "krippendorff_alpha_counts",
    "krippendorff_alpha_detail",
    "percent_agreement",
    "percent_agreement_counts",
    "percent_agreement_detail",
]

#: Condition number above which a correlation matrix is treated as singular.
SINGULAR_COND = 1e12
#: Denominators at or below this are treated as zero (0/0 -> undefined).
_EPS = 1e-12

# pingouin.intraclass_corr rounds its CI column through a global option; we switch it
# off for the duration of our call (and serialise our own calls with this lock).
_PG_LOCK = threading.Lock()


# --------------------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------------------
def _num(x: Any) -> float | None:
    """Python float, or None when x is None / NaN / +-inf (JSON has no NaN)."""
    if x is None:
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _nan(x: Any) -> float:
    """Python float, NaN for None / non-finite."""
    v = _num(x)
    return float("nan") if v is None else v


def _py(x: Any) -> Any:
    """Convert numpy / pandas scalars (and containers) to plain Python objects."""
    if isinstance(x, dict):
        return {k if isinstance(k, str) else str(_py(k)): _py(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_py(v) for v in x]
    if isinstance(x, np.ndarray):
        return [_py(v) for v in x.tolist()]
    if isinstance(x, np.bool_):
        return bool(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating | float):
        return _num(x)
    if isinstance(x, np.generic):
        return x.item()
    return x


def _label(x: Any) -> Any:
    """A category label as a JSON-friendly Python value."""
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and x.is_integer():
        return int(x)
    return x


def _frame(data: Any, name: str = "data") -> pd.DataFrame:
    if isinstance(data, pd.DataFrame):
        return data
    if isinstance(data, pd.Series):
        return data.to_frame()
    arr = np.asarray(data, dtype=object) if not isinstance(data, np.ndarray) else data
    if arr.ndim == 1 and arr.size == 0:
        return pd.DataFrame()
    if arr.ndim != 2:
        raise ValueError(f"{name} must be two-dimensional, got shape {arr.shape}")
    return pd.DataFrame(arr)


def _numeric_frame(df: Any, name: str = "data") -> pd.DataFrame:
    df = _frame(df, name)
    try:
        out = df.apply(pd.to_numeric, errors="raise").astype(float)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{name} must contain numbers only: {exc}") from exc
    out.columns = [str(c) for c in out.columns]
    return out


def _zero_variance(df: pd.DataFrame) -> list[str]:
    var = df.var(ddof=1, skipna=True)
    return [str(c) for c, v in var.items() if not (np.isfinite(v) and v > 0)]


def _fmt_names(names: Sequence[str], limit: int = 10) -> str:
    names = [str(n) for n in names]
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f" (+{len(names) - limit} more)" if len(names) > limit else "")


# --------------------------------------------------------------------------------------
# label encoding / count tables (shared by the agreement coefficients)
# --------------------------------------------------------------------------------------
def encode_labels(data: Any, categories: Sequence[Any] | None = None) -> tuple[np.ndarray, list]:
    """Integer-code a subjects x raters label array.

    Returns ``(codes, categories)``: ``codes`` is an int64 array of the input's shape with
    -1 for missing (None / NaN); ``categories`` is the ordered list of labels (sorted
    observed labels unless ``categories`` is given).  Labels not in a given ``categories``
    raise ``ValueError``.  Works for 1-D input too.
    """
    arr = np.asarray(data.to_numpy() if isinstance(data, pd.DataFrame | pd.Series) else data,
                     dtype=object)
    shape = arr.shape
    flat = arr.ravel()
    missing = pd.isna(flat)
    if categories is None:
        uniq = list(pd.unique(flat[~missing]))
        try:
            cats = sorted(uniq)
        except TypeError:  # mixed, unorderable labels: order of first appearance
            cats = uniq
    else:
        cats = list(categories)
        if len(set(map(repr, cats))) != len(cats):
            raise ValueError("categories must be unique")
    codes = np.asarray(pd.Categorical(flat, categories=cats).codes, dtype=np.int64)
    unknown = (codes < 0) & ~missing
    if unknown.any():
        bad = sorted({repr(v) for v in flat[unknown]})
        raise ValueError(f"labels not in categories: {', '.join(bad[:10])}")
    return codes.reshape(shape), [_label(c) for c in cats]


def count_table(codes: np.ndarray, n_categories: int) -> np.ndarray:
    """Subjects x categories count table from subjects x raters integer codes (-1 missing).

    This is the "distribution of raters by subject and category" used by Fleiss (1971),
    statsmodels' ``aggregate_raters`` and Gwet (2008).  Accepts leading batch axes:
    ``(..., n, r) -> (..., n, q)``.
    """
    codes = np.asarray(codes)
    return np.stack([(codes == k).sum(axis=-1) for k in range(n_categories)], axis=-1)


# --------------------------------------------------------------------------------------
# vectorised numpy kernels (fast paths for bootstrapping)
# --------------------------------------------------------------------------------------
def _disagreement_weights(q: int, weights: str | None) -> np.ndarray:
    i = np.arange(q, dtype=float)
    d = np.abs(i[:, None] - i[None, :])
    if weights is None:
        return (d > 0).astype(float)
    if q < 2:
        return np.zeros((q, q))
    if weights == "linear":
        return d / (q - 1)
    if weights == "quadratic":
        return (d / (q - 1)) ** 2
    raise ValueError("weights must be None, 'linear' or 'quadratic'")


def cohen_kappa_codes(a: np.ndarray, b: np.ndarray, n_categories: int,
                      weights: str | None = None,
                      freq: np.ndarray | None = None) -> np.ndarray | float:
    """Cohen's (1960) kappa -- or weighted kappa (Cohen 1968) -- on integer codes.

    ``a`` and ``b`` hold category indices 0..q-1 (-1 = missing, dropped pairwise) with
    shape ``(n,)`` or ``(..., n)``; the statistic is computed along the last axis, so a
    ``(B, n)`` stack of bootstrap resamples gives ``B`` kappas in one call.  Alternatively
    pass 1-D ``a``/``b`` plus ``freq``, a ``(B, n)`` matrix of how often each subject is
    drawn in each resample (:func:`bootstrap_freq`), which is faster still.  Weighted
    kappa uses disagreement weights ``|i-j|/(q-1)`` (linear) or ``((i-j)/(q-1))**2``
    (quadratic) on the category index, as statsmodels' ``cohens_kappa`` and R
    ``irr::kappa2`` do.  NaN where undefined (no pairs; chance agreement = 1, i.e. both
    raters used one and the same category throughout).  Same value as
    :func:`statsmodels.stats.inter_rater.cohens_kappa` on the confusion table (tested).
    """
    a = np.asarray(a)
    b = np.asarray(b)
    if a.shape != b.shape:
        raise ValueError("a and b must have the same shape")
    q = int(n_categories)
    qq = q * q
    valid = (a >= 0) & (b >= 0) & (a < q) & (b < q)
    cell = np.where(valid, a * q + b, qq)
    if freq is not None:
        if cell.ndim != 1:
            raise ValueError("with freq, a and b must be one-dimensional")
        freq = np.asarray(freq, dtype=float)
        onehot = np.zeros((cell.size, qq + 1))
        onehot[np.arange(cell.size), cell] = 1.0
        tab = (freq.reshape(-1, cell.size) @ onehot)[:, :qq].reshape(-1, q, q)
        lead = freq.shape[:-1]
    else:
        lead = cell.shape[:-1]
        m = int(np.prod(lead)) if lead else 1
        cell = cell.reshape(m, -1) + (np.arange(m) * (qq + 1))[:, None]
        counts = np.bincount(cell.ravel(), minlength=m * (qq + 1)).reshape(m, qq + 1)
        tab = counts[:, :qq].reshape(m, q, q).astype(float)
    n = tab.sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        p = tab / n[:, None, None]
        row = p.sum(axis=2)
        col = p.sum(axis=1)
        expected = row[:, :, None] * col[:, None, :]
        w = _disagreement_weights(q, weights)
        obs_dis = (p * w).sum(axis=(1, 2))
        exp_dis = (expected * w).sum(axis=(1, 2))
        kappa = np.where((n > 0) & (exp_dis > _EPS), 1.0 - obs_dis / exp_dis, np.nan)
    kappa = kappa.reshape(lead)
    return float(kappa) if kappa.ndim == 0 else kappa


def _subject_terms(table: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-subject additive terms of pa and pi_k for count tables (..., n, q).

    Returns ``agree`` (sum_k r_ik (r_ik - 1) / (r_i (r_i - 1)) for subjects with r_i >= 2,
    else 0), ``two`` (r_i >= 2), ``share`` (r_ik / r_i for subjects with r_i >= 1, else 0)
    and ``one`` (r_i >= 1).
    """
    t = np.asarray(table, dtype=float)
    r = t.sum(axis=-1)
    two = r >= 2
    one = r >= 1
    with np.errstate(invalid="ignore", divide="ignore"):
        agree = np.where(two, (t * (t - 1.0)).sum(axis=-1) / np.where(two, r * (r - 1.0), 1.0),
                         0.0)
        share = np.where(one[..., None], t / np.where(one, r, 1.0)[..., None], 0.0)
    return agree, two.astype(float), share, one.astype(float)


def _pa_pi(table: np.ndarray, freq: np.ndarray | None = None
           ) -> tuple[np.ndarray, np.ndarray]:
    """Observed agreement pa and category prevalences pi for count tables (..., n, q).

    pa = mean over subjects rated by >= 2 raters of sum_k r_ik (r_ik - 1) / (r_i (r_i - 1));
    pi_k = mean over subjects rated at least once of r_ik / r_i (Gwet 2008 eqs. for
    multiple raters with missing ratings; Gwet 2014 ch. 2).  With ``freq`` (B, n) the
    table must be (n, q) and subject i is counted ``freq[b, i]`` times in resample b.
    """
    agree, two, share, one = _subject_terms(table)
    with np.errstate(invalid="ignore", divide="ignore"):
        if freq is None:
            pa = agree.sum(axis=-1) / two.sum(axis=-1)
            pi = share.sum(axis=-2) / one.sum(axis=-1)[..., None]
        else:
            if agree.ndim != 1:
                raise ValueError("with freq, table must be a single (n, q) table")
            f = np.asarray(freq, dtype=float)
            pa = (f @ agree) / (f @ two)
            pi = (f @ share) / (f @ one)[..., None]
    return pa, pi


def _scalar_or_array(x: np.ndarray) -> np.ndarray | float:
    return float(x) if np.ndim(x) == 0 else x


def percent_agreement_counts(table: np.ndarray, freq: np.ndarray | None = None
                             ) -> np.ndarray | float:
    """Mean pairwise percent agreement from a subjects x categories count table.

    Vectorised over leading axes (or over bootstrap ``freq`` rows, see
    :func:`bootstrap_freq`); NaN when no subject has >= 2 ratings.
    """
    pa, _ = _pa_pi(table, freq)
    return _scalar_or_array(pa)


def gwet_ac1_counts(table: np.ndarray, freq: np.ndarray | None = None) -> np.ndarray | float:
    """Gwet's AC1 from a subjects x categories count table (vectorised over leading axes).

    Implemented here from Gwet (2008) "Computing inter-rater reliability and its variance
    in the presence of high agreement", Br J Math Stat Psychol 61:29-48 (no library in the
    project's stack provides it)::

        AC1 = (pa - pe) / (1 - pe),  pe = 1/(q-1) * sum_k pi_k (1 - pi_k)

    with pa and pi_k as in :func:`_pa_pi` (Gwet's treatment of missing ratings, identical to
    R ``irrCAC::gwet.ac1.raw``).  q is the number of columns of the table, i.e. the
    category set.  For two raters this reduces to Gwet's two-rater AC1.  ``freq``: optional
    ``(B, n)`` bootstrap multiplicities (:func:`bootstrap_freq`) -> ``B`` values.

    Degenerate case: when every rating falls in one category, pa = 1 and
    sum_k pi_k (1 - pi_k) = 0, so pe = 0 for *any* category set with q >= 2 and
    AC1 = 1.0; with q == 1 the formula is 0/0, which we resolve to the same limit (1.0),
    since a rating scale always has at least two possible categories.  (Kappa-type
    coefficients are undefined in this situation.)  pe <= 1/q <= 1/2, so 1 - pe never
    vanishes; AC1 is NaN only when no subject has two or more ratings.
    """
    t = np.asarray(table, dtype=float)
    q = t.shape[-1]
    pa, pi = _pa_pi(t, freq)
    if q < 2:
        return _scalar_or_array(np.where(np.isfinite(pa), 1.0, np.nan))
    pe = (pi * (1.0 - pi)).sum(axis=-1) / (q - 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        ac1 = (pa - pe) / (1.0 - pe)
    return _scalar_or_array(ac1)


def fleiss_kappa_counts(table: np.ndarray, freq: np.ndarray | None = None
                        ) -> np.ndarray | float:
    """Fleiss' (1971) kappa from a subjects x categories count table (vectorised).

    pe = sum_k pi_k**2.  With the same number of raters for every subject this is exactly
    Fleiss (1971) / statsmodels ``fleiss_kappa``; with missing ratings it is Gwet's (2014)
    generalisation (R ``irrCAC::fleiss.kappa.raw``).  NaN when undefined (no subject with
    >= 2 ratings, or pe = 1: all ratings in one category).  ``freq`` as in
    :func:`gwet_ac1_counts`.
    """
    pa, pi = _pa_pi(table, freq)
    pe = (pi * pi).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        k = np.where(1.0 - pe > _EPS, (pa - pe) / (1.0 - pe), np.nan)
    return _scalar_or_array(k)


def krippendorff_alpha_counts(table: np.ndarray, values: Sequence[float], level: str = "nominal",
                              freq: np.ndarray | None = None) -> np.ndarray | float:
    """Krippendorff's alpha from a subjects x categories count table, vectorised for the bootstrap.

    Point estimates in reports come from the krippendorff package (:func:`krippendorff_alpha`);
    this kernel exists because alpha is a function of the coincidence matrix, which is a sum of
    per-unit contributions (Krippendorff 2011, "Computing Krippendorff's alpha-reliability",
    eqs. for o_ck, n_c and the nominal / ordinal / interval metrics), so every bootstrap resample of
    units is one matrix product with the multiplicities ``freq`` (B, n).  ``values``: the numeric
    value of each category column (used by the interval metric and for ordering). Units with fewer
    than two ratings are not pairable and drop out, as in the package.  NaN when undefined.
    """
    if level not in ("nominal", "ordinal", "interval"):
        raise ValueError("level must be nominal, ordinal or interval")
    t = np.asarray(table, dtype=float)
    n_units, q = t.shape
    m = t.sum(axis=1)
    pairable = m >= 2
    with np.errstate(invalid="ignore", divide="ignore"):
        weight = np.where(pairable, 1.0 / np.where(pairable, m - 1.0, 1.0), 0.0)
    per_unit = (t[:, :, None] * t[:, None, :] - np.eye(q)[None] * t[:, :, None]) * weight[:, None, None]
    flat = per_unit.reshape(n_units, q * q)
    o = (flat.sum(axis=0)[None] if freq is None else np.asarray(freq, dtype=float) @ flat).reshape(-1, q, q)
    n_c = o.sum(axis=2)
    total = n_c.sum(axis=1)
    if level == "nominal":
        delta = np.broadcast_to(1.0 - np.eye(q), o.shape)
    elif level == "interval":
        v = np.asarray(values, dtype=float)
        delta = np.broadcast_to((v[:, None] - v[None, :]) ** 2, o.shape)
    else:  # ordinal: (sum_{g between c and k} n_g - (n_c + n_k) / 2)^2, from the (resampled) marginals
        cum = np.cumsum(n_c, axis=1)
        idx = np.arange(q)
        lo, hi = np.minimum.outer(idx, idx), np.maximum.outer(idx, idx)
        between = cum[:, hi] - np.where(lo > 0, cum[:, np.maximum(lo - 1, 0)], 0.0)
        delta = (between - (n_c[:, :, None] + n_c[:, None, :]) / 2.0) ** 2
    observed = (o * delta).sum(axis=(1, 2))
    expected = (n_c[:, :, None] * n_c[:, None, :] * delta).sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        alpha = np.where(expected > _EPS, 1.0 - (total - 1.0) * observed / expected, np.nan)
    return float(alpha[0]) if freq is None else alpha


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


# --------------------------------------------------------------------------------------
# ICC
# --------------------------------------------------------------------------------------
_ICC_NAMES = {
    # pingouin >= 0.6 (McGraw & Wong labels)      # older pingouin
    "ICC(1,1)": "ICC1", "ICC(A,1)": "ICC2", "ICC(C,1)": "ICC3",
    "ICC(1,k)": "ICC1k", "ICC(A,k)": "ICC2k", "ICC(C,k)": "ICC3k",
    "ICC1": "ICC1", "ICC2": "ICC2", "ICC3": "ICC3",
    "ICC1k": "ICC1k", "ICC2k": "ICC2k", "ICC3k": "ICC3k",
}
ICC_FORMS = ("ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k")


def _empty_icc_form() -> dict:
    return {"icc": None, "f": None, "df1": None, "df2": None, "p": None,
            "ci_low": None, "ci_high": None}


def icc(df: pd.DataFrame, targets: str, raters: str, ratings: str) -> dict:
    """Intraclass correlations, Shrout & Fleiss (1979) forms, via pingouin.intraclass_corr.

    ``df`` is long format (one row per target x rater).  ICC1 = one-way random,
    ICC2 = two-way random, absolute agreement, ICC3 = two-way mixed, consistency;
    ``*k`` = reliability of the mean of k raters.  Each form is
    ``{"icc", "f", "df1", "df2", "p", "ci_low", "ci_high"}`` (95% CI, unrounded), plus
    top-level ``"warnings"``, ``"n_targets"``, ``"n_raters"``.  Targets lacking a rating
    from any rater are dropped (listwise), duplicate target x rater rows are averaged
    (both as pingouin does, but reported in ``warnings``).
    """
    if not isinstance(df, pd.DataFrame):
        raise ValueError("df must be a pandas DataFrame in long format")
    for col in (targets, raters, ratings):
        if col not in df.columns:
            raise ValueError(f"column {col!r} not in df")
    warns: list[str] = []
    out: dict[str, Any] = {name: _empty_icc_form() for name in ICC_FORMS}
    out.update({"warnings": warns, "n_targets": 0, "n_raters": 0})

    data = pd.DataFrame({"t": df[targets].to_numpy(), "r": df[raters].to_numpy(),
                         "y": df[ratings].to_numpy()})
    try:
        data["y"] = pd.to_numeric(data["y"], errors="raise").astype(float)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"ratings column {ratings!r} must be numeric: {exc}") from exc
    data = data.dropna(subset=["t", "r"])
    dups = int(data.duplicated(["t", "r"]).sum())
    if dups:
        warns.append(f"{dups} duplicate target x rater row(s) were averaged.")
    if data.empty:
        warns.append("ICC is undefined: no ratings.")
        return out
    wide = data.pivot_table(index="t", columns="r", values="y", aggfunc="mean",
                            observed=True, dropna=False)
    if wide.isna().any().any():
        before = len(wide)
        wide = wide.dropna(how="any")
        warns.append(f"{before - len(wide)} target(s) without a rating from every rater "
                     "were removed (listwise deletion; ICC needs a complete design).")
    n, k = wide.shape
    out["n_targets"], out["n_raters"] = int(n), int(k)
    if k < 2:
        warns.append(f"ICC is undefined: at least two raters are required (got {k}).")
        return out
    if n < 2:
        warns.append(f"ICC is undefined: at least two targets are required (got {n}).")
        return out
    values = wide.to_numpy(dtype=float)
    if np.ptp(values) == 0:
        warns.append("ICC is undefined: no variation (every rating is identical).")
        return out
    flat_raters = [str(c) for c, v in zip(wide.columns, np.ptp(values, axis=0), strict=True)
                   if v == 0]
    if flat_raters:
        warns.append(f"Zero-variance rater(s) {_fmt_names(flat_raters)} gave the same rating "
                     "to every target.")
    if np.ptp(values.mean(axis=1)) == 0:
        warns.append("All targets have the same mean rating (no between-target variance).")

    long = wide.reset_index().melt(id_vars="t", var_name="r", value_name="y")
    import pingouin as pg

    with _PG_LOCK:
        saved = pg.options.get("round.column.CI95", None)
        had_key = "round.column.CI95" in pg.options
        pg.options["round.column.CI95"] = None
        try:
            with _warnings.catch_warnings(), np.errstate(all="ignore"):
                _warnings.simplefilter("ignore")
                res = pg.intraclass_corr(data=long, targets="t", raters="r", ratings="y")
        finally:
            if had_key:
                pg.options["round.column.CI95"] = saved
            else:
                pg.options.pop("round.column.CI95", None)
    pcol = next(c for c in res.columns if c.lower().replace("-", "").replace("_", "") == "pval")
    cicol = next(c for c in res.columns if c.upper().startswith("CI"))
    inf_f = False
    for _, row in res.iterrows():
        name = _ICC_NAMES.get(str(row["Type"]))
        if name is None:
            continue
        ci = np.asarray(row[cicol], dtype=float).ravel()
        f_val = _num(row["F"])
        if f_val is None and np.isinf(float(row["F"])):
            inf_f = True
        out[name] = {
            "icc": _num(row["ICC"]), "f": f_val, "df1": _py(row["df1"]),
            "df2": _py(row["df2"]), "p": _num(row[pcol]),
            "ci_low": _num(ci[0]) if ci.size else None,
            "ci_high": _num(ci[1]) if ci.size > 1 else None,
        }
        if isinstance(out[name]["df1"], float) and out[name]["df1"].is_integer():
            out[name]["df1"] = int(out[name]["df1"])
        if isinstance(out[name]["df2"], float) and out[name]["df2"].is_integer():
            out[name]["df2"] = int(out[name]["df2"])
    if inf_f:
        warns.append("F is infinite (zero residual / within-target variance); F, p and "
                     "some CIs are reported as undefined.")
    if any((out[f]["icc"] is not None and out[f]["icc"] < 0) for f in ICC_FORMS):
        warns.append("Negative ICC estimate(s): between-target variance is smaller than "
                     "error variance.")
    return out


# --------------------------------------------------------------------------------------
# Krippendorff's alpha
# --------------------------------------------------------------------------------------
_KRIPP_LEVELS = ("nominal", "ordinal", "interval", "ratio")


def krippendorff_alpha_detail(data: Any, level: str = "nominal",
                              value_domain: Sequence[Any] | None = None) -> dict:
    """Krippendorff's alpha (krippendorff package) with the reason when undefined.

    ``data``: raters x units array, NaN / None = missing.  ``level``: nominal, ordinal,
    interval or ratio.  Non-numeric labels are allowed for the nominal level only.
    ``value_domain`` (optional) fixes the ordered set of values (matters for ordinal).
    Returns ``{"value", "warnings", "n_units", "n_raters", "n_pairable"}``.
    """
    if level not in _KRIPP_LEVELS:
        raise ValueError(f"level must be one of {_KRIPP_LEVELS}")
    warns: list[str] = []
    df = _frame(data, "data")
    out = {"value": None, "warnings": warns, "n_units": int(df.shape[1]),
           "n_raters": int(df.shape[0]), "n_pairable": 0}
    try:
        try:  # fast path: already numeric (a wide frame has one column per unit, so avoid per-column work)
            arr = df.to_numpy(dtype=float)
        except (ValueError, TypeError):
            arr = df.apply(pd.to_numeric, errors="raise").to_numpy(dtype=float)
        domain = None if value_domain is None else np.asarray(value_domain, dtype=float)
    except (ValueError, TypeError):
        if level != "nominal":
            raise ValueError(f"non-numeric labels are only allowed for level='nominal' "
                             f"(got {level!r})") from None
        codes, cats = encode_labels(df, value_domain)
        arr = np.where(codes < 0, np.nan, codes).astype(float)
        domain = np.arange(len(cats), dtype=float) if value_domain is not None else None
    if arr.size == 0:
        warns.append("Krippendorff's alpha is undefined: empty input.")
        return out
    if arr.shape[0] < 2:
        warns.append("Krippendorff's alpha is undefined: only one rater (coder).")
        return out
    present = ~np.isnan(arr)
    pairable_units = present.sum(axis=0) >= 2
    pairable = arr[:, pairable_units][present[:, pairable_units]]
    out["n_pairable"] = int(pairable.size)
    if pairable.size == 0:
        warns.append("Krippendorff's alpha is undefined: no unit was rated by two or more "
                     "raters (no pairable values).")
        return out
    if np.unique(pairable).size < 2:
        warns.append("Krippendorff's alpha is undefined: no variation -- every pairable "
                     f"value is {_label(pairable[0])!r}, so expected disagreement is 0 "
                     "(0/0).")
        return out
    flat = [str(name) for name, row in zip(df.index, arr, strict=True)
            if np.sum(~np.isnan(row)) > 1 and np.unique(row[~np.isnan(row)]).size == 1]
    if flat:
        warns.append(f"Zero-variance rater(s) {_fmt_names(flat)} gave the same value to every "
                     "unit they rated.")
    import krippendorff

    try:
        with _warnings.catch_warnings(), np.errstate(all="ignore"):
            _warnings.simplefilter("ignore")
            value = krippendorff.alpha(reliability_data=arr, value_domain=domain,
                                       level_of_measurement=level)
    except (ValueError, ZeroDivisionError) as exc:
        warns.append(f"Krippendorff's alpha is undefined: {exc}")
        return out
    out["value"] = _num(value)
    if out["value"] is None:
        warns.append("Krippendorff's alpha is undefined for these data (0/0).")
    return out


def krippendorff_alpha(data: Any, level: str = "nominal",
                       value_domain: Sequence[Any] | None = None) -> float:
    """Krippendorff's alpha; NaN when undefined (see :func:`krippendorff_alpha_detail`)."""
    return _nan(krippendorff_alpha_detail(data, level, value_domain)["value"])


# --------------------------------------------------------------------------------------
# Cohen's kappa
# --------------------------------------------------------------------------------------
def _pair_codes(a: Any, b: Any, categories: Sequence[Any] | None
                ) -> tuple[np.ndarray, np.ndarray, list, int]:
    a_arr = np.asarray(a.to_numpy() if isinstance(a, pd.Series) else a, dtype=object).ravel()
    b_arr = np.asarray(b.to_numpy() if isinstance(b, pd.Series) else b, dtype=object).ravel()
    if a_arr.shape != b_arr.shape:
        raise ValueError(f"a and b differ in length ({a_arr.size} vs {b_arr.size})")
    codes, cats = encode_labels(np.column_stack([a_arr, b_arr]) if a_arr.size else
                                np.empty((0, 2), dtype=object), categories)
    keep = (codes >= 0).all(axis=1)
    dropped = int((~keep).sum())
    return codes[keep, 0], codes[keep, 1], cats, dropped


def cohen_kappa_detail(a: Any, b: Any, weights: str | None = None,
                       categories: Sequence[Any] | None = None) -> dict:
    """Cohen's kappa between two raters (statsmodels ``cohens_kappa``) with reasons.

    ``weights``: None (Cohen 1960), "linear" or "quadratic" (weighted kappa, Cohen 1968;
    weights on the category index -- the order of ``categories``, default the sorted
    observed labels, as in R ``irr::kappa2`` and statsmodels).  Pairs with a missing
    rating are dropped.  Returns ``{"value", "warnings", "n", "po", "pe", "categories"}``
    (``po``/``pe`` = observed / chance agreement, unweighted only).
    """
    if weights not in (None, "linear", "quadratic"):
        raise ValueError("weights must be None, 'linear' or 'quadratic'")
    ca, cb, cats, dropped = _pair_codes(a, b, categories)
    warns: list[str] = []
    out = {"value": None, "warnings": warns, "n": int(ca.size), "po": None, "pe": None,
           "categories": cats}
    if dropped:
        warns.append(f"{dropped} pair(s) with a missing rating were dropped.")
    if ca.size == 0:
        warns.append("Cohen's kappa is undefined: no subject rated by both raters.")
        return out
    q = len(cats)
    table = np.zeros((q, q))
    np.add.at(table, (ca, cb), 1)
    n = table.sum()
    row, col = table.sum(1) / n, table.sum(0) / n
    out["po"] = _num(np.trace(table) / n)
    out["pe"] = _num((row * col).sum())
    used_a = sorted({cats[i] for i in np.unique(ca)}, key=cats.index)
    used_b = sorted({cats[i] for i in np.unique(cb)}, key=cats.index)
    w = _disagreement_weights(q, weights)
    if (np.outer(row, col) * w).sum() <= _EPS:
        warns.append("Cohen's kappa is undefined: no variation -- both raters gave every "
                     f"subject the same rating ({used_a[0]!r}), so chance agreement is 1 "
                     "(0/0). Percent agreement and Gwet's AC1 remain defined.")
        return out
    for who, used in (("a", used_a), ("b", used_b)):
        if len(used) == 1:
            warns.append(f"Rater {who} gave the same rating ({used[0]!r}) to every subject "
                         "(zero variance); kappa is 0 by construction whatever the agreement "
                         "-- see percent agreement / AC1.")
    from statsmodels.stats.inter_rater import cohens_kappa

    with np.errstate(all="ignore"):
        if weights is None:
            value = cohens_kappa(table, return_results=False)
        else:
            value = cohens_kappa(table, weights=np.arange(q), wt=weights,
                                 return_results=False)
    out["value"] = _num(value)
    if out["value"] is None:
        warns.append("Cohen's kappa is undefined for these data.")
    return out


def cohen_kappa(a: Any, b: Any, weights: str | None = None,
                categories: Sequence[Any] | None = None) -> float:
    """Cohen's kappa; NaN when undefined (see :func:`cohen_kappa_detail`)."""
    return _nan(cohen_kappa_detail(a, b, weights, categories)["value"])


# --------------------------------------------------------------------------------------
# multi-rater coefficients on subjects x raters labels
# --------------------------------------------------------------------------------------
def _rater_table(data: Any, categories: Sequence[Any] | None
                 ) -> tuple[np.ndarray, list, list[str], pd.DataFrame]:
    df = _frame(data, "data")
    warns: list[str] = []
    if df.size == 0:
        return np.zeros((0, max(len(categories or []), 1))), list(categories or []), warns, df
    codes, cats = encode_labels(df, categories)
    table = count_table(codes, max(len(cats), 1))
    r = table.sum(axis=1)
    if (r == 0).any():
        warns.append(f"{int((r == 0).sum())} subject(s) with no ratings were ignored.")
        table = table[r > 0]
    return table, cats, warns, df


def _multi_rater_precheck(table: np.ndarray, df: pd.DataFrame, name: str,
                          warns: list[str]) -> bool:
    if df.size == 0 or table.shape[0] == 0:
        warns.append(f"{name} is undefined: empty input.")
        return False
    if df.shape[1] < 2:
        warns.append(f"{name} is undefined: only one rater.")
        return False
    r = table.sum(axis=1)
    if not (r >= 2).any():
        warns.append(f"{name} is undefined: no subject has two or more ratings.")
        return False
    if (r == 1).any():
        warns.append(f"{int((r == 1).sum())} subject(s) with a single rating do not "
                     "contribute to observed agreement.")
    return True


def _zero_variance_raters(df: pd.DataFrame) -> list[str]:
    flat = []
    for c in df.columns:
        vals = df[c].dropna()
        if len(vals) > 1 and vals.nunique() == 1:
            flat.append(str(c))
    return flat


def fleiss_kappa_detail(data: Any, categories: Sequence[Any] | None = None) -> dict:
    """Fleiss' (1971) kappa for subjects x raters labels (NaN = missing rating).

    With the same number of ratings for every subject this calls statsmodels
    ``fleiss_kappa`` on the subjects x categories count table.  With missing ratings
    (unequal numbers of raters) it uses Gwet's (2014) generalisation (irrCAC
    ``fleiss.kappa.raw``; :func:`fleiss_kappa_counts`) and says so in ``warnings``.
    Returns ``{"value", "warnings", "n", "pa", "pe", "categories"}``.
    """
    table, cats, warns, df = _rater_table(data, categories)
    out = {"value": None, "warnings": warns, "n": int(table.shape[0]), "pa": None,
           "pe": None, "categories": cats}
    if not _multi_rater_precheck(table, df, "Fleiss' kappa", warns):
        return out
    pa, pi = _pa_pi(table)
    pe = float((pi * pi).sum())
    out["pa"], out["pe"] = _num(pa), _num(pe)
    if 1.0 - pe <= _EPS:
        warns.append("Fleiss' kappa is undefined: no variation -- every rating is "
                     f"{cats[int(np.argmax(pi))]!r}, so chance agreement is 1 (0/0). "
                     "Percent agreement and Gwet's AC1 remain defined.")
        return out
    flat = _zero_variance_raters(df)
    if flat:
        warns.append(f"Zero-variance rater(s) {_fmt_names(flat)} gave the same rating to "
                     "every subject.")
    r = table.sum(axis=1)
    if np.all(r == r[0]):
        from statsmodels.stats.inter_rater import fleiss_kappa as _sm_fleiss

        with np.errstate(all="ignore"):
            value = _sm_fleiss(table, method="fleiss")
    else:
        warns.append("Unequal numbers of ratings per subject: Fleiss' kappa computed with "
                     "Gwet's (2014) generalisation for missing ratings.")
        value = fleiss_kappa_counts(table)
    out["value"] = _num(value)
    return out


def fleiss_kappa(data: Any, categories: Sequence[Any] | None = None) -> float:
    """Fleiss' kappa; NaN when undefined (see :func:`fleiss_kappa_detail`)."""
    return _nan(fleiss_kappa_detail(data, categories)["value"])


def gwet_ac1_detail(data: Any, categories: Sequence[Any] | None = None) -> dict:
    """Gwet's AC1 for subjects x raters labels (NaN = missing rating).

    Implemented here from Gwet (2008), Br J Math Stat Psychol 61:29-48 -- see
    :func:`gwet_ac1_counts` for the formula, the treatment of missing ratings (as irrCAC
    ``gwet.ac1.raw``) and the all-ratings-identical case (AC1 = 1.0, pe = 0, reported with
    a warning).  ``categories`` fixes the category set (q); default: observed labels.
    Returns ``{"value", "warnings", "n", "pa", "pe", "categories"}``.
    """
    table, cats, warns, df = _rater_table(data, categories)
    out = {"value": None, "warnings": warns, "n": int(table.shape[0]), "pa": None,
           "pe": None, "categories": cats}
    if not _multi_rater_precheck(table, df, "Gwet's AC1", warns):
        return out
    q = table.shape[1]
    pa, pi = _pa_pi(table)
    pe = float((pi * (1 - pi)).sum() / (q - 1)) if q >= 2 else 0.0
    out["pa"], out["pe"] = _num(pa), _num(pe)
    if int((pi > 0).sum()) == 1:
        warns.append("All ratings are identical: chance agreement pe = 0 for any category "
                     "set with q >= 2, so AC1 = 1.0 (Gwet 2008); kappa-type coefficients "
                     "are undefined here.")
    flat = _zero_variance_raters(df)
    if flat and int((pi > 0).sum()) > 1:
        warns.append(f"Zero-variance rater(s) {_fmt_names(flat)} gave the same rating to "
                     "every subject.")
    out["value"] = _num(gwet_ac1_counts(table))
    return out


def gwet_ac1(data: Any, categories: Sequence[Any] | None = None) -> float:
    """Gwet's AC1, implemented here from Gwet (2008); NaN when undefined.

    See :func:`gwet_ac1_detail` / :func:`gwet_ac1_counts` for formula and edge cases.
    """
    return _nan(gwet_ac1_detail(data, categories)["value"])


def percent_agreement_detail(data: Any) -> dict:
    """Mean pairwise percent agreement for subjects x raters labels (NaN = missing).

    Per subject: share of agreeing rater pairs, sum_k r_ik (r_ik - 1) / (r_i (r_i - 1));
    averaged over subjects with >= 2 ratings (irrCAC ``pa.coeff.raw``).  1.0 when every
    rating is identical.  Returns ``{"value", "warnings", "n"}``.
    """
    table, _cats, warns, df = _rater_table(data, None)
    out = {"value": None, "warnings": warns, "n": int(table.shape[0])}
    if not _multi_rater_precheck(table, df, "Percent agreement", warns):
        return out
    out["value"] = _num(percent_agreement_counts(table))
    return out


def percent_agreement(data: Any) -> float:
    """Mean pairwise percent agreement; NaN when undefined."""
    return _nan(percent_agreement_detail(data)["value"])


# --------------------------------------------------------------------------------------
# Kendall's W
# --------------------------------------------------------------------------------------
def kendall_w(df: Any) -> dict:
    """Kendall's coefficient of concordance W, corrected for ties.

    ``df``: rows raters (judges), columns objects (dialogues / models) -- scores are ranked
    within each rater (average ranks for ties).  Computed with pingouin.friedman, whose W
    carries the Kendall & Babington Smith (1939) tie correction
    ``W = 12 S / (m^2 (n^3 - n) - m sum_T (t^3 - t))``; chi2 = m (n - 1) W on n - 1 df.
    Raters with a missing score are dropped (listwise).
    Returns ``{"w", "chi2", "dof", "p", "warnings", "n_raters", "n_objects"}``.
    """
    data = _numeric_frame(df, "df")
    warns: list[str] = []
    out = {"w": None, "chi2": None, "dof": None, "p": None, "warnings": warns,
           "n_raters": 0, "n_objects": int(data.shape[1])}
    if data.isna().any().any():
        before = len(data)
        data = data.dropna(how="any")
        warns.append(f"{before - len(data)} rater(s) with a missing score removed "
                     "(listwise deletion).")
    m, n = data.shape
    out["n_raters"], out["n_objects"] = int(m), int(n)
    if m < 2:
        warns.append(f"Kendall's W is undefined: at least two raters are required (got {m}).")
        return out
    if n < 2:
        warns.append(f"Kendall's W is undefined: at least two objects are required (got {n}).")
        return out
    out["dof"] = int(n - 1)
    values = data.to_numpy(dtype=float)
    flat = [str(i) for i, v in zip(data.index, np.ptp(values, axis=1), strict=True) if v == 0]
    if len(flat) == m:
        warns.append("Kendall's W is undefined: no variation -- every rater tied all "
                     "objects (0/0).")
        return out
    if flat:
        warns.append(f"Zero-variance rater(s) {_fmt_names(flat)} tied all objects.")
    if any(len(np.unique(row)) < n for row in values):
        warns.append("Ties within raters: tie-corrected W reported.")
    long = pd.DataFrame({
        "rater": np.repeat(np.arange(m), n),
        "obj": np.tile(np.arange(n), m),
        "v": values.ravel(),
    })
    import pingouin as pg

    with _warnings.catch_warnings(), np.errstate(all="ignore"):
        _warnings.simplefilter("ignore")
        res = pg.friedman(data=long, dv="v", within="obj", subject="rater")
    row = res.iloc[0]
    pcol = next(c for c in res.columns if c.lower().replace("-", "").replace("_", "")
                in ("punc", "pval"))
    out["w"], out["chi2"], out["p"] = _num(row["W"]), _num(row["Q"]), _num(row[pcol])
    if out["w"] is None:
        warns.append("Kendall's W is undefined for these data.")
    return out


# --------------------------------------------------------------------------------------
# judge vs reference classification
# --------------------------------------------------------------------------------------
def classification_report(judge: Any, reference: Any, positive: Any = 1) -> dict:
    """Accuracy, precision, recall and F1 of ``judge`` against ``reference``.

    Labels equal to ``positive`` are the positive class, everything else negative; pairs
    with a missing label are dropped.  F1 = 2 TP / (2 TP + FP + FN).  Undefined ratios
    (zero denominators) are ``None`` with the reason.  ``support`` = reference positives.
    """
    j = np.asarray(judge.to_numpy() if isinstance(judge, pd.Series) else judge,
                   dtype=object).ravel()
    r = np.asarray(reference.to_numpy() if isinstance(reference, pd.Series) else reference,
                   dtype=object).ravel()
    if j.shape != r.shape:
        raise ValueError(f"judge and reference differ in length ({j.size} vs {r.size})")
    warns: list[str] = []
    keep = ~(pd.isna(j) | pd.isna(r))
    if (~keep).any():
        warns.append(f"{int((~keep).sum())} pair(s) with a missing label were dropped.")
    j, r = j[keep], r[keep]
    jp = np.array([x == positive for x in j], dtype=bool)
    rp = np.array([x == positive for x in r], dtype=bool)
    tp = int((jp & rp).sum())
    fp = int((jp & ~rp).sum())
    fn = int((~jp & rp).sum())
    tn = int((~jp & ~rp).sum())
    n = tp + fp + fn + tn

    def ratio(num: int, den: int, reason: str) -> float | None:
        if den == 0:
            warns.append(reason)
            return None
        return num / den

    out = {
        "accuracy": ratio(tp + tn, n, "Accuracy is undefined: no labelled pairs."),
        "precision": ratio(tp, tp + fp, "Precision is undefined: the judge never predicted "
                                        "the positive class (TP + FP = 0)."),
        "recall": ratio(tp, tp + fn, "Recall is undefined: no positive case in the "
                                     "reference (TP + FN = 0)."),
        "f1": ratio(2 * tp, 2 * tp + fp + fn, "F1 is undefined: no positive label in either "
                                              "judge or reference."),
        "positive_class": _label(positive),
        "n": n, "support": tp + fn, "tp": tp, "fp": fp, "fn": fn, "tn": tn,
        "warnings": warns,
    }
    return out


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
                      warnings: list[str] | None = None) -> dict:
    """Turn an estimate and its bootstrap replicates into the :func:`bootstrap_ci` dict.

    Non-finite replicates (undefined statistics) are dropped and counted.  ``method``:
    "percentile" (Efron) or "basic" (reverse percentile, 2*estimate - quantiles).
    """
    if method not in ("percentile", "basic"):
        raise ValueError("method must be 'percentile' or 'basic'")
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
        warns.append(f"{dropped} of {total} bootstrap resample(s) gave an undefined statistic "
                     "and were dropped.")
    if est is None:
        warns.append("Estimate is undefined on the full sample; no confidence interval.")
        return out
    if finite.size < 2:
        warns.append("Too few valid bootstrap resamples for a confidence interval.")
        return out
    if finite.size < 0.9 * total:
        warns.append("More than 10% of resamples were undefined; the interval may be "
                     "biased.")
    lo_q, hi_q = np.percentile(finite, [50 * (1 - confidence), 50 * (1 + confidence)])
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


def bootstrap_ci(fn: Callable[..., Any], *arrays: Any, n_resamples: int = 1000,
                 seed: int | None = 0, confidence: float = 0.95, method: str = "percentile",
                 indices: np.ndarray | None = None, vectorized: bool | str = False,
                 batch_size: int | None = None, freq: np.ndarray | None = None) -> dict:
    """Bootstrap confidence interval resampling dialogues (rows).

    The same row indices are applied to every array / DataFrame in ``arrays`` (so paired
    data stay paired).  ``fn(*resampled) -> float``; resamples where it returns NaN /
    None are dropped and counted (``n_valid``).  The estimate is ``fn`` on the full data.
    Returns ``{"estimate", "ci_low", "ci_high", "n_resamples", "n_valid", "seed",
    "method", "confidence", "warnings"}``.

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
    if freq is not None:
        if vectorized != "freq":
            raise ValueError("freq is only used with vectorized='freq'")
        freq = np.asarray(freq, dtype=float)
        if freq.ndim != 2 or freq.shape[1] != n:
            raise ValueError("freq must be a (n_resamples, n) matrix")
        idx = None
        n_boot = int(freq.shape[0])
    else:
        if indices is None:
            idx = bootstrap_indices(n, n_resamples, seed)
        else:
            idx = np.asarray(indices)
            if idx.ndim != 2 or (idx.size and (idx.min() < 0 or idx.max() >= n)):
                raise ValueError("indices must be a (n_resamples, n) matrix of valid row "
                                 "indices")
        n_boot = int(idx.shape[0])
    warns: list[str] = []
    if n == 0:
        warns.append("Empty input: nothing to resample.")
        return bootstrap_summary(None, [], confidence=confidence, method=method, seed=seed,
                                 n_resamples=n_boot, warnings=warns)

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
    return bootstrap_summary(estimate, values, confidence=confidence, method=method,
                             seed=seed, n_resamples=n_boot, warnings=warns)


# --------------------------------------------------------------------------------------
# interpretation bands
# --------------------------------------------------------------------------------------
# (lower bound inclusive, label), checked from the top; values below the last bound get
# the final fallback label.
_SCALES: dict[str, tuple[str, list[tuple[float, str]], str]] = {
    "landis_koch": (
        "Landis JR, Koch GG (1977). The measurement of observer agreement for categorical "
        "data. Biometrics 33(1):159-174.",
        [(0.805, "almost perfect"), (0.605, "substantial"), (0.405, "moderate"),
         (0.205, "fair"), (0.0, "slight")],
        "poor",
    ),
    "kaiser_kmo": (
        "Kaiser HF (1974). An index of factorial simplicity. Psychometrika 39(1):31-36.",
        [(0.90, "marvelous"), (0.80, "meritorious"), (0.70, "middling"),
         (0.60, "mediocre"), (0.50, "miserable")],
        "unacceptable",
    ),
    "cicchetti_icc": (
        "Cicchetti DV (1994). Guidelines, criteria, and rules of thumb for evaluating normed "
        "and standardized assessment instruments in psychology. Psychological Assessment "
        "6(4):284-290.",
        [(0.75, "excellent"), (0.60, "good"), (0.40, "fair")],
        "poor",
    ),
    "koo_li_icc": (
        "Koo TK, Li MY (2016). A guideline of selecting and reporting intraclass correlation "
        "coefficients for reliability research. J Chiropr Med 15(2):155-163.",
        [(np.nextafter(0.90, 1.0), "excellent"), (0.75, "good"), (0.50, "moderate")],
        "poor",
    ),
    "krippendorff": (
        "Krippendorff K (2004). Content Analysis: An Introduction to Its Methodology, 2nd ed., "
        "p. 241: rely on alpha >= .800; alpha >= .667 only for tentative conclusions.",
        [(0.800, "reliable"), (0.667, "tentative")],
        "unreliable",
    ),
    "cronbach": (
        "George D, Mallery P (2003). SPSS for Windows Step by Step: A Simple Guide and "
        "Reference, 11.0 update, 4th ed., p. 231.",
        [(0.9, "excellent"), (0.8, "good"), (0.7, "acceptable"), (0.6, "questionable"),
         (0.5, "poor")],
        "unacceptable",
    ),
}


def interpret(value: Any, scale: str) -> dict:
    """Verbal label for a coefficient on a published benchmark scale.

    ``scale``: "landis_koch" (kappa; <0 poor, 0-.20 slight, .21-.40 fair, .41-.60
    moderate, .61-.80 substantial, .81-1 almost perfect -- values between the published
    two-decimal bands are split at the midpoint, e.g. .205), "kaiser_kmo", "cicchetti_icc"
    (<.40 poor, .40-.59 fair, .60-.74 good, >=.75 excellent), "koo_li_icc" (<.50 poor,
    .50-.75 moderate, .75-.90 good, >.90 excellent), "krippendorff" (>=.800 reliable,
    >=.667 tentative), "cronbach" (George & Mallery: >=.9 excellent ... <.5 unacceptable).
    Returns ``{"label", "source"}``; None / NaN -> label "undefined".
    """
    if scale not in _SCALES:
        raise ValueError(f"unknown scale {scale!r}; choose from {sorted(_SCALES)}")
    source, bands, fallback = _SCALES[scale]
    v = _num(value)
    if v is None:
        return {"label": "undefined", "source": source}
    for bound, label in bands:
        if v >= bound:
            return {"label": label, "source": source}
    return {"label": fallback, "source": source}


# --------------------------------------------------------------------------------------
# pairwise preferences (preference studies): win / tie / loss, Bradley-Terry, agreement
# --------------------------------------------------------------------------------------
PREFERENCE_OUTCOMES = ("first", "tie", "second")


def wilson_ci(successes: int, n: int, confidence: float = 0.95) -> dict:
    """Share with its Wilson score interval (statsmodels ``proportion_confint``); undefined for n = 0."""
    if n <= 0:
        return {"value": None, "ci_low": None, "ci_high": None, "n": 0,
                "warnings": ["Undefined: no observations."]}
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(int(successes), int(n), alpha=1 - confidence, method="wilson")
    return {"value": _num(successes / n), "ci_low": _num(low), "ci_high": _num(high), "n": int(n),
            "warnings": []}


def win_tie_loss(outcomes: Iterable[str], confidence: float = 0.95) -> dict:
    """Counts and shares of ``first`` wins, ties and ``second`` wins, each share with a Wilson CI, plus the
    win rate of ``first`` with ties counted as half wins (and a Wilson-style CI on that rate)."""
    values = [o for o in outcomes if o is not None]
    unknown = sorted({str(o) for o in values} - set(PREFERENCE_OUTCOMES))
    if unknown:
        raise ValueError(f"outcomes must be first, tie or second; got {', '.join(unknown)}")
    n = len(values)
    counts = {o: sum(1 for v in values if v == o) for o in PREFERENCE_OUTCOMES}
    out: dict[str, Any] = {"n": n, "counts": counts}
    for o in PREFERENCE_OUTCOMES:
        out[o] = wilson_ci(counts[o], n, confidence)
    score = counts["first"] + 0.5 * counts["tie"]
    out["first_score"] = wilson_ci(score, n, confidence) if n else wilson_ci(0, 0)
    return out


def _bt_matrix(comparisons: Iterable[tuple[Any, Any, float]], sources: Sequence[Any]
               ) -> tuple[np.ndarray, np.ndarray]:
    """W[i, j] = (half-)wins of i over j; N[i, j] = comparisons between i and j."""
    index = {s: k for k, s in enumerate(sources)}
    m = len(sources)
    wins = np.zeros((m, m))
    for a, b, score in comparisons:
        if a not in index or b not in index:
            raise ValueError(f"unknown source in comparison ({a!r}, {b!r})")
        if a == b:
            raise ValueError("a source cannot be compared with itself")
        score = float(score)
        if not 0.0 <= score <= 1.0:
            raise ValueError("score must be 1 (a wins), 0.5 (tie) or 0 (b wins)")
        wins[index[a], index[b]] += score
        wins[index[b], index[a]] += 1.0 - score
    return wins, wins + wins.T


def _strongly_connected(wins: np.ndarray) -> bool:
    """Hunter's (2004) condition for a finite Bradley-Terry MLE: in every split of the sources into two
    groups some source of each group beats (or ties) some source of the other."""
    m = wins.shape[0]
    beats = wins > 0
    for start in range(m):
        seen = {start}
        stack = [start]
        while stack:
            i = stack.pop()
            for j in np.nonzero(beats[i])[0]:
                if int(j) not in seen:
                    seen.add(int(j))
                    stack.append(int(j))
        if len(seen) < m:
            return False
    return True


def bradley_terry(comparisons: Iterable[tuple[Any, Any, float]], sources: Sequence[Any] | None = None,
                  *, tol: float = 1e-10, max_iter: int = 10_000) -> dict:
    """Bradley-Terry strengths by the MM algorithm (Hunter 2004, Ann Stat 32:384-406).

    ``comparisons``: (a, b, score of a) with score 1 (a wins), 0.5 (tie, counted as half a win each, as in
    Chatbot Arena) or 0 (b wins). P(a beats b) = p_a / (p_a + p_b). Returns ``{"sources", "strength"}``
    (normalised to sum 1), ``"log_strength"`` (centred natural logs), ``"wins"`` (half-wins per source),
    ``"n"``, ``"iterations"``, ``"converged"`` and ``"warnings"``; strengths are None (with the reason) when
    the MLE does not exist (fewer than two sources, or a group of sources that never beats or ties the rest).
    """
    comps = list(comparisons)
    if sources is None:
        sources = sorted({c[0] for c in comps} | {c[1] for c in comps}, key=str)
    sources = list(sources)
    warns: list[str] = []
    out: dict[str, Any] = {"sources": [_py(s) for s in sources], "strength": None, "log_strength": None,
                           "wins": None, "n": len(comps), "iterations": 0, "converged": False,
                           "warnings": warns}
    if len(sources) < 2:
        warns.append("Bradley-Terry is undefined: fewer than two sources.")
        return out
    wins, games = _bt_matrix(comps, sources)
    out["wins"] = {str(s): _num(w) for s, w in zip(sources, wins.sum(axis=1), strict=True)}
    if not comps:
        warns.append("Bradley-Terry is undefined: no comparisons.")
        return out
    if not _strongly_connected(wins):
        warns.append("Bradley-Terry is undefined: some source (or group of sources) never beats or ties the "
                     "others, so its strength is 0 or infinite (Hunter 2004, assumption 1).")
        return out
    w = wins.sum(axis=1)
    p = np.full(len(sources), 1.0 / len(sources))
    iterations = 0
    while iterations < max_iter:
        iterations += 1
        denom = (games / (p[:, None] + p[None, :])).sum(axis=1)
        new = w / denom
        new /= new.sum()
        change = float(np.max(np.abs(new - p)))
        p = new
        if change < tol:
            out["converged"] = True
            break
    out["iterations"] = iterations
    if not out["converged"]:
        warns.append(f"The MM algorithm did not converge in {max_iter} iterations.")
    logs = np.log(p)
    logs -= logs.mean()
    out["strength"] = {str(s): _num(v) for s, v in zip(sources, p, strict=True)}
    out["log_strength"] = {str(s): _num(v) for s, v in zip(sources, logs, strict=True)}
    return out


def bradley_terry_bootstrap(rows: Sequence[tuple[Any, Any, Any, float]], sources: Sequence[Any] | None = None,
                            *, n_resamples: int = 1000, seed: int | None = 0, confidence: float = 0.95) -> dict:
    """Bradley-Terry with percentile bootstrap CIs, resampling units (items) with all their comparisons.

    ``rows``: (unit, a, b, score of a). Returns :func:`bradley_terry` on all rows plus ``"ci"``:
    per source the :func:`bootstrap_summary` of its strength (sum-1 scale) and of its log strength.
    """
    rows = list(rows)
    if sources is None:
        sources = sorted({r[1] for r in rows} | {r[2] for r in rows}, key=str)
    sources = list(sources)
    full = bradley_terry([(a, b, s) for _, a, b, s in rows], sources)
    by_unit: dict[Any, list[tuple[Any, Any, float]]] = {}
    for unit, a, b, s in rows:
        by_unit.setdefault(unit, []).append((a, b, s))
    units = list(by_unit)
    full["ci"] = None
    if full["strength"] is None or len(units) < 2:
        if full["strength"] is not None:
            full["warnings"].append("Too few items for a bootstrap interval.")
        return full
    idx = bootstrap_indices(len(units), n_resamples, seed)
    reps = np.full((idx.shape[0], len(sources)), np.nan)
    log_reps = np.full_like(reps, np.nan)
    for b, row in enumerate(idx):
        comps = [c for k in row for c in by_unit[units[k]]]
        fit = bradley_terry(comps, sources, tol=1e-8, max_iter=2000)
        if fit["strength"] is not None:
            reps[b] = [fit["strength"][str(s)] for s in sources]
            log_reps[b] = [fit["log_strength"][str(s)] for s in sources]
    full["ci"] = {
        str(s): {"strength": bootstrap_summary(full["strength"][str(s)], reps[:, k], seed=seed,
                                               confidence=confidence),
                 "log_strength": bootstrap_summary(full["log_strength"][str(s)], log_reps[:, k], seed=seed,
                                                   confidence=confidence)}
        for k, s in enumerate(sources)
    }
    return full


def vote_agreement(pairs: Iterable[tuple[Any, Any]], tie: Any = "tie") -> dict:
    """Agreement between two kinds of voters on the same questions, counted over every pair of votes (the
    MT-Bench convention, Zheng et al. 2023): ``with_ties`` over all vote pairs, ``without_ties`` over the
    pairs where neither vote is a tie, and Cohen's kappa over all vote pairs."""
    votes = [(a, b) for a, b in pairs if a is not None and b is not None]
    agree = sum(1 for a, b in votes if a == b)
    no_tie = [(a, b) for a, b in votes if a != tie and b != tie]
    agree_no_tie = sum(1 for a, b in no_tie if a == b)
    kappa = (cohen_kappa_detail([a for a, _ in votes], [b for _, b in votes]) if votes
             else {"value": None, "warnings": ["Cohen's kappa is undefined: no votes."]})
    return {
        "with_ties": {"value": _num(agree / len(votes)) if votes else None, "n": len(votes)},
        "without_ties": {"value": _num(agree_no_tie / len(no_tie)) if no_tie else None, "n": len(no_tie)},
        "cohen_kappa": {"value": kappa["value"], "warnings": kappa["warnings"]},
    }


def position_bias(choices: Iterable[str]) -> dict:
    """Share of "A" (the left / first-shown candidate) among all side choices and among decisive ones (A or B),
    with a two-sided exact binomial test of the decisive share against 1/2 (scipy ``binomtest``)."""
    values = [c for c in choices if c]
    n = len(values)
    n_a = sum(1 for c in values if c == "A")
    n_b = sum(1 for c in values if c == "B")
    decisive = n_a + n_b
    out: dict[str, Any] = {"n": n, "a": n_a, "b": n_b, "tie": n - decisive, "share_a": wilson_ci(n_a, n),
                           "share_a_decisive": wilson_ci(n_a, decisive), "p_value": None}
    if decisive:
        from scipy.stats import binomtest

        out["p_value"] = _num(binomtest(n_a, decisive, 0.5).pvalue)
    return out
