"""Formatting helpers for report tables: undefined values say so, CIs print as [low, high]."""

from django import template
from django.utils.html import format_html
from django.utils.safestring import mark_safe

register = template.Library()


@register.filter
def num(value, digits=3):
    if value is None:
        return "undefined"
    try:
        return f"{float(value):.{int(digits)}f}"
    except (TypeError, ValueError):
        return str(value)


@register.filter
def pvalue(value, style="p"):
    """A p-value: "p = 0.0123" / "p < 0.0001" (never "p = 0.0000"); ``style="bare"`` for a column headed "p"
    ("0.0123" / "< 0.0001"). The one rule is :func:`scoring.stats.format_p`."""
    from scoring.stats.interpretation import format_p

    return format_p(value, prefix=style != "bare")


@register.filter
def ci(figure, digits=3):
    """'[low, high]' from a dict with ci_low / ci_high; "[CI not estimable (no variation)]" when every bootstrap
    resample gave the same value (never [x, x]); '' when there is no interval."""
    if isinstance(figure, dict) and figure.get("ci_note"):
        return f"[CI {figure['ci_note']}]"
    if not isinstance(figure, dict) or figure.get("ci_low") is None or figure.get("ci_high") is None:
        return ""
    d = int(digits)
    return f"[{figure['ci_low']:.{d}f}, {figure['ci_high']:.{d}f}]"


@register.filter
def fig(figure, digits=3):
    """A coefficient with its CI and interpretation; undefined ones show the reason on hover."""
    if not isinstance(figure, dict):
        return ""
    if figure.get("value") is None:
        reason = " ".join(figure.get("warnings", [])) or "undefined for these data"
        return format_html('<span class="undefined" title="{}">undefined</span>', reason)
    text = f"{figure['value']:.{int(digits)}f}"
    interval = ci(figure, digits)
    label = (figure.get("interpretation") or {}).get("label")
    return format_html('{} <small class="muted">{}</small>{}', text, interval,
                       format_html(' <span class="band">{}</span>', label) if label else "")


@register.filter
def get(mapping, key):
    if isinstance(mapping, dict):
        return mapping.get(key, mapping.get(str(key)))
    if isinstance(mapping, list | tuple) and isinstance(key, int) and -len(mapping) <= key < len(mapping):
        return mapping[key]
    return None


@register.filter
def svg(text):
    """Plots are produced by our own matplotlib code, never from user input."""
    return mark_safe(text or "")  # noqa: S308


def _ba_part(result: dict, key: str, digits: int, sign: bool = False) -> str:
    value = result.get(key)
    if value is None:
        return "undefined"
    low, high = result.get(f"{key}_ci_low"), result.get(f"{key}_ci_high")
    text = f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"
    return text + (f" [{low:.{digits}f}, {high:.{digits}f}]" if low is not None and high is not None else "")


@register.filter
def bland_altman(result, parts="bias"):
    """Bland-Altman with 95% CIs: "bias +0.12 [..]", then "limits -1.50 [..] to 1.70 [..]"; ``parts="limits"`` for
    the limits alone (where the bias is 0 by construction)."""
    if not isinstance(result, dict):
        return ""
    if result.get("bias") is None:
        return format_html('<span class="undefined" title="{}">undefined</span>',
                           " ".join(result.get("warnings", [])) or "undefined for these data")
    limits = format_html("limits of agreement {} to {} <small class=\"muted\">(n = {})</small>",
                         _ba_part(result, "loa_low", 2), _ba_part(result, "loa_high", 2), result.get("n"))
    if parts == "limits":
        return limits
    return format_html("bias {}<br>{}", _ba_part(result, "bias", 2, sign=True), limits)
