"""Pairwise agreement of many rater pairs at once, for the bootstrap: confusion tables of every pair over every
resample (sparse, so the cost follows the dialogues a pair shares, not all dialogues) and (weighted) kappa from
tables."""

from __future__ import annotations

from typing import Any

import numpy as np

from core.stats._common import _EPS, LeaveOneOut, weighted_sums
from core.stats.kernels import _disagreement_weights, agreement_weights


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
    fast = _tables_from_products(a, b, q, freq)
    if fast is not None:
        return fast
    if isinstance(freq, LeaveOneOut):
        counts = weighted_sums(freq, onehot.toarray())
    elif n * n_pairs * qq <= _DENSE_FACTOR * max(len(subject), 1) and n * n_pairs * qq <= _DENSE_CELLS:
        # few categories: one dense matrix product (BLAS) is several times faster than the sparse one, which
        # also copies the transposed multiplicities on every call
        counts = np.asarray(freq, dtype=float) @ onehot.toarray()
    else:
        counts = np.asarray((onehot.T @ np.asarray(freq, dtype=float).T).T)
    return counts.reshape(-1, n_pairs, q, q)


def _tables_from_products(a: np.ndarray, b: np.ndarray, q: int, freq: Any) -> np.ndarray | None:
    """The resampled tables of :func:`pairwise_tables` with fewer columns, when the pairs are drawn from a few
    raters (e.g. every pair of physicians) who rated the same subjects (each subject rated by all of them or by
    none); None otherwise.

    Then a pair's table follows from the products of the two raters' category indicators for the first q - 1
    categories, each rater's own counts of those categories and the number of rated subjects: for binary items
    one column per pair and one per rater instead of four per pair (45 pairs of 10 raters: 56 columns, not 180).
    The counts are sums of integers, so the tables are exactly those of the general path."""
    if q < 2:
        return None
    seen: dict[bytes, int] = {}
    index = np.array([seen.setdefault(np.ascontiguousarray(row).tobytes(), len(seen)) for row in (*a, *b)])
    first, second = index[: len(a)], index[len(a):]
    k, n_pairs = len(seen), len(a)
    columns = n_pairs * (q - 1) ** 2 + k * (q - 1) + 1
    if columns > 0.35 * n_pairs * q * q:  # measured: below that the building costs more than it saves
        return None
    rows = {i: row for row, i in zip((*a, *b), index, strict=True)}
    raters = np.stack([rows[i] for i in range(k)])
    rated = raters >= 0
    if not (rated.all(axis=0) | ~rated.any(axis=0)).all():
        return None
    indicator = (raters[:, None, :] == np.arange(q - 1)[None, :, None]).astype(float)  # (k, q-1, n)
    products = (indicator[first][:, :, None, :] * indicator[second][:, None, :, :]).reshape(-1, raters.shape[1])
    design = np.concatenate([products, indicator.reshape(-1, raters.shape[1]),
                             rated.any(axis=0, keepdims=True).astype(float)]).T  # (n, columns)
    sums = weighted_sums(freq, design)  # (B, columns)
    cut = n_pairs * (q - 1) ** 2
    joint = sums[:, :cut].reshape(-1, n_pairs, q - 1, q - 1)
    own = sums[:, cut:-1].reshape(-1, k, q - 1)
    total = sums[:, -1]
    tables = np.empty((len(sums), n_pairs, q, q))
    tables[:, :, : q - 1, : q - 1] = joint
    tables[:, :, : q - 1, q - 1] = own[:, first] - joint.sum(axis=3)
    tables[:, :, q - 1, : q - 1] = own[:, second] - joint.sum(axis=2)
    tables[:, :, q - 1, q - 1] = 0.0
    tables[:, :, q - 1, q - 1] = total[:, None] - tables.sum(axis=(2, 3))
    return tables


#: Dense product when its cells are at most this many times the sparse one's nonzeros (measured: a dense
#: multiply-add costs about a tenth of a sparse one) and the dense one-hot matrix stays small (cells).
_DENSE_FACTOR = 8
_DENSE_CELLS = 20_000_000


def kappa_from_tables(tables: np.ndarray, weights: str | None = None) -> np.ndarray:
    """Cohen's kappa (or weighted kappa, Cohen 1968, with linear / quadratic disagreement weights on the category
    index) of confusion tables (..., q, q); NaN where undefined (no pairs, or chance disagreement 0). Same value
    as :func:`core.stats.cohen_kappa_codes` on the codes behind each table."""
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
    (the two-rater case of :func:`core.stats.gwet_ac2_counts`); NaN without subjects."""
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
