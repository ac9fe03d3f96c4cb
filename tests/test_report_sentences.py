"""The sentences reports store about their figures (scoring.reports.sentences): the English text the API, downloads
and archive keep, and beside it a message id with parameters that the pages say in their language
(scoring/templatetags/sentence_tags.py); a report stored without them shows its English."""

from __future__ import annotations

import re

import numpy as np
import pytest
from django.utils import translation

from core import stats
from scoring.judges import report as judge_report
from scoring.judges.report import ItemData, ReportContext, VerdictSettings
from scoring.reports import sentences
from scoring.reports.sentences import KEY, figure, joined, said, word
from scoring.templatetags import sentence_tags

CJK = re.compile(r"[\u4e00-\u9fff]")
N = 1000


def _context(n: int, raters: int = 3, **verdict) -> ReportContext:
    freq = stats.bootstrap_freq(stats.bootstrap_indices(n, N, 11), n)
    return ReportContext(freq=freq, seed=11, n_resamples=N, rater_names=[f"R{i}" for i in range(raters)],
                         verdict=VerdictSettings(**verdict))


def _item(code, judge, humans, response_type="binary", values=(0, 1)) -> ItemData:
    return ItemData(code=code, text="", dimension="1", dimension_name="Dimension 1", response_type=response_type,
                    values=list(values), judge=np.asarray(judge), humans=np.asarray(humans))


def _entries() -> list[dict]:
    """Item entries of every outcome and kind of reason: unreliable, a constant judge (kept, the paper's rule
    flagged), a judge copying a physician (replace), a noisy judge (non-inferiority not shown), too few dialogues,
    a levels item, and a judge that never answers (undefined figures)."""
    rng = np.random.default_rng(5)
    n = 80
    truth = rng.integers(0, 2, n)
    physicians = np.stack([np.where(rng.random(n) < 0.05, 1 - truth, truth) for _ in range(3)])
    prevalent = np.array([1] * 72 + [0] * 8)
    rng.shuffle(prevalent)
    prevalent_physicians = np.stack([np.where(rng.random(n) < 0.03, 1 - prevalent, prevalent) for _ in range(3)])
    levels = rng.integers(0, 3, n)
    level_physicians = np.stack([np.where(rng.random(n) < 0.1, rng.integers(0, 3, n), levels) for _ in range(3)])
    cases = [
        _item("random", rng.integers(0, 2, n), rng.integers(0, 2, (3, n))),
        _item("constant", np.ones(n, dtype=int), prevalent_physicians),
        _item("copy", physicians[0].copy(), physicians),
        _item("noisy", np.where(rng.random(n) < 0.3, 1 - truth, truth), physicians),
        _item("few", truth[:5], physicians[:, :5]),
        _item("levels", np.where(rng.random(n) < 0.2, rng.integers(0, 3, n), levels), level_physicians,
              "ordinal", (1, 2, 3)),
        _item("silent", np.full(n, -1), physicians),
    ]
    return [judge_report.item_report(item, _context(len(item.judge))) for item in cases]


def _holders(value):
    """Every dict of a report that stores sentences beside its English."""
    if isinstance(value, dict):
        if KEY in value:
            yield value
        for child in value.values():
            yield from _holders(child)
    elif isinstance(value, list):
        for child in value:
            yield from _holders(child)


def _pairs(entries):
    for holder in _holders(entries):
        for name in holder[KEY]:
            yield holder, name


@pytest.fixture(scope="module")
def entries():
    return _entries()


def test_the_verdicts_cover_every_outcome_and_store_their_sentences(entries):
    outcomes = {e["decision"]["outcome"] for e in entries}
    assert outcomes == {"replace", "keep", "unreliable", "not_enough"}
    for entry in entries:
        decision = entry["decision"]
        assert len(decision[KEY]["reasons"]) == len(decision["reasons"])
        assert len(decision[KEY]["notes"]) == len(decision["notes"])
    reasons = " ".join(r for e in entries for r in e["decision"]["reasons"])
    for said_here in ("No better than a constant answer", "Non-inferiority not shown", "Only 5 dialogue(s)",
                      "below the floor 0.40"):
        assert said_here in reasons


def test_said_in_english_is_byte_for_byte_the_stored_english(entries):
    with translation.override("en"):
        pairs = list(_pairs(entries))
        assert len(pairs) > 15
        for holder, name in pairs:
            assert sentence_tags.said(holder, name) == holder[name], name


def test_said_in_chinese_is_chinese_with_every_placeholder_filled(entries):
    with translation.override("zh-hans"):
        for holder, name in _pairs(entries):
            shown = sentence_tags.said(holder, name)
            for text, english in zip(shown if isinstance(shown, list) else [shown],
                                     holder[name] if isinstance(holder[name], list) else [holder[name]],
                                     strict=True):
                assert text != english and CJK.search(text), (name, text)
                assert "%(" not in text and "{'" not in text, text


def test_a_judge_report_and_a_selection_summary_store_their_sentences():
    summary = judge_report._summary([{"code": "1.1", "decision": {"outcome": "keep"}}],
                                    {"scopes": [], "warnings": ["Kendall's tau needs at least two doctor models; this "
                                                                "comparison has 1."], "n_models": 1})
    assert summary["ranking"] == ("The judge's ranking of the doctor models cannot be compared with the physicians' "
                                  "(Kendall's tau needs at least two doctor models; this comparison has 1.).")
    assert summary["text"] == ("0 item(s): judge can replace physicians; 1: keep physicians; 0: item unreliable; "
                               "0: not enough data.")
    with translation.override("zh-hans"):
        ranking = sentence_tags.said(summary, "ranking")
        assert CJK.search(ranking) and "Kendall τ 至少需要两个" in ranking  # the warning inside, said too
        assert "保留" in sentence_tags.said(summary, "text")


def test_a_report_stored_before_the_sentences_shows_its_english():
    old = {"reasons": ["Only 3 dialogue(s) have both a judge and a physician label."]}
    with translation.override("zh-hans"):
        assert sentence_tags.said(old, "reasons") == old["reasons"]
        assert sentence_tags.said({"ranking": "Over all binary items ..."}, "ranking") == "Over all binary items ..."
        # stored sentences that no longer match the English (another count) fall back to it
        mismatched = {"reasons": ["a", "b"], KEY: {"reasons": [said("x").stored()]}}
        assert sentence_tags.said(mismatched, "reasons") == ["a", "b"]


def test_a_sentence_keeps_numbers_as_the_number_formatter_wrote_them():
    sentence = said("Over %(scope)s: Kendall's tau = %(figure)s (%(parts)s, %(units)s).", scope="x",
                    figure=figure("0.43 [0.12, 0.71]"), parts=joined([said("a"), "b"], "; "), units=word("dialogues"))
    assert sentence.text == "Over x: Kendall's tau = 0.43 [0.12, 0.71] (a; b, dialogues)."
    stored = sentence.stored()
    assert stored["params"]["figure"] == {"figure": "0.43 [0.12, 0.71]"}
    assert stored["params"]["units"] == {"word": "dialogues"}
    with translation.override("en"):
        assert sentence_tags.in_language(stored) == sentence.text
    with translation.override("zh-hans"):
        # a figure that had no interval says why in the page's language, its numbers unchanged
        shown = sentence_tags._shown({"figure": "0.50 (95% CI not estimable (no variation))"})
        assert shown.startswith("0.50 (") and "0.50" in shown and CJK.search(shown)


@pytest.mark.parametrize("msgid", sentences.WARNINGS)
def test_a_reports_own_warning_is_recognised_in_its_english(msgid):
    params = {name: ("dialogue" if name in ("unit", "units") else "physicians" if name.startswith(("rater", "Rater"))
                     else "doctor models" if name in ("model", "models") else "7")
              for name in re.findall(r"%\((\w+)\)s", msgid)}
    english = said(msgid, **params).text
    with translation.override("en"):
        assert sentence_tags.said_warning(english) == english
        assert sentence_tags.warnings_known([english])
    with translation.override("zh-hans"):
        shown = sentence_tags.said_warning(english)
        assert shown != english and CJK.search(shown)
        assert sentence_tags.said_warning("A warning no one knows.") == "A warning no one knows."
        assert not sentence_tags.warnings_known(["A warning no one knows."])
