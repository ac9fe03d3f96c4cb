"""Doctor models' scores three ways: physicians only, judge only, and prediction-powered (PPI++).

For each doctor model and each dimension (the LLM-Mini-CEX paper's Table 6, Shi et al.), the overall score and each
criterion scored on levels or a scale, :func:`model_estimates` gives

* **physicians**: the mean of the physicians' scores on the dialogues they labelled, with its classical (CLT)
  interval -- valid for the corpus when those dialogues are a random sample, wide because they are few;
* **judge**: the mean of the judge's scores on every dialogue it scored -- narrow, but *not validated*: the
  judge's bias is not in this interval;
* **ppi**: PPI++ (Angelopoulos, Bates, Fannjiang, Jordan and Zrnic, Science 2023; Angelopoulos, Duchi and Zrnic
  2023): the judge's scores on every dialogue corrected by its error on the physician-labelled ones, with power
  tuning; valid however biased the judge is, narrower the better it is. Only when the physician-labelled
  dialogues are a random sample (drawn by the campaign or declared on import, :mod:`annotation.sampling`);
  otherwise no estimate and the reason.

Beside them the effective sample size ("the judge's labels are worth N more physician-labelled dialogues"), the
difference of every pair of models (the basis of "model A beats model B"), a ranking sentence built on those
differences, and the planner (:func:`plan`): physician-labelled dialogues needed for a chosen interval half-width,
with and without the judge. The statistics are :mod:`core.stats.ppi`; this module only loads and arranges.

The human label of a dialogue is the **mean** over the physicians who labelled it (not the majority): the
estimand is the score the average physician gives, it uses every rater, needs no tie rule, and for a binary item
it is the share of physicians who marked it met -- the same per-dialogue score as Table 6.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from django.utils.translation import gettext_noop

from annotation import sampling
from annotation.models import Campaign, RandomSample
from core.stats import active, formatting, ppi
from core.stats.bootstrap import NO_VARIATION, NO_VARIATION_TOL
from scoring.reports import sentences
from scoring.reports.sentences import KEY, Said, figure, in_a_row, joined, put, said, word
from scoring.reports.wording import Words

ALPHA = 0.05
NOT_VALIDATED = "not validated: the judge's bias is not in this interval"
#: The planner's default half-width: this share of the score's range (10 points on a 0-100% score, 0.5 on 0-5).
DEFAULT_HALF_WIDTH_SHARE = 0.10
CITATION = ("Angelopoulos AN, Bates S, Fannjiang C, Jordan MI, Zrnic T (2023). Prediction-powered inference. "
            "Science 382(6671):669-674; Angelopoulos AN, Duchi JC, Zrnic T (2023). PPI++: Efficient "
            "prediction-powered inference. arXiv:2311.01453")


@dataclass
class Scope:
    """A score reported per model: a dimension (binary items, in %), the overall score, or one criterion."""

    key: str
    name: str
    kind: str  # "dimension", "overall" or "criterion"
    unit: str  # "%" or "points"
    low: float
    high: float
    codes: list[str]

    @property
    def short(self) -> str:
        """A label for table cells, whole (cells wrap): "3 Comprehensive diagnostic and treatment abilities"."""
        if self.kind == "overall":
            return self.name.split(" (")[0]
        if self.kind == "criterion":
            return f"Item {self.key}"
        return f"{self.key} {self.name}"

    def name_said(self, lower: bool = False) -> Said | str:
        """:attr:`name` (its first letter in lower case: ``lower``) as a sentence where the app wrote it; a
        dimension's name is the instrument's, as it is."""
        name = self.name[0].lower() + self.name[1:] if lower and self.name else self.name
        if self.kind == "criterion":
            text = self.name.split(": ", 1)[1] if ": " in self.name else ""
            return (said(gettext_noop("item %(code)s: %(text)s"), code=self.key, text=text) if lower else
                    said(gettext_noop("Item %(code)s: %(text)s"), code=self.key, text=text))
        fixed = {"All binary items (the Average column of Table 6)":
                 (gettext_noop("All binary items (the Average column of Table 6)"),
                  gettext_noop("all binary items (the Average column of Table 6)")),
                 "All criteria (mean score)": (gettext_noop("All criteria (mean score)"),
                                               gettext_noop("all criteria (mean score)")),
                 "All criteria (scores rescaled to 0-1)": (gettext_noop("All criteria (scores rescaled to 0-1)"),
                                                           gettext_noop("all criteria (scores rescaled to 0-1)"))}
        if self.name in fixed:
            return said(fixed[self.name][1 if lower else 0])
        return name

    def short_said(self) -> Said | str:
        """:attr:`short` as a sentence where the app wrote it."""
        if self.kind == "overall":
            return {"All binary items": said(gettext_noop("All binary items")),
                    "All criteria": said(gettext_noop("All criteria"))}.get(self.short, self.short)
        if self.kind == "criterion":
            return said(gettext_noop("Item %(code)s"), code=self.key)
        return self.short

    def as_dict(self) -> dict:
        out = {"key": self.key, "name": self.name, "short": self.short, "kind": self.kind, "unit": self.unit,
               "min": self.low,
               "max": self.high, "items": list(self.codes), "digits": 1 if self.unit == "%" else 2,
               "default_half_width": default_half_width(self.low, self.high)}
        for name, sentence in (("name", self.name_said()), ("short", self.short_said())):
            if isinstance(sentence, Said):
                put(out, name, sentence)
        return out


@dataclass
class Scores:
    """Per dialogue of the population (the sample's frame, or the campaign's dialogues in scope): its doctor model,
    whether it is in the random sample, and per scope the physicians' and the judge's score (NaN: none)."""

    dialogue_ids: np.ndarray
    models: np.ndarray
    scopes: list[Scope]
    physicians: dict[str, np.ndarray]
    judge: dict[str, np.ndarray]
    in_sample: np.ndarray
    sample: RandomSample | None
    warnings: list[str] = field(default_factory=list)
    words: dict = field(default_factory=dict)  # the report's words (scoring.reports.wording); empty: dialogues
    pi: np.ndarray | None = None  # an active sample's inclusion probabilities (NaN outside its population)

    @property
    def is_active(self) -> bool:
        return self.pi is not None

    @property
    def W(self) -> Words:
        return Words(self.words or None)

    @property
    def model_names(self) -> list[str]:
        return sorted(set(self.models.tolist()))


def default_half_width(low: float, high: float) -> float:
    return float(round((high - low) * DEFAULT_HALF_WIDTH_SHARE, 6)) or 0.05


# ---------------------------------------------------------------------------------------------------------------
# loading
# ---------------------------------------------------------------------------------------------------------------
def _scopes(items: Sequence[Any]) -> list[Scope]:
    """Dimensions of binary items (in %), the overall score, then each criterion on levels or a scale."""
    binary = [i for i in items if i.response_type == "binary"]
    ordered = [i for i in items if i.response_type != "binary" and i.values]
    scopes = []
    for dim in dict.fromkeys(i.dimension for i in binary):
        group = [i for i in binary if i.dimension == dim]
        scopes.append(Scope(dim, group[0].dimension_name, "dimension", "%", 0.0, 100.0, [i.code for i in group]))
    if binary:
        scopes.append(Scope("all", "All binary items (the Average column of Table 6)", "overall", "%", 0.0, 100.0,
                            [i.code for i in binary]))
    elif len(ordered) > 1:
        ranges = {(min(i.values), max(i.values)) for i in ordered}
        low, high = ranges.pop() if len(ranges) == 1 else (0.0, 1.0)
        name = "All criteria (mean score)" if high != 1.0 or low != 0.0 else "All criteria (scores rescaled to 0-1)"
        scopes.append(Scope("all", name, "overall", "points", float(low), float(high), [i.code for i in ordered]))
    for item in ordered:
        scopes.append(Scope(item.code, f"Item {item.code}: {item.text}", "criterion", "points",
                            float(min(item.values)), float(max(item.values)), [item.code]))
    return scopes


def _per_item(frame: pd.DataFrame, index: pd.Index, items: dict[str, Any]) -> dict[str, np.ndarray]:
    """Per item code: the mean value per dialogue over ``frame``'s rows (columns dialogue, item, value), NaN where
    there is none; values outside the item's range are left out."""
    out = {}
    for code, group in frame.groupby("item", observed=True):
        meta = items.get(str(code))
        if meta is None:
            continue
        ok = group["value"].between(min(meta.values), max(meta.values))
        means = group[ok].groupby("dialogue")["value"].mean()
        column = np.full(len(index), np.nan)
        pos = index.get_indexer(means.index)
        column[pos[pos >= 0]] = means.to_numpy(dtype=float)[pos >= 0]
        out[str(code)] = column
    return out


def _scope_score(per_item: dict[str, np.ndarray], scope: Scope, items: dict[str, Any], n: int) -> np.ndarray:
    """A dialogue's score on a scope: the mean of its item scores (x100 for binary items; rescaled to 0-1 for an
    overall score over criteria of different ranges); NaN unless every item of the scope has a score."""
    columns = []
    for code in scope.codes:
        column = per_item.get(code, np.full(n, np.nan))
        meta = items[code]
        if scope.unit == "%":
            column = 100.0 * column
        elif scope.kind == "overall" and (scope.low, scope.high) == (0.0, 1.0):
            low, high = min(meta.values), max(meta.values)
            column = (column - low) / (high - low) if high > low else column * np.nan
        columns.append(column)
    return np.mean(np.vstack(columns), axis=0) if columns else np.full(n, np.nan)


def judge_values(run) -> pd.DataFrame:
    """The run's scored answers (dialogue, item code, value); replicate answers of a unit are all kept. A jury's
    combined answers (:mod:`scoring.judges.sources`)."""
    from scoring.judges.models import JudgeResult
    from scoring.judges.sources import is_jury, judge_frame

    if is_jury(run):
        return judge_frame(run)[0]

    rows = (JudgeResult.objects.filter(run=run, status=JudgeResult.Status.DONE, value__isnull=False)
            .values_list("dialogue_id", "item__code", "value"))
    dialogue, item, value = zip(*rows, strict=True) if rows else ((), (), ())
    return pd.DataFrame({"dialogue": np.asarray(dialogue, dtype=np.int64), "item": list(item),
                         "value": np.asarray(value, dtype=float)})


def load_scores(run, campaign: Campaign, *, study=None, judge: pd.DataFrame | None = None) -> Scores:
    """Physicians' and judge's per-dialogue scores on the campaign's population (check comparability first).
    ``study`` (:func:`scoring.reports.agreement.load_study` of the campaign) and ``judge`` (:func:`judge_values`)
    may be passed when the caller has them already."""
    from scoring.reports.agreement import load_study

    study = study if study is not None else load_study([campaign])
    judge = judge if judge is not None else judge_values(run)
    judged = set(judge["item"].unique().tolist())
    items = {i.code: i for i in study.items if i.code in judged}
    scopes = _scopes(list(items.values()))
    sample = sampling.sample_of(campaign)
    in_scope = campaign.population().values_list("pk", "source_model")
    if sample is not None:
        frame = {int(pk) for pk, _ in sample.population}
        in_scope = [(pk, model) for pk, model in in_scope if pk in frame]
    pairs = sorted(in_scope)
    index = pd.Index([pk for pk, _ in pairs])
    models = np.asarray([model or sampling.UNKNOWN_MODEL for _, model in pairs], dtype=object)
    labels = study.labels.assign(value=study.labels["value"].astype(float))
    physicians = _per_item(labels[labels["dialogue"].isin(index)], index, items)
    judge_items = _per_item(judge[judge["dialogue"].isin(index)], index, items)
    n = len(index)
    in_sample = (np.isin(index.to_numpy(), np.asarray(sample.dialogues, dtype=np.int64)) if sample is not None
                 else np.zeros(n, bool))
    warnings = []
    W = Words(study.words or None)
    outside = int((~labels["dialogue"].isin(index)).groupby(labels["dialogue"]).any().sum()) if len(labels) else 0
    if outside:
        warnings.append(said(sentences.OUTSIDE_POPULATION, n=outside, rater=word(W.rater), unit=word(W.unit)).text)
    probabilities = sampling.inclusion_probabilities(sample)
    pi = (None if probabilities is None else
          np.array([probabilities.get(int(pk), np.nan) for pk in index], dtype=float))
    return Scores(dialogue_ids=index.to_numpy(), models=models, scopes=scopes,
                  physicians={s.key: _scope_score(physicians, s, items, n) for s in scopes},
                  judge={s.key: _scope_score(judge_items, s, items, n) for s in scopes},
                  in_sample=in_sample, sample=sample, warnings=warnings, words=dict(study.words or {}), pi=pi)


# ---------------------------------------------------------------------------------------------------------------
# estimates
# ---------------------------------------------------------------------------------------------------------------
def _public(estimate: dict, keep: Sequence[str] = ()) -> dict:
    out = {k: estimate.get(k) for k in ("value", "ci_low", "ci_high", "n", "se", *keep)}
    out["warnings"] = list(estimate.get("warnings", []))
    return _no_variation(out)


def _no_variation(figure: dict) -> dict:
    """An interval of zero width (every score the same: no spread to estimate from) is noted as such and has no
    limits (null, as every other report figure and the judge's own scores give it), never [x, x]."""
    low, high = figure.get("ci_low"), figure.get("ci_high")
    if low is not None and high is not None and abs(high - low) <= NO_VARIATION_TOL:
        figure.update(ci_note=NO_VARIATION, ci_low=None, ci_high=None)
    return figure


def no_ppi_reason(sample: RandomSample | None, words: dict | None = None) -> str | None:
    reason = no_ppi_said(sample, words)
    return None if reason is None else reason.text


def no_ppi_said(sample: RandomSample | None, words: dict | None = None) -> Said | None:
    """Why there is no PPI++ estimate (None: there is one), as a sentence (:mod:`scoring.reports.sentences`)."""
    W = Words(words or None)
    if sample is not None and sample.kind == RandomSample.Kind.ACTIVE:
        return said(gettext_noop("No PPI++ estimate: this campaign drew an active sample (each %(unit)s with its own "
                                 "probability, higher where the judge is unsure), and PPI++ assumes every %(unit)s "
                                 "had the same chance. The active estimate is its counterpart for this sample."),
                    unit=word(W.unit))
    if sample is not None:
        return None
    return said(gettext_noop("No PPI++ estimate: the %(raters)s' %(units)s of this campaign were assigned by hand "
                             "(every %(unit)s in scope, or a coordinator's choice), not drawn at random. PPI++ "
                             "corrects the judge with its error on the %(rater)s-labelled %(units)s, which is an "
                             "unbiased measure of its error on all %(units)s only when those are a random sample. "
                             "Draw a random sample when creating a campaign (or on its page, before assigning), or "
                             "declare imported labels a random sample (import_labels --random-sample)."),
                raters=word(W.raters), units=word(W.units), unit=word(W.unit), rater=word(W.rater))


#: How differences between two models' scores are measured: percentage points on a % score, points on a scale.
DIFFERENCE_UNITS = {"%": "percentage points", "points": "points"}


def _fmt(figure: dict, unit: str, digits: int = 1) -> str:
    """"61.4% [54.4%, 68.5%]": an estimate with its interval, the decimals its width needs."""
    value, low, high = figure.get("value"), figure.get("ci_low"), figure.get("ci_high")
    if value is None:
        return "undefined"
    d = formatting.decimals(value, low, high, digits)
    mark = "%" if unit == "%" else ""
    text = formatting.number(value, d) + mark
    if figure.get("ci_note"):
        return f"{text} (95% CI {figure['ci_note']})"
    if low is None or high is None:
        return text
    return f"{text} [{formatting.number(low, d)}{mark}, {formatting.number(high, d)}{mark}]"


def _fmt_difference(value: float, low: float | None, high: float | None, unit: str, digits: int = 1,
                    sign: bool = False) -> str:
    """"9.82 percentage points [0.03, 19.63]": a difference with its unit and the decimals that show on which side
    of 0 its limits lie."""
    return formatting.estimate(value, low, high, digits, sign=sign, unit=DIFFERENCE_UNITS.get(unit, unit))


#: :data:`DIFFERENCE_UNITS` as the pages say them, and a difference written with its unit.
_UNIT_SAID = {"%": (gettext_noop("percentage points"), gettext_noop("%(value)s percentage points%(interval)s")),
              "points": (gettext_noop("points"), gettext_noop("%(value)s points%(interval)s"))}


def _difference_said(value: float, low: float | None, high: float | None, unit: str, digits: int = 1,
                     sign: bool = False) -> Said | str:
    """:func:`_fmt_difference` as a sentence: the unit's words said in the page's language, the numbers as
    written."""
    if unit not in _UNIT_SAID:
        return _fmt_difference(value, low, high, unit, digits, sign)
    bare = formatting.estimate(value, low, high, digits, sign=sign)
    number = bare.split(" ", 1)[0]
    return said(_UNIT_SAID[unit][1], value=number, interval=figure(bare[len(number):]))


def _fmt_said(fig: dict, unit: str, digits: int = 1) -> Said | Any:
    """:func:`_fmt` as a sentence's parameter."""
    return said(gettext_noop("undefined")) if fig.get("value") is None else figure(_fmt(fig, unit, digits))


def _digits(scope: Scope) -> int:
    return 1 if scope.unit == "%" else 2


def _masks(scores: Scores, key: str, model: str) -> dict[str, np.ndarray]:
    in_model = scores.models == model
    y, yhat = scores.physicians[key], scores.judge[key]
    labelled = in_model & np.isfinite(y) & (scores.in_sample if scores.sample is not None else True)
    judged = in_model & np.isfinite(yhat)
    return {"labelled": labelled, "judged": judged, "pairs": labelled & judged, "unlabelled": judged & ~labelled,
            "in_model": in_model}


def lambda_text(words: dict | None = None) -> str:
    """What λ in the tables is."""
    return lambda_said(words).text


def lambda_said(words: dict | None = None) -> Said:
    W = Words(words or None)
    return said(gettext_noop("λ (lambda) is the weight PPI++ gives the judge's scores, chosen from the data to make "
                             "the interval narrowest: 0 uses the %(raters)s' labels alone, 1 the judge's scores "
                             "corrected by its error in full."), raters=word(W.raters))


def _worth(ppi_fig: dict, words: dict | None = None) -> Said | None:
    if ppi_fig.get("gain") is None:
        return None
    W = Words(words or None)
    gain = ppi_fig["gain"]
    lam = said(gettext_noop("lambda %(lam)s, the weight PPI++ gives the judge's scores (0 to 1)"),
               lam=f"{ppi_fig['lam']:.2f}")
    if gain < 0.5:
        return said(gettext_noop("The judge's labels add nothing here (%(lambda)s): the PPI++ interval is as wide as "
                                 "the %(raters)s' own."), **{"lambda": lam}, raters=word(W.raters))
    return said(gettext_noop("The judge's labels are worth %(gain)s more %(rater)s-labelled %(unit)s(s) (effective "
                             "sample size %(effective_n)s from %(n)s labelled; %(lambda)s)."),
                gain=f"{gain:.0f}", rater=word(W.rater), unit=word(W.unit),
                effective_n=f"{ppi_fig['effective_n']:.0f}", n=ppi_fig["n"], **{"lambda": lam})


NO_ACTIVE = "No active estimate: the {units} were not drawn by an active rule (each with its own probability)."
NO_ACTIVE_SAID = gettext_noop("No active estimate: the %(units)s were not drawn by an active rule (each with its own "
                              "probability).")


def _active_estimate(scores: Scores, scope: Scope, m: dict[str, np.ndarray], alpha: float) -> dict:
    """The active estimate (:func:`core.stats.active.active_mean`) of one model's score: every dialogue of the
    model the judge scored, with its inclusion probability, labelled when drawn and labelled."""
    W = scores.W
    empty = {"value": None, "ci_low": None, "ci_high": None, "n": int(m["pairs"].sum()), "se": None,
             "n_unlabeled": int(m["unlabelled"].sum()), "lam": None, "expected_n": None, "effective_n": None,
             "gain": None, "available": False, "worth": None, "warnings": []}
    if not scores.is_active:
        out = {**empty, "reason": None}
        put(out, "reason", said(NO_ACTIVE_SAID, units=word(W.units)))
        return out
    units = m["judged"] & np.isfinite(scores.pi)
    labelled = m["pairs"][units]
    y = np.where(labelled, scores.physicians[scope.key][units], np.nan)
    fig = active.active_mean(y, scores.judge[scope.key][units], scores.pi[units], labelled, alpha=alpha)
    estimate = _public(fig, ("n_unlabeled", "lam", "expected_n", "effective_n", "gain"))
    drawn_unlabelled = int((scores.in_sample & units & ~m["labelled"]).sum())
    if drawn_unlabelled:
        estimate["warnings"].append(said(sentences.DRAWN_UNLABELLED, n=drawn_unlabelled, unit=word(W.unit),
                                         rater=word(W.rater), units=word(W.units)).text)
    estimate["available"] = fig["value"] is not None and fig["ci_low"] is not None
    estimate["reason"] = None if estimate["available"] else (fig["warnings"] or ["Undefined."])[0]
    put(estimate, "worth", _worth(fig, scores.words) if fig.get("gain") is not None else None)
    return estimate


def _weighted_physicians(scores: Scores, scope: Scope, m: dict[str, np.ndarray], alpha: float) -> dict:
    """The physicians' own estimate on an active sample: their mean weighted by 1/pi (Hajek) and its interval."""
    units = m["in_model"] & np.isfinite(scores.pi)
    labelled = m["labelled"][units]
    y = np.where(labelled, scores.physicians[scope.key][units], np.nan)
    if labelled.sum() < 2:
        return _public(ppi.classical_mean(y[labelled], alpha=alpha))
    fig = active.active_mean(y, np.zeros(int(units.sum())), scores.pi[units], labelled, alpha=alpha,
                             estimator="ratio", lam=0.0)
    out = _public(fig)
    out["warnings"] = [w for w in out["warnings"] if not w.startswith("The judge gave every")]
    out["weighted"] = True
    return out


def _estimate(scores: Scores, scope: Scope, model: str, alpha: float) -> dict:
    m = _masks(scores, scope.key, model)
    y, yhat = scores.physicians[scope.key], scores.judge[scope.key]
    W = scores.W
    # the raters' and the judge's own intervals take the sample SD (ddof 1); PPI++ keeps ppi_py's conventions
    physicians = (_weighted_physicians(scores, scope, m, alpha) if scores.is_active
                  else _public(ppi.classical_mean(y[m["labelled"]], alpha=alpha, ddof=1)))
    if scores.sample is None and physicians["n"]:
        physicians["warnings"].insert(0, said(sentences.NOT_DRAWN_AT_RANDOM, units=word(W.units)).text)
    judge = {**_public(ppi.classical_mean(yhat[m["judged"]], alpha=alpha, ddof=1)), "validated": False,
             "note": NOT_VALIDATED}
    reason = no_ppi_said(scores.sample, scores.words)
    if reason is None:
        fig = ppi.ppi_mean(y[m["pairs"]], yhat[m["pairs"]], yhat[m["unlabelled"]], alpha=alpha)
        estimate = _public(fig, ("n_unlabeled", "lam", "effective_n", "gain"))
        missing_judge = int((m["labelled"] & ~m["judged"]).sum())
        if missing_judge:
            estimate["warnings"].append(said(sentences.NO_JUDGE_SCORE, n=missing_judge, rater=word(W.rater),
                                             unit=word(W.unit)).text)
        estimate["available"] = fig["value"] is not None and fig["ci_low"] is not None
        estimate["reason"] = None if estimate["available"] else (fig["warnings"] or ["Undefined."])[0]
        put(estimate, "worth", _worth(fig, scores.words))
    else:
        estimate = {"value": None, "ci_low": None, "ci_high": None, "n": int(m["pairs"].sum()), "se": None,
                    "n_unlabeled": int(m["unlabelled"].sum()), "lam": None, "effective_n": None, "gain": None,
                    "available": False, "reason": None, "worth": None, "warnings": []}
        put(estimate, "reason", reason)
    return {"physicians": physicians, "judge": judge, "ppi": estimate,
            "active": _active_estimate(scores, scope, m, alpha)}


def _verdict(diff: dict, a: str, b: str) -> Said:
    if diff.get("ci_low") is None:
        return said(gettext_noop("undefined"))
    if diff["ci_low"] > 0:
        return said(gettext_noop("%(model)s scores higher"), model=a)
    if diff["ci_high"] < 0:
        return said(gettext_noop("%(model)s scores higher"), model=b)
    return said(gettext_noop("no difference shown"))


def _differences(scores: Scores, per_model: dict[str, dict], alpha: float) -> list[dict]:
    out = []
    for scope in scores.scopes:
        for a, b in itertools.combinations(scores.model_names, 2):
            entry: dict[str, Any] = {"scope": scope.key, "scope_name": scope.short, "unit": scope.unit,
                                     "difference_unit": DIFFERENCE_UNITS.get(scope.unit, scope.unit),
                                     "digits": _digits(scope), "a": a, "b": b}
            short = scope.short_said()
            if isinstance(short, Said):
                put(entry, "scope_name", short)
            if scope.unit in _UNIT_SAID:
                put(entry, "difference_unit", said(_UNIT_SAID[scope.unit][0]))
            for source in ("physicians", "judge", "ppi", "active"):
                fa, fb = per_model[a][scope.key][source], per_model[b][scope.key][source]
                if source in ("ppi", "active") and not (fa.get("available") and fb.get("available")):
                    diff = {"value": None, "ci_low": None, "ci_high": None, "se": None}
                else:
                    diff = ppi.difference(fa, fb, alpha=alpha)
                entry[source] = _no_variation({**diff, "n": [fa.get("n"), fb.get("n")], "verdict": None})
                put(entry[source], "verdict", _verdict(diff, a, b))
            for source in ("ppi", "active"):
                if entry[source]["value"] is None:
                    side = next((per_model[m][scope.key][source] for m in (a, b)
                                 if per_model[m][scope.key][source].get("reason")), {})
                    entry[source]["reason"] = side.get("reason")
                    if (side.get(KEY) or {}).get("reason"):
                        entry[source].setdefault(KEY, {})["reason"] = side[KEY]["reason"]
            entry["judge"]["note"] = NOT_VALIDATED
            out.append(entry)
    return out


def _ranking(scores: Scores, per_model: dict[str, dict], differences: list[dict]) -> dict:
    """The model ranking summary, on the overall score (else the first scope), built on the PPI++ differences.
    Differences carry their unit (percentage points on a % score) and the decimals that show on which side of 0
    their limits lie, so "[0.03, 19.63]" (above 0: a difference shown) reads apart from "[-23.02, 0.04]". Its
    ``text`` in English and as a sentence under ``said`` (:mod:`scoring.reports.sentences`)."""
    out = _ranking_said(scores, per_model, differences)
    text = out.pop("text")
    put(out, "text", text)
    return out


def _ranking_said(scores: Scores, per_model: dict[str, dict], differences: list[dict]) -> dict:
    W = scores.W
    scope = next((s for s in scores.scopes if s.key == "all"), scores.scopes[0] if scores.scopes else None)
    if scope is None or len(scores.model_names) < 2:
        return {"scope": None, "order": [], "text": said(gettext_noop("A model ranking needs at least two %(models)s "
                                                                      "with scores."), models=word(W.models))}
    digits = _digits(scope)
    key = "active" if scores.is_active else "ppi"
    first = per_model[scores.model_names[0]][scope.key][key]
    if not all(per_model[m][scope.key][key]["available"] for m in scores.model_names):
        missing = first if first["reason"] else next(per_model[m][scope.key][key] for m in scores.model_names
                                                     if not per_model[m][scope.key][key]["available"])
        stored = (missing.get(KEY) or {}).get("reason")
        reason = (sentences.unstored(stored) if stored else
                  said(sentences.IN_A_ROW, sentences=sentences.warning(missing["reason"])))
        return {"scope": scope.key, "order": [],
                "text": said(gettext_noop("No PPI++ ranking of the %(models)s. %(reason)s") if key == "ppi" else
                             gettext_noop("No Active ranking of the %(models)s. %(reason)s"),
                             models=word(W.models), reason=reason)}
    order = sorted(scores.model_names, key=lambda m: -per_model[m][scope.key][key]["value"])
    scores_text = ", ".join(f"{m} {_fmt(per_model[m][scope.key][key], scope.unit, digits)}" for m in order)
    pairs = [d for d in differences if d["scope"] == scope.key]
    shown, unclear, judge_differs = [], [], 0
    for d in pairs:
        fig, a, b = d[key], d["a"], d["b"]
        if fig["verdict"] == f"{a} scores higher":
            shown.append(said(gettext_noop("%(a)s above %(b)s by %(difference)s"), a=a, b=b,
                              difference=_difference_said(fig["value"], fig["ci_low"], fig["ci_high"], scope.unit,
                                                          digits)))
        elif fig["verdict"] == f"{b} scores higher":
            shown.append(said(gettext_noop("%(a)s above %(b)s by %(difference)s"), a=b, b=a,
                              difference=_difference_said(-fig["value"], -fig["ci_high"], -fig["ci_low"], scope.unit,
                                                          digits)))
        else:
            unclear.append(said(gettext_noop("%(a)s and %(b)s (%(a)s - %(b)s %(difference)s)"), a=a, b=b,
                                difference=_difference_said(fig["value"], fig["ci_low"], fig["ci_high"], scope.unit,
                                                            digits, sign=True)))
        judge_differs += d["judge"]["verdict"] != fig["verdict"]
    parts = [said(gettext_noop("PPI++ scores over %(scope)s: %(scores)s.") if key == "ppi" else
                  gettext_noop("Active scores over %(scope)s: %(scores)s."),
                  scope=scope.name_said(lower=True), scores=figure(scores_text))]
    if shown:
        parts.append(said(gettext_noop("Differences the 95%% intervals show (the interval excludes 0): "
                                       "%(differences)s."), differences=joined(shown, "; ")))
    if unclear:
        parts.append(said(gettext_noop("No difference shown (the interval includes 0) between %(pairs)s."),
                          pairs=joined(unclear, "; ")))
    if judge_differs:
        parts.append(said(gettext_noop("The judge's scores alone would call %(n)s of %(total)s comparison(s) "
                                       "differently; they are not validated (the judge's bias is not in their "
                                       "intervals)."), n=judge_differs, total=len(pairs)))
    return {"scope": scope.key, "order": order, "text": in_a_row(parts)}


def _worth_text(scores: Scores, per_model: dict[str, dict], scope_key: str | None) -> Said | None:
    """One sentence: what the judge's labels are worth per model on the ranking's score."""
    W = scores.W
    scope = next((s for s in scores.scopes if s.key == scope_key), None)
    key = "active" if scores.is_active else "ppi"
    figures = [(m, per_model[m][scope.key][key]) for m in scores.model_names] if scope else []
    figures = [(m, f) for m, f in figures if f.get("gain") is not None]
    if not figures:
        return None
    parts = [said(gettext_noop("%(gain)s for %(model)s (effective sample size %(effective_n)s from %(n)s labelled)"),
                  gain=f"{f['gain']:.0f}", model=m, effective_n=f"{f['effective_n']:.0f}", n=f["n"])
             for m, f in figures]
    return said(gettext_noop("On %(scope)s, the judge's labels are worth %(parts)s more %(rater)s-labelled "
                             "%(unit)s(s)."), scope=scope.name_said(lower=True), parts=joined(parts, ", "),
                rater=word(W.rater), unit=word(W.unit))


def methods(alpha: float = ALPHA, words: dict | None = None, *, binary: bool = True) -> str:
    """The methods of the three estimates, in the report's words; Table 6's dimension scores only with binary
    items."""
    W = Words(words or None)
    level = f"{1 - alpha:.0%}"
    scores_text = (f"Scores: per dimension and over all binary items, the {W.unit}'s share of items met in %; per "
                   "criterion on levels or a scale, the mean score." if binary else
                   "Scores: per criterion the mean score; over all criteria the mean of the scores rescaled to 0-1 "
                   "(the mean score when every criterion has the same range).")
    binary_label = (" (not the majority: the estimand is the average {r}'s score; the mean uses every rater and needs "
                    "no tie rule; for a binary item it is the share of {rs} who marked it met, Table 6's "
                    f"per-{W.unit} score)" if binary else
                    " (not the majority: the estimand is the average {r}'s score; the mean uses every rater and needs "
                    "no tie rule)").format(r=W.rater, rs=W.raters)
    return (
        f"Model scores three ways, per {W.model}, with {level} intervals. {W.Raters} only: the mean of the "
        f"{W.raters}' scores on the {W.units} they labelled and its normal (CLT) interval with the sample SD (ddof "
        "1). Judge only: the mean of "
        f"the judge's scores on every {W.unit} it scored, with the same kind of interval -- not validated: it "
        "contains the judge's sampling error but not its bias. PPI++: prediction-powered inference with power "
        f"tuning ({CITATION}); the estimate lambda x (judge's mean on the {W.units} {W.raters} did not label) + "
        f"({W.raters}' mean - lambda x judge's mean on those they labelled), with lambda (λ) in [0, 1] chosen from "
        f"the data to make the interval narrowest (0: the {W.raters}' own estimate, 1: the original PPI), and a "
        "normal interval from the two parts' variances; computed by core.stats.ppi, whose estimates and intervals "
        f"equal those of the authors' package ppi_py (tested). Assumptions: the {W.rater}-labelled {W.units} are a "
        f"random sample of the {W.units} in scope (drawn by the campaign with a recorded seed, or declared so for "
        "imported labels; otherwise no PPI++ estimate is given); the judge and the "
        f"{W.raters} labelled the same labelled {W.units}; {W.units} are independent draws of each model's output "
        f"(the estimand is the mean score {W.raters} give to {W.units} like these). Sampled {W.units} no {W.rater} "
        "has finished yet count as unlabelled, which keeps the sample random only if what is left undone is "
        f"unrelated to the {W.units}' quality. The human label of {W.a_unit} is the mean over the {W.raters} who "
        f"labelled it{binary_label}. {scores_text} A {W.unit} counts in a score when every item of it has a "
        f"{W.rater} (or judge) score. Effective sample size: the {W.rater}-labelled {W.units} a {W.raters}-only "
        "interval would need to be as narrow as the PPI++ one (n x classical variance / PPI++ variance); the "
        "judge's labels are worth the difference. Differences between two models: estimates on disjoint "
        f"{W.units}, so the difference's standard error is the root sum of squares of the two; a difference of "
        "% scores is in percentage points. Planner: from the labels so far (the pilot), the "
        f"{W.rater}-labelled {W.units} needed for a chosen interval half-width, {W.raters} only (z^2 var / h^2) "
        f"and with the judge scoring the model's {W.units} (the smallest n whose PPI++ variance with the tuned "
        "lambda reaches (h / z)^2; without clipping of lambda, ppi_py's closed form n0 M (1 - rho^2) / (M - rho^2 "
        "n0)); a plan is only as good as the pilot's estimate of the correlation and of the spread.")


def active_methods(words: dict | None = None) -> str:
    """The active estimate's method, added when the campaign drew an active sample."""
    W = Words(words or None)
    return (f" Active estimate (Zrnic T, Candès EJ (2024). Active statistical inference. ICML): the {W.units} were "
            f"drawn independently, each with its recorded probability pi (higher where the judge was unsure); the "
            f"estimate is the mean over every {W.unit} the judge scored of g + (Y - g) xi / pi, with g the judge's "
            f"score shrunk towards its mean by a weight lambda chosen from the data to make the interval narrowest "
            f"and xi 1 for a drawn {W.unit} with {W.rater} labels, and a normal interval from the terms' spread; the "
            f"{W.raters}' own estimate is their mean weighted by 1 / pi (Hajek). PPI++ is not given for such a "
            "sample, which is not uniform.")


def model_estimates(run, campaign: Campaign, *, alpha: float = ALPHA, scores: Scores | None = None, study=None,
                    judge: pd.DataFrame | None = None) -> dict:
    """The JSON block of the three estimates per doctor model and scope, the model differences, the ranking
    summary and the default planner (see the module docstring). ``run`` and ``campaign`` must be comparable;
    ``study``/``judge``: see :func:`load_scores`."""
    scores = scores or load_scores(run, campaign, study=study, judge=judge)
    per_model = {model: {s.key: _estimate(scores, s, model, alpha) for s in scores.scopes}
                 for model in scores.model_names}
    differences = _differences(scores, per_model, alpha)
    sample = scores.sample
    labelled_in_sample = None
    if sample is not None:
        any_label = np.zeros(len(scores.dialogue_ids), bool)
        for key in scores.physicians:
            any_label |= np.isfinite(scores.physicians[key])
        labelled_in_sample = int((any_label & scores.in_sample).sum())
    models = []
    for model in scores.model_names:
        in_model = scores.models == model
        entry = {"model": model, "n_dialogues": int(in_model.sum()),
                 "n_sampled": int((in_model & scores.in_sample).sum()), "scopes": per_model[model]}
        models.append(entry)
    reason = no_ppi_said(sample, scores.words)
    ranking = _ranking(scores, per_model, differences)
    W = scores.W
    binary = any(s.unit == "%" for s in scores.scopes)
    out = {
        "active": scores.is_active,
        "available": (reason is None or scores.is_active) and bool(scores.scopes),
        "reason": None,
        "alpha": alpha, "confidence": 1 - alpha,
        "human_label": "mean",
        "human_label_text": f"the mean over the {W.raters} who labelled the {W.unit}",
        "lambda_text": None,
        "sample": None if sample is None else {
            "kind": sample.kind, "text": sampling.describe(sample, W.unit, W.model), "size": sample.size,
            "seed": sample.seed,
            "stratified": sample.stratified, "population": len(sample.population), "strata": sample.strata,
            "labelled": labelled_in_sample, "rule": sample.rule or None},
        "scopes": [s.as_dict() for s in scores.scopes],
        "models": models,
        "differences": differences,
        "ranking": ranking,
        "worth_text": None,
        "planner": plan(scores, alpha=alpha),
        "methods": methods(alpha, scores.words, binary=binary) + (active_methods(scores.words)
                                                                   if scores.is_active else ""),
        "citation": CITATION,
        "warnings": list(scores.warnings),
    }
    if sample is not None:
        described = _sample_said(sample, W)
        if described.text == out["sample"]["text"]:  # the same words as annotation.sampling writes
            out["sample"].setdefault(KEY, {})["text"] = described.stored()
    put(out, "reason", reason if scores.scopes else said(gettext_noop("No scored item was judged: nothing to "
                                                                      "estimate.")))
    put(out, "lambda_text", lambda_said(scores.words))
    put(out, "worth_text", _worth_text(scores, per_model, ranking["scope"]))
    return out


# ---------------------------------------------------------------------------------------------------------------
# planner
# ---------------------------------------------------------------------------------------------------------------
def _sample_said(sample: RandomSample, W: Words) -> Said:
    """:func:`annotation.sampling.describe` as a sentence (its message ids) for the pages."""
    who = sample.created_by.username if sample.created_by else said(gettext_noop("the system"))
    when = f"{sample.created_at:%Y-%m-%d}"
    population = len(sample.population)
    if sample.kind == RandomSample.Kind.ACTIVE:
        rule = sample.rule or {}
        unrecorded = said(gettext_noop("not recorded"))

        def value(key: str) -> Any:
            found = rule.get(key)
            return f"{found:.3g}" if isinstance(found, int | float) else unrecorded

        return said(gettext_noop(
            "An active sample: %(size)s of the %(population)s %(units)s in scope, each drawn independently with its "
            "own probability (budget %(budget)s, uniform share %(share)s, minimum probability %(pi_min)s, following "
            "the uncertainty of judge run %(run)s), seed %(seed)s, by %(who)s on %(when)s; anyone can draw it again "
            "from the stored probabilities and the seed."), size=sample.size, population=population,
            units=word(W.units), budget=value("budget"), share=value("uniform_share"), pi_min=value("pi_min"),
            run=f"#{rule['run_id']}" if rule.get("run_id") else unrecorded, seed=sample.seed, who=who, when=when)
    if sample.kind == RandomSample.Kind.DECLARED:
        return said(gettext_noop(
            "Declared by %(who)s on %(when)s: the imported labels of %(size)s %(unit)s(s) come from a random sample "
            "of the %(population)s %(units)s in scope (the analyst's declaration, not checked here)."), who=who,
            when=when, size=sample.size, unit=word(W.unit), population=population, units=word(W.units))
    per_model = joined([said(gettext_noop("%(name)s %(sample)s of %(population)s"), name=name, sample=s["sample"],
                             population=s["population"]) for name, s in sample.strata.items()], ", ")
    how = (said(gettext_noop("within each %(model)s (%(per_model)s)"), model=word(W.model), per_model=per_model)
           if sample.stratified else said(gettext_noop("from all of them")))
    return said(gettext_noop("A random sample of %(size)s of the %(population)s %(units)s in scope, drawn %(how)s "
                             "with seed %(seed)s by %(who)s on %(when)s; anyone can draw it again from the seed."),
                size=sample.size, population=population, units=word(W.units), how=how, seed=sample.seed, who=who,
                when=when)


def _plan_sentence(scope: Scope, half_width: float, plan_: dict, total: int | None, what: Said,
                   words: dict | None = None) -> Said:
    W = Words(words or None)
    h = f"+/-{half_width:g}"
    if scope.unit == "%":
        h = said(gettext_noop("%(half_width)s points"), half_width=h)
    alone = plan_["physicians_only"]
    if alone is None:
        why = (plan_["warnings"] or [None])[0]
        return said(gettext_noop("%(what)s: %(h)s cannot be planned from this pilot (%(why)s)"), what=what, h=h,
                    why=sentences.warning(why) if why else said(gettext_noop("undefined")))
    with_judge = None
    if plan_["with_judge"] is not None:
        with_judge = (said(gettext_noop(", or %(n)s with this judge scoring %(total)s %(unit)s(s)"),
                           n=plan_["with_judge"], total=total, unit=word(W.unit)) if total is not None else
                      said(gettext_noop(", or %(n)s with this judge"), n=plan_["with_judge"]))
    elif plan_.get("with_judge_unlimited") is not None:
        with_judge = said(gettext_noop(", more than the %(total)s %(unit)s(s) in scope: not reachable there even "
                                       "with the judge (were the judge to score more %(units)s, %(n)s "
                                       "%(rater)s-labelled ones would do)"),
                          total=total, unit=word(W.unit), units=word(W.units), n=plan_["with_judge_unlimited"],
                          rater=word(W.rater))
    if with_judge is None:
        return said(gettext_noop("%(what)s: %(h)s needs %(n)s %(rater)s-labelled %(unit)s(s) alone."), what=what, h=h,
                    n=alone, rater=word(W.rater), unit=word(W.unit))
    return said(gettext_noop("%(what)s: %(h)s needs %(n)s %(rater)s-labelled %(unit)s(s) alone%(with_judge)s."),
                what=what, h=h, n=alone, rater=word(W.rater), unit=word(W.unit), with_judge=with_judge)


def plan(scores: Scores, *, scope: str | None = None, half_width: float | None = None,
         totals: dict[str, int] | None = None, alpha: float = ALPHA) -> dict:
    """Physician-labelled dialogues needed per model (and per pair of models, for their difference) for an
    interval of ``half_width`` on ``scope`` (default: every scope, each at its default half-width), planned from
    the labels so far. ``totals``: per model the dialogues the judge will score (default: those it scored)."""
    if half_width is not None and not half_width > 0:
        raise ValueError("The half-width must be positive.")
    chosen = [s for s in scores.scopes if scope in (None, s.key)]
    if scope is not None and not chosen:
        raise ValueError(f"Unknown score {scope!r}; choose one of {', '.join(s.key for s in scores.scopes)}.")
    out: dict[str, Any] = {"alpha": alpha, "scopes": []}
    for s in chosen:
        h = half_width if half_width is not None else default_half_width(s.low, s.high)
        pilots, rows = {}, []
        for model in scores.model_names:
            m = _masks(scores, s.key, model)
            pairs = np.isfinite(scores.physicians[s.key]) & m["judged"]
            y, yhat = scores.physicians[s.key][pairs], scores.judge[s.key][pairs]
            total = int(m["judged"].sum()) if totals is None else int(totals.get(model, 0))
            pilots[model] = (y, yhat, total or None)
            result = ppi.sample_size(y, yhat, h, n_total=total or None, alpha=alpha)
            row = {"model": model, **result, "text": None}
            put(row, "text", _plan_sentence(s, h, result, total or None,
                                            said(gettext_noop("%(model)s's score"), model=model), scores.words))
            rows.append(row)
        pairs_out = []
        for a, b in itertools.combinations(scores.model_names, 2):
            result = ppi.difference_sample_size([pilots[a], pilots[b]], h, alpha=alpha)
            total = min((t for t in (pilots[a][2], pilots[b][2]) if t), default=None)
            row = {"a": a, "b": b, **result, "text": None}
            put(row, "text", _plan_sentence(s, h, result, total,
                                            said(gettext_noop("%(a)s - %(b)s (per model)"), a=a, b=b), scores.words))
            pairs_out.append(row)
        entry = {"scope": s.key, "name": s.name, "unit": s.unit, "half_width": h, "models": rows,
                 "differences": pairs_out}
        name = s.name_said()
        if isinstance(name, Said):
            put(entry, "name", name)
        out["scopes"].append(entry)
    return out
