"""The language of the rating page and of the instrument's texts on it.

The page's words are in the Django language of the request (account, browser, instance: ``config.language``), unless
the campaign fixes a rating language for all its raters (``Campaign.rating_language``), which then rules the page's
words and the item texts alike. The instrument's texts (items, guidance, levels, anchors, dimension names) are shown in
the page's language where the version has them, else in the other language, marked as such; a rater of a campaign
without a fixed language may show them in the other language (``?lang=``, remembered in the session). Each saved
answer records the language of the item text shown (``Label.item_language``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.utils import translation

from projects.language import supported

#: The languages an instrument's texts are written in (their ``_en`` and ``_zh`` fields).
INSTRUMENT_LANGUAGES = ("en", "zh")
#: The Django language of the page for each instrument language a campaign fixes.
PAGE_LANGUAGES = {"en": "en", "zh": "zh-hans"}
SESSION_KEY = "scale_lang"

_HAN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def text_language(text: str) -> str:
    """"zh" when the text holds Chinese characters, else "en" (the lang attribute of a text whose language is not
    recorded)."""
    return "zh" if _HAN.search(text or "") else "en"


def of_page(code: str | None = None) -> str:
    """The instrument language matching a Django language (the active one by default): "zh" for any Chinese."""
    code = code if code is not None else (translation.get_language() or "")
    return "zh" if code.lower().startswith("zh") else "en"


def other(lang: str) -> str:
    return "en" if lang == "zh" else "zh"


def fixed_page_language(campaign) -> str | None:
    """The Django language a campaign fixes for its raters' rating page, or None (each rater's own)."""
    lang = getattr(campaign, "rating_language", "")
    return supported(PAGE_LANGUAGES[lang]) if lang in PAGE_LANGUAGES else None


def chosen(request) -> str:
    """The instrument language a reader chose with ``?lang=`` (remembered in the session), else the page's. Choosing
    the page's own language forgets the choice, so the texts follow the page's language again."""
    default = of_page()
    lang = request.GET.get("lang")
    if lang in INSTRUMENT_LANGUAGES:
        if lang == default:
            request.session.pop(SESSION_KEY, None)
        else:
            request.session[SESSION_KEY] = lang
        return lang
    remembered = request.session.get(SESSION_KEY)
    return remembered if remembered in INSTRUMENT_LANGUAGES else default


@dataclass(frozen=True)
class Shown:
    """A text of the instrument as shown: its words, their language, and whether that is not the language asked
    for (the version lacks it: the page marks it)."""

    text: str
    lang: str
    fallback: bool


def shown(english: str | None, chinese: str | None, lang: str) -> Shown:
    """The text in ``lang`` when the version has it, else in the other language (``fallback``); empty when neither."""
    texts = {"en": english or "", "zh": chinese or ""}
    if texts[lang]:
        return Shown(texts[lang], lang, False)
    if texts[other(lang)]:
        return Shown(texts[other(lang)], other(lang), True)
    return Shown("", lang, False)


def anchor_texts(item, value_text: str) -> tuple[str, str]:
    """A scale point's anchor as (English, Chinese); an anchor stored as one plain text counts in its own script's
    language."""
    entry = (item.anchors or {}).get(value_text) or {}
    if isinstance(entry, str):
        return (entry, "") if text_language(entry) == "en" else ("", entry)
    return entry.get("en") or "", entry.get("zh") or ""


def languages_of(dimensions) -> set[str]:
    """The instrument languages the rating sheet's item texts are written in (``scales.rating_sheet``)."""
    found = set()
    for _, items in dimensions:
        for item in items:
            if item.text_en:
                found.add("en")
            if item.text_zh:
                found.add("zh")
    return found


def recorded(value) -> str:
    """A posted item language as stored: "en", "zh", or "" (not said, or not one of them)."""
    return value if value in INSTRUMENT_LANGUAGES else ""
