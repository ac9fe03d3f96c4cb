"""The words a report uses for what the instrument rates and who rates it: an instrument on doctor-patient
dialogues speaks of dialogues, doctor models and physicians (the Mini-CEX); one on answers to questions (HIVMedQA's
rubric) of answers, questions, models and raters -- physicians when every rater is a physician."""

from __future__ import annotations

import functools
from collections.abc import Mapping

DIALOGUE_WORDS = {"unit": "dialogue", "units": "dialogues", "case": "patient case", "cases": "patient cases",
                  "model": "doctor model", "models": "doctor models", "rater": "physician", "raters": "physicians"}
ANSWER_WORDS = {"unit": "answer", "units": "answers", "case": "question", "cases": "questions", "model": "model",
                "models": "models", "rater": "rater", "raters": "raters"}


#: The language of everything a report stores, and of its plots where no other language's are stored.
ENGLISH = "en"


def words_for(target: str, physicians: bool = False) -> dict[str, str]:
    """The report's words for an instrument rating ``target`` ("dialogue" or "answer"); ``physicians``: every rater
    is a physician (dialogue instruments always speak of physicians)."""
    words = dict(ANSWER_WORDS if target == "answer" else DIALOGUE_WORDS)
    if physicians:
        words.update(rater="physician", raters="physicians")
    return words


def raters_are_physicians(user_ids) -> bool:
    """Whether every one of these users is a physician in some project (external raters from imported labels are
    members of none)."""
    from django.contrib.auth import get_user_model

    from projects.roles import PHYSICIAN

    ids = set(user_ids)
    if not ids:
        return False
    return get_user_model().objects.filter(pk__in=ids, memberships__role=PHYSICIAN).distinct().count() == len(ids)


def with_article(word: str) -> str:
    """"an answer", "a dialogue", "a physician", "an LLM": the indefinite article the word's first sound takes."""
    first = word[:1].lower()
    vowel = first in "aeiou" or word.startswith(("LLM", "MRI", "HIV", "ICC")) or word[:2].lower() in ("hour",)
    return f"{'an' if vowel else 'a'} {word}"


class Words:
    """A report's words as attributes for the sentences it writes: ``W.units``, ``W.rater``; a capital first letter
    gives the capitalised word (``W.Raters`` is "Physicians" or "Raters"); ``W.a_unit`` the word with its article ("an
    answer"). Default: the words of a dialogue
    instrument."""

    def __init__(self, words: Mapping[str, str] | None = None):
        self._words = dict(words or DIALOGUE_WORDS)

    def __getattr__(self, name: str) -> str:
        words = self.__dict__.get("_words", {})
        if name in words:
            return words[name]
        if name.startswith("a_") and name[2:] in words:  # W.a_unit: "an answer", "a dialogue"
            return with_article(words[name[2:]])
        lower = name[:1].lower() + name[1:]
        if name[:1].isupper() and lower in words:
            word = words[lower]
            return word[:1].upper() + word[1:]
        raise AttributeError(name)

    def as_dict(self) -> dict[str, str]:
        return dict(self._words)


@functools.cache
def _word_names() -> dict[str, str]:
    from django.utils.translation import pgettext_lazy

    return {
        "dialogue": pgettext_lazy("a report's word for what is rated and who rates it", "dialogue"),
        "dialogues": pgettext_lazy("a report's word for what is rated and who rates it", "dialogues"),
        "patient case": pgettext_lazy("a report's word for what is rated and who rates it", "patient case"),
        "patient cases": pgettext_lazy("a report's word for what is rated and who rates it", "patient cases"),
        "doctor model": pgettext_lazy("a report's word for what is rated and who rates it", "doctor model"),
        "doctor models": pgettext_lazy("a report's word for what is rated and who rates it", "doctor models"),
        "physician": pgettext_lazy("a report's word for what is rated and who rates it", "physician"),
        "physicians": pgettext_lazy("a report's word for what is rated and who rates it", "physicians"),
        "answer": pgettext_lazy("a report's word for what is rated and who rates it", "answer"),
        "answers": pgettext_lazy("a report's word for what is rated and who rates it", "answers"),
        "question": pgettext_lazy("a report's word for what is rated and who rates it", "question"),
        "questions": pgettext_lazy("a report's word for what is rated and who rates it", "questions"),
        "model": pgettext_lazy("a report's word for what is rated and who rates it", "model"),
        "models": pgettext_lazy("a report's word for what is rated and who rates it", "models"),
        "rater": pgettext_lazy("a report's word for what is rated and who rates it", "rater"),
        "raters": pgettext_lazy("a report's word for what is rated and who rates it", "raters"),
    }


def translated(word: str) -> str:
    """One of the report's English words ("dialogues", "physicians") in the page's language; any other text as is.
    The one table of these words for every page (the agreement and judge reports, the judge selection)."""
    return str(_word_names().get(word, word))


def shown(words: Mapping[str, str] | None = None) -> dict[str, str]:
    """The words in the page's language (a stored report keeps the English ones, which are its keys): the pages'
    sentences put them into their translated text (``{% blocktranslate with raters=w.raters %}``)."""
    return {key: translated(word) for key, word in dict(words or DIALOGUE_WORDS).items()}


@functools.cache
def _band_words() -> dict[str, str]:
    """The interpretation bands' words (core.stats.interpretation, stored in English in the reports)."""
    from django.utils.translation import gettext_lazy as _

    return {
        "almost perfect": _("almost perfect"), "substantial": _("substantial"), "moderate": _("moderate"),
        "fair": _("fair"), "slight": _("slight"), "poor": _("poor"), "excellent": _("excellent"), "good": _("good"),
        "reliable": _("reliable"), "tentative": _("tentative"), "unreliable": _("unreliable"),
        "acceptable": _("acceptable"), "questionable": _("questionable"), "unacceptable": _("unacceptable"),
        "marvelous": _("marvelous"), "meritorious": _("meritorious"), "middling": _("middling"),
        "mediocre": _("mediocre"), "miserable": _("miserable"), "undefined": _("undefined"),
    }


def band_shown(label):
    """An interpretation band's label ("moderate", "moderate to good") in the page's language; any other text as
    is."""
    from django.utils.translation import gettext

    if not isinstance(label, str) or not label:
        return label
    words = _band_words()
    parts = label.split(" to ")
    if all(part in words for part in parts):
        return gettext("%(low)s to %(high)s") % {"low": words[parts[0]], "high": words[parts[1]]} \
            if len(parts) == 2 else str(words[parts[0]])
    return label


def plots_in(plots: Mapping | None, language: str) -> dict[str, str]:
    """A report's stored plots ({name: svg}) in ``language``, else in English. They are stored per language
    ({language code: {name: svg}}, :func:`scoring.reports.plots.plots_by_language`); a report stored before that has
    one English set ({name: svg})."""
    if not plots:
        return {}
    if all(isinstance(svg, str) for svg in plots.values()):
        return dict(plots)
    return dict(plots.get(language) or plots.get(ENGLISH) or {})
