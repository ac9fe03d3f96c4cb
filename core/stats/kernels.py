"""Label encoding, count tables and vectorised numpy kernels of the agreement coefficients
(fast paths for bootstrapping: a leading batch axis or bootstrap multiplicities)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from core.stats._common import _EPS, _label, weighted_sums


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
    raw = data.to_numpy() if isinstance(data, pd.DataFrame | pd.Series) else data
    fast = _encode_numeric(raw, categories)
    if fast is not None:
        return fast
    arr = np.asarray(raw, dtype=object)
    shape = arr.shape
    flat = arr.ravel()
    missing = pd.isna(flat)
    if categories is None:
        cats = ordered_labels(pd.unique(flat[~missing]))
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


def _plain_number(x: Any) -> bool:
    """An int or float (not a bool) that a float64 holds exactly."""
    if isinstance(x, bool | np.bool_) or not isinstance(x, int | float | np.integer | np.floating):
        return False
    try:
        return bool(np.isfinite(float(x))) and float(x) == x
    except OverflowError:
        return False


def _encode_numeric(raw: Any, categories: Sequence[Any] | None) -> tuple[np.ndarray, list] | None:
    """:func:`encode_labels` of a numeric array (floats with NaN for missing, or integers) with numeric categories,
    without a pass over Python objects: the same codes and categories as the general path (which matches ``1.0``
    to the category ``1`` as this does), or None when the input is not of that kind."""
    if not isinstance(raw, np.ndarray) or raw.dtype.kind not in "iuf":
        return None
    flat = raw.ravel().astype(float, copy=False)
    missing = np.isnan(flat)
    if categories is None:
        cats = ordered_labels(pd.unique(flat[~missing]).tolist())
    else:
        cats = list(categories)
        if not all(_plain_number(c) for c in cats):
            return None
        if len(set(map(repr, cats))) != len(cats):
            raise ValueError("categories must be unique")
    values = np.asarray([float(c) for c in cats], dtype=float)
    if len(np.unique(values)) != len(values):  # e.g. 1 and 1.0: left to the general path
        return None
    codes = np.full(flat.shape, -1, dtype=np.int64)
    if len(values):
        order = np.argsort(values, kind="stable")
        ranked = values[order]
        pos = np.minimum(np.searchsorted(ranked, flat), len(ranked) - 1)
        hit = ranked[pos] == flat
        codes[hit] = order[pos[hit]]
    unknown = (codes < 0) & ~missing
    if unknown.any():
        bad = sorted({repr(v) for v in raw.ravel()[unknown].tolist()})
        raise ValueError(f"labels not in categories: {', '.join(bad[:10])}")
    return codes.reshape(raw.shape), [_label(c) for c in cats]


def _as_number(x: Any) -> float | None:
    if isinstance(x, bool | np.bool_):
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if np.isfinite(v) else None


def ordered_labels(labels: Any) -> list:
    """Observed labels in their natural order: by numeric value when every label is a number or a numeric
    string (so ``'2' < '10'``, never the lexicographic ``'10' < '2'``), else sorted as they are; labels that
    cannot be compared keep their order of first appearance."""
    uniq = list(labels)
    numbers = [_as_number(v) for v in uniq]
    if uniq and all(v is not None for v in numbers):
        return [uniq[i] for _, i in sorted(zip(numbers, range(len(uniq)), strict=True))]
    try:
        return sorted(uniq)
    except TypeError:  # mixed, unorderable labels: order of first appearance
        return uniq


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
        onehot = np.zeros((cell.size, qq + 1))
        onehot[np.arange(cell.size), cell] = 1.0
        tab = weighted_sums(freq, onehot)[:, :qq].reshape(-1, q, q)
        lead = tab.shape[:1]
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
            # One product for all four sums: freq is read from memory once instead of four times.
            pa, pi = _pa_pi_from_sums(weighted_sums(freq, np.column_stack([agree, two, one, share])))
    return pa, pi


def _pa_pi_columns(table: np.ndarray) -> np.ndarray:
    """The ``(n, 3 + q)`` per-subject columns whose weighted sums give pa and pi (:func:`_pa_pi_from_sums`)."""
    agree, two, share, one = _subject_terms(table)
    return np.column_stack([agree, two, one, share])


def _pa_pi_from_sums(sums: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """pa and pi from the ``(B, 3 + q)`` weighted sums of :func:`_pa_pi_columns`."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return sums[:, 0] / sums[:, 1], sums[:, 3:] / sums[:, 2][:, None]


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
    pa, pi = _pa_pi(t, freq)
    return _scalar_or_array(_ac1_from(pa, pi, t.shape[-1]))


def _ac1_from(pa: np.ndarray, pi: np.ndarray, q: int) -> np.ndarray:
    if q < 2:
        return np.where(np.isfinite(pa), 1.0, np.nan)
    pe = (pi * (1.0 - pi)).sum(axis=-1) / (q - 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (pa - pe) / (1.0 - pe)


def pair_tables(a: np.ndarray, b: np.ndarray, n_categories: int) -> np.ndarray:
    """Two raters' ``(..., q, q)`` confusion tables over the last axis of their codes (-1 = not rated: the subject
    is left out), for a stack of items or pairs at once."""
    a, b = np.asarray(a), np.asarray(b)
    q = int(n_categories)
    valid = (a >= 0) & (b >= 0) & (a < q) & (b < q)
    cell = np.where(valid, a.astype(np.int64) * q + b, q * q)
    lead = cell.shape[:-1]
    m = int(np.prod(lead)) if lead else 1
    cell = cell.reshape(m, -1) + (np.arange(m) * (q * q + 1))[:, None]
    counts = np.bincount(cell.ravel(), minlength=m * (q * q + 1)).reshape(m, q * q + 1)
    return counts[:, :q * q].reshape(*lead, q, q).astype(float)


def gwet_ac1_pair_tables(tables: np.ndarray) -> np.ndarray:
    """Gwet's AC1 of two raters from their ``(..., q, q)`` confusion tables: the value :func:`gwet_ac1_counts`
    gives on the count table of the subjects both rated (pa = agreeing subjects / subjects, pi_k = the mean over
    subjects of the share of the two ratings in k = (row_k + col_k) / 2 / n), the same numbers in the same order
    of operations, without a pass over the subjects. NaN where the raters share no subject."""
    t = np.asarray(tables, dtype=float)
    q = t.shape[-1]
    n = t.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        pa = np.trace(t, axis1=-2, axis2=-1) / n
        pi = ((t.sum(axis=-1) + t.sum(axis=-2)) / 2.0) / n[..., None]
    return _ac1_from(pa, pi, q)


def _fleiss_from(pa: np.ndarray, pi: np.ndarray) -> np.ndarray:
    pe = (pi * pi).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(1.0 - pe > _EPS, (pa - pe) / (1.0 - pe), np.nan)


def agreement_counts(table: np.ndarray, freq: np.ndarray | None = None) -> dict[str, np.ndarray | float]:
    """Percent agreement, Fleiss' kappa and Gwet's AC1 of a count table from one pass over it: the three share pa and
    pi, so with bootstrap ``freq`` this is one matrix product instead of three. The same values as
    :func:`percent_agreement_counts`, :func:`fleiss_kappa_counts` and :func:`gwet_ac1_counts`."""
    t = np.asarray(table, dtype=float)
    pa, pi = _pa_pi(t, freq)
    return {"percent_agreement": _scalar_or_array(pa), "fleiss_kappa": _scalar_or_array(_fleiss_from(pa, pi)),
            "gwet_ac1": _scalar_or_array(_ac1_from(pa, pi, t.shape[-1]))}


def agreement_weights(values: Sequence[float], weights: str = "quadratic") -> np.ndarray:
    """Agreement weights (q, q) between categories with numeric ``values``, as Gwet (2014, ch. 3) and irrCAC define
    them: ``quadratic`` 1 - (x_k - x_l)^2 / (x_max - x_min)^2, ``linear`` 1 - |x_k - x_l| / (x_max - x_min),
    ``identity`` (AC1), or ``within_one`` (1 when the two values are at most one point apart: the share of rater
    pairs within one point). On an evenly spaced grid (0, 0.5, ..., 5) the quadratic weights on the values are the
    quadratic weights on the category index."""
    x = np.asarray(values, dtype=float)
    d = np.abs(x[:, None] - x[None, :])
    span = float(x.max() - x.min()) if x.size else 0.0
    if weights == "identity" or span == 0:
        return np.eye(x.size)
    if weights == "quadratic":
        return 1.0 - (d / span) ** 2
    if weights == "linear":
        return 1.0 - d / span
    if weights == "within_one":
        return (d <= 1.0 + 1e-9).astype(float)
    raise ValueError("weights must be 'quadratic', 'linear', 'identity' or 'within_one'")


def weighted_agreement_counts(table: np.ndarray, w: np.ndarray, freq: np.ndarray | None = None
                              ) -> np.ndarray | float:
    """Weighted percent agreement from a subjects x categories count table (Gwet 2014, eq. 3.5): the mean over
    subjects rated at least twice of sum_k r_ik (r*_ik - 1) / (r_i (r_i - 1)), r*_ik = sum_l w_kl r_il. With
    identity weights this is the mean pairwise percent agreement, with ``within_one`` weights the share of rater
    pairs within one point. ``freq`` (B, n): bootstrap multiplicities -> B values."""
    t = np.asarray(table, dtype=float)
    r = t.sum(axis=-1)
    two = r >= 2
    starred = t @ np.asarray(w, dtype=float).T
    with np.errstate(invalid="ignore", divide="ignore"):
        agree = np.where(two, (t * (starred - 1.0)).sum(axis=-1) / np.where(two, r * (r - 1.0), 1.0), 0.0)
        if freq is None:
            return _scalar_or_array(agree.sum(axis=-1) / two.sum(axis=-1))
        if agree.ndim != 1:
            raise ValueError("with freq, table must be a single (n, q) table")
        sums = weighted_sums(freq, np.column_stack([agree, two.astype(float)]))
        return sums[:, 0] / sums[:, 1]


def gwet_ac2_counts(table: np.ndarray, values: Sequence[float], weights: str = "quadratic",
                    freq: np.ndarray | None = None) -> np.ndarray | float:
    """Gwet's AC2, the weighted AC1 (Gwet 2014, "Handbook of Inter-Rater Reliability", 4th ed., ch. 3; irrCAC's
    ``gwet`` with weights), from a subjects x categories count table over the item's categories ``values``::

        AC2 = (pa_w - pe_w) / (1 - pe_w),  pe_w = T_w / (q (q - 1)) * sum_k pi_k (1 - pi_k)

    with pa_w the weighted agreement (:func:`weighted_agreement_counts`), pi_k as for AC1 and T_w the sum of the
    weights. Like AC1 it stays high when raters agree on a near-constant item, where kappa collapses (the prevalence
    paradox). Every category of the item counts in q, whether used or not (irrCAC with ``categories`` given).
    NaN when no subject has two ratings. Checked against irrCAC (tests)."""
    t = np.asarray(table, dtype=float)
    q = t.shape[-1]
    w = agreement_weights(values, weights)
    pa = weighted_agreement_counts(t, w, freq)
    _, pi = _pa_pi(t, freq)
    if q < 2:
        return _scalar_or_array(np.where(np.isfinite(pa), 1.0, np.nan))
    pe = w.sum() * (pi * (1.0 - pi)).sum(axis=-1) / (q * (q - 1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return _scalar_or_array((np.asarray(pa) - pe) / (1.0 - pe))


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
    return _scalar_or_array(_fleiss_from(pa, pi))


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
    q = t.shape[1]
    flat = _coincidence_columns(t)
    o = (flat.sum(axis=0)[None] if freq is None else weighted_sums(freq, flat)).reshape(-1, q, q)
    alpha = _alpha_from_coincidences(o, values, level)
    return float(alpha[0]) if freq is None else alpha


def _coincidence_columns(t: np.ndarray) -> np.ndarray:
    """Each unit's contribution to Krippendorff's coincidence matrix, flattened: ``(n, q * q)``."""
    n_units, q = t.shape
    m = t.sum(axis=1)
    pairable = m >= 2
    with np.errstate(invalid="ignore", divide="ignore"):
        weight = np.where(pairable, 1.0 / np.where(pairable, m - 1.0, 1.0), 0.0)
    per_unit = (t[:, :, None] * t[:, None, :] - np.eye(q)[None] * t[:, :, None]) * weight[:, None, None]
    return per_unit.reshape(n_units, q * q)


def _alpha_from_coincidences(o: np.ndarray, values: Sequence[float], level: str) -> np.ndarray:
    """Krippendorff's alpha of ``(B, q, q)`` coincidence matrices at ``level``."""
    q = o.shape[-1]
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
        return np.where(expected > _EPS, 1.0 - (total - 1.0) * observed / expected, np.nan)


def agreement_many(tables: Sequence[np.ndarray], values: Sequence[Sequence[float]], levels: Sequence[str],
                   freq: Any) -> list[dict[str, np.ndarray]]:
    """Per count table (subjects x categories, the same subjects in every table): percent agreement, Fleiss'
    kappa, Gwet's AC1 and Krippendorff's alpha at the table's ``level`` over the resamples of ``freq`` (bootstrap
    multiplicities or a :class:`LeaveOneOut`), from ONE matrix product for all tables (a few narrow products per
    table read the ``(B, n)`` multiplicities from memory each time: ten times slower on a campaign's 24 items).
    The same values as :func:`agreement_counts` and :func:`krippendorff_alpha_counts` table by table."""
    for level in levels:
        if level not in ("nominal", "ordinal", "interval"):
            raise ValueError("level must be nominal, ordinal or interval")
    tables = [np.asarray(t, dtype=float) for t in tables]
    if not tables:
        return []
    blocks = [part for t in tables for part in (_pa_pi_columns(t), _coincidence_columns(t))]
    sums = weighted_sums(freq, np.concatenate(blocks, axis=1))
    out, start = [], 0
    for t, domain, level in zip(tables, values, levels, strict=True):
        q = t.shape[1]
        pa, pi = _pa_pi_from_sums(sums[:, start:start + 3 + q])
        start += 3 + q
        o = sums[:, start:start + q * q].reshape(-1, q, q)
        start += q * q
        out.append({"percent_agreement": pa, "fleiss_kappa": _fleiss_from(pa, pi),
                    "gwet_ac1": _ac1_from(pa, pi, q), "krippendorff_alpha": _alpha_from_coincidences(o, domain, level)})
    return out


# --------------------------------------------------------------------------------------
# ICC: the two-way ANOVA of complete targets x raters matrices, all at once
# --------------------------------------------------------------------------------------
#: The six Shrout & Fleiss (1979) forms in pingouin's order (McGraw & Wong: ICC(1,1), ICC(A,1), ICC(C,1), ...).
ICC_KERNEL_FORMS = ("ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k")
#: A residual sum of squares at or below this share of the total is zero (perfectly additive ratings): F is then
#: infinite, not the ratio of two rounding errors.
_ICC_RESIDUAL_TOL = 1e-12


def icc_mean_squares(values: Any, freq: Any = None) -> dict[str, np.ndarray]:
    """Mean squares of the two-way ANOVA without replication behind the ICCs, for complete matrices.

    ``values``: targets x raters ``(n, k)`` or a stack ``(..., n, k)`` (e.g. every item, or every resample, at once);
    no missing cells. ``freq``: optional ``(B, n)`` bootstrap multiplicities (:func:`bootstrap_freq`) or a
    :class:`LeaveOneOut`, with a single ``(n, k)`` matrix: target i counts ``freq[b, i]`` times in resample b (as
    its own target), so all B resamples cost one matrix product. Returns ``msb`` (between targets), ``msj``
    (between raters), ``mse`` (residual), ``msw`` (within targets), ``n`` and ``k``, arrays over the batch (over
    the resamples with ``freq``). The sums of squares are those of pingouin's ``anova`` on the long data.
    """
    y = np.asarray(values, dtype=float)
    if y.ndim < 2:
        raise ValueError("values must be a targets x raters matrix (or a stack of them)")
    k = y.shape[-1]
    if freq is None:
        n = np.full(y.shape[:-2], float(y.shape[-2]))
        d = y - y.mean(axis=(-2, -1), keepdims=True)  # centred: the sums below lose no digits to the mean
        row = d.mean(axis=-1)
        col = d.mean(axis=-2)
        grand = d.mean(axis=(-2, -1))
        ssr = k * ((row - grand[..., None]) ** 2).sum(axis=-1)
        ssc = y.shape[-2] * ((col - grand[..., None]) ** 2).sum(axis=-1)
        residual = d - row[..., :, None] - col[..., None, :] + grand[..., None, None]
        sse = (residual ** 2).sum(axis=(-2, -1))
        sst = ((d - grand[..., None, None]) ** 2).sum(axis=(-2, -1))
    else:
        if y.ndim != 2:
            raise ValueError("with freq, values must be a single (n, k) matrix")
        d = y - y.mean()
        row = d.mean(axis=1)
        sums = weighted_sums(freq, np.column_stack([np.ones(len(d)), row, row ** 2, (d ** 2).sum(axis=1), d]))
        n, row_sum, row_sq, sq = sums[:, 0], sums[:, 1], sums[:, 2], sums[:, 3]
        col_sum = sums[:, 4:]
        with np.errstate(invalid="ignore", divide="ignore"):
            grand = row_sum / n
            ssr = k * (row_sq - n * grand ** 2)
            ssc = ((col_sum / n[:, None] - grand[:, None]) ** 2).sum(axis=1) * n
            sst = sq - n * k * grand ** 2
        # Sums of squares taken as differences carry rounding errors of the size of ``sq``: below that they are 0
        # (e.g. a resample whose ratings are all the same has no variation, not a variation of 1e-17).
        noise = _ICC_RESIDUAL_TOL * sq
        ssr, ssc, sst = (np.where(x <= noise, 0.0, x) for x in (ssr, ssc, sst))
        sse = sst - ssr - ssc
        sse = np.where(sse <= noise, 0.0, sse)
    sse = np.where(sse <= _ICC_RESIDUAL_TOL * np.maximum(sst, 0.0), 0.0, sse)
    ssr, ssc = np.maximum(ssr, 0.0), np.maximum(ssc, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return {"msb": ssr / (n - 1), "msj": ssc / (k - 1), "mse": sse / ((n - 1) * (k - 1)),
                "msw": (ssc + sse) / (n * (k - 1)), "n": n, "k": np.full(np.shape(n), float(k))}


def icc_kernel(values: Any, freq: Any = None, confidence: float = 0.95) -> dict[str, dict[str, np.ndarray]]:
    """The six Shrout & Fleiss (1979) ICCs with their F tests and F-distribution confidence intervals, vectorised.

    Same formulas as ``pingouin.intraclass_corr`` (McGraw & Wong 1996 for the CIs; ICC2's through Satterthwaite's
    approximate degrees of freedom), equal to it to 1e-9 (tests/test_stats_kernels.py), over every matrix of a
    stack ``(..., n, k)`` or every bootstrap resample (``freq``, see :func:`icc_mean_squares`) at once. Returns
    ``{form: {"icc", "f", "df1", "df2", "p", "ci_low", "ci_high"}}`` of arrays over the batch; NaN where a figure
    is undefined (no variation), F = inf (and p = 0) when the residual is zero. Complete matrices only: listwise
    deletion and the report's warnings are :func:`core.stats.icc`'s.
    """
    from scipy.special import fdtrc, fdtri

    ms = icc_mean_squares(values, freq)
    msb, msj, mse, msw, n, k = (ms[key] for key in ("msb", "msj", "mse", "msw", "n", "k"))
    q = 1 - (1 - confidence) / 2
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        icc1 = (msb - msw) / (msb + (k - 1) * msw)
        icc2 = (msb - mse) / (msb + (k - 1) * mse + k * (msj - mse) / n)
        icc3 = (msb - mse) / (msb + (k - 1) * mse)
        icc1k = (msb - msw) / msb
        icc2k = (msb - mse) / (msb + (msj - mse) / n)
        icc3k = (msb - mse) / msb
        f1k = msb / msw
        f3k = msb / mse
        df1 = n - 1
        df1kd = n * (k - 1)
        df2kd = (n - 1) * (k - 1)
        p1k = fdtrc(df1, df1kd, f1k)
        p3k = fdtrc(df1, df2kd, f3k)
        f1l = f1k / fdtri(df1, df1kd, q)
        f1u = f1k * fdtri(df1kd, df1, q)
        l1 = (f1l - 1) / (f1l + (k - 1))
        u1 = (f1u - 1) / (f1u + (k - 1))
        f3l = f3k / fdtri(df1, df2kd, q)
        f3u = f3k * fdtri(df2kd, df1, q)
        l3 = (f3l - 1) / (f3l + (k - 1))
        u3 = (f3u - 1) / (f3u + (k - 1))
        fj = msj / mse
        vn = df2kd * (k * icc2 * fj + n * (1 + (k - 1) * icc2) - k * icc2) ** 2
        vd = df1 * k ** 2 * icc2 ** 2 * fj ** 2 + (n * (1 + (k - 1) * icc2) - k * icc2) ** 2
        v = vn / vd
        f2u = fdtri(n - 1, v, q)
        f2l = fdtri(v, n - 1, q)
        l2 = n * (msb - f2u * mse) / (f2u * (k * msj + (k * n - k - n) * mse) + n * msb)
        u2 = n * (f2l * msb - mse) / (k * msj + (k * n - k - n) * mse + n * f2l * msb)
        rows = {
            "ICC1": (icc1, f1k, df1kd, p1k, l1, u1),
            "ICC2": (icc2, f3k, df2kd, p3k, l2, u2),
            "ICC3": (icc3, f3k, df2kd, p3k, l3, u3),
            "ICC1k": (icc1k, f1k, df1kd, p1k, 1 - 1 / f1l, 1 - 1 / f1u),
            "ICC2k": (icc2k, f3k, df2kd, p3k, l2 * k / (1 + l2 * (k - 1)), u2 * k / (1 + u2 * (k - 1))),
            "ICC3k": (icc3k, f3k, df2kd, p3k, 1 - 1 / f3l, 1 - 1 / f3u),
        }
    return {form: {"icc": value, "f": f_value, "df1": df1, "df2": df2, "p": p, "ci_low": low, "ci_high": high}
            for form, (value, f_value, df2, p, low, high) in rows.items()}
