"""Delphi statistics. Pure module: pandas / numpy in, plain dicts out; importable without Django.

Conventions (DESIGN.md sections 3 and 4):

* Importance is a 5-point Likert rating (1 = not important ... 5 = very important).
* SD is the sample standard deviation (n - 1); CV = SD / mean; the full-mark ratio is the share of 5s.
* Quartiles use the ``linear`` method (Hyndman & Fan type 7: numpy/R default, Excel QUARTILE.INC);
  :data:`QUANTILE_METHOD` names it wherever an IQR is shown.
* % agreement is the share of ratings at or above the rule's agreement level (4 = "rated 4-5").
* The consensus rule holds when every condition that is set holds; with no answers it is undefined.
* Authority coefficient Cr = (Ca + Cs) / 2, with Ca from the basis of judgement and Cs from familiarity,
  using the customary coefficient tables of Chinese Delphi studies (:data:`CA_BASIS`, :data:`CS_FAMILIARITY`).
* Kendall's W (tie-corrected, with chi-square and p, and without the tie correction), Cronbach's alpha, KMO and
  Bartlett come from :mod:`core.stats`; a panelist left out of W for a missing rating is named (pseudonym).
* Undefined statistics are ``None`` with the reason in ``warnings``, never 0 or 1.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from django.utils.translation import gettext, gettext_lazy, gettext_noop, ngettext, pgettext

if TYPE_CHECKING:
    import pandas as pd

LIKERT = (1, 2, 3, 4, 5)
#: The warnings of these statistics with words of their own (stored in English, shown in the reader's language).
WARNINGS = frozenset({
    "No answers: every statistic is undefined.",
    "SD and CV are undefined with a single answer.",
    "No variation: every panelist gave the same rating.",
    "Authority coefficient undefined: no complete self-assessment.",
    "Positive coefficient undefined: nobody was invited.",
    "Kendall's W undefined: no completed questionnaires.",
    "Fewer than two items.",
    "No items.",
    "Alpha if item deleted needs at least three items.",
})
QUANTILE_METHOD = "linear"
QUANTILE_METHOD_LABEL = gettext_lazy("linear interpolation (Hyndman & Fan type 7; numpy/R default, Excel "
                                     "QUARTILE.INC)")

#: Familiarity coefficient Cs per self-rated level (5 very familiar ... 1 very unfamiliar).
CS_FAMILIARITY: dict[int, float] = {5: 1.0, 4: 0.8, 3: 0.6, 2: 0.4, 1: 0.2}
#: Judgement-basis coefficients (Ca is their sum: 1.0 when every basis has a high influence).
CA_BASIS: dict[str, dict[str, float]] = {
    "practice": {"high": 0.5, "medium": 0.4, "low": 0.3},
    "theory": {"high": 0.3, "medium": 0.2, "low": 0.1},
    "literature": {"high": 0.1, "medium": 0.1, "low": 0.05},
    "intuition": {"high": 0.1, "medium": 0.1, "low": 0.1},
}
BASES = tuple(CA_BASIS)


def _f(x: Any) -> float | None:
    if x is None:
        return None
    v = float(x)
    return v if math.isfinite(v) else None


def _clean(ratings: Iterable[Any]) -> np.ndarray:
    import pandas as pd  # pandas and core.stats load on first use: the web process imports this with its URLs

    arr = pd.to_numeric(pd.Series(list(ratings), dtype=object), errors="coerce").to_numpy(dtype=float)
    arr = arr[np.isfinite(arr)]
    bad = arr[~np.isin(arr, LIKERT)]
    if bad.size:
        raise ValueError(f"importance ratings must be 1-5, got {sorted(set(bad.tolist()))[:5]}")
    return arr


def consensus_met(row: Mapping[str, Any], rule: Mapping[str, Any]) -> tuple[bool | None, list[str]]:
    """Whether an item's statistics meet the rule, and the condition checks in words (in the active language: the
    pages call it again on the stored statistics to show the checks in the reader's)."""
    if not row.get("n"):
        return None, [gettext("no answers")]
    checks: list[str] = []
    ok = True
    if rule.get("min_mean") is not None:
        good = row["mean"] is not None and row["mean"] >= rule["min_mean"]
        ok &= good
        checks.append(gettext("mean %(mean)s %(sign)s %(limit)s") % {
            "mean": _fmt(row["mean"]), "sign": "≥" if good else "<", "limit": f"{rule['min_mean']:g}"})
    if rule.get("max_cv") is not None:
        good = row["cv"] is not None and row["cv"] <= rule["max_cv"]
        ok &= good
        values = {"cv": _fmt(row["cv"]), "sign": "≤" if good else ">", "limit": f"{rule['max_cv']:g}"}
        checks.append((gettext("CV %(cv)s %(sign)s %(limit)s") if row["cv"] is not None
                       else gettext("CV %(cv)s %(sign)s %(limit)s (undefined)")) % values)
    if rule.get("min_agreement") is not None:
        good = row["agreement"] is not None and row["agreement"] >= rule["min_agreement"]
        ok &= good
        checks.append(gettext("%(agreement)s%% rate ≥%(level)s %(sign)s %(limit)s%%") % {
            "agreement": _fmt(row["agreement"], 1), "level": rule.get("agreement_level", 4),
            "sign": "≥" if good else "<", "limit": f"{rule['min_agreement']:g}"})
    if not checks:
        return None, [gettext("no consensus rule set")]
    return bool(ok), checks


def _fmt(x: float | None, digits: int = 2) -> str:
    return pgettext("a statistic", "undefined") if x is None else f"{x:.{digits}f}"


_SKIPPED = re.compile(r"^(\d+) panelist\(s\) without a complete self-assessment left out\.$")


def warning_words(text: str) -> str:
    """A stored warning of these statistics (written in English by the worker) in the active language; a warning
    of another module's (``core.stats``) as it was stored."""
    skipped = _SKIPPED.match(text)
    if skipped:
        n = int(skipped[1])
        return ngettext("%(n)d panelist without a complete self-assessment left out.",
                        "%(n)d panelists without a complete self-assessment left out.", n) % {"n": n}
    return gettext(text) if text in WARNINGS else text


def item_statistics(ratings: Iterable[Any], rule: Mapping[str, Any] | None = None) -> dict:
    """Statistics of one item's importance ratings (missing answers dropped).

    Returns n, mean, sd, cv, full_mark_ratio, median, q1, q3, iqr, agreement (%), distribution
    ({1: count, ... 5: count}), consensus (True / False / None) with the checks, and warnings.
    """
    rule = dict(rule or {})
    level = int(rule.get("agreement_level") or 4)
    x = _clean(ratings)
    n = int(x.size)
    warns: list[str] = []
    out: dict[str, Any] = {
        "n": n, "mean": None, "sd": None, "cv": None, "full_mark_ratio": None, "median": None, "q1": None,
        "q3": None, "iqr": None, "agreement": None,
        "distribution": {v: int((x == v).sum()) for v in LIKERT}, "warnings": warns,
        "quantile_method": QUANTILE_METHOD,
    }
    if n == 0:
        warns.append(gettext_noop("No answers: every statistic is undefined."))
        out["consensus"], out["consensus_checks"] = None, ["no answers"]
        return out
    mean = float(x.mean())
    out["mean"] = mean
    out["full_mark_ratio"] = float((x == 5).mean())
    out["agreement"] = float((x >= level).mean() * 100.0)
    out["median"] = float(np.median(x))
    q1, q3 = np.quantile(x, [0.25, 0.75], method=QUANTILE_METHOD)
    out["q1"], out["q3"], out["iqr"] = float(q1), float(q3), float(q3 - q1)
    if n < 2:
        warns.append(gettext_noop("SD and CV are undefined with a single answer."))
    else:
        sd = float(x.std(ddof=1))
        out["sd"] = sd
        out["cv"] = sd / mean  # mean >= 1 on a 1-5 scale
        if sd == 0:
            warns.append(gettext_noop("No variation: every panelist gave the same rating."))
    out["consensus"], out["consensus_checks"] = consensus_met(out, rule)
    return out


def items_table(long: pd.DataFrame, items: Sequence[Any], rule: Mapping[str, Any] | None = None) -> dict[Any, dict]:
    """Per-item statistics from long answers (columns ``item`` and ``importance``), in the order of ``items``."""
    groups: dict[Any, np.ndarray] = {}
    if len(long):
        for key, sub in long.groupby("item", sort=False)["importance"]:
            groups[key] = sub.to_numpy()
    return {item: item_statistics(groups.get(item, []), rule) for item in items}


def authority(assessments: Iterable[Mapping[str, Any]]) -> dict:
    """Ca, Cs and Cr = (Ca + Cs) / 2, averaged over panelists with a complete self-assessment.

    Each assessment has ``familiarity`` (1-5) and ``practice``/``theory``/``literature``/``intuition``
    (``high``/``medium``/``low``).
    """
    ca_values: list[float] = []
    cs_values: list[float] = []
    skipped = 0
    for a in assessments:
        fam = a.get("familiarity")
        basis = [a.get(b) or "" for b in BASES]
        if fam not in CS_FAMILIARITY or any(v not in CA_BASIS[b] for b, v in zip(BASES, basis, strict=True)):
            skipped += 1
            continue
        cs_values.append(CS_FAMILIARITY[int(fam)])
        ca_values.append(sum(CA_BASIS[b][v] for b, v in zip(BASES, basis, strict=True)))
    warns = [f"{skipped} panelist(s) without a complete self-assessment left out."] if skipped else []
    if not ca_values:
        warns.append(gettext_noop("Authority coefficient undefined: no complete self-assessment."))
        return {"ca": None, "cs": None, "cr": None, "n": 0, "warnings": warns}
    ca = float(np.mean(ca_values))
    cs = float(np.mean(cs_values))
    return {"ca": ca, "cs": cs, "cr": (ca + cs) / 2.0, "n": len(ca_values), "warnings": warns}


def round_statistics(*, invited: int, responded: int, completed: int, wide: pd.DataFrame,
                     assessments: Iterable[Mapping[str, Any]]) -> dict:
    """Round-level figures: panel flow, positive coefficient, authority, Kendall's W.

    ``wide``: rows panelists (completed questionnaires), columns items, importance ratings.
    The positive coefficient is completed / invited questionnaires.
    """
    from core import stats

    warns: list[str] = []
    positive = completed / invited if invited else None
    if not invited:
        warns.append(gettext_noop("Positive coefficient undefined: nobody was invited."))
    auth = authority(assessments)
    w = stats.kendall_w(wide) if wide.shape[0] and wide.shape[1] else {
        "w": None, "w_uncorrected": None, "chi2": None, "dof": None, "p": None, "n_raters": int(wide.shape[0]),
        "n_objects": int(wide.shape[1]), "dropped": [],
        "warnings": [gettext_noop("Kendall's W undefined: no completed questionnaires.")]}
    # Kendall's W names raters by the row labels, which are panelists' pseudonyms here
    w_warnings = [text.replace("Rater ", "Panelist ", 1) if text.startswith("Rater ") else text
                  for text in w["warnings"]]
    return {
        "invited": invited, "responded": responded, "completed": completed,
        "positive_coefficient": positive,
        "ca": auth["ca"], "cs": auth["cs"], "cr": auth["cr"], "authority_n": auth["n"],
        "kendall_w": w["w"], "kendall_w_uncorrected": w["w_uncorrected"], "chi2": w["chi2"], "dof": w["dof"],
        "p": w["p"], "w_raters": w["n_raters"], "w_dropped": list(w.get("dropped", [])),
        "warnings": warns + auth["warnings"] + w_warnings,
    }


def round_summary(panel: Sequence[Mapping[str, Any]], answers: pd.DataFrame, *, validation: bool) -> dict:
    """:func:`round_statistics` of a round from plain rows: ``panel`` one row per participation (started and
    completed as booleans, familiarity and the judgement basis ``practice`` ... ``intuition``), ``answers`` the long
    ratings (``panelist``, ``code``, ``importance``) of completed questionnaires. A validation round has no
    self-assessment, so no authority coefficient."""
    import pandas as pd

    wide = (answers.pivot_table(index="panelist", columns="code", values="importance", aggfunc="first")
            if len(answers) else pd.DataFrame())
    assessments = [] if validation else [
        {key: row[key] for key in ("familiarity", *BASES)} for row in panel if row["completed"]]
    summary = round_statistics(invited=len(panel), responded=sum(1 for row in panel if row["started"]),
                               completed=sum(1 for row in panel if row["completed"]), wide=wide,
                               assessments=assessments)
    if validation:
        summary["warnings"] = [w for w in summary["warnings"] if "self-assessment" not in w]
    return summary


def validation_summary(answers: pd.DataFrame, items: Sequence[Mapping[str, str]]) -> dict:
    """:func:`validation_report` from plain rows: ``answers`` the long ratings (``panelist``, ``code``,
    ``importance``) of completed questionnaires, ``items`` the round's items in order (code, dimension,
    dimension_name)."""
    import pandas as pd

    codes = [i["code"] for i in items]
    wide = (answers.pivot_table(index="panelist", columns="code", values="importance", aggfunc="first")
            .reindex(columns=codes) if len(answers) else pd.DataFrame(columns=codes))
    return validation_report(wide, {i["code"]: i["dimension"] for i in items},
                             {i["dimension"]: i["dimension_name"] for i in items})


def validation_report(wide: pd.DataFrame, dimensions: Mapping[str, str],
                      dimension_names: Mapping[str, str] | None = None) -> dict:
    """Reliability and validity in the layout of Shi et al., LLM-Mini-CEX, Tables 3-4.

    ``wide``: rows respondents, columns item codes; ``dimensions``: item code -> dimension code.
    Table 3 rows: per dimension and for the whole scale, the number of items, Cronbach's alpha and alpha
    if each item is deleted (with the highest). Table 4: KMO, Bartlett's approximate chi-square, df, p.
    """
    from core import stats

    names = dict(dimension_names or {})
    cols = [str(c) for c in wide.columns]
    data = wide.copy()
    data.columns = cols
    order: list[str] = []
    for code in cols:
        dim = dimensions.get(code, "")
        if dim not in order:
            order.append(dim)
    rows = []
    for dim in order:
        codes = [c for c in cols if dimensions.get(c, "") == dim]
        rows.append(_alpha_row(data[codes], dim, names.get(dim, dim)))
    total = _alpha_row(data, "total", "Total")
    k = stats.kmo(data) if len(cols) >= 2 else {"overall": None, "warnings": [gettext_noop("Fewer than two items.")]}
    b = stats.bartlett_sphericity(data) if len(cols) >= 2 else {"chi2": None, "dof": None, "p": None,
                                                               "warnings": [gettext_noop("Fewer than two items.")]}
    return {
        "n_respondents": int(len(data)), "dimensions": rows, "total": total,
        "kmo": k["overall"], "kmo_items": k.get("items", {}), "kmo_warnings": k["warnings"],
        "bartlett_chi2": b["chi2"], "bartlett_dof": b["dof"], "bartlett_p": b["p"],
        "bartlett_warnings": b["warnings"],
    }


def _alpha_row(frame: pd.DataFrame, code: str, name: str) -> dict:
    from core import stats

    res = stats.cronbach_alpha(frame) if frame.shape[1] else {"alpha": None, "warnings": [gettext_noop("No items.")]}
    deleted = stats.alpha_if_deleted(frame) if frame.shape[1] > 2 else {c: None for c in frame.columns}
    defined = {c: v for c, v in deleted.items() if v is not None}
    highest = max(defined.items(), key=lambda kv: kv[1]) if defined else (None, None)
    warns = list(res.get("warnings", []))
    if frame.shape[1] <= 2:
        warns.append(gettext_noop("Alpha if item deleted needs at least three items."))
    alpha = res.get("alpha")
    return {
        "code": code, "name": name, "n_items": int(frame.shape[1]), "alpha": alpha,
        "ci_low": res.get("ci_low"), "ci_high": res.get("ci_high"),
        "alpha_if_deleted": {str(c): _f(v) for c, v in deleted.items()},
        "max_if_deleted": highest[1], "max_if_deleted_item": highest[0],
        "deletion_raises": bool(alpha is not None and highest[1] is not None and highest[1] > alpha),
        "warnings": warns,
    }
