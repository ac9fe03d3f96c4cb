"""Project names that cannot be mistaken for one another.

A name is stored in Unicode NFKC form with its spaces collapsed. Two names are the same name when their keys are
equal: NFKC, case folded, and each character replaced by the Latin letter it can be confused with (Unicode's
confusables data through the ``confusable_homoglyphs`` package: Cyrillic "а" is "a", a full-width "Ａ" is "a"),
digits 0 and 1 read as "o" and "l". Invisible characters (zero-width spaces and joiners, direction marks, other
format and control characters) are refused outright."""

from __future__ import annotations

import functools
import unicodedata

from confusable_homoglyphs import confusables

MAX_LENGTH = 100
_LOOKALIKE_DIGITS = {"0": "o", "1": "l"}


class NameError_(ValueError):
    """A project name that cannot be used; the message says why."""


def clean(name: str) -> str:
    """The name as stored: NFKC, spaces collapsed. Raises NameError_ for an empty, over-long or invisible-character
    name."""
    text = unicodedata.normalize("NFKC", name or "")
    hidden = sorted({f"U+{ord(c):04X}" for c in text if unicodedata.category(c) in ("Cf", "Cc", "Co", "Cs")
                     and c not in "\t\n"})
    if hidden:
        raise NameError_(f"A project name cannot contain invisible characters ({', '.join(hidden)}).")
    text = " ".join(text.split())
    if not text:
        raise NameError_("A project needs a name.")
    if len(text) > MAX_LENGTH:
        raise NameError_(f"A project name has at most {MAX_LENGTH} characters.")
    return text


@functools.lru_cache(maxsize=4096)
def _latin(char: str) -> str:
    if char.isascii():
        return _LOOKALIKE_DIGITS.get(char, char)
    found = confusables.is_confusable(char, greedy=True, preferred_aliases=["latin", "common"])
    for entry in found or ():
        for glyph in entry.get("homoglyphs", ()):
            text = glyph["c"].strip("\u200e\u200f")
            if len(text) == 1 and text.isascii() and text.isalnum():
                return _LOOKALIKE_DIGITS.get(text, text)
    return char


def key(name: str) -> str:
    """What two names must differ in to be told apart (see the module docstring). Look-alikes are read before case
    folding: a Cyrillic capital "В" looks like "B", its small letter "в" like no Latin letter."""
    text = " ".join(unicodedata.normalize("NFKC", name).split())
    return "".join(_latin(c) for c in text).casefold()
