"""The methods page's sentences (:mod:`studies.methods`) in the page's language: each is built once, from the
study's records, as message ids with parameters; the archive's files are their English text, the page says the same
message ids in its language."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.translation import gettext

from scoring.reports.sentences import Said
from scoring.templatetags.sentence_tags import in_language
from studies.methods import Quoted

register = template.Library()


@register.filter
def shown(sentence: Any) -> Any:
    """A sentence in the page's language: a built one (:class:`scoring.reports.sentences.Said`), a stored report's
    with its message ids; the English text of a stored report's sentence written before they were stored."""
    if isinstance(sentence, Said):
        return in_language(sentence.stored())
    if isinstance(sentence, Quoted):
        if sentence.said is None:
            return sentence.text
        try:
            return in_language(sentence.said)
        except (KeyError, TypeError, ValueError):  # a catalogue entry whose placeholders differ: the English
            return sentence.text
    return sentence


@register.filter
def english_only(sentence: Any) -> bool:
    """Whether the page can say the sentence only in English (a stored report's sentence written before its message
    ids were stored): the page then marks it ``lang="en"``."""
    return not isinstance(sentence, Said) and not (isinstance(sentence, Quoted) and sentence.said is not None)


@register.filter
def message(msgid: Any) -> Any:
    """A message id (a checklist item's section and topic) in the page's language."""
    return gettext(msgid) if isinstance(msgid, str) and msgid else msgid
