"""Judge selection: which judge, or which jury of judges, may replace the physicians on which item, and
at what cost.

:func:`judge_selection` puts every candidate side by side against one campaign's physicians: every finished run on
the campaign's corpus and instrument (the app's own or imported), every jury of two or three of them (combined by
the median rounded to the item's grid, which for a binary item is the majority vote, ties to the lower value) when
there are at most :data:`MAX_RUNS_FOR_ALL_JURIES` runs, and every jury the coordinator made (or named). Per
candidate and item: the verdict of the judge report (:func:`scoring.judges.report.item_report`: the same rule,
settings and wording), the agreement with the physicians with its CI, the non-inferiority difference and margin,
the share of unscored answers, and the cost and time per 1,000 dialogues. Per item it names the cheapest candidate
whose verdict is "the judge can replace the physicians", or none.

**Selection optimism.** Choosing the best of many candidates on the same physicians' labels flatters the choice: a
candidate that is lucky on these dialogues looks better than it is. So the physician-labelled dialogues are split
at random (declared share, recorded seed) into a *selection* part, on which the table is computed and the choice
made, and a *held-out* part, on which the chosen candidate's verdict is computed again: it is *confirmed* only when
it is still "replace" there. Both are shown, with the number of candidates tried.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from django.utils.translation import gettext_noop

from core import stats
from scoring.judges import sources
from scoring.judges.report import (
    ReportContext,
    VerdictSettings,
    _item_arrays,
    item_report,
    outcome_labels,
)
from scoring.reports.sentences import KEY, Said, joined, said, word
from scoring.reports.sentences import verdict as verdict_said

MAX_RUNS_FOR_ALL_JURIES = 6
MAX_JURY_SIZE = 3
DEFAULT_HELD_OUT = 0.3
DEFAULT_SEED = 20240501
VIRTUAL_RULE = ("median", "lower", True)  # rule, tie, rounded: the majority vote on a binary item


class SelectionError(ValueError):
    """The selection cannot be made (no finished run, bad settings)."""


@dataclass
class Candidate:
    """One candidate judge: a run, a saved jury or a jury of runs tried here (``virtual``)."""

    key: str
    name: str
    kind: str  # "run" or "jury"
    members: list[str]
    frame: pd.DataFrame
    units_by_item: dict[str, dict[str, int]]
    cost: dict[str, Any]
    seconds: float | None
    virtual: bool = False
    rule: Said | None = None
    name_said: Said | None = None  # the name as a sentence for the pages (:mod:`scoring.reports.sentences`)
    members_said: list[Said] = field(default_factory=list)
    n_dialogues: int = field(init=False, default=0)

    def __post_init__(self):
        self.n_dialogues = int(self.frame["dialogue"].nunique()) if len(self.frame) else 0

    def per_thousand(self, amount: float | None) -> float | None:
        if amount is None or not self.n_dialogues:
            return None
        return float(amount) / self.n_dialogues * 1000.0


def _units_by_item(frame_all: pd.DataFrame, scored: pd.DataFrame) -> dict[str, dict[str, int]]:
    totals = frame_all.groupby("item").size().to_dict() if len(frame_all) else {}
    done = scored.groupby("item").size().to_dict() if len(scored) else {}
    return {str(code): {"total": int(n), "done": int(done.get(code, 0))} for code, n in totals.items()}


def run_units_by_item(run) -> dict[str, dict[str, int]]:
    """A run's answers per item: all of them, and the scored ones."""
    from django.db.models import Count, Q

    from scoring.judges.models import JudgeResult

    rows = (JudgeResult.objects.filter(run=run).order_by().values("item__code")
            .annotate(total=Count("id"), done=Count("id", filter=Q(status=JudgeResult.Status.DONE,
                                                                     value__isnull=False))))
    return {r["item__code"]: {"total": r["total"], "done": r["done"]} for r in rows}


def _jury_of(frames: Sequence[pd.DataFrame], grids: dict, rule: str, tie: str, rounded: bool
             ) -> tuple[pd.DataFrame, dict[str, dict[str, int]]]:
    scored, _units = sources.combine_frames(list(frames), grids, rule, tie=tie, round_to_grid=rounded)
    union = pd.concat([f[["dialogue", "item"]] for f in frames], ignore_index=True).drop_duplicates()
    return scored, _units_by_item(union, scored)


def load_candidates(corpus, version_id: int, *, juries: Sequence | None = None, all_juries: bool | None = None
                    ) -> list[Candidate]:
    """Every finished run on ``corpus`` rating on ``version_id``; juries of two or three of them (all of them when
    there are at most :data:`MAX_RUNS_FOR_ALL_JURIES` runs, or when ``all_juries``); and the saved juries
    ``juries`` (default: every live jury on the corpus and version)."""
    from scoring.judges.models import JudgeRun, Jury

    runs = [run for run in JudgeRun.objects.filter(corpus=corpus, status__in=JudgeRun.FINISHED)
            .select_related("config", "corpus").order_by("pk") if sources.scale_version_id(run) == version_id]
    grids = sources.item_grids(version_id)
    frames = {run.pk: sources.run_frame(run)[0] for run in runs}
    out = [Candidate(key=f"run:{run.pk}", name=_run_name(run).text, kind="run",
                     members=[_member(run).text], frame=frames[run.pk], units_by_item=run_units_by_item(run),
                     cost=sources.run_cost(run), seconds=sources.run_seconds(run), name_said=_run_name(run),
                     members_said=[_member(run)]) for run in runs]
    if all_juries is None:
        all_juries = len(runs) <= MAX_RUNS_FOR_ALL_JURIES
    if all_juries:
        rule, tie, rounded = VIRTUAL_RULE
        for size in range(2, min(MAX_JURY_SIZE, len(runs)) + 1):
            for group in itertools.combinations(runs, size):
                frame, units = _jury_of([frames[r.pk] for r in group], grids, rule, tie, rounded)
                times = [sources.run_seconds(r) for r in group]
                name = said(gettext_noop("jury of runs %(runs)s"), runs=", ".join(str(r.pk) for r in group))
                out.append(Candidate(
                    key="jury:" + "+".join(str(r.pk) for r in group), name=name.text, kind="jury",
                    members=[_member(r).text for r in group], frame=frame, units_by_item=units,
                    name_said=name, members_said=[_member(r) for r in group],
                    cost=sources.sum_costs([sources.run_cost(r) for r in group]),
                    seconds=None if any(t is None for t in times) else float(sum(times)), virtual=True,
                    rule=sources.rule_said(rule, tie, rounded)))
    saved = list(juries) if juries is not None else [
        j for j in Jury.objects.alive().filter(corpus=corpus, scale_version_id=version_id).order_by("pk")]
    for jury in saved:
        members = jury.member_runs()
        member_frames = [frames.get(r.pk) if r.pk in frames else sources.run_frame(r)[0] for r in members]
        frame, units = _jury_of(member_frames, grids, jury.rule, jury.tie_rule, jury.round_to_grid)
        name = said(gettext_noop("%(name)s (jury %(pk)s)"), name=jury.name, pk=jury.pk)
        out.append(Candidate(key=f"jury:{jury.pk}", name=name.text, kind="jury", name_said=name,
                             members=[_member(r).text for r in members], members_said=[_member(r) for r in members],
                             frame=frame, units_by_item=units,
                             cost=sources.cost(jury), seconds=sources.seconds(jury),
                             rule=sources.rule_said(jury.rule, jury.tie_rule, jury.round_to_grid)))
    return out


def _run_name(run) -> Said:
    return said(gettext_noop("%(name)s (run %(pk)s)"), name=run.name, pk=run.pk)


def _member(run) -> Said:
    return said(gettext_noop("run %(pk)s"), pk=run.pk)


def split_dialogues(dialogues: Sequence[int], share: float, seed: int) -> tuple[list[int], list[int]]:
    """(selection, held-out): a random ``share`` of the dialogues (rounded, at least one each when possible) held
    out, drawn with ``seed``."""
    ids = sorted(int(d) for d in dialogues)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(ids))
    k = int(round(share * len(ids)))
    if len(ids) >= 2:
        k = min(max(k, 1), len(ids) - 1)
    held = sorted(ids[i] for i in order[:k])
    held_set = set(held)
    return [d for d in ids if d not in held_set], held


def _context(n: int, study, raters: list, verdict: VerdictSettings, seed: int, n_resamples: int,
             words: dict) -> ReportContext:
    freq = stats.bootstrap_freq(stats.bootstrap_indices(n, n_resamples, seed), n) if n else None
    jack = stats.jackknife_freq(n) if n > 1 and verdict.ci_method == "bca" else None
    return ReportContext(freq=freq, seed=seed, n_resamples=n_resamples, verdict=verdict, jack=jack,
                         rater_names=[study.rater_names.get(r, str(r)) for r in raters], words=words)


def _evaluate(candidate: Candidate, study, codes: list[str], dialogues: list[int], raters: list,
              verdict: VerdictSettings, seed: int, n_resamples: int, words: dict) -> dict[str, dict]:
    """The candidate's per-item verdict figures on ``dialogues`` (the report's own computation)."""
    index = pd.Index(dialogues)
    items, _warns = _item_arrays(study, candidate.frame, set(codes), index, pd.Index(raters))
    out = {}
    for item in items:
        keep = item.compared()
        n = int(keep.sum())
        item.judge, item.humans = item.judge[keep], item.humans[:, keep]
        entry = item_report(item, _context(n, study, raters, verdict, seed, n_resamples, words))
        agreement = entry["physicians_agreement"]
        key = agreement["coefficient"]
        judge_fig = entry["vs_physicians"][key]
        difference = entry["difference"] or {}
        out[item.code] = {
            "outcome": entry["decision"]["outcome"], "verdict": entry["decision"]["verdict"],
            "reasons": entry["decision"]["reasons"], "n_dialogues": n,
            "coefficient": agreement["name"],
            "agreement": {k: judge_fig.get(k) for k in ("value", "ci_low", "ci_high")},
            "physicians": {k: agreement.get(k) for k in ("value", "ci_low", "ci_high")},
            "difference": {k: difference.get(k) for k in ("value", "ci_low", "ci_high")},
        }
    return out


def _cost_key(candidate: Candidate, figures: dict) -> tuple:
    per_k = candidate.per_thousand(candidate.cost["cost"])
    agreement = figures["agreement"]["value"]
    return (per_k is None, per_k if per_k is not None else 0.0, len(candidate.members),
            -(agreement if agreement is not None else -2.0), candidate.key)


def select(study, candidates: Sequence[Candidate], codes: Sequence[str], *, verdict: VerdictSettings,
           held_out_share: float = DEFAULT_HELD_OUT, seed: int = DEFAULT_SEED, n_resamples: int = 1000,
           progress: Callable[[float, str], None] | None = None) -> dict[str, Any]:
    """The selection table over ``candidates`` against ``study`` (the campaign's labels; see the module
    docstring)."""
    from scoring.reports.wording import Words, words_for

    if not 0.0 < held_out_share < 1.0:
        raise SelectionError("The held-out share must be between 0 and 1 (e.g. 0.3).")
    if not candidates:
        raise SelectionError("No finished judge run on this corpus and instrument: nothing to choose from.")
    words = study.words or words_for(study.target)
    W = Words(words)
    labels = study.labels
    labelled = set(labels["dialogue"].tolist())
    judged = set()
    for c in candidates:
        judged |= set(c.frame["dialogue"].tolist())
    selection_ids, held_ids = split_dialogues(sorted(labelled & judged), held_out_share, seed)
    raters = sorted(labels["rater"].unique().tolist(), key=lambda r: (study.rater_names.get(r, str(r)), r))
    codes = [m.code for m in study.items if m.code in set(codes)]
    rows = []
    for k, candidate in enumerate(candidates):
        if progress is not None:
            progress(0.05 + 0.85 * k / len(candidates), f"{candidate.name} ({k + 1} of {len(candidates)})")
        figures = _evaluate(candidate, study, codes, selection_ids, raters, verdict, seed, n_resamples, words)
        for code, fig in figures.items():
            units = candidate.units_by_item.get(code, {"total": 0, "done": 0})
            fig["unscored_share"] = (1 - units["done"] / units["total"]) if units["total"] else None
        rows.append({"candidate": candidate, "items": figures})
    chosen: dict[str, dict] = {}
    for code in codes:
        fitting = [(r["candidate"], r["items"][code]) for r in rows
                   if code in r["items"] and r["items"][code]["outcome"] == "replace"]
        if not fitting:
            chosen[code] = {"candidate": None}
            continue
        best, fig = min(fitting, key=lambda pair: _cost_key(*pair))
        held = _evaluate(best, study, [code], held_ids, raters, verdict, seed + 1, n_resamples, words).get(code)
        chosen[code] = {"candidate": best, "selection": fig, "held_out": held,
                        "confirmed": bool(held and held["outcome"] == "replace")}
    return _layout(study, rows, chosen, codes, candidates, verdict, held_out_share, seed, n_resamples,
                   len(selection_ids), len(held_ids), W, words)


def _candidate_dict(c: Candidate) -> dict[str, Any]:
    out = {"key": c.key, "name": c.name, "kind": c.kind, "members": c.members, "virtual": c.virtual,
           "rule": c.rule.text if c.rule else "", "n_dialogues": c.n_dialogues, "cost": c.cost["cost"],
           "currency": c.cost["currency"], "cost_note": c.cost["why"], "cost_per_1000": c.per_thousand(c.cost["cost"]),
           "seconds": c.seconds, "seconds_per_1000": c.per_thousand(c.seconds)}
    said_here = {}
    if c.name_said:
        said_here["name"] = c.name_said.stored()
    if c.members_said and len(c.members_said) == len(c.members):
        said_here["members"] = [m.stored() for m in c.members_said]
    if c.rule:
        said_here["rule"] = c.rule.stored()
    if (c.cost.get(KEY) or {}).get("why"):
        said_here["cost_note"] = c.cost[KEY]["why"]
    if said_here:
        out[KEY] = said_here
    return out


def _layout(study, rows, chosen, codes, candidates, verdict, share, seed, n_resamples, n_selection, n_held, W,
            words) -> dict[str, Any]:
    labels = outcome_labels(words)
    items = []
    for code in codes:
        meta = next(m for m in study.items if m.code == code)
        pick = chosen[code]
        entry = {"code": code, "text": meta.text, "response_type": meta.response_type,
                 "candidates": [{"key": r["candidate"].key, **r["items"][code]} for r in rows if code in r["items"]]}
        if pick["candidate"] is None:
            entry["choice"] = None
            choice = said(gettext_noop('none: no candidate earns "%(verdict)s" on this item'),
                          verdict=verdict_said("replace", labels["replace"], W.raters))
        else:
            c = pick["candidate"]
            held = pick["held_out"]
            entry["choice"] = {"key": c.key, "name": c.name, "confirmed": pick["confirmed"],
                               "held_out": held, "selection": pick["selection"]}
            if pick["confirmed"]:
                choice = said(gettext_noop("%(candidate)s: confirmed on the held-out dialogues"),
                              candidate=c.name_said or c.name)
            elif held:
                choice = said(gettext_noop("%(candidate)s: not confirmed on the held-out dialogues (%(verdict)s)"),
                              candidate=c.name_said or c.name,
                              verdict=verdict_said(held["outcome"], held["verdict"], W.raters))
            else:
                choice = said(gettext_noop("%(candidate)s: not confirmed on the held-out dialogues (no held-out "
                                           "data)"), candidate=c.name_said or c.name)
        entry["choice_text"] = choice.text
        entry[KEY] = {"choice_text": choice.stored()}
        items.append(entry)
    use: dict[str, list[str]] = {}
    for entry in items:
        if entry["choice"] and entry["choice"]["confirmed"]:
            use.setdefault(entry["choice"]["key"], []).append(entry["code"])
    by_key = {c.key: c for c in candidates}
    lines, total, unknown = [], 0.0, False
    for key, item_codes in use.items():
        c = by_key[key]
        per_k = c.per_thousand(c.cost["cost"])
        unknown |= per_k is None
        total += per_k or 0.0
        lines.append(said(gettext_noop("use %(candidate)s for item(s) %(items)s"),
                          candidate=c.name_said or c.name,
                          items=", ".join(item_codes)))
    n_none = sum(1 for e in items if not (e["choice"] and e["choice"]["confirmed"]))
    currency = next((by_key[k].cost["currency"] for k in use), "")
    if use:
        cost = (said(gettext_noop("Cost per 1,000 dialogues unknown (a chosen candidate's cost is unknown)"))
                if unknown else
                said(gettext_noop("%(total)s %(currency)s per 1,000 dialogues for the chosen candidates (each run on "
                                  "the whole instrument)"), total=f"{total:.2f}", currency=currency))
        summary = said(gettext_noop("%(uses)s; keep the %(raters)s on the other %(n)s item(s). %(cost)s."),
                       uses=joined(lines, "; "), raters=word(W.raters), n=n_none, cost=cost)
    else:
        summary = said(gettext_noop("No candidate is confirmed on any item: keep the %(raters)s on all %(n)s "
                                    "item(s)."), raters=word(W.raters), n=len(items))
    optimism = said(gettext_noop(
        "%(n)s candidate(s) were tried against the same %(raters)s' labels. The choice is made on this campaign's "
        "labels (%(n_selection)s %(units)s of the selection part), where the best of many looks better than it is "
        "(selection optimism): each chosen candidate's verdict is computed again on %(n_held)s held-out %(units)s "
        "(share %(share)s, seed %(seed)s) that played no part in the choice, and only a verdict that holds there is "
        "confirmed."), n=len(candidates), raters=word(W.raters), n_selection=n_selection, units=word(W.units),
        n_held=n_held, share=f"{share:g}", seed=seed)
    method = said(gettext_noop(
        "Verdicts, agreement and non-inferiority as in the judge report (same rule and settings) on the selection "
        "part; %(rule)s rounded to the item's grid (ties to the lower value) for the juries tried here, which on a "
        "binary item is the majority vote. Unscored share: the candidate's answers on the item that have no score. "
        "Cost and time per 1,000 dialogues: the candidate's cost and run time divided by the dialogues it judged (a "
        "jury's: the sum of its members')."),
        rule=said(gettext_noop("median")) if VIRTUAL_RULE[0] == "median" else VIRTUAL_RULE[0])
    return {
        "kind": "judge_selection",
        "candidates": [_candidate_dict(c) for c in candidates],
        "n_candidates": len(candidates),
        "items": items,
        "settings": verdict.as_dict(),
        "split": {"held_out_share": share, "seed": seed, "n_selection": n_selection, "n_held_out": n_held,
                  "n_resamples": n_resamples},
        "optimism": optimism.text,
        KEY: {"optimism": optimism.stored(), "method": method.stored()},
        "summary": {"text": summary.text, KEY: {"text": summary.stored()}, "use": use,
                    "n_confirmed": sum(len(v) for v in use.values()),
                    "n_chosen": sum(1 for e in items if e["choice"]), "cost_per_1000": None if unknown or not use
                    else total, "currency": currency},
        "method": method.text,
    }


def judge_selection(campaign, *, verdict: VerdictSettings | None = None, held_out_share: float = DEFAULT_HELD_OUT,
                    seed: int = DEFAULT_SEED, n_resamples: int = 1000, juries: Sequence | None = None,
                    all_juries: bool | None = None, names: bool = False,
                    progress: Callable[[float, str], None] | None = None) -> dict[str, Any]:
    """The judge selection table for ``campaign`` (see the module docstring)."""
    from scoring.reports.agreement import load_study

    verdict = verdict or VerdictSettings()
    candidates = load_candidates(campaign.corpus, campaign.scale_version_id, juries=juries, all_juries=all_juries)
    study = load_study([campaign], names=names)
    codes = set()
    for c in candidates:
        codes |= set(c.frame["item"].unique().tolist()) | set(c.units_by_item)
    out = select(study, candidates, sorted(codes), verdict=verdict, held_out_share=held_out_share, seed=seed,
                 n_resamples=n_resamples, progress=progress)
    out["campaign"] = {"id": campaign.pk, "name": campaign.name}
    out["corpus"] = campaign.corpus.name
    return out


SELECTION_HEADER = ["item", "candidate", "kind", "members", "verdict", "coefficient", "agreement", "ci_low",
                    "ci_high", "difference", "difference_ci_low", "margin", "unscored_share", "cost_per_1000",
                    "currency", "seconds_per_1000", "n_dialogues", "chosen", "held_out_verdict", "confirmed"]


def selection_rows(result: dict):
    """The selection table as flat rows: one per item and candidate."""
    yield SELECTION_HEADER
    by_key = {c["key"]: c for c in result["candidates"]}
    margin = result["settings"]["margin"]
    for item in result["items"]:
        choice = item["choice"] or {}
        for row in item["candidates"]:
            c = by_key[row["key"]]
            chosen = choice.get("key") == row["key"]
            held = choice.get("held_out") if chosen else None
            yield [item["code"], c["name"], c["kind"], " ".join(c["members"]), row["verdict"], row["coefficient"],
                   row["agreement"]["value"], row["agreement"]["ci_low"], row["agreement"]["ci_high"],
                   row["difference"]["value"], row["difference"]["ci_low"], margin, row["unscored_share"],
                   "unknown" if c["cost_per_1000"] is None else c["cost_per_1000"], c["currency"],
                   "unknown" if c["seconds_per_1000"] is None else c["seconds_per_1000"], row["n_dialogues"],
                   "yes" if chosen else "", (held or {}).get("verdict", "") if chosen else "",
                   ("yes" if choice.get("confirmed") else "no") if chosen else ""]
