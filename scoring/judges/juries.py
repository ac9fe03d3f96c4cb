"""Juries of judges: making one, and how much its jurors agree.

A jury is two or more finished judge runs (the app's own or imported) on one corpus and scale version, combined per
unit by a declared rule (:mod:`core.stats.juries`); :mod:`scoring.judges.sources` reads its combined answers
wherever a run's are read. :func:`jury_label_rows` gives a jury's combined answers to the label exports
(registered by :mod:`scoring.judges.labels`) beside its members' (``rater_kind`` judge, ``judge_run`` "jury:<id>").
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from django.db import IntegrityError, transaction
from django.utils.translation import gettext, gettext_lazy, ngettext

from core.stats import juries as jury_stats
from projects.models import AuditEvent
from scoring.judges import sources
from scoring.judges.models import JudgeRun, Jury, JuryMember
from scoring.judges.names import jury_rater_name
from scoring.reports.exports import JUDGE, iso_utc

MIN_MEMBERS = 2
EXISTS = gettext_lazy("A jury named %(name)s exists already in this project.")


class JuryError(ValueError):
    """A jury that cannot be made (too few runs, unfinished runs, different corpora or scale versions...)."""


def check_members(runs: Sequence[JudgeRun], corpus=None) -> int:
    """Raise :class:`JuryError` unless ``runs`` can form a jury; return their scale version's id."""
    runs = list(runs)
    ids = [run.pk for run in runs]
    if len(set(ids)) != len(ids):
        raise JuryError(gettext("A run appears twice: give each run once."))
    if len(runs) < MIN_MEMBERS:
        raise JuryError(gettext("A jury needs at least %(min)s runs; got %(n)s.") % {"min": MIN_MEMBERS,
                                                                                     "n": len(runs)})
    unfinished = [run for run in runs if not run.is_finished]
    if unfinished:
        raise JuryError(gettext("Only finished runs can sit on a jury: %(runs)s.") % {"runs": ", ".join(
            gettext("run #%(pk)s is %(status)s") % {"pk": run.pk, "status": run.get_status_display().lower()}
            for run in unfinished)})
    corpora = {run.corpus_id for run in runs}
    if corpus is not None and corpora != {corpus.pk}:
        others = ", ".join(f"#{run.pk} ({run.corpus})" for run in runs if run.corpus_id != corpus.pk)
        raise JuryError(gettext("Every run must have judged corpus %(corpus)s; these did not: %(others)s.")
                        % {"corpus": repr(corpus.name), "others": others})
    if len(corpora) > 1:
        raise JuryError(gettext("The runs judged different corpora: %(runs)s.") % {"runs": ", ".join(
            f"#{run.pk} {run.corpus}" for run in runs)})
    versions = {run.pk: sources.scale_version_id(run) for run in runs}
    if len(set(versions.values())) > 1:
        raise JuryError(gettext("The runs rate on different instruments (scale versions): a jury combines answers "
                                "to the same items."))
    return next(iter(versions.values()))


def create_jury(name: str, corpus, runs: Sequence[JudgeRun], *, rule: str = Jury.Rule.MAJORITY,
                tie_rule: str = Jury.TieRule.LOWER, round_to_grid: bool = True, note: str = "",
                user=None) -> Jury:
    """Make a jury of ``runs`` on ``corpus`` (all in the active project), recorded in the audit trail."""
    name = (name or "").strip()
    if not name:
        raise JuryError(gettext("Give the jury a name."))
    if rule not in Jury.Rule.values:
        raise JuryError(gettext("The rule must be one of %(values)s; got %(got)s.")
                        % {"values": ", ".join(Jury.Rule.values), "got": repr(rule)})
    if tie_rule not in Jury.TieRule.values:
        raise JuryError(gettext("The tie rule must be one of %(values)s; got %(got)s.")
                        % {"values": ", ".join(Jury.TieRule.values), "got": repr(tie_rule)})
    version_id = check_members(runs, corpus)
    if Jury.objects.alive().filter(name=name).exists():
        raise JuryError(EXISTS % {"name": repr(name)})
    try:
        with transaction.atomic():
            jury = Jury.objects.create(name=name, corpus=corpus, scale_version_id=version_id, rule=rule,
                                       tie_rule=tie_rule, round_to_grid=round_to_grid, note=note, created_by=user,
                                       project_id=corpus.project_id)
            JuryMember.objects.bulk_create([JuryMember(jury=jury, run=run, position=k) for k, run in enumerate(runs)])
    except IntegrityError as exc:
        raise JuryError(EXISTS % {"name": repr(name)}) from exc
    AuditEvent.record(user, "jury_create", jury, members=[run.pk for run in runs], rule=rule, tie_rule=tie_rule,
                      round_to_grid=round_to_grid)
    from scoring.judges import comparison_figures as comparison

    comparison.refresh(jury=jury)  # its comparisons with its members, ahead of its page (core.jobs.figures)
    return jury


def agreement_among(frames: Sequence[Any], grids: dict[str, list[float]], kinds: dict[str, str],
                    codes: Sequence[str]) -> dict[str, Any]:
    """The jurors' agreement per item (:func:`core.stats.juries.jurors_agreement`): Krippendorff's alpha across
    the members (nominal for binary items, ordinal for levels, interval for scales), the share of unanimous units
    and whether the members are identical; ``identical`` overall when they are on every item."""
    import pandas as pd

    keyed = [f.assign(member=k) for k, f in enumerate(frames)]
    stacked = pd.concat(keyed, ignore_index=True) if keyed else None
    items = []
    for code in codes:
        group = stacked[stacked["item"] == code] if stacked is not None else None
        if group is None or not len(group):
            continue
        wide = group.pivot_table(index="member", columns="dialogue", values="value", aggfunc="first")
        wide = wide.reindex(range(len(frames)))
        kind = kinds.get(code, "binary")
        level = "nominal" if kind == "binary" else ("interval" if kind == "scale" else "ordinal")
        entry = jury_stats.jurors_agreement(wide.to_numpy(dtype=float), level=level, value_domain=grids.get(code))
        items.append({"code": code, **entry})
    identical = bool(items) and all(e["identical"] for e in items)
    alphas = [e["alpha"] for e in items if e["alpha"] is not None]
    text = (gettext("The jurors gave the same answer on every unit they share: the jury is effectively one judge "
                    "(one model asked several times adds nothing).") if identical else
            (ngettext("Krippendorff's alpha among the jurors: %(span)s over %(n)d item.",
                      "Krippendorff's alpha among the jurors: %(span)s over %(n)d items.", len(alphas))
             % {"span": _span(alphas), "n": len(alphas)} if alphas
             else gettext("The jurors' agreement is undefined on every item.")))
    return {"items": items, "identical": identical, "text": text,
            "method": gettext("Krippendorff's alpha (krippendorff package) across the jurors on the units two or "
                              "more of them scored: nominal for binary items, ordinal for levels, interval for "
                              "scales.")}


def _span(values: Sequence[float]) -> str:
    low, high = min(values), max(values)
    if f"{low:.2f}" == f"{high:.2f}":
        return f"{low:.2f}"
    return gettext("%(low)s to %(high)s") % {"low": f"{low:.2f}", "high": f"{high:.2f}"}


def jurors_agreement(jury: Jury) -> dict[str, Any]:
    """How much a jury's members agree with one another (see :func:`agreement_among`)."""
    from scoring.reports.agreement import item_metas, scored_items

    metas = item_metas(scored_items(jury.scale_version_id))
    frames = [sources.run_frame(run)[0] for run in jury.member_runs()]
    codes = sources.judged_codes(jury)
    return agreement_among(frames, {m.code: [float(v) for v in m.values] for m in metas},
                           {m.code: m.response_type for m in metas}, [m.code for m in metas if m.code in codes])


def jury_summary(jury: Jury) -> dict[str, Any]:
    """What the judges page shows beside a jury: members, rule, cost, duration, jurors' agreement."""
    spend = sources.cost(jury)
    return {"jury": jury, "info": sources.info(jury), "cost": spend, "seconds": sources.seconds(jury),
            "agreement": jurors_agreement(jury)}


def jury_label_rows(corpus, campaign=None, *, names: bool = False) -> Iterator[dict[str, Any]]:
    """Each live jury's combined answers on ``corpus`` (optionally only ``campaign``'s dialogues) in the export row
    format, after the runs' rows: ``rater`` :func:`jury_rater_name`, ``rater_kind`` judge, ``judge_run``
    "jury:<id>", ``created`` the jury's creation time."""
    from annotation.models import Dialogue

    for jury in Jury.objects.alive().filter(corpus=corpus).order_by("pk"):
        frame, _units = sources.judge_frame(jury)
        if not len(frame):
            continue
        scope = campaign.dialogues() if campaign is not None else Dialogue.objects.filter(corpus=corpus)
        external = dict(scope.filter(deleted_at__isnull=True, pk__in=set(frame["dialogue"].tolist()))
                        .values_list("pk", "external_id"))
        order = {code: k for k, code in enumerate(sources.item_grids(jury.scale_version_id))}
        rows = [(external[d], order.get(code, 0), code, v) for d, code, v in
                zip(frame["dialogue"].tolist(), frame["item"].tolist(), frame["value"].tolist(), strict=True)
                if d in external]
        rater, created = jury_rater_name(jury), iso_utc(jury.created_at)
        for dialogue_id, _order, code, value in sorted(rows):
            yield {"dialogue_id": dialogue_id, "rater": rater, "item": code,
                   "value": int(value) if float(value).is_integer() else float(np.round(value, 6)),
                   "rater_kind": JUDGE, "judge_run": f"jury:{jury.pk}", "created": created}

