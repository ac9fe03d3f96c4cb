"""The judge's uncertainty per dialogue (or answer) and item, and whether it predicts disagreement with physicians.

Where it comes from, on one scale (the judge's expected error size, which is what an active sample's probabilities
should follow, :mod:`core.stats.active`):

* a run by the app: the token log-probabilities of the answer's first token, stored on each answer when the run
  scores it (:func:`scoring.judges.prompts.answer_uncertainty`; endpoints that return no log-probabilities leave
  it empty);
* a jury: the spread of its members, the root mean square distance of the members' answers from the jury's
  (a binary item: the square root of the share of members who answered otherwise).

:func:`deciles` sets it beside the physicians' labels: observed disagreement by uncertainty decile.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from core.stats import active
from scoring.judges import sources
from scoring.reports import sentences
from scoring.reports.sentences import said, word
from scoring.reports.wording import Words

LOGPROBS = "token log-probabilities"
JURY_SPREAD = "spread of the jury's members"


def uncertainty_frame(source) -> tuple[pd.DataFrame, str]:
    """The source's uncertainty per answer (columns dialogue, item code, uncertainty) and where it comes from."""
    from scoring.judges.models import JudgeResult

    if not sources.is_jury(source):
        rows = (JudgeResult.objects.filter(run=source, status=JudgeResult.Status.DONE, uncertainty__isnull=False)
                .order_by().values_list("dialogue_id", "item__code", "uncertainty"))
        frame = pd.DataFrame(list(rows), columns=["dialogue", "item", "uncertainty"])
        return frame.astype({"dialogue": np.int64, "uncertainty": float}), LOGPROBS
    combined, _ = sources.judge_frame(source)
    members = [sources.run_frame(run)[0].assign(member=k) for k, run in enumerate(source.member_runs())]
    if not members or combined.empty:
        return pd.DataFrame({"dialogue": np.empty(0, np.int64), "item": [], "uncertainty": np.empty(0)}), JURY_SPREAD
    stacked = pd.concat(members, ignore_index=True).merge(combined, on=["dialogue", "item"],
                                                          suffixes=("", "_jury"))
    stacked["square"] = (stacked["value"].astype(float) - stacked["value_jury"].astype(float)) ** 2
    spread = stacked.groupby(["dialogue", "item"], sort=True)["square"].mean().pow(0.5).rename("uncertainty")
    return spread.reset_index(), JURY_SPREAD


def deciles(source, labels: pd.DataFrame, words: dict[str, str] | None = None) -> dict[str, Any]:
    """Observed disagreement with the physicians by uncertainty decile, over every (dialogue, item) that has both
    an uncertainty and physician labels. Disagreement: |judge - physicians' mean| as a share of the item's range
    (a binary item: the share of physicians who answered otherwise). ``labels``: the physicians' labels (columns
    dialogue, rater, item, value); ``words``: the report's words for the instrument (default: a dialogue
    instrument's). ``binary`` says whether the instrument has binary items (the page explains them only then)."""
    W = Words(words)
    grids = sources.item_grids(sources.scale_version_id(source))
    ranges = {code: (min(values), max(values)) for code, values in grids.items() if values}
    frame, basis = uncertainty_frame(source)
    judge, _ = sources.judge_frame(source)
    out: dict[str, Any] = {"basis": basis, "groups": [], "n": 0, "spearman": None, "warnings": [],
                           "binary": any(sorted(values) == [0.0, 1.0] for values in grids.values())}
    if frame.empty:
        out["warnings"].append(sentences.NO_UNCERTAINTY)
        return out
    physicians = (labels.dropna(subset=["value"]).groupby(["dialogue", "item"], sort=False)["value"].mean()
                  .rename("physicians").reset_index())
    joined = frame.merge(judge, on=["dialogue", "item"]).merge(physicians, on=["dialogue", "item"])
    if joined.empty:
        out["warnings"].append(said(sentences.UNCERTAINTY_UNLABELLED, raters=word(W.raters)).text)
        return out
    span = joined["item"].map(lambda code: (ranges.get(code, (0.0, 1.0))[1] - ranges.get(code, (0.0, 1.0))[0])
                              or 1.0)
    disagreement = (joined["value"].astype(float) - joined["physicians"].astype(float)).abs() / span
    figures = active.by_decile(joined["uncertainty"].to_numpy(float), disagreement.to_numpy(float))
    out.update(figures)
    if figures["spearman"] is not None and figures["spearman"] <= 0:
        out["warnings"].append(said(sentences.UNCERTAINTY_NO_HELP, raters=word(W.raters)).text)
    return out


def csv_rows(section: dict | None):
    """The deciles as rows of ``judge_report``'s CSV (section, scope, statistic, value, ci_low, ci_high, n,
    interpretation, note)."""
    if not section:
        return
    for group in section.get("groups") or []:
        yield ["uncertainty", f"decile {group['group']}", "observed disagreement", group["disagreement"], "", "",
               group["n"], "", f"uncertainty {group['uncertainty_min']:.3g}-{group['uncertainty_max']:.3g} "
               f"({section['basis']})"]
    if section.get("spearman") is not None:
        yield ["uncertainty", "all", "Spearman rho (uncertainty, disagreement)", section["spearman"], "", "",
               section["n"], "", section["basis"]]
