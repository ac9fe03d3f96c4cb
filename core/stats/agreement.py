"""Inter-rater agreement: ICC (Shrout-Fleiss forms), Krippendorff's alpha, Cohen's, Fleiss' kappa, Gwet's AC1,
percent agreement and Kendall's W."""

from __future__ import annotations

import warnings as _warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from core.stats import messages as M
from core.stats._common import _EPS, _fmt_names, _frame, _label, _nan, _num, _numeric_frame
from core.stats.kernels import (
    _as_number,
    _disagreement_weights,
    _pa_pi,
    count_table,
    encode_labels,
    fleiss_kappa_counts,
    gwet_ac1_counts,
    icc_kernel,
    percent_agreement_counts,
)

# --------------------------------------------------------------------------------------
# ICC
# --------------------------------------------------------------------------------------
ICC_FORMS = ("ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k")


def _empty_icc_form() -> dict:
    return {"icc": None, "f": None, "df1": None, "df2": None, "p": None,
            "ci_low": None, "ci_high": None}


def _wide_ratings(data: pd.DataFrame) -> tuple[np.ndarray, list]:
    """Targets x raters matrix of the mean rating per cell (NaN where none), both sorted, as pandas' pivot_table
    gives it, without its per-group machinery."""
    targets, _ = pd.factorize(data["t"], sort=True)
    raters, rater_names = pd.factorize(data["r"], sort=True)
    y = data["y"].to_numpy(dtype=float)
    n, k = int(targets.max()) + 1, len(rater_names)
    seen = ~np.isnan(y)
    cell = targets[seen] * k + raters[seen]
    sums = np.bincount(cell, weights=y[seen], minlength=n * k)
    counts = np.bincount(cell, minlength=n * k)
    with np.errstate(invalid="ignore", divide="ignore"):
        wide = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan).reshape(n, k)
    return wide, list(rater_names)


def icc(df: pd.DataFrame, targets: str, raters: str, ratings: str) -> dict:
    """Intraclass correlations, Shrout & Fleiss (1979) forms, as pingouin.intraclass_corr gives them.

    Computed by the vectorised kernel :func:`core.stats.kernels.icc_kernel` (equal to pingouin to 1e-9; pingouin
    stays the reference in the tests). ``df`` is long format (one row per target x rater).  ICC1 = one-way random,
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
        warns.append(M.say(M.ICC_DUPLICATES, n=dups))
    if data.empty:
        warns.append(M.say(M.ICC_NO_RATINGS))
        return out
    values, rater_names = _wide_ratings(data)
    complete = ~np.isnan(values).any(axis=1)
    if not complete.all():
        values = values[complete]
        warns.append(M.say(M.ICC_INCOMPLETE, n=int((~complete).sum())))
    n, k = values.shape
    out["n_targets"], out["n_raters"] = int(n), int(k)
    if k < 2:
        warns.append(M.say(M.ICC_TWO_RATERS, n=k))
        return out
    if n < 2:
        warns.append(M.say(M.ICC_TWO_TARGETS, n=n))
        return out
    if np.ptp(values) == 0:
        warns.append(M.say(M.ICC_NO_VARIATION))
        return out
    flat_raters = [str(c) for c, v in zip(rater_names, np.ptp(values, axis=0), strict=True) if v == 0]
    if flat_raters:
        warns.append(M.say(M.ICC_FLAT_RATERS, names=_fmt_names(flat_raters)))
    if np.ptp(values.mean(axis=1)) == 0:
        warns.append(M.say(M.ICC_SAME_MEANS))

    forms = icc_kernel(values)
    inf_f = False
    for name in ICC_FORMS:
        row = forms[name]
        f_val = _num(row["f"])
        inf_f = inf_f or bool(np.isinf(row["f"]))
        out[name] = {"icc": _num(row["icc"]), "f": f_val, "df1": int(row["df1"]), "df2": int(row["df2"]),
                     "p": _num(row["p"]), "ci_low": _num(row["ci_low"]), "ci_high": _num(row["ci_high"])}
    if inf_f:
        warns.append(M.say(M.ICC_F_INFINITE))
    if any((out[f]["icc"] is not None and out[f]["icc"] < 0) for f in ICC_FORMS):
        warns.append(M.say(M.ICC_NEGATIVE))
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
        warns.append(M.say(M.ALPHA_EMPTY))
        return out
    if arr.shape[0] < 2:
        warns.append(M.say(M.ALPHA_ONE_RATER))
        return out
    present = ~np.isnan(arr)
    pairable_units = present.sum(axis=0) >= 2
    pairable = arr[:, pairable_units][present[:, pairable_units]]
    out["n_pairable"] = int(pairable.size)
    if pairable.size == 0:
        warns.append(M.say(M.ALPHA_NOT_PAIRABLE))
        return out
    if np.unique(pairable).size < 2:
        warns.append(M.say(M.ALPHA_NO_VARIATION, value=repr(_label(pairable[0]))))
        return out
    flat = [str(name) for name, row in zip(df.index, arr, strict=True)
            if np.sum(~np.isnan(row)) > 1 and np.unique(row[~np.isnan(row)]).size == 1]
    if flat:
        warns.append(M.say(M.ALPHA_FLAT_RATERS, names=_fmt_names(flat)))
    import krippendorff

    try:
        with _warnings.catch_warnings(), np.errstate(all="ignore"):
            _warnings.simplefilter("ignore")
            value = krippendorff.alpha(reliability_data=arr, value_domain=domain,
                                       level_of_measurement=level)
    except (ValueError, ZeroDivisionError) as exc:
        warns.append(M.say(M.ALPHA_FAILED, reason=exc))
        return out
    out["value"] = _num(value)
    if out["value"] is None:
        warns.append(M.say(M.ALPHA_UNDEFINED))
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
    weights on the category index, as in R ``irr::kappa2`` and statsmodels).  The order is
    the item's values: ``categories`` when given (reports always pass the item's allowed
    values), else the observed labels by numeric value (numeric strings too, so ``'2'`` comes
    before ``'10'``); weighted kappa on non-numeric labels without ``categories`` raises
    ``ValueError``, since no order is known.  Pairs with a missing
    rating are dropped.  Returns ``{"value", "warnings", "n", "po", "pe", "categories"}``
    (``po``/``pe`` = observed / chance agreement, unweighted only).
    """
    if weights not in (None, "linear", "quadratic"):
        raise ValueError("weights must be None, 'linear' or 'quadratic'")
    ca, cb, cats, dropped = _pair_codes(a, b, categories)
    if weights is not None and categories is None and any(_as_number(c) is None for c in cats):
        raise ValueError("weighted kappa needs the order of the categories: pass categories= (the item's "
                         f"values in order); observed labels {cats[:10]!r} are not numbers")
    warns: list[str] = []
    out = {"value": None, "warnings": warns, "n": int(ca.size), "po": None, "pe": None,
           "categories": cats}
    if dropped:
        warns.append(M.say(M.PAIRS_DROPPED, n=dropped))
    if ca.size == 0:
        warns.append(M.say(M.COHEN_NO_PAIR))
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
        warns.append(M.say(M.COHEN_NO_VARIATION, value=repr(used_a[0])))
        return out
    for who, used in (("a", used_a), ("b", used_b)):
        if len(used) == 1:
            warns.append(M.say(M.COHEN_FLAT_RATER, rater=who, value=repr(used[0])))
    from statsmodels.stats.inter_rater import cohens_kappa

    with np.errstate(all="ignore"):
        if weights is None:
            value = cohens_kappa(table, return_results=False)
        else:
            value = cohens_kappa(table, weights=np.arange(q), wt=weights,
                                 return_results=False)
    out["value"] = _num(value)
    if out["value"] is None:
        warns.append(M.say(M.COHEN_UNDEFINED))
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
        warns.append(M.say(M.SUBJECTS_UNRATED, n=int((r == 0).sum())))
        table = table[r > 0]
    return table, cats, warns, df


def _multi_rater_precheck(table: np.ndarray, df: pd.DataFrame, name: str,
                          warns: list[str]) -> bool:
    if df.size == 0 or table.shape[0] == 0:
        warns.append(M.say(M.MULTI_EMPTY[name]))
        return False
    if df.shape[1] < 2:
        warns.append(M.say(M.MULTI_ONE_RATER[name]))
        return False
    r = table.sum(axis=1)
    if not (r >= 2).any():
        warns.append(M.say(M.MULTI_NOT_PAIRABLE[name]))
        return False
    if (r == 1).any():
        warns.append(M.say(M.SINGLE_RATINGS, n=int((r == 1).sum())))
    return True


def _zero_variance_raters(df: pd.DataFrame) -> list[str]:
    """Raters (columns) with more than one rating, all the same."""
    if len(df.columns) and all(dtype.kind in "iuf" for dtype in df.dtypes):  # numeric: one pass, no pandas loop
        values = df.to_numpy(dtype=float)
        seen = ~np.isnan(values)
        with np.errstate(all="ignore"):
            low = np.where(seen, values, np.inf).min(axis=0)
            high = np.where(seen, values, -np.inf).max(axis=0)
        constant = (seen.sum(axis=0) > 1) & (low == high)
        return [str(c) for c, flag in zip(df.columns, constant, strict=True) if flag]
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
        warns.append(M.say(M.FLEISS_NO_VARIATION, value=repr(cats[int(np.argmax(pi))])))
        return out
    flat = _zero_variance_raters(df)
    if flat:
        warns.append(M.say(M.SUBJECT_FLAT_RATERS, names=_fmt_names(flat)))
    r = table.sum(axis=1)
    if np.all(r == r[0]):
        from statsmodels.stats.inter_rater import fleiss_kappa as _sm_fleiss

        with np.errstate(all="ignore"):
            value = _sm_fleiss(table, method="fleiss")
    else:
        warns.append(M.say(M.FLEISS_UNEQUAL))
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
        warns.append(M.say(M.AC1_IDENTICAL))
    flat = _zero_variance_raters(df)
    if flat and int((pi > 0).sum()) > 1:
        warns.append(M.say(M.SUBJECT_FLAT_RATERS, names=_fmt_names(flat)))
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
    """Kendall's coefficient of concordance W, with and without the correction for ties.

    ``df``: rows raters (judges), columns objects (dialogues / models, items) -- scores are
    ranked within each rater (average ranks for ties).  ``w`` is computed with
    pingouin.friedman, whose W carries the Kendall & Babington Smith (1939) tie correction
    ``W = 12 S / (m^2 (n^3 - n) - m sum_T (t^3 - t))``; ``w_uncorrected`` is Kendall's
    original ``12 S / (m^2 (n^3 - n))`` (S = sum of squared deviations of the rank sums from
    their mean), equal to ``w`` without ties.  chi2 = m (n - 1) W on n - 1 df (tie-corrected).
    Raters with a missing score are dropped (listwise) and named in ``warnings`` with the
    objects they left unscored.  Returns ``{"w", "w_uncorrected", "chi2", "dof", "p",
    "warnings", "n_raters", "n_objects", "dropped"}``.
    """
    data = _numeric_frame(df, "df")
    warns: list[str] = []
    out = {"w": None, "w_uncorrected": None, "chi2": None, "dof": None, "p": None, "warnings": warns,
           "n_raters": 0, "n_objects": int(data.shape[1]), "dropped": []}
    missing = data.isna().any(axis=1)
    if missing.any():
        dropped = []
        for name, row in data.loc[missing].iterrows():
            gaps = [str(c) for c, v in row.items() if pd.isna(v)]
            dropped.append(str(name))
            warns.append(M.say(M.W_RATER_LEFT_OUT, rater=name, names=_fmt_names(gaps, 5)))
        out["dropped"] = dropped
        data = data.loc[~missing]
    m, n = data.shape
    out["n_raters"], out["n_objects"] = int(m), int(n)
    if m < 2:
        warns.append(M.say(M.W_TWO_RATERS, n=m))
        return out
    if n < 2:
        warns.append(M.say(M.W_TWO_OBJECTS, n=n))
        return out
    out["dof"] = int(n - 1)
    values = data.to_numpy(dtype=float)
    flat = [str(i) for i, v in zip(data.index, np.ptp(values, axis=1), strict=True) if v == 0]
    if len(flat) == m:
        warns.append(M.say(M.W_NO_VARIATION))
        return out
    if flat:
        warns.append(M.say(M.W_FLAT_RATERS, names=_fmt_names(flat)))
    if any(len(np.unique(row)) < n for row in values):
        warns.append(M.say(M.W_TIES))
    from scipy.stats import rankdata

    rank_sums = rankdata(values, axis=1).sum(axis=0)
    spread = float(((rank_sums - rank_sums.mean()) ** 2).sum())
    out["w_uncorrected"] = _num(12.0 * spread / (m ** 2 * (n ** 3 - n)))
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
        warns.append(M.say(M.W_UNDEFINED))
    return out
