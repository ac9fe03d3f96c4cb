"""The judge report's outcomes, references and small helpers shared by its sections."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from core import stats
from core.stats import formatting
from scoring.reports.wording import Words

REPLACE = "judge can replace physicians"


KEEP = "keep physicians"


UNRELIABLE = "item unreliable"


NOT_ENOUGH = "not enough data"


OUTCOMES = (REPLACE, KEEP, UNRELIABLE, NOT_ENOUGH)


#: Keys of the outcomes in ``summary`` and the API.
OUTCOME_KEYS = {REPLACE: "replace", KEEP: "keep", UNRELIABLE: "unreliable", NOT_ENOUGH: "not_enough"}


def outcome_labels(words: Any = None) -> dict[str, str]:
    """The verdicts in the report's words, by outcome key: "judge can replace physicians" on a dialogue instrument,
    "judge can replace raters" where the raters are not all physicians."""
    W = Words(words)
    return {"replace": f"judge can replace {W.raters}", "keep": f"keep {W.raters}", "unreliable": UNRELIABLE,
            "not_enough": NOT_ENOUGH}


#: Physicians' agreement is measured with Gwet's AC1 instead of Cohen's kappa when the most frequent answer makes
#: up at least this share of their labels (prevalence index |p_yes - p_no| >= 0.6, Byrt, Bishop & Carlin 1993):
#: there kappa is low even when physicians nearly always agree (Feinstein & Cicchetti 1990), AC1 is not (Gwet 2008);
#: items with ordered scores likewise use Gwet's AC2 there. (The agreement report uses the same threshold.)
PAPER_RULE = "accuracy >= 80%, Shi et al., LLM-Mini-CEX, sec. 4.5"


LANDIS_KOCH = "Landis JR, Koch GG (1977). Biometrics 33(1):159-174"


NON_INFERIORITY = ("Walker E, Nowacki AS (2011). Understanding equivalence and noninferiority testing. J Gen Intern "
                   "Med 26(2):192-196; Piaggio G et al. (2012). Reporting of noninferiority and equivalence randomized "
                   "trials: CONSORT 2010 extension. JAMA 308(24):2594-2604")


def averaging(words: Any = None) -> str:
    W = Words(words)
    return (f"mean over {W.raters} weighted by the number of {W.units} the judge shares with each {W.rater}; "
            f"{W.raters} on whom a figure is undefined are left out of that figure's average")


def ceiling_averaging(words: Any = None) -> str:
    W = Words(words)
    return (f"mean over all pairs of {W.raters} weighted by the number of {W.units} each pair shares; "
            "pairs on whom a figure is undefined are left out of that figure's average")


AVERAGING = averaging()


CEILING_AVERAGING = ceiling_averaging()


#: Snapshot keys that may differ between two runs compared by :func:`compare_modes`, besides ``mode``: the
#: configuration's identity, settings that never change an answer (rate limits, timeouts, prices, where the key
#: lives), and the two switches that apply to one mode only (logprobs: per-item; JSON schema: per-dialogue).
MODE_COMPARISON_IGNORED = ("name", "config_id", "prompt_set_name", "api_key_env", "concurrency",
                           "requests_per_minute", "tokens_per_minute", "timeout_seconds", "max_attempts",
                           "price_input_per_1k", "price_output_per_1k", "request_logprobs", "structured_output")


_TOL = 1e-9


WEIGHTED_KAPPA = "quadratic weighted kappa"


GWET_AC2 = "Gwet's AC2 (quadratic weights)"


#: Verdict coefficients of items with ordered scores (levels and scale items).
ORDERED_COEFFICIENTS = ("weighted_kappa", "gwet_ac2")


class JudgeReportError(ValueError):
    """The run and the campaign cannot be compared (other corpus or scale version, runs not differing in mode)."""


def _f(x: Any) -> float | None:
    """Python float, None for None / NaN / inf."""
    if x is None:
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _dedupe(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _codes(values: np.ndarray, domain: Sequence[int]) -> np.ndarray:
    """Category index of each value in ``domain`` (sorted); -1 for missing or values outside the domain."""
    dom = np.asarray(domain, dtype=float)
    vals = np.asarray(values, dtype=float)
    pos = np.clip(np.searchsorted(dom, vals), 0, max(len(dom) - 1, 0))
    ok = ~np.isnan(vals) & (dom[pos] == vals) if len(dom) else np.zeros(vals.shape, bool)
    return np.where(ok, pos, -1).astype(np.int64)


def _floor_band(floor: float) -> str:
    """The floor in words, from the same bands that label every kappa (:func:`stats.band_at`): 0.40 is "the start of
    'moderate' agreement (0.40 to < 0.60)", so a physicians' kappa of exactly 0.40 is "moderate" and passes."""
    band = stats.band_at(floor, "landis_koch")
    return f"{band['text']} agreement, {band['range']} on Landis & Koch's bands"


def _fmt_ci(fig: dict, digits: int = 2) -> str:
    """"value [low, high]" with the decimals the interval needs (:mod:`core.stats.formatting`), the value on its
    own side of the start of each interpretation band."""
    bounds = stats.band_bounds((fig.get("interpretation") or {}).get("scale"))
    d = formatting.decimals(fig["value"], fig.get("ci_low"), fig.get("ci_high"), digits, bounds=bounds)
    if fig.get("ci_note"):
        return f"{formatting.number(fig['value'], d)} (95% CI {fig['ci_note']})"
    limits = formatting.interval(fig.get("ci_low"), fig.get("ci_high"), d)
    return formatting.number(fig["value"], d) + (f" {limits}" if limits else "")


def _answer(value: Any) -> str:
    """A score as people write it: 5, 4.5, 1 (not 5.0 or '5')."""
    return f"{value:g}" if isinstance(value, int | float) else str(value)


def _percents(a: float, b: float) -> tuple[str, str]:
    """Two shares as percentages with the decimals that tell them apart ("89.6%" and "90.4%", not "90%" twice)."""
    d = formatting.decimals(None, 100 * a, 100 * b, 0)
    return f"{formatting.number(100 * a, d)}%", f"{formatting.number(100 * b, d)}%"


def _fmt_signed_ci(fig: dict, digits: int = 2) -> str:
    return formatting.estimate(fig["value"], fig.get("ci_low"), fig.get("ci_high"), digits, sign=True)
