"""The report's summary: the items per verdict and the ranking sentence."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_noop

from scoring.judges.report.common import NOT_ENOUGH, UNRELIABLE, _fmt_ci, outcome_labels
from scoring.reports.sentences import KEY, figure, said, verdict, warning, word
from scoring.reports.wording import Words


def _summary(entries: list[dict], ranking: dict, words: Any = None) -> dict:
    W = Words(words)
    labels = outcome_labels(words)
    by_outcome = {key: [e["code"] for e in entries if e["decision"]["outcome"] == key] for key in labels}
    counts = {key: len(codes) for key, codes in by_outcome.items()}
    overall = next((s for s in ranking["scopes"] if s["scope"] == "all"), None)
    if overall is None or overall["tau"]["value"] is None:
        if ranking["warnings"]:
            ranking_said = said(gettext_noop("The judge's ranking of the %(models)s cannot be compared with the "
                                             "%(raters)s' (%(why)s)."),
                                models=word(W.models), raters=word(W.raters), why=warning(ranking["warnings"][0]))
        else:
            ranking_said = said(gettext_noop("The judge's ranking of the %(models)s cannot be compared with the "
                                             "%(raters)s' (undefined)."), models=word(W.models), raters=word(W.raters))
    else:
        tau = overall["tau"]
        scope = overall["name"][0].lower() + overall["name"][1:]
        scope_said = {"all binary items": said(gettext_noop("all binary items")),
                      "all criteria (scores rescaled to 0-1)": said(gettext_noop("all criteria (scores rescaled to "
                                                                                 "0-1)"))}.get(scope, scope)
        ranking_said = said(gettext_noop("Over %(scope)s the judge orders the %(n)s %(models)s exactly as the "
                                         "%(raters)s do: Kendall's tau = %(figure)s.") if overall["same_order"] else
                            gettext_noop("Over %(scope)s the judge orders the %(n)s %(models)s differently from the "
                                         "%(raters)s: Kendall's tau = %(figure)s."),
                            scope=scope_said, n=ranking["n_models"], models=word(W.models),
                            raters=word(W.raters), figure=figure(_fmt_ci(tau)))
    text = said(gettext_noop("%(replace)s item(s): %(replace_label)s; %(keep)s: %(keep_label)s; %(unreliable)s: "
                             "%(unreliable_label)s; %(not_enough)s: %(not_enough_label)s."),
                replace=counts["replace"], replace_label=verdict("replace", labels["replace"], W.raters),
                keep=counts["keep"],
                keep_label=verdict("keep", labels["keep"], W.raters), unreliable=counts["unreliable"],
                unreliable_label=verdict("unreliable", UNRELIABLE, W.raters), not_enough=counts["not_enough"],
                not_enough_label=verdict("not_enough", NOT_ENOUGH, W.raters))
    return {**by_outcome, "counts": counts, "n_replace": counts["replace"], "n_keep": counts["keep"],
            "n_unreliable": counts["unreliable"], "n_not_enough": counts["not_enough"], "ranking": ranking_said.text,
            "labels": labels, "text": text.text, KEY: {"ranking": ranking_said.stored(), "text": text.stored()}}
