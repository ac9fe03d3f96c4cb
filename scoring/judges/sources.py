"""Scores sources: what the judge reports read from "a judge" - one run (the app's own or imported) or a jury.

Every report (the judge-vs-physicians report and its verdicts, model estimates and PPI, run comparison, the judge's
own scores, exports, the API, ``judge_report``, the selection table) reads a judge through these functions, never
through ``JudgeResult`` directly:

* :func:`scale_version_id`: the scale version its answers belong to;
* :func:`judge_frame`: its scored answers (columns ``dialogue``, ``item`` code, ``value``) and its units by status;
* :func:`judged_codes`: the codes of the items it answered;
* :func:`info`: who it is (a jury lists its members and rule: its provenance);
* :func:`cost` and :func:`seconds`: what it cost and how long it took ("unknown", never 0, where a member's is).

A jury (:class:`~scoring.judges.models.Jury`) combines its members' answers per unit with
:func:`core.stats.juries.combine` by its declared rule.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd
from django.db.models import Count
from django.utils.translation import gettext_noop

from core.stats import juries as jury_stats
from scoring.reports.sentences import KEY, Said, joined, put, said, unstored


def is_jury(source: Any) -> bool:
    return bool(getattr(source, "is_jury", False))


def scale_version_id(source) -> int:
    """The scale version the source's answers belong to: an imported run's or a jury's own, a live run's prompt
    set's."""
    from scoring.judges.models import PromptSet

    if source.scale_version_id:  # imported runs and juries (no prompt set)
        return source.scale_version_id
    prompt_set_id = (source.snapshot or {}).get("prompt_set") or source.config.prompt_set_id
    return PromptSet.objects.values_list("scale_version_id", flat=True).get(pk=prompt_set_id)


def run_frame(run) -> tuple[pd.DataFrame, dict[str, int]]:
    """One run's scored answers (columns dialogue, item code, value) and its units by status."""
    from annotation.models import Item
    from scoring.judges.models import JudgeResult
    from scoring.reports.agreement import float_rows

    counts = dict(JudgeResult.objects.filter(run=run).values_list("status").annotate(n=Count("id")).order_by())
    units = {s: int(counts.get(s, 0)) for s in JudgeResult.Status.values}
    units["total"] = sum(units.values())
    code_of = dict(Item.objects.filter(version_id=scale_version_id(run)).values_list("pk", "code"))
    rows = (JudgeResult.objects.filter(run=run, status=JudgeResult.Status.DONE, value__isnull=False)
            .order_by()  # the default ordering joins four tables and sorts every answer on disk (0.2 s at 64,320)
            .values_list("dialogue_id", "item_id", "value"))
    arr = float_rows(rows, 3)
    frame = pd.DataFrame({"dialogue": arr[:, 0].astype(np.int64),
                          "item": [code_of.get(i, "") for i in arr[:, 1].astype(np.int64).tolist()],
                          "value": arr[:, 2]})
    return frame, units


def item_grids(version_id: int) -> dict[str, list[float]]:
    """The allowed values of each scored item of a scale version, by code."""
    from scoring.reports.agreement import item_metas, scored_items

    return {m.code: [float(v) for v in m.values] for m in item_metas(scored_items(version_id))}


def combine_frames(frames: list[pd.DataFrame], grids: dict[str, list[float]], rule: str, *, tie: str = "lower",
                   round_to_grid: bool = True) -> tuple[pd.DataFrame, dict[str, int]]:
    """A jury's answers from its members' ``frames`` (dialogue, item, value): per item a members x units matrix
    combined by :func:`core.stats.juries.combine`. Units: every (dialogue, item) some member answered; those the
    rule leaves without a value (a tie left unscored) are counted ``unscored``."""
    keyed = [f.assign(member=k) for k, f in enumerate(frames) if len(f)]
    empty = pd.DataFrame({"dialogue": np.empty(0, np.int64), "item": [], "value": np.empty(0)})
    units = {"pending": 0, "done": 0, "unscored": 0, "failed": 0, "total": 0}
    if not keyed:
        return empty, units
    stacked = pd.concat(keyed, ignore_index=True)
    parts = []
    for code, group in stacked.groupby("item", sort=True):
        wide = group.pivot_table(index="member", columns="dialogue", values="value", aggfunc="first")
        wide = wide.reindex(range(len(frames)))
        combined = jury_stats.combine(wide.to_numpy(dtype=float), rule, grid=grids.get(str(code)), tie=tie,
                                      round_to_grid_=round_to_grid)
        parts.append(pd.DataFrame({"dialogue": wide.columns.to_numpy(dtype=np.int64), "item": str(code),
                                   "value": combined}))
    joined = pd.concat(parts, ignore_index=True) if parts else empty
    units["total"] = int(len(joined))
    scored = joined[~joined["value"].isna()].reset_index(drop=True)
    units["done"] = int(len(scored))
    units["unscored"] = units["total"] - units["done"]
    return scored, units


def judge_frame(source) -> tuple[pd.DataFrame, dict[str, int]]:
    """The source's scored answers (columns dialogue, item code, value) and its units by status."""
    if not is_jury(source):
        return run_frame(source)
    frames = [run_frame(run)[0] for run in source.member_runs()]
    return combine_frames(frames, item_grids(source.scale_version_id), source.rule, tie=source.tie_rule,
                          round_to_grid=source.round_to_grid)


def judged_codes(source) -> set[str]:
    """The codes of the items the source has answers for (of any status). JudgeResult's default ordering joins the
    item table and sorts every answer; without it the distinct item ids come from the (run, ...) index. A jury:
    the items every member answered."""
    from annotation.models import Item
    from scoring.judges.models import JudgeResult

    if is_jury(source):
        sets = [judged_codes(run) for run in source.member_runs()]
        return set.intersection(*sets) if sets else set()
    item_ids = JudgeResult.objects.filter(run=source).order_by().values_list("item_id", flat=True).distinct()
    return set(Item.objects.filter(pk__in=list(item_ids)).values_list("code", flat=True))


def run_cost(run) -> dict[str, Any]:
    """What a run cost: the spend of a run by the app whose judge had prices; ``None`` (unknown, never 0) for an
    imported run or a run without prices."""
    snap = run.snapshot or {}
    priced = bool(float(snap.get("price_input_per_1k") or 0) or float(snap.get("price_output_per_1k") or 0))
    currency = snap.get("currency") or (run.config.currency if run.config_id else "USD")
    if run.is_imported or not priced:
        why = (said(gettext_noop("run #%(run)s: imported without prices"), run=run.pk) if run.is_imported else
               said(gettext_noop("run #%(run)s: the judge had no prices"), run=run.pk))
        return _cost(None, currency, why)
    return _cost(float(Decimal(run.spent_cost or 0)), currency, None)


def _cost(amount: float | None, currency: str, why: Said | None) -> dict[str, Any]:
    """A cost with why it is unknown (``why``: in English, and as a message id under ``said``)."""
    out = {"cost": amount, "currency": currency, "why": ""}
    if why is not None:
        put(out, "why", why)
    return out


def _why(cost: dict[str, Any]) -> Said | str:
    """Why a cost is unknown, as its sentence (a cost stored before the sentences were: its English)."""
    stored = (cost.get(KEY) or {}).get("why")
    return unstored(stored) if stored else cost["why"]


def sum_costs(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """The sum of several costs (:func:`run_cost`): unknown if one is, or if they were paid in different
    currencies."""
    unknown = [_why(p) for p in parts if p["cost"] is None]
    currencies = {p["currency"] for p in parts}
    if unknown:
        return _cost(None, parts[0]["currency"] if parts else "USD",
                     said(gettext_noop("unknown: %(why)s"), why=joined(unknown, "; ")))
    if len(currencies) > 1:
        return _cost(None, "", said(gettext_noop("unknown: members paid in %(currencies)s"),
                                    currencies=", ".join(sorted(currencies))))
    return {"cost": float(sum(p["cost"] for p in parts)), "currency": currencies.pop() if currencies else "USD",
            "why": ""}


def cost(source) -> dict[str, Any]:
    """The source's cost: a run's (:func:`run_cost`), or the sum of a jury's members' (:func:`sum_costs`)."""
    if not is_jury(source):
        return run_cost(source)
    return sum_costs([run_cost(run) for run in source.member_runs()])


def run_seconds(run) -> float | None:
    """How long a run by the app took (start to finish); None for an imported run or one without both times."""
    if run.is_imported or not run.started_at or not run.finished_at:
        return None
    return max(0.0, (run.finished_at - run.started_at).total_seconds())


def seconds(source) -> float | None:
    """The source's duration; a jury's is the sum of its members' (run one after another), None if one is
    unknown."""
    if not is_jury(source):
        return run_seconds(source)
    parts = [run_seconds(run) for run in source.member_runs()]
    return None if any(p is None for p in parts) or not parts else float(sum(parts))


def provenance(source) -> dict:
    """Where an imported run's scores come from (file, SHA-256, model, when and by whom), or a jury's members and
    rule."""
    if is_jury(source):
        return {"jury": source.pk, "rule": source.rule, "tie_rule": source.tie_rule,
                "round_to_grid": source.round_to_grid,
                "rule_text": rule_text(source.rule, source.tie_rule, source.round_to_grid),
                "members": [member_info(run) for run in source.member_runs()],
                "created_at": source.created_at.isoformat(),
                "created_by": source.created_by.get_username() if source.created_by_id else ""}
    snap = source.snapshot or {}
    return {"file": source.source_file, "sha256": source.source_sha256, "model": snap.get("model") or "",
            "judge_run": snap.get("judge_run") or "", "imported_at": source.created_at.isoformat(),
            "imported_by": snap.get("imported_by") or ""}


def member_info(run) -> dict:
    snap = run.snapshot or {}
    return {"id": run.pk, "name": run.name, "model": snap.get("model") or "", "source": run.source,
            "mode": snap.get("mode") or ""}


def rule_text(rule: str, tie: str, round_to_grid: bool) -> str:
    """The jury's rule in words."""
    return rule_said(rule, tie, round_to_grid).text


def rule_said(rule: str, tie: str, round_to_grid: bool) -> Said:
    """:func:`rule_text` as a message id with its parameters (:mod:`scoring.reports.sentences`); the same message
    ids as the ``jury_rule`` filter's."""
    ties = {"lower": said(gettext_noop("the lower value")), "higher": said(gettext_noop("the higher value")),
            "unscored": said(gettext_noop("the answer left unscored"))}[tie]
    if rule == "majority":
        return said(gettext_noop("majority vote of the members who answered; a tie gives %(tie)s"), tie=ties)
    if round_to_grid:
        return said(gettext_noop("median of the members' answers rounded to the item's nearest allowed value; "
                                 "half-way gives %(tie)s") if rule == "median" else
                    gettext_noop("mean of the members' answers rounded to the item's nearest allowed value; half-way "
                                 "gives %(tie)s"), tie=ties)
    return said(gettext_noop("median of the members' answers, not rounded") if rule == "median" else
                gettext_noop("mean of the members' answers, not rounded"))


def info(source) -> dict:
    """Who the source is, for every report's header."""
    snap = source.snapshot or {}
    out = {"id": source.pk, "config": source.name, "model": snap.get("model"), "source": source.source,
           "mode": snap.get("mode"), "status": source.status, "prompt_set": snap.get("prompt_set_name"),
           "corpus": source.corpus.name, "item_codes": list(source.item_codes or []), "is_jury": is_jury(source)}
    if source.is_imported or is_jury(source):
        out["provenance"] = provenance(source)
    return out


def key(source) -> str:
    """A stable key naming the source in caches and exports: "run:12" or "jury:3"."""
    return f"{'jury' if is_jury(source) else 'run'}:{source.pk}"
