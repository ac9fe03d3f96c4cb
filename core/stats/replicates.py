"""Scores of repeated answers: per model and criterion the mean over cases and the SD and CI over replicates, in the
layout of Cardenal-Antolin et al., HIVMedQA, Table 2 ("mean and standard deviation across five iterations").

A *case* is a question (or patient case) and a *replicate* one of the model's repeated answers to it (HIVMedQA
generates every answer five times). Each row of the input is one text's score (the mean over its raters). Per model:

* the mean over cases: each case's score is the mean over its replicates, and the model's mean the mean over its
  cases (equal to the mean of all texts when every case has every replicate);
* per replicate, the mean over the cases that replicate answered, and the sample SD (ddof = 1) of these replicate
  means: how much the model's mean score moves from one round of generation to the next;
* the 95% t-interval over replicates: mean of the replicate means +- t(0.975, R - 1) SD / sqrt(R). It describes the
  variation of generation with the cases held fixed, not the sampling of cases.

An SD over fewer than two replicates is undefined (None with the reason); an interval of replicate means that do not
vary is "not estimable (no variation)", never [x, x].
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from core.stats import messages as M
from core.stats.bootstrap import NO_VARIATION, NO_VARIATION_TOL
from core.stats.formatting import short


def replicate_summary(frame: pd.DataFrame, *, value: str = "value", confidence: float = 0.95) -> dict[str, Any]:
    """``frame``: one row per text with columns ``case``, ``replicate`` and ``value`` (a model's texts on one
    criterion). Returns ``mean``, ``sd``, ``ci_low``, ``ci_high`` (or ``ci_note``), ``n_cases``, ``n_replicates``,
    ``n_texts``, ``replicate_means`` ({replicate: mean}) and ``warnings``."""
    from scipy.special import stdtrit  # scipy.stats.t.ppf, without importing scipy.stats (seconds)

    data = frame[["case", "replicate", value]].dropna(subset=[value])
    out: dict[str, Any] = {"mean": None, "sd": None, "ci_low": None, "ci_high": None, "n_cases": 0,
                           "n_replicates": 0, "n_texts": int(len(data)), "replicate_means": {}, "warnings": []}
    if data.empty:
        out["warnings"].append(M.say(M.NO_SCORES))
        return out
    per_case = data.groupby("case")[value].mean()
    out["mean"] = float(per_case.mean())
    out["n_cases"] = int(per_case.size)
    replicated = data.dropna(subset=["replicate"])
    means = replicated.groupby("replicate")[value].mean().sort_index()
    out["n_replicates"] = int(means.size)
    out["replicate_means"] = {str(int(r)): float(m) for r, m in means.items()}
    if means.size < 2:
        out["warnings"].append(M.say(M.REPLICATES_TOO_FEW, n=means.size) if means.size
                               else M.say(M.REPLICATES_UNNUMBERED))
        return out
    sd = float(means.std(ddof=1))
    out["sd"] = sd
    centre = float(means.mean())
    if sd <= NO_VARIATION_TOL * max(1.0, abs(centre)):
        out["ci_note"] = NO_VARIATION
        out["warnings"].append(M.say(M.REPLICATES_SAME_MEAN, value=short(centre)))
        return out
    half = float(stdtrit(means.size - 1, 0.5 + confidence / 2)) * sd / math.sqrt(means.size)
    out["ci_low"], out["ci_high"] = centre - half, centre + half
    counts = replicated.groupby("replicate")["case"].nunique()
    if counts.nunique() > 1:
        out["warnings"].append(M.say(M.REPLICATES_UNEQUAL, low=int(counts.min()), high=int(counts.max())))
    return out


def replicate_table(frame: pd.DataFrame, criteria: list[str], *, model: str = "model") -> list[dict[str, Any]]:
    """Per model (sorted): per criterion :func:`replicate_summary`. ``frame``: columns ``model``, ``case``,
    ``replicate`` and one column per criterion (a text's score, NaN where it has none)."""
    out = []
    for name, block in frame.groupby(model, sort=True):
        entry = {"model": str(name), "criteria": {}}
        for code in criteria:
            column = block[code] if code in block.columns else pd.Series(np.nan, index=block.index)
            entry["criteria"][code] = replicate_summary(block.assign(value=column), value="value")
        out.append(entry)
    return out


def mixed_replicates(frame: pd.DataFrame, *, rater: str = "rater") -> list[dict[str, Any]]:
    """Cases whose labels come from different replicates across raters: rows ``case``, ``replicate`` and ``rater``
    (one per label). A case is listed when its raters did not all rate the same replicates (e.g. one physician rated
    replicate 1 and another replicate 2): their labels are never compared, since agreement compares raters only on
    the same text."""
    data = frame.dropna(subset=["replicate"])
    data = data[data["case"].astype(str) != ""]
    out = []
    for case, block in data.groupby("case", sort=True):
        sets = block.groupby(rater)["replicate"].apply(lambda r: tuple(sorted(set(r))))
        if sets.nunique() > 1:
            out.append({"case": str(case), "replicates": sorted(int(r) for r in set(block["replicate"])),
                        "raters": int(sets.size)})
    return out
