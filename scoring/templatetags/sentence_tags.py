"""The sentences a report stores about its figures (:mod:`scoring.reports.sentences`) in the page's language:
``{{ item.decision|said:"reasons" }}`` is the decision's reasons, ``{{ report.summary|said:"ranking" }}`` its ranking
sentence. A report computed before its sentences were stored as message ids shows the English text."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

from django import template
from django.utils.translation import gettext, pgettext
from django.utils.translation import gettext_lazy as _

from scoring.reports import wording
from scoring.reports.sentences import KEY, WARNINGS
from scoring.templatetags.judge_tags import stat_shown, verdict

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
    from core.stats.bootstrap import NO_VARIATION
    from core.stats.formatting import NOT_ESTIMABLE

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
    if "sentence" in value:
        return in_language(value["sentence"])
    if "join" in value:
        sep = value.get("sep", "")
        if sep == "; ":
            sep = pgettext("between the parts of a sentence that a report writes", "; ")
        return sep.join(str(_shown(part)) for part in value["join"])
    if "word" in value:
        return _word_shown(value["word"])
    if "term" in value:
        return str(_terms().get(value["term"], value["term"]))
    if "figure" in value:
        return _figure_shown(value["figure"])
    if "warning" in value:
        return said_warning(value["warning"])
    if "band" in value:
        return wording.band_shown(value["band"])
    if "verdict" in value:
        return verdict(value["verdict"], {"raters": _word_shown(value.get("raters") or "physicians")})
    return value


def in_language(sentence: Mapping[str, Any]) -> str:
    """A stored sentence in the active language (English: its English text)."""
    params = sentence.get("params") or {}
    translated = gettext(sentence["msgid"])
    if not params:  # a message id with "%%" is a format string all the same
        return translated % {} if "%%" in sentence["msgid"] else translated
    return translated % {name: (said_share(value) if name == "share" else _shown(value))
                         for name, value in params.items()}


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


#: Placeholders named like a report word: their value is translated as one.
_WORD_PARAMS = {"unit", "units", "rater", "raters", "model", "models", "case", "cases"}


@functools.cache
def _patterns() -> list[tuple[str, re.Pattern]]:
    """Each known warning's message id as a pattern of its English text (a placeholder matches any text)."""
    out = []
    for msgid in WARNINGS:
        parts = re.split(r"%\((\w+)\)s", msgid.replace("%%", "%"))
        seen: set[str] = set()
        pattern = ""
        for i, part in enumerate(parts):
            if i % 2 == 0:
                pattern += re.escape(part)
            elif part in seen:
                pattern += f"(?P={part})"
            else:
                seen.add(part)
                pattern += f"(?P<{part}>.+?)"
        out.append((msgid, re.compile(f"^{pattern}$")))
    return out


def recognised(text: str) -> str | None:
    """A report's own warning (:data:`scoring.reports.sentences.WARNINGS`) in the page's language, else None."""
    for msgid, pattern in _patterns():
        match = pattern.match(text)
        if match:
            params = {name: ({"word": value} if name in _WORD_PARAMS else value)
                      for name, value in match.groupdict().items()}
            return in_language({"msgid": msgid, "params": params})
    return None


@register.filter
def said_warning(text: Any) -> Any:
    """A warning in a figure's ``warnings`` in the page's language: the report's own (:func:`recognised`) or a
    statistics module's (:data:`core.stats.messages.WARNINGS`, :func:`scoring.templatetags.judge_tags.stat_shown`);
    any other as written."""
    if not isinstance(text, str):
        return text
    shown = recognised(text)
    if shown is None:
        shown = stat_shown(text)
    return text if shown is None else shown


@register.filter
def warnings_known(warnings: Any) -> bool:
    """Whether every warning of the list is one the page says in its language (else the page marks it English)."""
    if isinstance(warnings, str):
        warnings = [warnings]
    return all(recognised(w) is not None or stat_shown(w) is not None
               for w in (warnings or []) if isinstance(w, str))


@register.filter
def said_warnings(warnings: Any) -> str:
    """The warnings of a list in the page's language, one after the other."""
    if isinstance(warnings, str):
        warnings = [warnings]
    return " ".join(str(said_warning(w)) for w in (warnings or []))


@register.filter
def said_share(text: Any) -> Any:
    """A share as :func:`core.stats.formatting.share` writes it ("1,102 of 1,104 (99.8%)", kept so in the
    downloads) in the page's language, its numbers as written; any other text as is."""
    from core.stats.formatting import read_share

    found = read_share(text)
    if found is None:
        return text
    msgid, parts = found
    return gettext(msgid) % parts
