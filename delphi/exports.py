"""Delphi exports: the per-round item table of Shi et al., LLM-Mini-CEX, appendix Figs. 1-3, raw answers (long format,
pseudonymised panelists) and the CREDES/ACCORD reporting sheet."""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from collections.abc import Iterable, Iterator
from functools import wraps
from typing import Any

from django.utils import translation
from django.utils.translation import gettext

from core.site.spreadsheet import safe_cell, safe_dict
from delphi import consensus, services
from delphi.models import DelphiStudy, ItemDecision, Proposal, Response, Round
from projects.models import AuditEvent

TABLE_COLUMNS = ["Number", "Item content", "Expert opinion", "Adoption", "Modify", "Item after modification",
                 "Reason"]
RESPONSE_COLUMNS = ["study", "round", "round_kind", "panelist", "item", "dimension", "importance", "comment",
                    "proposed_wording", "familiarity", "basis_practice", "basis_theory", "basis_literature",
                    "basis_intuition", "completed", "answered_at"]


def _in_english(fn):
    """Exports never depend on the reader's language: what they name (round labels, decisions, kinds, the rule) is
    written in English, the language of the source strings."""

    @wraps(fn)
    def english(*args, **kwargs):
        with translation.override("en"):
            return fn(*args, **kwargs)

    return english


def _adoption_text(values: list[str]) -> str:
    if not values:
        return ""
    adopted = [n for n, v in enumerate(values, start=1) if v == Response.Adoption.ADOPT]
    if len(adopted) == len(values):
        return "Adopt All" if len(values) > 1 else "Adopt"
    if not adopted:
        undecided = all(v == "" for v in values)
        return "Not decided" if undecided else "Not Adopt"
    return "Adopt suggestion " + ", ".join(map(str, adopted))


@_in_english
def round_table(rnd: Round) -> list[dict[str, str]]:
    """One row per dimension and item (and added item), as in the paper's appendix figures."""
    items = services.round_items(rnd)
    decisions = {d.item_id: d for d in rnd.decisions.alive().select_related("merge_into") if d.item_id}
    added = defaultdict(list)
    for d in rnd.decisions.alive().filter(action=ItemDecision.Action.ADD).select_related("proposal"):
        added[d.dimension_code].append(d)
    opinions: dict[int, list[tuple[str, str]]] = defaultdict(list)
    for r in (Response.objects.filter(participation__round=rnd, participation__panelist__deleted_at__isnull=True)
              .exclude(comment="", proposed_wording="").order_by("participation__panelist__pseudonym")
              .values("item_id", "comment", "proposed_wording", "adoption")):
        parts = [r["comment"]] if r["comment"] else []
        if r["proposed_wording"]:
            parts.append(f'Revise to "{r["proposed_wording"]}"')
        opinions[r["item_id"]].append((" ".join(parts), r["adoption"]))
    rows: list[dict[str, str]] = []
    current_dim = None

    def flush_added(dim_code):
        for d in added.pop(dim_code, []):
            rows.append({"Number": d.new_code, "Item content": "",
                         "Expert opinion": d.proposal.text if d.proposal_id else "",
                         "Adoption": "Adopt" if d.proposal_id else "", "Modify": "Add",
                         "Item after modification": d.new_text_en, "Reason": d.reason})

    for item in items:
        if current_dim is None or item.dimension_id != current_dim.pk:
            if current_dim is not None:
                flush_added(current_dim.code)
            current_dim = item.dimension
            rows.append({"Number": current_dim.code, "Item content": current_dim.name_en, "Expert opinion": "",
                         "Adoption": "", "Modify": ItemDecision.action_name(ItemDecision.Action.RESERVE),
                         "Item after modification": current_dim.name_en,
                         "Reason": ""})
        ops = opinions.get(item.pk, [])
        decision = decisions.get(item.pk)
        action = decision.action if decision else ItemDecision.Action.RESERVE
        after = item.text_en
        if action == ItemDecision.Action.REVISE:
            after = decision.new_text_en
        elif action == ItemDecision.Action.DELETE:
            after = ""
        elif action == ItemDecision.Action.MERGE:
            after = f"Merged into {decision.merge_into.code}" + (f": {decision.new_text_en}"
                                                                if decision.new_text_en else "")
        rows.append({
            "Number": item.code, "Item content": item.text_en,
            "Expert opinion": " ".join(f"{n}. {text}" for n, (text, _) in enumerate(ops, start=1)) if len(ops) > 1
            else (ops[0][0] if ops else ""),
            "Adoption": _adoption_text([a for _, a in ops]),
            "Modify": ItemDecision.action_name(action), "Item after modification": after,
            "Reason": decision.reason if decision else "",
        })
    if current_dim is not None:
        flush_added(current_dim.code)
    for dim_code in list(added):
        flush_added(dim_code)
    return rows


def response_rows(study: DelphiStudy) -> Iterator[dict[str, Any]]:
    """Every answer of every round, long format; panelists appear only as pseudonyms."""
    qs = (Response.objects.filter(participation__round__study=study, participation__panelist__deleted_at__isnull=True)
          .select_related("participation__round", "participation__panelist", "item__dimension")
          .order_by("participation__round__number", "participation__panelist__pseudonym", "item__order"))
    for r in qs.iterator(chunk_size=2000):
        p = r.participation
        yield {
            "study": study.title, "round": p.round.number, "round_kind": p.round.kind,
            "panelist": p.panelist.pseudonym, "item": r.item.code, "dimension": r.item.dimension.code,
            "importance": r.importance if r.importance is not None else "", "comment": r.comment,
            "proposed_wording": r.proposed_wording, "familiarity": p.familiarity or "",
            "basis_practice": p.basis_practice, "basis_theory": p.basis_theory,
            "basis_literature": p.basis_literature, "basis_intuition": p.basis_intuition,
            "completed": p.completed_at.isoformat() if p.completed_at else "",
            "answered_at": r.updated_at.isoformat(),
        }


def to_csv(rows: Iterable[dict[str, Any]], columns: list[str]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, extrasaction="ignore")
    writer.writeheader()
    for row in rows:
        writer.writerow(safe_dict(row))  # panelists' comments and wordings may start with "="
    return buf.getvalue()


def to_xlsx(sheets: list[tuple[str, list[str], Iterable[dict[str, Any]]]]) -> bytes:
    from openpyxl import Workbook
    from openpyxl.styles import Alignment, Font

    wb = Workbook()
    wb.remove(wb.active)
    for title, columns, rows in sheets:
        ws = wb.create_sheet(title[:31])
        ws.append(columns)
        for cell in ws[1]:
            cell.font = Font(bold=True)
        for row in rows:
            ws.append([_cell(row.get(c, "")) for c in columns])
        for n, col in enumerate(columns, start=1):
            letter = ws.cell(row=1, column=n).column_letter
            width = max([len(str(col))] + [min(60, len(str(c.value or ""))) for c in ws[letter]]) + 2
            ws.column_dimensions[letter].width = width
            for c in ws[letter][1:]:
                c.alignment = Alignment(wrap_text=True, vertical="top")
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


def _cell(value: Any) -> Any:
    return "" if value is None else safe_cell(value)  # never let a panelist's comment run as a formula


def _r(x: float | None, digits: int = 3) -> Any:
    return "" if x is None else round(x, digits)


def _p(p: float | None) -> Any:
    """A p-value cell: the number to four decimals, or the text "< 0.0001" where that would be 0."""
    from core.stats import format_p

    if p is None:
        return ""
    return round(p, 4) if p >= 1e-4 else format_p(p, prefix=False)


REPORT_FLOW_COLUMNS = ["Round", "Kind", "Version", "Opened", "Closed", "Invited", "Responded", "Completed",
                       "Positive coefficient", "Excluded (familiarity below threshold)", "Carried to next round",
                       "Ca", "Cs", "Cr", "Kendall's W", "Kendall's W (no tie correction)", "Chi-square", "df", "p",
                       "Panelists left out of W (missing rating)", "Items rated",
                       "Items meeting consensus"]
REPORT_AUDIT_COLUMNS = ["Round", "Item", "Decision", "New wording", "Merged into", "Reason", "Decided by",
                        "Decided at"]


@_in_english
def reporting_sheets(study: DelphiStudy) -> list[tuple[str, list[str], list[dict[str, Any]]]]:
    """The facts CREDES / ACCORD ask for: consensus rule and when it was fixed, panel flow per round,
    items added / reworded / merged / dropped and why."""
    rule = study.consensus_rule()
    facts = [
        {"Fact": "Study", "Value": study.title},
        {"Fact": "Scale and starting version", "Value": str(study.base_version)},
        {"Fact": "Consensus rule", "Value": rule_text(rule)},
        {"Fact": "Consensus rule last set", "Value": _when(study.consensus_fixed_at)},
        {"Fact": "Consensus rule locked (round 1 opened)", "Value": _when(study.consensus_locked_at)},
        {"Fact": "Planned rounds", "Value": study.planned_rounds},
        {"Fact": "Familiarity threshold to stay on the panel", "Value": services.familiarity_label(
            study.familiarity_threshold)},
        {"Fact": "Rating scale", "Value": "Importance, 5-point Likert (1 not important - 5 very important)"},
        {"Fact": "IQR quantile method", "Value": str(consensus.QUANTILE_METHOD_LABEL)},
        {"Fact": "Authority coefficient", "Value": "Cr = (Ca + Cs) / 2; Ca = sum of judgement-basis coefficients "
                                                   "(practice .5/.4/.3, theory .3/.2/.1, literature .1/.1/.05, "
                                                   "intuition .1/.1/.1); Cs: familiarity 1.0/.8/.6/.4/.2"},
        {"Fact": "Anonymity", "Value": "Panelists see only group statistics and their own previous answers; "
                                       "exports use pseudonyms"},
        {"Fact": "Agreed version", "Value": str(study.agreed_version or "")},
        {"Fact": "Status", "Value": study.get_status_display()},
    ]
    flow, audit, changes = [], [], []
    for rnd in study.rounds.order_by("number"):
        s = services.round_summary(rnd)
        stats_rows = services.item_stats(rnd)
        stay, excluded = services.eligible_panel(rnd) if rnd.status == Round.Status.CLOSED else ([], [])
        next_round = study.rounds.filter(number=rnd.number + 1).first()
        carried = next_round.participations.count() if next_round and not rnd.is_validation else ""
        flow.append({
            "Round": rnd.number, "Kind": rnd.get_kind_display(), "Version": rnd.version.number,
            "Opened": _when(rnd.opened_at), "Closed": _when(rnd.closed_at), "Invited": s["invited"],
            "Responded": s["responded"], "Completed": s["completed"],
            "Positive coefficient": _r(s["positive_coefficient"]),
            "Excluded (familiarity below threshold)": ", ".join(excluded), "Carried to next round": carried,
            "Ca": _r(s["ca"]), "Cs": _r(s["cs"]), "Cr": _r(s["cr"]), "Kendall's W": _r(s["kendall_w"]),
            "Kendall's W (no tie correction)": _r(s["kendall_w_uncorrected"]),
            "Chi-square": _r(s["chi2"]), "df": s["dof"] or "", "p": _p(s["p"]),
            "Panelists left out of W (missing rating)": ", ".join(s["w_dropped"]),
            "Items rated": len(stats_rows),
            "Items meeting consensus": sum(1 for v in stats_rows.values() if v["consensus"]),
        })
        counts = defaultdict(int)
        for d in rnd.decisions.alive().select_related("item", "merge_into", "decided_by").order_by("id"):
            counts[d.action] += 1
            audit.append({"Round": rnd.number, "Item": d.item.code if d.item_id else d.new_code,
                          "Decision": d.get_action_display(), "New wording": d.new_text_en,
                          "Merged into": d.merge_into.code if d.merge_into_id else "", "Reason": d.reason,
                          "Decided by": str(d.decided_by or ""), "Decided at": _when(d.decided_at)})
        if not rnd.is_validation:
            proposals = Proposal.objects.alive().filter(participation__round=rnd)
            changes.append({"Round": rnd.number, "Added": counts["add"], "Reworded": counts["revise"],
                            "Merged": counts["merge"], "Dropped": counts["delete"],
                            "Proposed new items": proposals.count(),
                            "Opinions": Response.objects.filter(participation__round=rnd)
                            .exclude(comment="", proposed_wording="").count()})
    history = [{"When": _when(e.at), "Who": str(e.actor or ""), "Action": e.action, "Target": e.target_repr,
                "Why": e.reason}
               for e in AuditEvent.objects.filter(action__startswith="delphi.", target_repr__contains=study.title,
                                                  project=study.project_id)
               .select_related("actor").order_by("at", "id")
               if e.target_repr in (study.title,) or e.target_repr.startswith(f"{study.title} · ")
               or e.target_repr.endswith(f"({study.title})")]
    return [
        ("Facts", ["Fact", "Value"], facts),
        ("Panel flow", REPORT_FLOW_COLUMNS, flow),
        ("Item changes", ["Round", "Added", "Reworded", "Merged", "Dropped", "Proposed new items", "Opinions"],
         changes),
        ("Item audit trail", REPORT_AUDIT_COLUMNS, audit),
        ("History", ["When", "Who", "Action", "Target", "Why"], history),
    ]


def rule_text(rule: dict) -> str:
    """The consensus rule in words, in the active language (the exports' in English)."""
    parts = []
    if rule.get("min_mean") is not None:
        parts.append(gettext("mean importance ≥ %(value)s") % {"value": f"{rule['min_mean']:g}"})
    if rule.get("max_cv") is not None:
        parts.append(gettext("CV ≤ %(value)s") % {"value": f"{rule['max_cv']:g}"})
    if rule.get("min_agreement") is not None:
        parts.append(gettext("≥ %(percent)s%% rating %(level)s-5") % {
            "percent": f"{rule['min_agreement']:g}", "level": rule.get("agreement_level", 4)})
    return gettext(" and ").join(parts) or gettext("no rule set")


def _when(moment) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC") if moment else ""
