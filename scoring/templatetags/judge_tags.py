"""The LLM judge pages' words in the page's language."""

from django import template

from scoring.reports import wording

register = template.Library()


@register.filter
def words_shown(words):
    """A report's words (``unit``, ``raters`` ...) translated; the words of a dialogue instrument when it has none."""
    return wording.shown(words if isinstance(words, dict) and words else None)


@register.filter
def verdict(outcome, words=None):
    """A verdict by its outcome key (``replace``, ``keep``, ``unreliable``, ``not_enough``) in the page's language,
    in the report's words (``words``: translated, :func:`words_shown`); a stored report keeps them in English for
    its downloads and the API."""
    from django.utils.translation import gettext

    raters = (words or {}).get("raters") or wording.shown()["raters"]
    labels = {"replace": gettext("judge can replace %(raters)s") % {"raters": raters},
              "keep": gettext("keep %(raters)s") % {"raters": raters},
              "unreliable": gettext("item unreliable"), "not_enough": gettext("not enough data")}
    return labels.get(outcome, outcome)


@register.filter
def method_title(key, words=None):
    """The heading of a judge report's methods entry (its key in ``report.methods``) in the page's language."""
    from django.utils.translation import gettext

    w = words or wording.shown()
    titles = {
        "reference": gettext("Reference"),
        "vs_majority": gettext("Against the %(rater)s majority") % {"rater": w["rater"]},
        "vs_physicians": gettext("Against each %(rater)s") % {"rater": w["rater"]},
        "ceiling": gettext("Between %(raters)s (the ceiling)") % {"raters": w["raters"]},
        "physicians_agreement": gettext("%(raters)s' own agreement") % {"raters": w["raters"][:1].upper()
                                                                        + w["raters"][1:]},
        "krippendorff": gettext("Krippendorff's alpha"), "ci": gettext("Confidence intervals"),
        "verdict": gettext("Verdict"), "non_inferiority": gettext("Non-inferiority"),
        "paper_rule": gettext("The paper's rule"), "models": w["models"][:1].upper() + w["models"][1:],
        "ranking": gettext("Model ranking"), "undefined": gettext("Undefined figures"),
        "ordered_items": gettext("Levels and scale items"),
    }
    return titles.get(key, "")


def _phrases() -> dict[str, str]:
    from django.utils.translation import gettext_lazy as _
    from django.utils.translation import pgettext_lazy

    return {
        "scored": pgettext_lazy("a part of an LLM job's progress bar", "scored"),
        "unscored": pgettext_lazy("a part of an LLM job's progress bar", "unscored"),
        "failed": pgettext_lazy("a part of an LLM job's progress bar", "failed"),
        "not done": pgettext_lazy("a part of an LLM job's progress bar", "not done"),
        "to do": pgettext_lazy("a part of an LLM job's progress bar", "to do"),
        "generated": pgettext_lazy("a part of an LLM job's progress bar", "generated"),
        "answered": pgettext_lazy("a part of an LLM job's progress bar", "answered"),
        "done": pgettext_lazy("a part of an LLM job's progress bar", "done"),
        "cost unknown: no prices set for this judge": _("cost unknown: no prices set for this judge"),
        "cost unknown: no prices set for this job": _("cost unknown: no prices set for this job"),
        "Resumed: the broker is reachable again.": _("Resumed: the broker is reachable again."),
    }


@register.filter
def llm_words(text):
    """A fixed word or phrase of the LLM jobs' progress (the parts of the progress bar, an unknown cost) in the page's
    language; the engine keeps them in English for the API and the command line. Any other text is shown as is."""
    return str(_phrases().get(text, text)) if isinstance(text, str) else text


@register.filter
def delivery_notice(delivery):
    """A job's delivery notice (``scoring.llm.delivery.state``) in the page's language; the progress data keep it in
    English for the API and the command line."""
    from scoring.llm.delivery import NOTICES, notice_text

    if not isinstance(delivery, dict):
        return ""
    if delivery.get("notice_kind") in NOTICES:
        return notice_text(delivery["notice_kind"], delivery.get("notice_args") or {}, translated=True)
    return llm_words(delivery.get("notice", ""))


@register.filter
def jury_rule(provenance):
    """A jury's rule in words in the page's language, from its ``rule``, ``tie_rule`` and ``round_to_grid`` (a
    jury's provenance; the stored ``rule_text`` is the English of reports and exports)."""
    from django.utils.translation import gettext

    if not isinstance(provenance, dict) or "rule" not in provenance:
        return (provenance or {}).get("rule_text", "") if isinstance(provenance, dict) else ""
    ties = {"lower": gettext("the lower value"), "higher": gettext("the higher value"),
            "unscored": gettext("the answer left unscored")}.get(provenance.get("tie_rule"), "")
    if provenance["rule"] == "majority":
        return gettext("majority vote of the members who answered; a tie gives %(tie)s") % {"tie": ties}
    if provenance.get("round_to_grid"):
        text = (gettext("median of the members' answers rounded to the item's nearest allowed value; half-way gives "
                        "%(tie)s") if provenance["rule"] == "median" else
                gettext("mean of the members' answers rounded to the item's nearest allowed value; half-way gives "
                        "%(tie)s"))
        return text % {"tie": ties}
    return (gettext("median of the members' answers, not rounded") if provenance["rule"] == "median"
            else gettext("mean of the members' answers, not rounded"))


def _param_shown(name: str, value: str) -> str:
    """A statistics warning's parameter on the page: a list of names with its English tail ("(+3 more)") and the
    report's word for what is counted ("dialogue(s)") in the page's language; numbers, names and values as written."""
    from django.utils.translation import gettext

    from core.stats import messages

    if name == messages.NAMES:
        more = messages.MORE.match(value)
        if more:
            return gettext("%(names)s (+%(n)s more)") % more.groupdict()
    if name == "units" and value.endswith("(s)"):
        shown = wording.translated(value[:-3])
        return value if shown == value[:-3] else shown
    return value


def stat_shown(text: str) -> str | None:
    """A statistics module's warning (:data:`core.stats.messages.WARNINGS`) in the page's language, else None."""
    from django.utils.translation import gettext

    from core.stats import messages

    found = messages.match(text)
    if found is None:
        return None
    msgid, params = found
    try:
        return gettext(msgid) % {name: _param_shown(name, value) for name, value in params.items()}
    except (KeyError, TypeError, ValueError):  # a catalogue entry whose placeholders differ: the English text
        return text


@register.filter
def stat_warning(text):
    """A statistics module's warning in the page's language (the modules write English, kept in the API and the
    downloads): recognised in its English text, its numbers and names as written; one not known is shown as
    written."""
    if not isinstance(text, str):
        return text
    shown = stat_shown(text)
    return text if shown is None else shown


@register.filter
def level_name(level):
    """A Krippendorff alpha's level of measurement in the page's language."""
    from django.utils.translation import pgettext

    names = {"nominal": pgettext("level of measurement", "nominal"),
             "ordinal": pgettext("level of measurement", "ordinal"),
             "interval": pgettext("level of measurement", "interval"),
             "ratio": pgettext("level of measurement", "ratio")}
    return names.get(level, level)
