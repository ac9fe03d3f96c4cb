"""Formatting helpers for report tables: undefined values say so, CIs print as [low, high] with the decimals their
width needs (:mod:`core.stats.formatting`), zero never as "-0.00"."""

from django import template
from django.utils.html import format_html
from django.utils.safestring import mark_safe
from django.utils.translation import gettext

from core.stats import formatting
from scoring.reports import wording

register = template.Library()

@register.filter
def band(label):
    """An interpretation band's label ("moderate", "moderate to good") in the page's language."""
    return wording.band_shown(label)


@register.filter
def word(value):
    """One of a report's words for what is rated and who rates ("dialogues", "physicians") in the page's
    language."""
    return wording.translated(value) if isinstance(value, str) else value


@register.filter
def num(value, digits=3):
    """A number with ``digits`` decimals (:func:`core.stats.formatting.number`, the app's one formatter); negative
    ``digits``: at most that many, trailing zeros dropped (a scale's bounds, "0"-"5" or "0.5"); "undefined" for None
    or NaN, in the page's language."""
    if int(digits) < 0:
        text = num(value, -int(digits))
        return text.rstrip("0").rstrip(".") if "." in text and text[-1:].isdigit() else text
    try:
        float(value)
    except (TypeError, ValueError):
        # None, or "undefined" as a stored figure may spell it
        return gettext("undefined") if value is None or value == formatting.number(None) else str(value)
    text = formatting.number(value, int(digits))
    return gettext("undefined") if text == formatting.number(None) else text  # None or NaN


@register.filter
def pct(value, digits=1):
    """A share (0-1) as a percentage, "33.3%", on the same scale as its interval (:func:`pct_ci`)."""
    if value is None:
        return gettext("undefined")
    return formatting.number(100.0 * float(value), int(digits)) + "%"


@register.filter
def pct_ci(figure, digits=1):
    """The interval of a share as percentages, "9.7%-70.0%" (a dict with ci_low / ci_high in 0-1); "" without."""
    if not isinstance(figure, dict) or figure.get("ci_low") is None or figure.get("ci_high") is None:
        return ""
    d = formatting.decimals(None, 100.0 * figure["ci_low"], 100.0 * figure["ci_high"], int(digits))
    return (f"{formatting.number(100.0 * figure['ci_low'], d)}%–"
            f"{formatting.number(100.0 * figure['ci_high'], d)}%")


@register.filter
def pvalue(value, style="p"):
    """A p-value: "p = 0.0123" / "p < 0.0001" (never "p = 0.0000"); ``style="bare"`` for a column headed "p"
    ("0.0123" / "< 0.0001"). The one rule is :func:`core.stats.format_p`."""
    from core.stats.interpretation import format_p

    text = format_p(value, prefix=style != "bare")
    return gettext("undefined") if text == format_p(None) else text


@register.filter
def ci(figure, digits=3):
    """'[low, high]' from a dict with ci_low / ci_high; "[CI not estimable (no variation)]" when every bootstrap
    resample gave the same value (never [x, x]); '' when there is no interval."""
    if isinstance(figure, dict) and figure.get("ci_note"):
        return f"[{_ci_note(figure['ci_note'])}]"
    if not isinstance(figure, dict) or figure.get("ci_low") is None or figure.get("ci_high") is None:
        return ""
    value = figure.get("value", figure.get("mean"))
    low, high = formatting.clipped(figure["ci_low"], figure["ci_high"], _scale(figure))
    if low == high:
        return "[" + gettext("CI not estimable") + "]"
    d = formatting.decimals(value, low, high, int(digits))
    return formatting.interval(low, high, d)


@register.filter
def fig(figure, digits=3):
    """A coefficient (``value``, or a score's ``mean``) with its CI and interpretation, the decimals its interval
    needs; undefined ones show the reason on hover."""
    if not isinstance(figure, dict):
        return ""
    value = figure["value"] if "value" in figure else figure.get("mean")
    if value is None:
        return _undefined(figure.get("warnings", []))
    from core.stats.interpretation import band_bounds

    bounds = band_bounds((figure.get("interpretation") or {}).get("scale"))
    low, high = formatting.clipped(figure.get("ci_low"), figure.get("ci_high"), _scale(figure))
    d = formatting.decimals(value, low, high, int(digits), bounds=bounds)
    text = formatting.number(value, d)
    interval = formatting.interval(low, high, d)
    label = (figure.get("interpretation") or {}).get("label")
    words = format_html(' <span class="band">{}</span>', band(label)) if label else ""
    if figure.get("ci_note"):  # words, not numbers: may wrap in a narrow cell
        return format_html('{} <small class="muted ci-note">[{}]</small>{}', text, _ci_note(figure["ci_note"]), words)
    return format_html('{} <small class="muted">{}</small>{}', text, interval, words)


@register.filter(name="undefined_because")
def _undefined(warnings: list[str]) -> str:
    """"undefined" with the reason on hover: in the page's language where the report's or the statistics' sentence
    is known (scoring/templatetags/sentence_tags.py), else in English and marked as computed English."""
    from scoring.templatetags.sentence_tags import said_warnings, warnings_known

    if not warnings:
        return format_html('<span class="undefined" title="{}">{}</span>', gettext("undefined for these data"),
                           gettext("undefined"))
    english = "" if warnings_known(warnings) else ' lang="en" data-source-language="en"'
    return format_html('<span class="undefined" title="{}"{}>{}</span>', said_warnings(warnings),
                       mark_safe(english), gettext("undefined"))


def _ci_note(note: str) -> str:
    """Why a figure has no interval, in the page's language ("CI not estimable (no variation)"); a note not known
    here as written."""
    from core.stats.bootstrap import NO_VARIATION

    return gettext("CI not estimable (no variation)") if note == NO_VARIATION else f"CI {note}"


def _scale(figure: dict) -> tuple | None:
    """The (lowest, highest) score a figure of a bounded score can take (its ``min`` / ``max``), else None."""
    if figure.get("min") is None or figure.get("max") is None:
        return None
    return figure["min"], figure["max"]


@register.filter
def on_scale(figure, scope):
    """``figure`` with the scale of ``scope`` (its ``min`` / ``max``), so that :func:`fig` prints its interval
    clipped to the scale (a normal interval of a mean of 0-5 scores never prints past 5)."""
    if not isinstance(figure, dict) or not isinstance(scope, dict):
        return figure
    return {**figure, "min": scope.get("min"), "max": scope.get("max")}


@register.filter
def get(mapping, key):
    if isinstance(mapping, dict):
        return mapping.get(key, mapping.get(str(key)))
    if isinstance(mapping, list | tuple) and isinstance(key, int) and -len(mapping) <= key < len(mapping):
        return mapping[key]
    return None


@register.filter
def svg(text, caption_id=""):
    """Plots are produced by our own matplotlib code, never from user input. A plot is one image to assistive
    technology (``role="img"``), named by its figure's caption (``caption_id``), which says where its values are
    written out (WCAG 1.1.1)."""
    if not text:
        return ""
    name = format_html(' aria-labelledby="{}"', caption_id) if caption_id else ' aria-label="Chart"'
    return mark_safe(text.replace("<svg", f'<svg role="img"{name}', 1))  # noqa: S308


@register.filter
def page_plots(plots) -> dict[str, str]:
    """A report's stored plots ({name: svg}) in the page's language, else the English ones."""
    from django.utils.translation import get_language

    return wording.plots_in(plots, get_language() or wording.ENGLISH)


@register.filter
def rater_pairs(matrix) -> list[dict]:
    """The rater heatmap as rows (its values written out): every pair of raters with its mean kappa and AC1."""
    if not isinstance(matrix, dict):
        return []
    names = matrix.get("raters") or []
    kappa, ac1 = matrix.get("kappa") or [], matrix.get("gwet_ac1") or []

    def at(rows, i, j):
        return rows[i][j] if i < len(rows) and j < len(rows[i]) else None

    return [{"first": names[i], "second": names[j], "kappa": at(kappa, i, j), "ac1": at(ac1, i, j)}
            for i in range(len(names)) for j in range(i + 1, len(names))]


@register.filter
def box_numbers(values) -> dict:
    """What a box of the box plot draws, as numbers: n, the quartiles (numpy's and matplotlib's linear method),
    the mean, the smallest and the largest value."""
    import statistics

    data = sorted(float(v) for v in values or [] if v is not None)
    if not data:
        return {"n": 0}
    q1, median, q3 = statistics.quantiles(data, n=4, method="inclusive") if len(data) > 1 else data * 3
    return {"n": len(data), "min": data[0], "q1": q1, "median": median, "q3": q3, "max": data[-1],
            "mean": statistics.fmean(data)}


def _ba_part(result: dict, key: str, digits: int, sign: bool = False) -> str:
    value = result.get(key)
    if formatting.number(value) == formatting.number(None):  # None or NaN
        return gettext("undefined")
    low, high = result.get(f"{key}_ci_low"), result.get(f"{key}_ci_high")
    d = formatting.decimals(value, low, high, digits)
    limits = formatting.interval(low, high, d)
    return formatting.number(value, d, sign) + (f" {limits}" if limits else "")


@register.filter
def bland_altman(result, parts="bias"):
    """Bland-Altman with 95% CIs: "bias +0.12 [..]", then "limits -1.50 [..] to 1.70 [..]"; ``parts="limits"`` for
    the limits alone (where the bias is 0 by construction)."""
    if not isinstance(result, dict):
        return ""
    if result.get("bias") is None:
        return _undefined(result.get("warnings", []))
    limits = format_html(gettext("limits of agreement {low} to {high}") + ' <small class="muted">(n = {n})</small>',
                         low=_ba_part(result, "loa_low", 2), high=_ba_part(result, "loa_high", 2), n=result.get("n"))
    if parts == "limits":
        return limits
    return format_html(gettext("bias {bias}") + "<br>{limits}", bias=_ba_part(result, "bias", 2, sign=True),
                       limits=limits)


@register.simple_tag
def dimension_shown(campaign, code, stored_name=""):
    """A dimension's name (``{% dimension_shown campaign code dim.name as name %}``) in the page's language where the
    campaign's scale version has it (``name.text``, ``name.lang``, ``name.fallback``, as the rating page shows it);
    the report's stored English name where the version has no such dimension."""
    from annotation import rating_language

    version = getattr(campaign, "scale_version", None)
    names = getattr(version, "_dimension_names", None)
    if version is not None and names is None:
        names = {d.code: (d.name_en, d.name_zh) for d in version.dimensions.all()}
        version._dimension_names = names
    english, chinese = (names or {}).get(code, (stored_name, ""))
    return rating_language.shown(english, chinese, rating_language.of_page())
