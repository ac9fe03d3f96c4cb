"""Benchmark: active sampling (core.stats.active) against uniform PPI++ at the same number of physician labels.

2,000 simulated studies per scenario (fixed seeds, one vectorised call per scenario and method), each a corpus the
judge scored in full with a budget of physician labels:

* Mini-CEX-shaped: one binary item on 600 dialogues, 60 labels. The judge's probability p that the item is met is
  clear-cut on 85% of dialogues (Beta(1, 150) from the nearer end) and ambiguous on the rest (uniform 0.15-0.85);
  the physicians' label is drawn from it (the judge is calibrated), the judge answers met when p >= 0.5 and is
  wrong with probability q = min(p, 1 - p); its uncertainty is sqrt(q), its expected error size.
* HIVMedQA-shaped: a 0-5 criterion, five models of 300 answers each, 30 labels per model. The judge's distribution
  over 0-5 per answer is a discretised normal, sharp (sd 0.2) on 80% of answers and broad (sd 1.6) on the rest;
  the physicians' score is drawn from it; the judge's score is its mean and its uncertainty its standard
  deviation. Reported per model mean and for the difference between the first two models.

"unrelated" rows give the sampling rule the same uncertainties shuffled across dialogues (unrelated to the judge's
errors). The gain depends on how concentrated the judge's errors are: these worlds put most errors on a minority
of dialogues (the judge errs on 5.5% of the binary items, 90% of them on the ambiguous dialogues). Methods:
physicians only and PPI++ on a uniform random sample of exactly the budget; active (the paper's estimator
``"ipw"``, the default, and ``"ratio"``) on a Poisson sample with the default rule (``active.UNIFORM_SHARE``,
``pi_min`` = ``active.PI_MIN_FACTOR`` x budget / N). The truth is the population mean (the mean of the judge's
calibrated predictions over 4 million draws). Coverage of the 95% interval, mean width, width relative to uniform
PPI++ and mean labels drawn are printed.

Run:  .venv/bin/python bench/bench_active.py [--studies 2000] [--uniform-share 0.55] [--pi-min-factor 0.1]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from bench.machine import calibration_line  # noqa: E402
from core.stats import active, ppi  # noqa: E402

SCORES = np.arange(6.0)
CLEAR_SHARE, SHARP_SHARE = 0.85, 0.8


# ---------------------------------------------------------------------------------------------------------------
# worlds
# ---------------------------------------------------------------------------------------------------------------
def binary_judge(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """The judge's probability that the item is met: clear-cut dialogues (``CLEAR_SHARE``) and ambiguous ones."""
    clear = rng.random(shape) < CLEAR_SHARE
    met = rng.random(shape) < 0.8
    sharp = rng.beta(1.0, 150.0, shape)
    p_clear = np.where(met, 1.0 - sharp, sharp)
    return np.where(clear, p_clear, rng.uniform(0.15, 0.85, shape))


def binary_world(rng: np.random.Generator, studies: int, dialogues: int):
    p = binary_judge(rng, (studies, dialogues))
    y = (rng.random(p.shape) < p).astype(float)
    yhat = (p >= 0.5).astype(float)
    uncertainty = np.sqrt(np.minimum(p, 1.0 - p))
    return y, yhat, uncertainty


def scale_judge(rng: np.random.Generator, shape: tuple[int, ...], centre: float) -> np.ndarray:
    """The judge's distribution over 0-5 per answer: a discretised normal, sharp (sd 0.2) on ``SHARP_SHARE`` of
    answers and broad (sd 1.6) on the rest, around a centre drawn per answer."""
    mu = np.clip(centre + rng.normal(0.0, 1.2, shape), -0.5, 5.5)
    sd = np.where(rng.random(shape) < SHARP_SHARE, 0.2, 1.6)
    logits = -((SCORES - mu[..., None]) ** 2) / (2 * sd[..., None] ** 2)
    prob = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return prob / prob.sum(axis=-1, keepdims=True)


MODEL_CENTRES = (3.6, 3.2, 2.8, 3.9, 2.4)


def scale_world(rng: np.random.Generator, studies: int, answers: int, centre: float):
    prob = scale_judge(rng, (studies, answers), centre)
    cdf = prob.cumsum(axis=-1)
    y = (rng.random((studies, answers, 1)) > cdf).sum(axis=-1).astype(float)
    y = np.minimum(y, 5.0)
    yhat = (prob * SCORES).sum(axis=-1)
    uncertainty = np.sqrt((prob * (SCORES - yhat[..., None]) ** 2).sum(axis=-1))
    return y, yhat, uncertainty


def truth_binary(seed: int = 99) -> float:
    rng = np.random.default_rng(seed)
    return float(np.mean([binary_judge(rng, (1_000_000,)).mean() for _ in range(4)]))


def truth_scale(centre: float, seed: int = 98) -> float:
    rng = np.random.default_rng(seed)
    return float(np.mean([(scale_judge(rng, (500_000,), centre) * SCORES).sum(axis=-1).mean() for _ in range(8)]))


# ---------------------------------------------------------------------------------------------------------------
# methods
# ---------------------------------------------------------------------------------------------------------------
def uniform_methods(rng, y, yhat, budget):
    order = np.argsort(rng.random(y.shape), axis=-1)
    lab, unl = order[..., :budget], order[..., budget:]
    take = lambda a, idx: np.take_along_axis(a, idx, axis=-1)  # noqa: E731
    return {"physicians only (uniform)": ppi.classical_mean_arrays(take(y, lab)),
            "PPI++ (uniform)": ppi.ppi_mean_arrays(take(y, lab), take(yhat, lab), take(yhat, unl)),
            "labels": np.full(y.shape[:-1], float(budget))}


def active_methods(rng, y, yhat, uncertainty, budget, uniform_share, pi_min_factor):
    pi = active.sampling_probabilities(uncertainty, budget, uniform_share=uniform_share,
                                       pi_min=pi_min_factor * budget / y.shape[-1])
    labelled = active.draw(pi, rng)
    y_seen = np.where(labelled, y, np.nan)
    return {"active (paper, default)": active.active_mean_arrays(y_seen, yhat, pi, labelled),
            "active (ratio)": active.active_mean_arrays(y_seen, yhat, pi, labelled, estimator="ratio"),
            "labels": labelled.sum(axis=-1).astype(float)}


def shuffled(rng, uncertainty):
    """The same uncertainties, assigned at random: unrelated to the judge's errors."""
    return np.take_along_axis(uncertainty, np.argsort(rng.random(uncertainty.shape), axis=-1), axis=-1)


def summarise(figures: dict, truth) -> dict:
    covered = (figures["ci_low"] <= truth) & (figures["ci_high"] >= truth)
    return {"coverage": float(covered.mean()), "width": float((figures["ci_high"] - figures["ci_low"]).mean())}


def diff(a: dict, b: dict) -> dict:
    value = a["value"] - b["value"]
    se = np.sqrt(a["se"] ** 2 + b["se"] ** 2)
    low, high = ppi.z_interval(value, se)
    return {"value": value, "se": se, "ci_low": low, "ci_high": high}


def run(studies: int, uniform_share: float, pi_min_factor: float, seed: int = 56) -> list[tuple]:
    rows = []
    rng = np.random.default_rng(seed)
    # Mini-CEX-shaped binary item
    truth = truth_binary()
    y, yhat, unc = binary_world(rng, studies, 600)
    for label, u in (("informative", unc), ("unrelated", shuffled(rng, unc))):
        uni = uniform_methods(rng, y, yhat, 60)
        act = active_methods(rng, y, yhat, u, 60, uniform_share, pi_min_factor)
        base = summarise(uni["PPI++ (uniform)"], truth)["width"]
        for name, figures in [*uni.items(), *act.items()]:
            if name == "labels":
                continue
            labels = (uni if "uniform" in name else act)["labels"].mean()
            s = summarise(figures, truth)
            rows.append(("Mini-CEX binary item, 600 dialogues", label, "mean", name, s["coverage"], s["width"],
                         s["width"] / base, labels))
    # HIVMedQA-shaped 0-5 criterion, five models
    truths = [truth_scale(c) for c in MODEL_CENTRES]
    worlds = [scale_world(rng, studies, 300, c) for c in MODEL_CENTRES]
    for label in ("informative", "unrelated"):
        per_model = []
        for (y, yhat, unc) in worlds:
            u = unc if label == "informative" else shuffled(rng, unc)
            per_model.append((uniform_methods(rng, y, yhat, 30),
                              active_methods(rng, y, yhat, u, 30, uniform_share, pi_min_factor)))
        for name in ("physicians only (uniform)", "PPI++ (uniform)", "active (paper, default)",
                     "active (ratio)"):
            side = 0 if "uniform" in name else 1
            pairs = list(zip(per_model, truths, strict=True))
            cover = np.mean([summarise(m[side][name], t)["coverage"] for m, t in pairs])
            width = np.mean([summarise(m[side][name], t)["width"] for m, t in pairs])
            base = np.mean([summarise(m[0]["PPI++ (uniform)"], t)["width"] for m, t in pairs])
            labels = np.mean([m[side]["labels"].mean() for m in per_model])
            rows.append(("HIVMedQA 0-5 criterion, 5 models x 300 answers", label, "model means", name, cover,
                         width, width / base, labels))
            d = summarise(diff(per_model[0][side][name], per_model[1][side][name]), truths[0] - truths[1])
            d_base = summarise(diff(per_model[0][0]["PPI++ (uniform)"], per_model[1][0]["PPI++ (uniform)"]),
                               truths[0] - truths[1])["width"]
            rows.append(("HIVMedQA 0-5 criterion, 5 models x 300 answers", label, "model 1 - model 2", name,
                         d["coverage"], d["width"], d["width"] / d_base, labels))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=2000)
    parser.add_argument("--uniform-share", type=float, default=active.UNIFORM_SHARE)
    parser.add_argument("--pi-min-factor", type=float, default=active.PI_MIN_FACTOR)
    args = parser.parse_args()
    print(calibration_line())
    started = time.perf_counter()
    rows = run(args.studies, args.uniform_share, args.pi_min_factor)
    elapsed = time.perf_counter() - started
    print(f"{args.studies} studies per scenario; uniform share {args.uniform_share}, pi_min = "
          f"{args.pi_min_factor} x budget / N; {elapsed:.1f} s")
    print(f"| {'data':<48} | {'uncertainty':<11} | {'estimand':<17} | {'method':<26} | coverage | width  "
          f"| width / PPI++ | labels |")
    print(f"|{'-' * 50}|{'-' * 13}|{'-' * 19}|{'-' * 28}|---------:|-------:|--------------:|-------:|")
    for data, label, estimand, name, coverage, width, ratio, labels in rows:
        print(f"| {data:<48} | {label:<11} | {estimand:<17} | {name:<26} | {coverage:7.1%}  | {width:.3f}  "
              f"| {ratio:12.3f}  | {labels:6.1f} |")


if __name__ == "__main__":
    main()
