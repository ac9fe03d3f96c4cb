"""How figures print: as many decimals as their interval needs, and never a sign the number does not have.

A figure is printed with the digits its table asks for (2 for a kappa, 1 for a % score), or more when those would
hide what the interval says: two limits that differ must print apart ("0.333 [0.329, 0.333]", never "0.33 [0.33,
0.33]"), and a limit or value that is not zero must not print as zero ("[0.03, 19.63]" is an interval above 0 --
"scores higher" -- where "[0.0, 19.6]" would look like one that reaches 0). Zero never prints as "-0.00", and a value
that is zero by construction but carries floating-point noise (7.24e-18, below :data:`TINY`) prints as 0. An interval
whose limits coincide is "not estimable", never "[x, x]". An interval of a bounded score (a mean on a 0-5 scale)
prints clipped to the scale (:func:`estimate`'s and :func:`figure`'s ``scale``).
Pure: no Django.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

from core.stats.messages import gettext_noop

#: At most this many decimals more than asked for (beyond them the difference is noise).
EXTRA_DIGITS = 3
#: Below this magnitude a figure is zero (floating-point noise of a value that is 0 by construction).
TINY = 1e-12
#: What an interval whose limits coincide (every resample the same value) prints as.
NOT_ESTIMABLE = "CI not estimable"


def _finite(x: Any) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(v):
        return None
    return 0.0 if abs(v) < TINY else v  # noise around a zero by construction


def short(x: Any) -> str:
    """``x`` with 3 significant digits for messages (7.24e-18, noise around zero, is "0", never "-0")."""
    v = _finite(x)
    if v is None:
        return "undefined"
    text = f"{v:.3g}"
    return "0" if float(text) == 0 else text


def _text(x: float, digits: int, sign: bool = False) -> str:
    text = f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"
    if float(text) == 0:  # "-0.00" and "+0.00" are zero
        return f"{0:.{digits}f}"
    return text


def decimals(value: Any = None, low: Any = None, high: Any = None, digits: int = 2,
             extra: int = EXTRA_DIGITS, bounds: Iterable[float] = ()) -> int:
    """The decimals to print ``value [low, high]`` with: ``digits``, or up to ``extra`` more until limits that
    differ print apart, no number that is not zero prints as zero, and the value prints on its own side of each of
    ``bounds`` (where an interpretation band starts: 0.1996 is "slight", so not "0.20", where "fair" starts)."""
    value, low, high = _finite(value), _finite(low), _finite(high)
    digits = max(int(digits), 0)
    bounds = [b for b in (_finite(b) for b in bounds) if b is not None]
    for d in range(digits, digits + int(extra) + 1):
        apart = low is None or high is None or low == high or _text(low, d) != _text(high, d)
        not_zero = all(x is None or x == 0 or float(_text(x, d)) != 0 for x in (value, low, high))
        sides = value is None or all((value >= b - 1e-9) == (float(_text(value, d)) >= b - 1e-9) for b in bounds)
        if apart and not_zero and sides:
            return d
    return digits + int(extra)


def number(x: Any, digits: int = 2, sign: bool = False) -> str:
    """``x`` with ``digits`` decimals ("+" before positive numbers with ``sign``); "undefined" for None or NaN;
    zero never as "-0.00"."""
    v = _finite(x)
    return "undefined" if v is None else _text(v, int(digits), sign)


def interval(low: Any, high: Any, digits: int = 2, sign: bool = False) -> str:
    """"[low, high]" with ``digits`` decimals; "" when a limit is missing."""
    lo, hi = _finite(low), _finite(high)
    if lo is None or hi is None:
        return ""
    return f"[{_text(lo, digits, sign)}, {_text(hi, digits, sign)}]"


def estimate(value: Any, low: Any = None, high: Any = None, digits: int = 2, sign: bool = False,
             unit: str = "", scale: tuple[Any, Any] | None = None) -> str:
    """"value [low, high]" with the decimals :func:`decimals` chooses; ``unit`` after the value ("9.82 percentage
    points [0.03, 19.63]"); without an interval the value alone; limits that coincide: "value (CI not
    estimable)". ``scale``: the (lowest, highest) score the figure can take; limits beyond it print clipped to it
    (a normal interval of a mean of 0-5 scores, 4.99 [4.97, 5.01], prints as 4.99 [4.97, 5.00])."""
    low, high = clipped(low, high, scale)
    if low is not None and high is not None and low == high:
        return number(value, digits, sign) + (f" {unit}" if unit else "") + f" ({NOT_ESTIMABLE})"
    d = decimals(value, low, high, digits)
    text = number(value, d, sign) + (f" {unit}" if unit else "")
    limits = interval(low, high, d, sign)
    return f"{text} {limits}" if limits else text


def clipped(low: Any, high: Any, scale: tuple[Any, Any] | None) -> tuple[float | None, float | None]:
    """The limits as floats, clipped to ``scale`` (lowest, highest) when given."""
    lo, hi = _finite(low), _finite(high)
    if scale:
        bottom, top = (_finite(b) for b in scale)
        if lo is not None and bottom is not None:
            lo = max(lo, bottom)
        if hi is not None and top is not None:
            hi = min(hi, top)
    return lo, hi


def figure(fig: Any, digits: int = 2, *, scale: tuple[Any, Any] | None = None, sign: bool = False,
           unit: str = "", value_key: str | None = None) -> str:
    """A report figure ({"value" or "mean", "ci_low", "ci_high", "ci_note"}) as :func:`estimate` prints it:
    "undefined" without a value, "value (CI not estimable)" when the report says its interval is not estimable
    (``ci_note``) or the limits coincide, limits clipped to ``scale``. ``value_key`` names another value field
    ("score_pct")."""
    if not isinstance(fig, dict):
        return "undefined"
    key = value_key or ("value" if "value" in fig else "mean")
    value = fig.get(key)
    if _finite(value) is None:
        return "undefined"
    if fig.get("ci_note"):
        return number(value, digits, sign) + (f" {unit}" if unit else "") + f" ({NOT_ESTIMABLE})"
    return estimate(value, fig.get("ci_low"), fig.get("ci_high"), digits, sign=sign, unit=unit, scale=scale)


#: A share's English wording ("1,102 of 1,104 (99.8%)"): message ids a page says in its language (:func:`read_share`).
SHARE = gettext_noop("%(count)s of %(total)s (%(percent)s)")
SHARE_NO_TOTAL = gettext_noop("%(count)s of %(total)s")
_SHARE = re.compile(r"^(?P<count>\d[\d,]*) of (?P<total>\d[\d,]*)(?: \((?P<percent>\d[\d.]*%)\))?$")


def share_parts(count: int, total: int, digits: int = 1) -> dict[str, str]:
    """The numbers of :func:`share` as written: ``count``, ``total`` and ``percent`` ("99.8%"; absent without a
    total)."""
    parts = {"count": f"{count:,}", "total": f"{total:,}"}
    if total:
        value = 100.0 * count / total
        d = digits
        while d < digits + EXTRA_DIGITS and (f"{value:.{d}f}" in (f"{100:.{d}f}", f"{0:.{d}f}")) and 0 < count < total:
            d += 1
        parts["percent"] = f"{value:.{d}f}%"
    return parts


def share(count: int, total: int, digits: int = 1) -> str:
    """"1,102 of 1,104 (99.8%)": a share with its counts, the percentage never rounded to 100% or 0% unless it is."""
    parts = share_parts(count, total, digits)
    return (SHARE if "percent" in parts else SHARE_NO_TOTAL) % parts


def read_share(text: str) -> tuple[str, dict[str, str]] | None:
    """A share :func:`share` wrote, as its message id and numbers (for a page to say it in its language), else
    None."""
    found = _SHARE.match(text) if isinstance(text, str) else None
    if found is None:
        return None
    parts = {name: value for name, value in found.groupdict().items() if value is not None}
    return (SHARE if "percent" in parts else SHARE_NO_TOTAL), parts
