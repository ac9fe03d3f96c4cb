from __future__ import annotations

from typing import Any

from scoring.judges.report.common import NOT_ENOUGH, UNRELIABLE, _fmt_ci, outcome_labels
from scoring.reports.wording import Words


def _summary(entries: list[dict], ranking: dict, words: Any = None) -> dict:
    W = Words(words)
    labels = outcome_labels(words)
    by_outcome = {key: [e["code"] for e in entries if e["decision"]["outcome"] == key] for key in labels}
    counts = {key: len(codes) for key, codes in by_outcome.items()}
    overall = next((s for s in ranking["scopes"] if s["scope"] == "all"), None)
    if overall is None or overall["tau"]["value"] is None:
        ranking_text = (f"The judge's ranking of the {W.models} cannot be compared with the {W.raters}' "
                        + (f"({ranking['warnings'][0]})" if ranking["warnings"] else "(undefined)") + ".")
    else:
        tau = overall["tau"]
        order = f"exactly as the {W.raters} do" if overall["same_order"] else f"differently from the {W.raters}"
        scope = overall["name"][0].lower() + overall["name"][1:]
        ranking_text = (f"Over {scope} the judge orders the {ranking['n_models']} {W.models} {order}: "
                        f"Kendall's tau = {_fmt_ci(tau)}.")
    return {**by_outcome, "counts": counts, "n_replace": counts["replace"], "n_keep": counts["keep"],
            "n_unreliable": counts["unreliable"], "n_not_enough": counts["not_enough"], "ranking": ranking_text,
            "labels": labels,
            "text": (f"{counts['replace']} item(s): {labels['replace']}; {counts['keep']}: {labels['keep']}; "
                     f"{counts['unreliable']}: {UNRELIABLE}; {counts['not_enough']}: {NOT_ENOUGH}.")}
