"""Juries of judges: one score per unit from several judges' scores, and how much the jurors agree.

Pure (numpy in, arrays and dicts out). A *jury* (Verga et al. 2024, "Replacing Judges with Juries"; Bedi et al. 2025,
MedHELM) combines the answers its members gave on the same unit (a dialogue and an item) by a declared rule:

* ``majority``: the most frequent answer among the members who answered (plurality vote); a tie is settled by the
  declared tie rule;
* ``median``: the median of the answers; ``mean``: their mean. Either is rounded to the item's grid (the nearest
  allowed value; a value exactly half-way between two is settled by the tie rule) unless the jury keeps the raw
  figure (``round_to_grid=False``).

Tie rules: ``lower`` (the lower value: for a binary item "not done", the cautious reading), ``higher``, or
``unscored`` (the unit is left unscored, as an unparseable answer is).

Members who did not score a unit are left out of it; a unit no member scored stays unscored.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from core.stats import messages as M

RULES = ("majority", "median", "mean")
TIE_RULES = ("lower", "higher", "unscored")
_TOL = 1e-9


def _settle(candidates_low: np.ndarray, candidates_high: np.ndarray, tied: np.ndarray, tie: str) -> np.ndarray:
    if tie == "lower":
        return candidates_low
    if tie == "higher":
        return candidates_high
    return np.where(tied, np.nan, candidates_low)


def round_to_grid(values: np.ndarray, grid: Sequence[float], tie: str = "lower") -> np.ndarray:
    """Each value moved to the nearest value of ``grid`` (sorted); exactly half-way: the tie rule; NaN stays NaN."""
    g = np.asarray(sorted(grid), dtype=float)
    v = np.asarray(values, dtype=float)
    if not len(g):
        return np.full(v.shape, np.nan)
    distance = np.abs(v[..., None] - g)  # (..., q)
    with np.errstate(invalid="ignore"):
        best = np.nanmin(np.where(np.isnan(distance), np.inf, distance), axis=-1)
        near = np.abs(distance - best[..., None]) <= _TOL
    low = g[np.argmax(near, axis=-1)]
    high = g[len(g) - 1 - np.argmax(near[..., ::-1], axis=-1)]
    out = _settle(low, high, near.sum(axis=-1) > 1, tie)
    return np.where(np.isnan(v), np.nan, out)


def combine(scores: np.ndarray, rule: str, *, grid: Sequence[float] | None = None, tie: str = "lower",
            round_to_grid_: bool = True) -> np.ndarray:
    """The jury's score per unit from ``scores`` (members x units, NaN = the member did not score the unit).

    ``grid``: the item's allowed values (needed for ``majority`` and for rounding). Returns one float per unit, NaN
    where no member scored it or where a tie is left unscored."""
    if rule not in RULES:
        raise ValueError(f"The rule must be one of {', '.join(RULES)}; got {rule!r}.")
    if tie not in TIE_RULES:
        raise ValueError(f"The tie rule must be one of {', '.join(TIE_RULES)}; got {tie!r}.")
    x = np.asarray(scores, dtype=float)
    if x.ndim != 2:
        raise ValueError("Scores must be a members x units array.")
    present = ~np.isnan(x)
    answered = present.any(axis=0)
    if rule == "majority":
        values = np.unique(x[present]) if grid is None else np.asarray(sorted(grid), dtype=float)
        if not len(values):
            return np.full(x.shape[1], np.nan)
        counts = (np.abs(x[:, :, None] - values[None, None, :]) <= _TOL).sum(axis=0)  # (units, q)
        top = counts.max(axis=1)
        winners = (counts == top[:, None]) & (top[:, None] > 0)
        low = values[np.argmax(winners, axis=1)]
        high = values[len(values) - 1 - np.argmax(winners[:, ::-1], axis=1)]
        out = _settle(low, high, winners.sum(axis=1) > 1, tie)
        return np.where(answered, out, np.nan)
    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            raw = np.nanmedian(x, axis=0) if rule == "median" else np.nanmean(x, axis=0)
    raw = np.where(answered, raw, np.nan)
    if round_to_grid_ and grid is not None:
        return round_to_grid(raw, grid, tie)
    return raw


def jurors_agreement(scores: np.ndarray, level: str = "nominal", value_domain: Sequence[float] | None = None
                     ) -> dict[str, Any]:
    """How much the members agree with one another on one item: Krippendorff's alpha across the members (the
    krippendorff package, through :func:`core.stats.krippendorff_alpha_detail`), the share of units on which every
    member who answered gave the same answer, and whether the members are *identical* (the same answer on every unit
    they share: the jury is then effectively one judge, whatever alpha says - alpha is undefined when nobody
    varies)."""
    from core.stats.agreement import krippendorff_alpha_detail

    x = np.asarray(scores, dtype=float)
    present = ~np.isnan(x)
    shared = present.sum(axis=0) >= 2
    with np.errstate(invalid="ignore"):
        spread = np.nanmax(np.where(present, x, -np.inf), axis=0) - np.nanmin(np.where(present, x, np.inf), axis=0)
    unanimous = shared & (spread <= _TOL)
    n_shared = int(shared.sum())
    alpha = krippendorff_alpha_detail(x, level=level, value_domain=value_domain) if x.shape[0] >= 2 else {
        "value": None, "warnings": [M.say(M.ALPHA_ONE_JUROR)]}
    identical = n_shared > 0 and bool(unanimous[shared].all())
    return {"alpha": alpha["value"], "level": level, "warnings": list(alpha["warnings"]), "n_units": n_shared,
            "unanimous_share": (float(unanimous.sum() / n_shared) if n_shared else None), "identical": identical}
