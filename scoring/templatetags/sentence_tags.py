"""The sentences a report stores about its figures (:mod:`scoring.reports.sentences`) in the page's language:
``{{ item.decision|said:"reasons" }}`` is the decision's reasons, ``{{ report.summary|said:"ranking" }}`` its ranking
sentence. A report computed before its sentences were stored as message ids shows the English text."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from django import template
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from scoring.reports import wording
from scoring.reports.sentences import KEY
from scoring.templatetags.judge_tags import stat_warning, verdict
from scoring.templatetags.report_tags import band

register = template.Library()


@functools.cache
def _terms() -> dict[str, Any]:
    """The statistical terms the sentences name, in the page's language."""
    return {
        "Cohen's kappa": _("Cohen's kappa"), "Gwet's AC1": _("Gwet's AC1"),
        "quadratic weighted kappa": _("quadratic weighted kappa"),
        "Gwet's AC2 (quadratic weights)": _("Gwet's AC2 (quadratic weights)"),
        "weighted kappa": _("weighted kappa"), "kappa": _("kappa"),
    }


def _figure_shown(text: str) -> str:
    """A figure's text with its words (why it has no interval) in the page's language; its numbers as written."""
    from scoring.stats.bootstrap import NO_VARIATION
    from scoring.stats.formatting import NOT_ESTIMABLE

    return (text.replace(f"95% CI {NO_VARIATION}", gettext("95% CI not estimable (no variation)"))
            .replace(NOT_ESTIMABLE, gettext("CI not estimable"))
            .replace(NO_VARIATION, gettext("not estimable (no variation)")))


def _word_shown(text: str) -> str:
    if text[:1].isupper():
        lower = wording.translated(text[:1].lower() + text[1:])
        return lower[:1].upper() + lower[1:]
    return wording.translated(text)


def _shown(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    if "said" in value:
        return in_language(value["said"])
    if "join" in value:
        return value.get("sep", "").join(str(_shown(part)) for part in value["join"])
    if "word" in value:
        return _word_shown(value["word"])
    if "term" in value:
        return str(_terms().get(value["term"], value["term"]))
    if "figure" in value:
        return _figure_shown(value["figure"])
    if "warning" in value:
        return stat_warning(value["warning"])
    if "band" in value:
        return band(value["band"])
    if "verdict" in value:
        return verdict(value["verdict"], {"raters": _word_shown(value.get("raters") or "physicians")})
    return value


def in_language(sentence: Mapping[str, Any]) -> str:
    """A stored sentence in the active language (English: its English text)."""
    params = sentence.get("params") or {}
    translated = gettext(sentence["msgid"])
    if not params:
        return translated
    return translated % {name: _shown(value) for name, value in params.items()}


@register.filter
def said(holder: Any, name: str) -> Any:
    """``holder[name]`` (a sentence, or a list of them) in the page's language, from the message ids stored beside
    it; the English text where there are none (a report computed before they were stored) or they do not match."""
    if not isinstance(holder, Mapping):
        return None
    english = holder.get(name)
    stored = (holder.get(KEY) or {}).get(name)
    if stored is None:
        return english
    try:
        if isinstance(stored, list):
            if not isinstance(english, list) or len(english) != len(stored):
                return english
            return [in_language(s) for s in stored]
        return in_language(stored)
    except (KeyError, TypeError, ValueError):  # a catalogue entry whose placeholders differ: the English text
        return english


@register.filter
def term(name: Any) -> Any:
    """A statistical term a report stores in English ("Cohen's kappa", "Gwet's AC1") in the page's language."""
    return str(_terms().get(name, name)) if isinstance(name, str) else name
