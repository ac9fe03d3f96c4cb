"""Score values on an item's grid: whole points (0-5, 1-10) or points in steps such as 0.5 (4.5 on a 0-5 scale).

Values are stored as floating-point numbers (:class:`ScoreField`), which hold every point of a grid with a step of
0.5 (or 0.25, ...) exactly, and read back as ``int`` when they are whole, so integer scales, binary items and levels
look exactly as before in pages, exports and the API (``1``, never ``1.0``). A grid is computed with decimals, so
its points are the same floats that parsing their text gives (``float("0.3")``, never ``0.30000000000000004``).
"""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation
from typing import Any

from django.db import models
from django.utils.translation import gettext

Score = int | float


def normal(value: Any) -> Score | None:
    """A score as the app keeps it: ``int`` when whole, else ``float``; None stays None. NaN and infinity are not
    scores (ValueError)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, Decimal):
        value = float(value)
    if isinstance(value, int):
        return value
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{value!r} is not a number")
    return int(number) if number.is_integer() else number


def parse(raw: Any) -> Score | None:
    """"4", " 4.5 ", "4,5", 4.0, "1.0" -> a score; "" and None -> None; anything else raises ValueError."""
    if raw is None:
        return None
    if isinstance(raw, bool):
        raise ValueError(f"{raw!r} is not a number")
    if isinstance(raw, int | float | Decimal):
        return normal(raw)
    text = str(raw).strip()
    if not text:
        return None
    if text.count(",") == 1 and "." not in text:  # a decimal comma: "4,5"
        text = text.replace(",", ".")
    try:
        number = Decimal(text)
    except InvalidOperation:
        raise ValueError(f"{raw!r} is not a number") from None
    if not number.is_finite():
        raise ValueError(f"{raw!r} is not a number")
    return normal(float(number))


def grid(low: int | float, high: int | float, step: Decimal | float | str | None = None) -> list[Score]:
    """The points from ``low`` to ``high`` in steps of ``step`` (1 when None)."""
    step_d = Decimal(str(step)) if step not in (None, "") else Decimal(1)
    low_d, high_d = Decimal(str(low)), Decimal(str(high))
    count = int((high_d - low_d) / step_d)
    return [normal(float(low_d + k * step_d)) for k in range(count + 1)]


def text(value: Any) -> str:
    """A score as people write it: "4", "4.5"."""
    value = normal(value)
    return "" if value is None else (str(value) if isinstance(value, int) else f"{value:g}")


def step_text(step: Any) -> str:
    """A step as people write it ("0.5"), "" for whole points."""
    if step in (None, ""):
        return ""
    return f"{Decimal(str(step)).normalize():f}"


class ScoreField(models.FloatField):
    """A label's value: a float column whose whole values read back as ``int`` (see the module docstring)."""

    def from_db_value(self, value, expression, connection):
        return normal(value)

    def to_python(self, value):
        value = super().to_python(value)
        return normal(value)


def describe(allowed: tuple | list) -> str:
    """What an item takes, in words (the active language's): "a whole number from 0 to 5", "a number from 0 to 5 in
    steps of 0.5" or the values ("0, 1"; "1, 2, 3")."""
    values = [normal(v) for v in allowed]
    if len(values) > 3:
        step = Decimal(str(values[1])) - Decimal(str(values[0]))
        if step > 0 and values == grid(values[0], values[-1], step):
            if step == 1:
                return gettext("a whole number from %(low)s to %(high)s") % {"low": text(values[0]),
                                                                             "high": text(values[-1])}
            return gettext("a number from %(low)s to %(high)s in steps of %(step)s") % {
                "low": text(values[0]), "high": text(values[-1]), "step": step_text(step)}
    return ", ".join(text(v) for v in values)
