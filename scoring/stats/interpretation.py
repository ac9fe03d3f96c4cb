"""Interpretation bands of agreement and reliability coefficients, with their sources."""

from __future__ import annotations

from typing import Any

import numpy as np

from scoring.stats._common import _num

# --------------------------------------------------------------------------------------
# interpretation bands
# --------------------------------------------------------------------------------------
# (lower bound inclusive, label), checked from the top; values below the last bound get
# the final fallback label.
_SCALES: dict[str, tuple[str, list[tuple[float, str]], str]] = {
    "landis_koch": (
        "Landis JR, Koch GG (1977). The measurement of observer agreement for categorical "
        "data. Biometrics 33(1):159-174.",
        [(0.805, "almost perfect"), (0.605, "substantial"), (0.405, "moderate"),
         (0.205, "fair"), (0.0, "slight")],
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

    ``scale``: "landis_koch" (kappa; <0 poor, 0-.20 slight, .21-.40 fair, .41-.60
    moderate, .61-.80 substantial, .81-1 almost perfect -- values between the published
    two-decimal bands are split at the midpoint, e.g. .205), "kaiser_kmo", "cicchetti_icc"
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
        return {"label": "undefined", "source": source}
    for bound, label in bands:
        if v >= bound:
            return {"label": label, "source": source}
    return {"label": fallback, "source": source}


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
