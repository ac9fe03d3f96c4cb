"""Analysis and exports of a preference study: win / tie / loss per source pair and criterion with Wilson CIs,
Bradley-Terry strengths with bootstrap CIs, inter-rater agreement (Fleiss' kappa, Krippendorff's alpha),
human-vs-judge agreement (MT-Bench convention, with and without ties, and Cohen's kappa), position bias and
judges' position consistency. Per-source figures exist only after unblinding; the statistics are in core.stats.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from itertools import combinations

import numpy as np
import pandas as pd
from django.utils.translation import gettext_noop

from core import stats
from core.site.spreadsheet import restore_cell
from scoring.preference import judging as preference_judging
from scoring.preference.errors import SEALED, PreferenceError
from scoring.preference.models import (
    PreferenceStudy,
)
from scoring.preference.rows import human_votes, pair_sources
from scoring.reports import sentences

OUTCOME_SCORE = {"first": 1.0, "tie": 0.5, "second": 0.0}
#: stored in English (the archive keeps it); the results page shows it in the page's language
NOTE_VOTES = gettext_noop("Each rater's vote counts once; votes on the same comparison are not independent, so the "
                          "Wilson intervals are somewhat narrow when several raters answer each comparison.")


def _wtl_table(rows: list[dict], pairs: dict[int, dict], sources: list[str], code: str) -> list[dict]:
    """Win / tie / loss per source pair (ordered as the study lists the sources)."""
    order = {s: i for i, s in enumerate(sources)}
    outcomes: dict[tuple[str, str], list[str]] = defaultdict(list)
    for row in rows:
        if row["criterion"] != code or row["outcome"] is None:
            continue
        first, second = pairs[row["pair"]]["first"], pairs[row["pair"]]["second"]
        outcome = row["outcome"]
        if order[first] > order[second]:
            first, second = second, first
            outcome = {"first": "second", "second": "first", "tie": "tie"}[outcome]
        outcomes[(first, second)].append(outcome)
    table = []
    for a, b in combinations(sources, 2):
        if (a, b) in outcomes:
            result = stats.win_tie_loss(outcomes[(a, b)])
            table.append({"a": a, "b": b, **result})
    return table


def _bt(rows: list[dict], pairs: dict[int, dict], sources: list[str], code: str, n_resamples: int,
        seed: int) -> dict:
    data = [(pairs[r["pair"]]["item"], pairs[r["pair"]]["first"], pairs[r["pair"]]["second"],
             OUTCOME_SCORE[r["outcome"]]) for r in rows if r["criterion"] == code and r["outcome"] is not None]
    if len(sources) > 2:
        return stats.bradley_terry_bootstrap(data, sources, n_resamples=n_resamples, seed=seed)
    result = stats.bradley_terry([(a, b, s) for _, a, b, s in data], sources)
    result["ci"] = None
    return result


def _agreement(rows: list[dict], code: str) -> dict:
    votes = [r for r in rows if r["criterion"] == code and r["outcome"] is not None]
    if not votes:
        return {"fleiss_kappa": {"value": None, "warnings": [sentences.NO_ANSWERS]},
                "krippendorff_alpha": {"value": None, "warnings": [sentences.NO_ANSWERS]}, "n_comparisons": 0}
    frame = pd.DataFrame(votes).pivot_table(index="pair", columns="rater", values="outcome", aggfunc="first")
    fleiss = stats.fleiss_kappa_detail(frame, categories=list(stats.PREFERENCE_OUTCOMES))
    coded = frame.replace({"first": 0.0, "tie": 1.0, "second": 2.0}).astype(float)
    alpha = stats.krippendorff_alpha_detail(coded.T.to_numpy(), level="nominal")
    alpha_ord = stats.krippendorff_alpha_detail(coded.T.to_numpy(), level="ordinal", value_domain=[0, 1, 2])
    return {"fleiss_kappa": {"value": fleiss["value"], "warnings": fleiss["warnings"]},
            "krippendorff_alpha": {"value": alpha["value"], "warnings": alpha["warnings"]},
            "krippendorff_alpha_ordinal": {"value": alpha_ord["value"], "warnings": alpha_ord["warnings"]},
            "n_comparisons": int(frame.shape[0]), "n_raters": int(frame.shape[1])}


def _human_human(rows: list[dict], code: str) -> dict:
    """MT-Bench's human-human agreement: every pair of different raters' votes on the same comparison."""
    by_pair: dict[int, list[str]] = defaultdict(list)
    for r in rows:
        if r["criterion"] == code and r["outcome"] is not None:
            by_pair[r["pair"]].append(r["outcome"])
    vote_pairs = [(a, b) for outcomes in by_pair.values() for a, b in combinations(outcomes, 2)]
    return stats.vote_agreement(vote_pairs)


def judge_summary(judge: dict, rows: list[dict], pairs: dict, sources: list[str], codes: list[str],
                  reveal: bool) -> dict:
    """A judge's position consistency, position bias and agreement with the humans (and, with ``reveal``, its win /
    tie / loss per source pair). ``judge``: run, judge, model, status and ``verdicts`` (see
    :func:`scoring.preference.judging.combine`)."""
    combo = preference_judging.combine(judge["verdicts"], codes)
    out = {"run": judge["run"], "judge": judge["judge"], "model": judge["model"],
           "status": judge["status"], "position_consistency": combo["consistency"],
           "position_consistency_overall": combo["consistency_overall"],
           "position_bias": stats.position_bias(combo["side_choices"]), "criteria": {}}
    for code in codes:
        human_by_pair: dict[int, list[str]] = defaultdict(list)
        for r in rows:
            if r["criterion"] == code and r["outcome"] is not None:
                human_by_pair[r["pair"]].append(r["outcome"])
        vote_pairs = [(v["final"], h) for (pair_id, c), v in combo["verdicts"].items() if c == code
                      and v["final"] is not None for h in human_by_pair.get(pair_id, [])]
        entry = {"agreement_with_humans": stats.vote_agreement(vote_pairs)}
        if reveal:
            judge_rows = [{"pair": pair_id, "criterion": code, "outcome": v["final"]}
                          for (pair_id, c), v in combo["verdicts"].items() if c == code and v["final"] is not None]
            entry["win_tie_loss"] = _wtl_table(judge_rows, pairs, sources, code)
        out["criteria"][code] = entry
    return out


def analysis(study: PreferenceStudy, *, n_resamples: int = 1000, seed: int | None = None) -> dict:
    """The full analysis; refuses before unblinding (per-source results would break the blinding)."""
    study = PreferenceStudy.objects.get(pk=study.pk)  # the current state, never a stale copy
    if not study.is_unblinded:
        raise PreferenceError(SEALED, status=409)
    judges = [{"run": run.pk, "judge": run.snapshot.get("name", ""), "model": run.snapshot.get("model", ""),
               "status": run.status, "verdicts": preference_judging.verdict_choices(run)}
              for run in study.judge_runs.order_by("created_at")]
    return results(study=study.name, sources=list(study.sources.order_by("position").values_list("label", flat=True)),
                   criteria=[tuple(c) for c in study.criteria.values_list("code", "name")],
                   votes=human_votes(study), pairs=pair_sources(study), judges=judges,
                   seed=study.seed if seed is None else seed, n_resamples=n_resamples)


def results(*, study: str, sources: list[str], criteria: list[tuple[str, str]], votes: list[dict], pairs: dict,
            judges: list[dict], seed: int, n_resamples: int) -> dict:
    """The analysis of a preference study from plain rows, for the results page (:func:`analysis`) and for the
    study archive's check (:func:`from_export_rows`). ``votes``: the humans' votes (pair, rater, criterion, side
    choice, outcome for the pair) in answer order; ``pairs``: pair -> item, first and second source; ``judges``:
    see :func:`judge_summary`."""
    codes = [c for c, _ in criteria]
    result = {"study": study, "sources": sources, "n_votes": len(votes), "seed": seed,
              "n_resamples": n_resamples, "notes": [NOTE_VOTES], "criteria": [],
              "position_bias": stats.position_bias([r["choice"] for r in votes]), "judges": []}
    for code, name in criteria:
        result["criteria"].append({
            "code": code, "name": name,
            "n_votes": sum(1 for r in votes if r["criterion"] == code),
            "win_tie_loss": _wtl_table(votes, pairs, sources, code),
            "bradley_terry": _bt(votes, pairs, sources, code, n_resamples, seed),
            "agreement": _agreement(votes, code),
            "human_human": _human_human(votes, code),
            "position_bias": stats.position_bias([r["choice"] for r in votes if r["criterion"] == code]),
        })
    for judge in judges:
        result["judges"].append(judge_summary(judge, votes, pairs, sources, codes, reveal=True))
    return result


def sealed_results(*, study: str, criteria: list[tuple[str, str]], votes: list[dict], locked: bool) -> dict:
    """What a study shows before unblinding, from its humans' side choices alone (no outcome, no source): the votes
    per criterion and, once locked, the humans' position bias. The study archive keeps these for a sealed study."""
    out: dict = {"study": study, "n_votes": len(votes),
                 "criteria": [{"code": code, "name": name, "n_votes": sum(1 for r in votes if r["criterion"] == code)}
                              for code, name in criteria]}
    if locked:
        out["position_bias"] = stats.position_bias([r["choice"] for r in votes])
    return out


def from_export_rows(rows: Iterable[Mapping[str, str]], *, sources: list[str], judges: list[dict]
                     ) -> tuple[list[dict], dict, list[dict]]:
    """The inverse of :func:`export_rows` read back from CSV (after unblinding): the votes, pairs and judges that
    :func:`results` takes. ``sources`` in the study's order (a pair's first source is the one listed first);
    ``judges``: run (the judge's rater name in the rows), judge, model, status, in the analysis's order."""
    order = {s: n for n, s in enumerate(sources)}
    votes: list[dict] = []
    pairs: dict[str, dict] = {}
    verdicts: dict[str, dict] = {j["run"]: {} for j in judges}
    for raw in rows:
        row = {key: restore_cell(value or "") for key, value in raw.items()}
        pair, a, b = row["comparison"], row["source_a"], row["source_b"]
        if row["rater_kind"] == "judge":
            first, second = (a, b) if row["order"] == "forward" else (b, a)
            pairs.setdefault(pair, {"item": row["item"], "first": first, "second": second})
            verdicts.setdefault(row["rater"], {}).setdefault(pair, {}).setdefault(row["order"], {})[
                row["criterion"]] = row["choice"]
            continue
        first, second = (a, b) if order[a] <= order[b] else (b, a)
        pairs.setdefault(pair, {"item": row["item"], "first": first, "second": second})
        votes.append({"pair": pair, "rater": row["rater"], "criterion": row["criterion"], "choice": row["choice"],
                      "outcome": preference_judging.to_outcome(row["choice"], a == first)})
    return votes, pairs, [{**j, "verdicts": verdicts.get(j["run"], {})} for j in judges]


def blinded_summary(study: PreferenceStudy) -> dict:
    """What may be shown before unblinding: humans' position bias and agreement between raters (both computed
    without naming a source)."""
    rows = human_votes(study)
    codes = list(study.criteria.values_list("code", flat=True))
    return {"position_bias": stats.position_bias([r["choice"] for r in rows]),
            "agreement": {code: _agreement(rows, code) for code in codes}, "n_votes": len(rows)}


def fmt(value) -> str:
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return "undefined"
    return f"{value:.3f}" if isinstance(value, float) else str(value)
