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


# --- the judge report's verdict rule, the selection's candidates and the model estimates --------------------------
def _said_everywhere(report) -> list[tuple[dict, str]]:
    return list(_pairs(report))


def _check_languages(pairs) -> None:
    """Each stored sentence: in English byte for byte its English text; in Chinese Chinese, every placeholder
    filled."""
    assert pairs
    with translation.override("en"):
        for holder, name in pairs:
            assert sentence_tags.said(holder, name) == holder[name], name
    with translation.override("zh-hans"):
        for holder, name in pairs:
            shown = sentence_tags.said(holder, name)
            for text in shown if isinstance(shown, list) else [shown]:
                assert CJK.search(text), (name, text)
                assert "%(" not in text and "{'" not in text, text


@pytest.mark.parametrize("binary,ordered", [(True, True), (True, False), (False, True)])
def test_the_verdict_rule_is_said_in_chinese_and_its_english_is_unchanged(binary, ordered):
    from scoring.judges.report.verdicts import acceptance_rule_said, acceptance_rule_text

    settings = VerdictSettings()
    holder: dict = {}
    sentences.put(holder, "text", acceptance_rule_said(settings, binary=binary, ordered=ordered))
    assert holder["text"] == acceptance_rule_text(settings, binary=binary, ordered=ordered)
    assert holder["text"].startswith("Per item, in this order: (1) not enough data when fewer than 30 dialogues have "
                                     "both a judge and a physician label;")
    assert ("The paper's rule (accuracy >= 80%, Shi et al., LLM-Mini-CEX, sec. 4.5) is shown" in holder["text"]) \
        == binary
    _check_languages([(holder, "text")])
    with translation.override("zh-hans"):
        shown = sentence_tags.said(holder, "text")
        assert "逐条目" in shown and "0.40" in shown and "Per item" not in shown


def test_a_jury_rule_and_an_unknown_cost_are_said_in_chinese():
    from scoring.judges import sources

    rules = [sources.rule_said(rule, tie, rounded) for rule in ("majority", "median", "mean")
             for tie in ("lower", "higher", "unscored") for rounded in (True, False)]
    assert rules[0].text == "majority vote of the members who answered; a tie gives the lower value"
    assert sources.rule_text("median", "lower", True) == ("median of the members' answers rounded to the item's "
                                                          "nearest allowed value; half-way gives the lower value")
    holder: dict = {}
    sentences.put(holder, "rules", rules)
    unknown = sources.sum_costs([
        {"cost": None, "currency": "USD", "why": "run #3: imported without prices",
         KEY: {"why": said("run #%(run)s: imported without prices", run=3).stored()}},
        {"cost": None, "currency": "USD", "why": "run #4: the judge had no prices",
         KEY: {"why": said("run #%(run)s: the judge had no prices", run=4).stored()}},
        {"cost": 1.0, "currency": "USD", "why": ""}])
    assert unknown["why"] == "unknown: run #3: imported without prices; run #4: the judge had no prices"
    # a cost stored before its sentence was (its English only) still joins in, said as written
    older = sources.sum_costs([{"cost": None, "currency": "USD", "why": "run #5: the judge had no prices"}])
    assert older["why"] == "unknown: run #5: the judge had no prices"
    currencies = sources.sum_costs([{"cost": 1.0, "currency": "USD", "why": ""},
                                    {"cost": 2.0, "currency": "EUR", "why": ""}])
    assert currencies["why"] == "unknown: members paid in EUR, USD"
    _check_languages([(holder, "rules"), (unknown, "why"), (currencies, "why")])
    with translation.override("zh-hans"):
        assert sentence_tags.said(unknown, "why") == "未知：运行 #3：导入时无价格；运行 #4：该评审模型未设置价格"


def test_a_ranking_of_the_models_is_said_in_chinese_with_its_numbers_unchanged():
    from scoring.judges import estimates

    shown = estimates._difference_said(9.82, 0.03, 19.63, "%", 2)
    assert shown.text == estimates._fmt_difference(9.82, 0.03, 19.63, "%", 2) == "9.82 percentage points [0.03, 19.63]"
    signed = estimates._difference_said(-1.5, -3.25, 0.5, "points", 2, sign=True)
    assert signed.text == estimates._fmt_difference(-1.5, -3.25, 0.5, "points", 2, sign=True)
    same = estimates._difference_said(2.0, 2.0, 2.0, "%", 1)
    assert same.text == estimates._fmt_difference(2.0, 2.0, 2.0, "%", 1) == "2.0 percentage points (CI not estimable)"
    holder: dict = {}
    sentences.put(holder, "parts", [shown, signed, same])
    _check_languages([(holder, "parts")])
    with translation.override("zh-hans"):
        assert sentence_tags.said(holder, "parts")[0] == "9.82 个百分点 [0.03, 19.63]"


@pytest.fixture
def estimates_world(make_user, instrument):
    from tests import test_model_estimates as world

    physicians = [make_user("dr_one", "physician"), make_user("dr_two", "physician")]
    corpus = world.make_corpus()
    return world, corpus, world.make_campaign(corpus, physicians), physicians


def _english_prose(html: str) -> list[str]:
    """Runs of three or more English words in the visible text of ``html`` outside what is marked English, says
    translate="no", or is the instrument's own item text (content keeps its language)."""
    from html.parser import HTMLParser

    class Text(HTMLParser):
        def __init__(self):
            super().__init__(convert_charrefs=True)
            self.stack: list[bool] = []
            self.parts: list[str] = []

        def handle_starttag(self, tag, attrs):
            attrs = dict(attrs)
            if tag in ("br", "col", "input", "img", "hr", "meta", "link"):
                return
            skip = (attrs.get("lang") == "en" or attrs.get("translate") == "no" or tag in ("script", "style", "svg")
                    or "item-text" in (attrs.get("class") or "") or (self.stack and self.stack[-1]))
            self.stack.append(bool(skip))

        def handle_endtag(self, tag):
            if tag not in ("br", "col", "input", "img", "hr", "meta", "link") and self.stack:
                self.stack.pop()

        def handle_data(self, data):
            if not (self.stack and self.stack[-1]):
                self.parts.append(data)

    parser = Text()
    parser.feed(html)
    text = re.sub(r"\w+ et al\.", "", " ".join(parser.parts))  # a citation names its authors as published
    return re.findall(r"[A-Za-z]{2,}(?:[ ,']+[A-Za-z]{2,}){2,}", text)


@pytest.mark.parametrize("judge", ["random", "constant", "near-constant"])
def test_a_judge_report_renders_in_chinese_without_english_prose(estimates_world, judge):
    """A random judge, a constant judge, and a near-constant item (the physicians give item 4 one level on every
    dialogue but one): the report's summary, verdicts, model estimates and extra blocks say their sentences in
    Chinese; the stored English is unchanged (the API and downloads keep it)."""
    from django.template.loader import render_to_string

    from scoring.judges.report import judge_vs_physicians

    world, corpus, campaign, _physicians = estimates_world
    run = world.make_run(corpus, constant=judge == "constant", name=f"{judge} judge",
                         answer=world.random_judge if judge == "random" else None)
    if judge == "near-constant":
        item4 = world.Label.objects.filter(campaign=campaign, item__code="4")
        first = item4.order_by("dialogue_id").values_list("dialogue_id", flat=True).first()
        item4.update(value=2)
        item4.filter(dialogue_id=first).update(value=3)
    report = judge_vs_physicians(run, campaign, n_resamples=50)
    if judge == "near-constant":
        assert report["near_constant"] == ["4"]
    _check_languages(_said_everywhere(report))
    me = report["model_estimates"]
    assert report["summary"]["model_differences"] == me["ranking"]["text"]
    assert me["ranking"]["text"].startswith("PPI++ scores over all binary items (the Average column of Table 6): ")
    with translation.override("zh-hans"):
        html = "".join(render_to_string(f"scoring/partials/{name}.html", {"report": report, "css": True})
                       for name in ("judge_report_summary", "judge_report_body"))
    html = re.sub(r'<details class="card" id="methods".*?</details>|<details><summary>[^<]*</summary><p>[^<]*</p>'
                  r'</details>', "", html, flags=re.S)  # the methods: every methods text is said elsewhere
    assert "全部二分类条目" in html and "λ" in html
    # the instrument's own texts (its dimensions' names, its items) keep their language
    from django.utils.html import escape

    for text in {s["name"] for s in me["scopes"] if s["kind"] == "dimension"} | {i["text"] for i in report["items"]}:
        html = html.replace(escape(text), "")
    assert not _english_prose(html)
