"""Interpretation bands of agreement and reliability coefficients, with their sources, and how p-values print.

This is the one place that says where a band starts: every page, report, method text and verdict reads its bands
(and their wording, :func:`bands_text`, :func:`band_at`) from :data:`_SCALES`. A bound belongs to the band that
starts at it (kappa 0.40 is "moderate", the band a reliability floor of 0.40 names).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from core.stats._common import _num

# --------------------------------------------------------------------------------------
# interpretation bands
# --------------------------------------------------------------------------------------
# (lower bound inclusive, label), checked from the top; values below the last bound get
# the final fallback label. Landis & Koch print their bands with two decimals (.00-.20 slight, .21-.40 fair, ...),
# which leaves the bounds themselves open for a continuous coefficient: here each bound starts the band above it.
_SCALES: dict[str, tuple[str, list[tuple[float, str]], str]] = {
    "landis_koch": (
        "Landis JR, Koch GG (1977). The measurement of observer agreement for categorical "
        "data. Biometrics 33(1):159-174.",
        [(0.80, "almost perfect"), (0.60, "substantial"), (0.40, "moderate"),
         (0.20, "fair"), (0.0, "slight")],
        "poor",
    ),
    "kaiser_kmo": (
        "Kaiser HF (1974). An index of factorial simplicity. Psychometrika 39(1):31-36.",
        [(0.90, "marvelous"), (0.80, "meritorious"), (0.70, "middling"),
         (0.60, "mediocre"), (0.50, "miserable")],
        "unacceptable",
    ),
    "cicchetti_icc": (
        "Cicchetti DV (1994). Guidelines, criteria, and rules of thumb for evaluating normed "
        "and standardized assessment instruments in psychology. Psychological Assessment "
        "6(4):284-290.",
        [(0.75, "excellent"), (0.60, "good"), (0.40, "fair")],
        "poor",
    ),
    "koo_li_icc": (
        "Koo TK, Li MY (2016). A guideline of selecting and reporting intraclass correlation "
        "coefficients for reliability research. J Chiropr Med 15(2):155-163.",
        [(np.nextafter(0.90, 1.0), "excellent"), (0.75, "good"), (0.50, "moderate")],
        "poor",
    ),
    "krippendorff": (
        "Krippendorff K (2004). Content Analysis: An Introduction to Its Methodology, 2nd ed., "
        "p. 241: rely on alpha >= .800; alpha >= .667 only for tentative conclusions.",
        [(0.800, "reliable"), (0.667, "tentative")],
        "unreliable",
    ),
    "cronbach": (
        "George D, Mallery P (2003). SPSS for Windows Step by Step: A Simple Guide and "
        "Reference, 11.0 update, 4th ed., p. 231.",
        [(0.9, "excellent"), (0.8, "good"), (0.7, "acceptable"), (0.6, "questionable"),
         (0.5, "poor")],
        "unacceptable",
    ),
}


def interpret(value: Any, scale: str) -> dict:
    """Verbal label for a coefficient on a published benchmark scale.

    ``scale``: "landis_koch" (kappa; < 0 poor, 0 to < .20 slight, .20 to < .40 fair, .40 to
    < .60 moderate, .60 to < .80 substantial, >= .80 almost perfect: each bound starts the band
    above it), "kaiser_kmo", "cicchetti_icc"
    (<.40 poor, .40-.59 fair, .60-.74 good, >=.75 excellent), "koo_li_icc" (<.50 poor,
    .50-.75 moderate, .75-.90 good, >.90 excellent), "krippendorff" (>=.800 reliable,
    >=.667 tentative), "cronbach" (George & Mallery: >=.9 excellent ... <.5 unacceptable).
    Returns ``{"label", "source"}``; None / NaN -> label "undefined".
    """
    if scale not in _SCALES:
        raise ValueError(f"unknown scale {scale!r}; choose from {sorted(_SCALES)}")
    source, bands, fallback = _SCALES[scale]
    v = _num(value)
    if v is None:
        return {"label": "undefined", "source": source, "scale": scale}
    for bound, label in bands:
        # a round bound includes values a rounding error below it; one just above a round number (Koo & Li's
        # "> .90") excludes that number
        if v >= bound - (_BOUND_TOLERANCE if bound == round(bound, 3) else 0.0):
            return {"label": label, "source": source, "scale": scale}
    return {"label": fallback, "source": source, "scale": scale}


def band_bounds(scale: str | None) -> list[float]:
    """The values where ``scale``'s bands start (none for an unknown or missing scale): a printed coefficient must
    not round across one (0.1996 "slight" is not printed 0.20, where "fair" starts)."""
    if scale not in _SCALES:
        return []
    return [float(bound) for bound, _ in _SCALES[scale][1]]


#: A coefficient computed as 0.39999999999999997 for an exact 0.40 still starts the band at 0.40.
_BOUND_TOLERANCE = 1e-9


def band_at(value: float, scale: str) -> dict:
    """Where ``value`` (a threshold such as the judge report's reliability floor) lies on ``scale``: its band, that
    band's range, whether ``value`` is the band's lower bound, and a phrase ("the start of 'moderate'", or
    "inside 'moderate'")."""
    label = interpret(value, scale)["label"]
    bounds = [(float(bound), name) for bound, name in _SCALES[scale][1]]
    start = next((b for b, name in bounds if name == label), None)
    at_start = start is not None and abs(float(value) - start) <= _BOUND_TOLERANCE
    return {"label": label, "at_start": at_start, "range": _band_range(scale, label),
            "text": f"{'the start of' if at_start else 'inside'} '{label}'"}


def _fmt_bound(bound: float) -> str:
    rounded = round(bound, 3)
    return f"{rounded:.2f}" if round(rounded, 2) == rounded else f"{rounded:.3f}"


def _band_range(scale: str, label: str) -> str:
    """"0.40 to < 0.60"; a bound just above a round number (Koo & Li's "> .90") reads "> 0.90"."""
    _, bands, _ = _SCALES[scale]
    bounds = [float(bound) for bound, _ in bands]
    names = [name for _, name in bands]

    def above(bound: float) -> bool:  # the bound excludes the round number it is next to
        return bound != round(bound, 3)

    def upper(bound: float) -> str:
        return f"{'<=' if above(bound) else '<'} {_fmt_bound(bound)}"

    if label not in names:  # the fallback, below the last bound
        return upper(bounds[-1])
    k = names.index(label)
    start = f"{'> ' if above(bounds[k]) else ''}{_fmt_bound(bounds[k])}"
    if k == 0:
        return f"{'>' if above(bounds[0]) else '>='} {_fmt_bound(bounds[0])}"
    return f"{start} to {upper(bounds[k - 1])}"


def bands_text(scale: str) -> str:
    """Every band of ``scale`` with its range, lowest first, e.g. for "landis_koch": "< 0.00 poor, 0.00 to < 0.20
    slight, ..., >= 0.80 almost perfect" -- how the methods sections and pages name the bands."""
    _, bands, fallback = _SCALES[scale]
    names = [fallback] + [name for _, name in reversed(bands)]
    return ", ".join(f"{_band_range(scale, name)} {name}" for name in names)


def format_p(p: Any, digits: int = 4, prefix: bool = True) -> str:
    """A p-value as people read it: "p = 0.0123", and "p < 0.0001" where it would print as zero (never
    "p = 0.0000"). ``prefix=False`` gives the text for a table column headed "p": "0.0123", "< 0.0001".
    None / NaN -> "undefined"."""
    v = _num(p)
    if v is None:
        return "undefined"
    digits = int(digits)
    smallest = 10.0 ** -digits
    if v < smallest:
        return f"{'p ' if prefix else ''}< {smallest:.{digits}f}"
    return f"{'p = ' if prefix else ''}{v:.{digits}f}"


def interpret_interval(low: Any, high: Any, scale: str) -> dict:
    """Verbal label of a confidence interval: the bands of its two limits, e.g. "moderate to good".

    Koo & Li (2016) ask that ICC bands be read off the 95% confidence interval rather than the point estimate
    ("an ICC of .90 with a 95% CI of .83-.94 is good to excellent"); the same applies to any banded
    coefficient.  Returns ``{"label", "low", "high", "source"}``; "undefined" when a limit is missing.
    """
    lo, hi = interpret(low, scale), interpret(high, scale)
    if lo["label"] == "undefined" or hi["label"] == "undefined":
        label = "undefined"
    elif lo["label"] == hi["label"]:
        label = lo["label"]
    else:
        label = f"{lo['label']} to {hi['label']}"
    return {"label": label, "low": lo["label"], "high": hi["label"], "source": lo["source"]}
