"""Benchmark: per-item bootstrap CIs of judge-vs-majority Cohen's kappa and Gwet's AC1.

Synthetic data shaped like the real study: 2,680 dialogues x 24 binary checklist items x
10 physician raters plus one LLM judge.  For every item, 1,000 bootstrap resamples of the
dialogues (one shared index matrix) are drawn and Cohen's kappa and Gwet's AC1 between the
judge and the physicians' majority label are computed with the vectorised fast paths of
``core.stats.bootstrap_ci`` (``vectorized="freq"``: bootstrap multiplicities x per-subject
terms; and, for comparison, ``vectorized=True``: gathered resampled arrays).  Majority ties
(5-5) count as a missing reference label.

Run:  cd /work/main && .venv/bin/python bench/bench_stats_bootstrap.py
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from core.stats import (
    bootstrap_ci,
    bootstrap_freq,
    bootstrap_indices,
    cohen_kappa,
    cohen_kappa_codes,
    count_table,
    gwet_ac1,
    gwet_ac1_counts,
)

N_DIALOGUES, N_ITEMS, N_RATERS, N_RESAMPLES, SEED = 2680, 24, 10, 1000, 0


def synthetic(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """truth-driven raters (90% accurate) and judge (85% accurate) per item."""
    prevalence = rng.uniform(0.05, 0.95, size=N_ITEMS)
    truth = rng.random((N_DIALOGUES, N_ITEMS)) < prevalence
    flip_r = rng.random((N_DIALOGUES, N_ITEMS, N_RATERS)) < 0.10
    raters = (truth[..., None] ^ flip_r).astype(np.int64)
    judge = (truth ^ (rng.random((N_DIALOGUES, N_ITEMS)) < 0.15)).astype(np.int64)
    return raters, judge


def majority(raters: np.ndarray) -> np.ndarray:
    yes = raters.sum(axis=-1)
    no = raters.shape[-1] - yes
    return np.where(yes > no, 1, np.where(no > yes, 0, -1))  # -1: tie -> missing


def main() -> None:
    rng = np.random.default_rng(SEED)
    raters, judge = synthetic(rng)
    maj = majority(raters)
    print(f"data: {N_DIALOGUES} dialogues x {N_ITEMS} items x {N_RATERS} raters; "
          f"{N_RESAMPLES} resamples; majority ties -> missing: {int((maj < 0).sum())}")

    t0 = time.perf_counter()
    idx = bootstrap_indices(N_DIALOGUES, N_RESAMPLES, SEED)
    freq = bootstrap_freq(idx, N_DIALOGUES)
    t_idx = time.perf_counter() - t0

    def run(mode: str) -> tuple[list, float, float]:
        out, t_k, t_a = [], 0.0, 0.0
        for item in range(N_ITEMS):
            j, m = judge[:, item], maj[:, item]
            t = time.perf_counter()
            table = count_table(np.column_stack([j, m]), 2)  # judge + majority as 2 raters
            if mode == "freq":
                k = bootstrap_ci(lambda f, a, b: cohen_kappa_codes(a, b, 2, freq=f), j, m,
                                 freq=freq, seed=SEED, vectorized="freq")
                t_k += time.perf_counter() - t
                t = time.perf_counter()
                a = bootstrap_ci(lambda f, tab: gwet_ac1_counts(tab, freq=f), table,
                                 freq=freq, seed=SEED, vectorized="freq")
            else:
                k = bootstrap_ci(lambda a, b: cohen_kappa_codes(a, b, 2), j, m,
                                 indices=idx, seed=SEED, vectorized=True)
                t_k += time.perf_counter() - t
                t = time.perf_counter()
                a = bootstrap_ci(gwet_ac1_counts, table, indices=idx, seed=SEED,
                                 vectorized=True)
            t_a += time.perf_counter() - t
            out.append((item, k, a))
        return out, t_k, t_a

    results, t_kappa, t_ac1 = run("freq")
    total = t_idx + t_kappa + t_ac1
    print(f"index + multiplicity matrices (shared by all items): {t_idx:.3f} s")
    print(f"[freq path] Cohen's kappa, 24 items x 1000 resamples: {t_kappa:.2f} s")
    print(f"[freq path] Gwet's AC1,    24 items x 1000 resamples: {t_ac1:.2f} s")
    print(f"[freq path] TOTAL kappa + AC1, 24 items: {total:.2f} s  (budget 60 s)")

    results_g, tg_k, tg_a = run("gather")
    print(f"[gather path, vectorized=True] kappa {tg_k:.2f} s + AC1 {tg_a:.2f} s = "
          f"{t_idx + tg_k + tg_a:.2f} s")
    for (_, k1, a1), (_, k2, a2) in zip(results, results_g, strict=True):  # same answers
        for x, y in ((k1, k2), (a1, a2)):
            for key in ("estimate", "ci_low", "ci_high"):
                assert abs(x[key] - y[key]) < 1e-9, (key, x[key], y[key])
            assert x["n_valid"] == y["n_valid"]

    # ceiling: AC1 among the 10 physicians themselves, same resamples
    t = time.perf_counter()
    for item in range(N_ITEMS):
        table = count_table(raters[:, item, :], 2)
        bootstrap_ci(lambda f, tab: gwet_ac1_counts(tab, freq=f), table, freq=freq,
                     seed=SEED, vectorized="freq")
    print(f"extra: AC1 among 10 physicians, 24 items x 1000 resamples: "
          f"{time.perf_counter() - t:.2f} s")

    # reference: the slow generic path (statsmodels via cohen_kappa) for one item
    t = time.perf_counter()
    slow = bootstrap_ci(cohen_kappa, judge[:, 0], np.where(maj[:, 0] < 0, np.nan, maj[:, 0]),
                        n_resamples=100, seed=SEED)
    dt = time.perf_counter() - t
    print(f"for comparison, generic (non-vectorised) path: {dt:.2f} s per 100 resamples of "
          f"one kappa -> ~{dt * 10 * N_ITEMS:.0f} s for 24 items x 1000")

    # consistency check: fast kernel == library-backed estimate
    j0, m0 = judge[:, 0], maj[:, 0].astype(float)
    m0[m0 < 0] = np.nan
    assert abs(results[0][1]["estimate"] - slow["estimate"]) < 1e-12
    assert abs(results[0][2]["estimate"] - gwet_ac1(np.column_stack([j0, m0]))) < 1e-12
    for item, k, a in results[:3]:
        print(f"item {item:2d}: kappa {k['estimate']:.3f} [{k['ci_low']:.3f}, "
              f"{k['ci_high']:.3f}] n_valid={k['n_valid']}; AC1 {a['estimate']:.3f} "
              f"[{a['ci_low']:.3f}, {a['ci_high']:.3f}] n_valid={a['n_valid']}")


if __name__ == "__main__":
    main()
