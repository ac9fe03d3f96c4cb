"""Sentences a report writes about its figures: in English for the API, the downloads and the study archive, and
beside it as a message id with its parameters, from which a page says the sentence in its own language.

A builder writes ``said(gettext_noop("Only %(n)s %(unit)s(s) ..."), n=n, unit=word(W.unit))``: the message id is the
English sentence with ``%(name)s`` placeholders (the catalogues extract it), so the English text is the message id
filled with the English parameters, byte for byte what the builder wrote before. A stored sentence is
``{"msgid": ..., "params": {...}}``; a parameter is data shown as it is (a count, an item code, a score, a number
already written by :mod:`core.stats.formatting`, the app's one number formatter, which writes numbers alike in
every language) or one of:

* ``{"word": "physicians"}``: one of the report's words (:mod:`scoring.reports.wording`);
* ``{"term": "Cohen's kappa"}``: a statistical term;
* ``{"figure": "0.45 [0.30, 0.60]"}``: a coefficient with its interval, whose only words are why it has none;
* ``{"warning": "..."}``: a statistics module's own sentence about an undefined figure;
* ``{"band": "moderate"}``: an interpretation band's label;
* ``{"verdict": "replace", "raters": "physicians"}``: a verdict by its outcome key, in the report's words;
* ``{"sentence": {...}}``: a sentence inside the sentence; ``{"join": [...], "sep": "; "}``: several, in a row.

The pages say a stored sentence in their language with the ``said`` filter (``scoring/templatetags/sentence_tags.py``);
a report computed before sentences were stored this way has only the English text, which the pages then show.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext_noop

#: The key, beside a dict's English sentences, that holds them as message ids with parameters, by field name.
KEY = "said"


@dataclass(frozen=True)
class Said:
    """A sentence as a builder writes it: :attr:`text` (English) and :meth:`stored` (message id and parameters)."""

    msgid: str
    params: Mapping[str, Any]

    @property
    def text(self) -> str:
        if not self.params and "%%" not in self.msgid:
            return self.msgid
        return self.msgid % {name: _english(value) for name, value in self.params.items()}

    def stored(self) -> dict[str, Any]:
        return {"msgid": self.msgid, "params": {name: _stored(value) for name, value in self.params.items()}}

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Tagged:
    """A parameter the page shows in its language: its kind (``tag``), its stored value and what it needs besides."""

    tag: str
    value: Any
    sep: str = ""  # joined: between the parts
    english: str = ""  # verdict, sentence: its English words
    raters: str = ""  # verdict: the report's word for who rates


def said(msgid: str, **params: Any) -> Said:
    return Said(msgid, params)


def word(text: str) -> Tagged:
    """One of the report's words ("physicians", "Dialogues"), translated on the page."""
    return Tagged("word", text)


def term(text: str) -> Tagged:
    """A statistical term ("Cohen's kappa", "weighted kappa"), translated on the page."""
    return Tagged("term", text)


def figure(text: str) -> Tagged:
    """A coefficient with its interval as :mod:`core.stats.formatting` writes it."""
    return Tagged("figure", text)


def warning(text: str) -> Tagged:
    """A statistics module's own sentence (in English), translated on the page where it is known."""
    return Tagged("warning", text)


def band(label: str) -> Tagged:
    """An interpretation band's label ("moderate"), translated on the page."""
    return Tagged("band", label)


def verdict(outcome: str, english: str, raters: str) -> Tagged:
    """A verdict by its outcome key ("replace", "keep" ...), in English ``english``, on the page in the report's
    words (``raters``: "physicians" or "raters")."""
    return Tagged("verdict", outcome, english=english, raters=raters)


def joined(parts: Sequence[Said | str], sep: str) -> Tagged:
    return Tagged("join", list(parts), sep)


def in_a_row(parts: Sequence[Said]) -> Said:
    """Several sentences one after the other (a space between them), each said on its own: a message id of its
    own, which no catalogue translates, holds them."""
    if len(parts) == 1:
        return parts[0]
    return Said(IN_A_ROW, {"sentences": joined(parts, " ")})


#: The message id of :func:`in_a_row`: only its parameter, the sentences.
IN_A_ROW = "%(sentences)s"


def _english(value: Any) -> Any:
    if isinstance(value, Said):
        return value.text
    if isinstance(value, Tagged):
        if value.tag == "join":
            return value.sep.join(str(_english(part)) for part in value.value)
        if value.tag in ("verdict", "sentence"):
            return value.english
        return value.value
    return value


def _stored(value: Any) -> Any:
    if isinstance(value, Said):
        return {"sentence": value.stored()}
    if isinstance(value, Tagged):
        if value.tag == "join":
            return {"join": [_stored(part) for part in value.value], "sep": value.sep}
        if value.tag == "verdict":
            return {"verdict": value.value, "raters": value.raters}
        return {value.tag: value.value}
    return value


def unstored(sentence: Mapping[str, Any]) -> Said:
    """A stored sentence (:meth:`Said.stored`) as a builder's again, to put it inside another sentence."""
    return Said(sentence["msgid"], {name: _unstored(value) for name, value in (sentence.get("params") or {}).items()})


def _unstored(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    if "sentence" in value:
        return unstored(value["sentence"])
    if "join" in value:
        return joined([_unstored(part) for part in value["join"]], value.get("sep", ""))
    if "verdict" in value:  # its English words are not stored: its key stands for them
        return verdict(value["verdict"], value["verdict"], value.get("raters", ""))
    (tag, inner), = value.items()
    return Tagged(tag, inner)


def texts(sentences: Sequence[Said]) -> list[str]:
    return [s.text for s in sentences]


def stored(sentences: Said | Sequence[Said]) -> Any:
    return sentences.stored() if isinstance(sentences, Said) else [s.stored() for s in sentences]


def put(holder: dict[str, Any], name: str, sentence: Said | Sequence[Said] | None) -> None:
    """``holder[name]``: the sentence's English text (a list of them, or None), and its message id and parameters
    under ``holder["said"][name]``."""
    if sentence is None:
        holder[name] = None
        return
    holder[name] = sentence.text if isinstance(sentence, Said) else texts(sentence)
    holder.setdefault(KEY, {})[name] = stored(sentence)


def _w(msgid: str) -> str:
    WARNINGS.append(msgid)
    return msgid


#: The reports' own warnings and notes about a figure, which land in the figures' ``warnings`` lists beside the
#: statistics modules' sentences: a page recognises them in the English text (placeholders match any text; those
#: named like a report word, ``%(units)s``, are translated as one) and says them in its language.
WARNINGS: list[str] = []
NO_LABELS_YET = _w(gettext_noop("No submitted labels yet."))
NO_COMPLETE_RATINGS = _w(gettext_noop("No complete ratings yet."))
NO_BINARY_ITEMS_ICC = _w(gettext_noop("This instrument has no binary items to sum into dimension scores: see the ICC "
                                      "of each item's scores with the item agreement."))
NO_BINARY_ITEMS_RELIABILITY = _w(gettext_noop("This instrument has no binary items: scale reliability (KR-20) is not "
                                              "computed."))
FEWER_RATINGS = _w(gettext_noop("Fewer than %(n)s complete ratings: not estimated."))
ICC_INCOMPLETE = _w(gettext_noop("%(n)s %(unit)s(s) with fewer or more than %(k)s raters were left out of the ICC "
                                 "(it needs the same number of ratings per %(unit)s)."))
FEWER_THAN_TWO_PHYSICIANS = _w(gettext_noop("Undefined: fewer than two physicians."))
NO_TWO_SCORES = _w(gettext_noop("Undefined: no dialogue has two physicians' scores."))
WEIGHTED_KAPPA_NO_PAIR = _w(gettext_noop("Weighted kappa is undefined for every pair of physicians: no pair shares a "
                                         "dialogue with variation."))
ALPHA_UNDEFINED = _w(gettext_noop("Not shown: the whole-scale alpha is undefined."))
NO_UNIT_JUDGED = _w(gettext_noop("No %(unit)s has both a scored judge answer and a %(rater)s label on this item."))
RANKING_TWO_MODELS = _w(gettext_noop("With two %(models)s tau is +1 (same order) or -1 (reversed) only."))
RANKING_FEW_MODELS = _w(gettext_noop("Kendall's tau needs at least two %(models)s; this comparison has %(n)s."))
RANKING_FEW_SCORED = _w(gettext_noop("Undefined: fewer than two models have scores from both the judge and the "
                                     "%(raters)s."))
RANKING_TIES = _w(gettext_noop("Undefined: every model has the same score on one side (all ties)."))
UNDEFINED_HERE = _w(gettext_noop("Undefined for these data."))
NO_GOLD_ANSWERS = _w(gettext_noop("no answers on gold items"))
ANSWERS_LEFT_OUT = _w(gettext_noop("%(unscored)s unscored, %(failed)s failed and %(pending)s pending judge answer(s) "
                                   "are left out of every figure."))
NOTHING_COMPARED = _w(gettext_noop("No %(unit)s has both a scored judge answer and a submitted %(rater)s label: every "
                                   "figure is undefined."))
NO_UNCERTAINTY = _w(gettext_noop("The judge recorded no uncertainty (no log-probabilities from the endpoint, and not "
                                 "a jury): nothing to show."))
UNCERTAINTY_UNLABELLED = _w(gettext_noop("No judge answer with an uncertainty has %(raters)s' labels yet."))
UNCERTAINTY_NO_HELP = _w(gettext_noop("Disagreement does not rise with the judge's uncertainty: it would not help "
                                      "choose what %(raters)s label."))
OUTSIDE_POPULATION = _w(gettext_noop("%(n)s %(rater)s-labelled %(unit)s(s) are outside the population (left the "
                                     "campaign's scope, or outside the sample's frame) and are left out of the model "
                                     "estimates."))
NOT_DRAWN_AT_RANDOM = _w(gettext_noop("These %(units)s were not drawn at random: the interval describes them, not "
                                      "necessarily the model's corpus."))
NO_JUDGE_SCORE = _w(gettext_noop("%(n)s %(rater)s-labelled %(unit)s(s) have no judge score on every item of this "
                                 "scope and are left out of PPI++."))
DRAWN_UNLABELLED = _w(gettext_noop("%(n)s drawn %(unit)s(s) have no finished %(rater)s label and count as not drawn: "
                                   "the estimate stays valid only if what is left undone is unrelated to the "
                                   "%(units)s' quality (skips are not)."))
NO_ANSWERS = _w(gettext_noop("No answers."))
