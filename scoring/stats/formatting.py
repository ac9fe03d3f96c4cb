"""How figures print: as many decimals as their interval needs, and never a sign the number does not have.

A figure is printed with the digits its table asks for (2 for a kappa, 1 for a % score), or more when those would
hide what the interval says: two limits that differ must print apart ("0.333 [0.329, 0.333]", never "0.33 [0.33,
0.33]"), and a limit or value that is not zero must not print as zero ("[0.03, 19.63]" is an interval above 0 --
"scores higher" -- where "[0.0, 19.6]" would look like one that reaches 0). Zero never prints as "-0.00".
Pure: no Django.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

#: At most this many decimals more than asked for (beyond them the difference is noise).
EXTRA_DIGITS = 3


def _finite(x: Any) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


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
             unit: str = "") -> str:
    """"value [low, high]" with the decimals :func:`decimals` chooses; ``unit`` after the value ("9.82 percentage
    points [0.03, 19.63]"); without an interval the value alone."""
    d = decimals(value, low, high, digits)
    text = number(value, d, sign) + (f" {unit}" if unit else "")
    limits = interval(low, high, d, sign)
    return f"{text} {limits}" if limits else text


def share(count: int, total: int, digits: int = 1) -> str:
    """"1,102 of 1,104 (99.8%)": a share with its counts, the percentage never rounded to 100% or 0% unless it is."""
    if not total:
        return f"{count:,} of {total:,}"
    value = 100.0 * count / total
    d = digits
    while d < digits + EXTRA_DIGITS and (f"{value:.{d}f}" in (f"{100:.{d}f}", f"{0:.{d}f}")) and 0 < count < total:
        d += 1
    return f"{count:,} of {total:,} ({value:.{d}f}%)"
