"""Pairwise preferences: win / tie / loss with Wilson intervals, Bradley-Terry strengths, vote agreement and
position bias."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from core.stats import messages as M
from core.stats._common import _num, _py
from core.stats.agreement import cohen_kappa_detail
from core.stats.bootstrap import bootstrap_indices, bootstrap_summary

# --------------------------------------------------------------------------------------
# pairwise preferences (preference studies): win / tie / loss, Bradley-Terry, agreement
# --------------------------------------------------------------------------------------
PREFERENCE_OUTCOMES = ("first", "tie", "second")


def wilson_ci(successes: int, n: int, confidence: float = 0.95) -> dict:
    """Share with its Wilson score interval (statsmodels ``proportion_confint``); undefined for n = 0."""
    if n <= 0:
        return {"value": None, "ci_low": None, "ci_high": None, "n": 0,
                "warnings": [M.say(M.NO_OBSERVATIONS)]}
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


def _connected_many(wins: np.ndarray) -> np.ndarray:
    """Hunter's (2004) condition for a finite Bradley-Terry MLE, for a stack of win matrices ``(B, m, m)`` at once:
    in every split of the sources into two groups some source of each group beats (or ties) some source of the
    other, i.e. every source reaches every other through wins (or ties)."""
    m = wins.shape[1]
    reach = (wins > 0) | np.eye(m, dtype=bool)
    for _ in range(max(1, int(np.ceil(np.log2(max(m, 2)))))):  # paths of length up to m by repeated squaring
        paths = reach.astype(np.int64)
        reach = np.einsum("bij,bjk->bik", paths, paths) > 0
    return reach.all(axis=(1, 2))


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
        warns.append(M.say(M.BT_FEW_SOURCES))
        return out
    wins, games = _bt_matrix(comps, sources)
    out["wins"] = {str(s): _num(w) for s, w in zip(sources, wins.sum(axis=1), strict=True)}
    if not comps:
        warns.append(M.say(M.BT_NO_COMPARISONS))
        return out
    if not _connected_many(wins[None])[0]:
        warns.append(M.say(M.BT_NEVER_WINS))
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
        warns.append(M.say(M.BT_NOT_CONVERGED, n=max_iter))
    logs = np.log(p)
    logs -= logs.mean()
    out["strength"] = {str(s): _num(v) for s, v in zip(sources, p, strict=True)}
    out["log_strength"] = {str(s): _num(v) for s, v in zip(sources, logs, strict=True)}
    return out


def _bradley_terry_many(wins: np.ndarray, *, tol: float, max_iter: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`bradley_terry`'s MM fit for a stack of win matrices ``(B, m, m)`` at once (the bootstrap's
    resamples): strengths (sum 1) and centred log strengths, ``(B, m)`` each, NaN where the MLE does not exist.
    Each resample stops at its own iteration, as its own fit would (or at ``max_iter``)."""
    count, m = wins.shape[0], wins.shape[1]
    games = wins + wins.transpose(0, 2, 1)
    w = wins.sum(axis=2)
    p = np.full((count, m), 1.0 / m)
    active = _connected_many(wins)
    defined = active.copy()
    for _ in range(max_iter):
        rows = np.nonzero(active)[0]
        if not rows.size:
            break
        current = p[rows]
        denom = (games[rows] / (current[:, :, None] + current[:, None, :])).sum(axis=2)
        new = w[rows] / denom
        new /= new.sum(axis=1, keepdims=True)
        done = np.max(np.abs(new - current), axis=1) < tol
        p[rows] = new
        active[rows[done]] = False
    strength = np.where(defined[:, None], p, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.log(strength)
    return strength, logs - logs.mean(axis=1, keepdims=True)


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
            full["warnings"].append(M.say(M.BT_FEW_ITEMS))
        return full
    idx = bootstrap_indices(len(units), n_resamples, seed)
    # a resample's wins are the sum of its units' wins, each as often as it was drawn
    unit_wins = np.stack([_bt_matrix(by_unit[u], sources)[0] for u in units])
    drawn = np.zeros((idx.shape[0], len(units)))
    np.add.at(drawn, (np.arange(idx.shape[0])[:, None], idx), 1.0)
    wins = (drawn @ unit_wins.reshape(len(units), -1)).reshape(-1, len(sources), len(sources))
    reps, log_reps = _bradley_terry_many(wins, tol=1e-8, max_iter=2000)
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
             else {"value": None, "warnings": [M.say(M.COHEN_NO_VOTES)]})
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
