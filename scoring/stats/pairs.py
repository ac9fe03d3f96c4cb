"""Pairwise agreement of many rater pairs at once, for the bootstrap: confusion tables of every pair over every
resample (sparse, so the cost follows the dialogues a pair shares, not all dialogues) and (weighted) kappa from
tables."""

from __future__ import annotations

from typing import Any

import numpy as np

from scoring.stats._common import _EPS, LeaveOneOut, weighted_sums
from scoring.stats.kernels import _disagreement_weights, agreement_weights


def pairwise_tables(a: np.ndarray, b: np.ndarray, q: int, freq: Any = None) -> np.ndarray:
    """Confusion tables of P pairs over the same n subjects: (P, q, q), or (B, P, q, q) with ``freq``.

    ``a``, ``b``: (P, n) category indices, -1 = missing (a subject counts for a pair when both rated it).
    ``freq``: (B, n) bootstrap multiplicities or a :class:`LeaveOneOut` jackknife.
    """
    from scipy import sparse

    a = np.atleast_2d(np.asarray(a, dtype=np.int64))
    b = np.atleast_2d(np.asarray(b, dtype=np.int64))
    n_pairs, n = a.shape
    qq = q * q
    both = (a >= 0) & (b >= 0)
    pair, subject = np.nonzero(both)
    columns = pair * qq + a[pair, subject] * q + b[pair, subject]
    onehot = sparse.csr_matrix((np.ones(len(subject)), (subject, columns)), shape=(n, n_pairs * qq))
    if freq is None:
        return np.asarray(onehot.sum(axis=0)).reshape(n_pairs, q, q)
    if isinstance(freq, LeaveOneOut):
        counts = weighted_sums(freq, onehot.toarray())
    else:
        counts = np.asarray((onehot.T @ np.asarray(freq, dtype=float).T).T)
    return counts.reshape(-1, n_pairs, q, q)


def kappa_from_tables(tables: np.ndarray, weights: str | None = None) -> np.ndarray:
    """Cohen's kappa (or weighted kappa, Cohen 1968, with linear / quadratic disagreement weights on the category
    index) of confusion tables (..., q, q); NaN where undefined (no pairs, or chance disagreement 0). Same value
    as :func:`scoring.stats.cohen_kappa_codes` on the codes behind each table."""
    t = np.asarray(tables, dtype=float)
    q = t.shape[-1]
    w = _disagreement_weights(q, weights)
    n = t.sum(axis=(-1, -2))
    with np.errstate(invalid="ignore", divide="ignore"):
        p = t / n[..., None, None]
        expected = p.sum(axis=-1)[..., :, None] * p.sum(axis=-2)[..., None, :]
        observed = (p * w).sum(axis=(-1, -2))
        chance = (expected * w).sum(axis=(-1, -2))
        return np.where((n > 0) & (chance > _EPS), 1.0 - observed / chance, np.nan)


def mean_over_pairs(values: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Mean over the last (pair) axis weighted by each pair's number of shared subjects, leaving out NaN values;
    NaN when nothing is left."""
    v = np.asarray(values, dtype=float)
    w = np.where(np.isfinite(v), np.asarray(n, dtype=float), 0.0)
    total = w.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, (np.where(w > 0, v, 0.0) * w).sum(axis=-1) / np.where(total > 0, total, 1),
                        np.nan)


def weighted_agreement_from_tables(tables: np.ndarray, values: Any, weights: str = "within_one") -> np.ndarray:
    """Share of a pair's subjects on which the two agree up to the weights (``within_one``: at most one point
    apart; ``identity``: exactly), from confusion tables (..., q, q); NaN without subjects."""
    t = np.asarray(tables, dtype=float)
    n = t.sum(axis=(-1, -2))
    w = agreement_weights(values, weights)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, (t * w).sum(axis=(-1, -2)) / np.where(n > 0, n, 1), np.nan)


def ac2_from_tables(tables: np.ndarray, values: Any, weights: str = "quadratic") -> np.ndarray:
    """Gwet's AC2 of two raters from their confusion tables (..., q, q) over categories with numeric ``values``:
    pa = sum_kl w_kl p_kl, pe = T_w / (q (q - 1)) sum_k pi_k (1 - pi_k), pi_k the mean of the two raters' shares
    (the two-rater case of :func:`scoring.stats.gwet_ac2_counts`); NaN without subjects."""
    t = np.asarray(tables, dtype=float)
    q = t.shape[-1]
    n = t.sum(axis=(-1, -2))
    w = agreement_weights(values, weights)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = t / n[..., None, None]
        pa = (p * w).sum(axis=(-1, -2))
        pi = (p.sum(axis=-1) + p.sum(axis=-2)) / 2.0
        pe = w.sum() * (pi * (1.0 - pi)).sum(axis=-1) / (q * (q - 1)) if q > 1 else np.zeros_like(pa)
        return np.where(n > 0, (pa - pe) / (1.0 - pe), np.nan)
