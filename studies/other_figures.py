"""The preference and Delphi figures of a study archive. At export the figures are what the app's pages show
(:func:`scoring.preference.analysis.analysis`, :func:`delphi.services.item_stats` and ``round_summary``); the
check (:func:`recompute`) feeds the same statistics functions with the archive's own rows (``preference/<n>/
votes.csv``, ``delphi/<n>/responses.csv`` and ``panel.csv``) and settings (``settings.json``). Names use the study's
title or name, the round number, the item code and criterion code, never database ids.

A preference study sealed until unblinding keeps only what the app shows while sealed: the votes per criterion and,
once locked, the humans' position bias (side A against side B, which says nothing about the sources)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from studies.archive import Archive
from studies.figure_rows import flatten, printed

PANEL_COLUMNS = ["round", "panelist", "started", "completed", "familiarity", "practice", "theory", "literature",
                 "intuition"]


@dataclass
class ArchiveFile:
    path: str
    content: Any  # text, or a value written as JSON
    description: str


# ---------------------------------------------------------------------------------------------------------------
# figure rows, the same at export and check
# ---------------------------------------------------------------------------------------------------------------
def _rows(prefix: str, kind: str, fingerprint: str, figures: Iterable[tuple[str, Any]]) -> list[dict]:
    rows = [{"figure": f"{prefix} data fingerprint", "value": fingerprint, "kind": kind, "fingerprint": fingerprint}]
    rows += [{"figure": f"{prefix} {name}", "value": printed(value), "kind": kind, "fingerprint": fingerprint}
             for name, value in figures]
    return rows


def _fingerprint(*texts: str) -> str:
    digest = hashlib.sha256()
    for text in texts:
        digest.update(hashlib.sha256(text.encode("utf-8")).digest())
    return digest.hexdigest()


def preference_figure_rows(name: str, results: dict, fingerprint: str) -> list[dict]:
    """A preference study's results (or its sealed summary) as figure rows: win / tie / loss by source pair
    ("A vs B"), judges by name."""
    return _rows(f"preference {name}", "preference", fingerprint, flatten(_named(results)))


def _named(value: Any) -> Any:
    if isinstance(value, dict):
        named = {key: _named(v) for key, v in value.items() if key != "judges"}
        if isinstance(value.get("judges"), list):
            named["judges"] = {}
            for judge in value["judges"]:
                key = str(judge.get("judge") or judge.get("model") or "judge")
                n = 1
                while (key if n == 1 else f"{key}#{n}") in named["judges"]:
                    n += 1
                named["judges"][key if n == 1 else f"{key}#{n}"] = _named(judge)
        return named
    if isinstance(value, list) and value and all(isinstance(v, dict) and {"a", "b"} <= set(v) for v in value):
        return {f"{v['a']} vs {v['b']}": _named(v) for v in value}
    if isinstance(value, list):
        return [_named(v) for v in value]
    return value


def delphi_round_figures(items: Mapping[str, dict], summary: dict, validation: dict | None) -> dict:
    """A round's figures: per item code its statistics and consensus decision, the round's panel flow,
    authority and Kendall's W, and for a validation round the reliability and validity report."""
    out: dict[str, Any] = {"items": {}, "round": summary}
    for code, stats in items.items():
        entry = {k: v for k, v in stats.items() if k not in ("consensus", "consensus_checks", "distribution")}
        entry["distribution"] = {str(rating): count for rating, count in stats["distribution"].items()}
        entry["decision"] = {True: "consensus", False: "no consensus"}.get(stats.get("consensus"), "undefined")
        out["items"][code] = entry
    if validation is not None:
        out["validation"] = validation
    return out


def delphi_figure_rows(title: str, rounds: list[tuple[int, dict]], fingerprint: str) -> list[dict]:
    figures = [(f"round {number} {name}", value) for number, figures in rounds for name, value in flatten(figures)]
    return _rows(f"delphi {title}", "delphi", fingerprint, figures)


# ---------------------------------------------------------------------------------------------------------------
# export: the files and the figures the app shows
# ---------------------------------------------------------------------------------------------------------------
def preference_settings(study) -> dict:
    """What a preference study's figures depend on besides its votes: sources and criteria in order, seed and
    resamples, the judge runs (by their name in votes.csv) and whether the study is sealed."""
    return {"study": study.name, "status": study.status, "unblinded": study.is_unblinded,
            "locked": study.status == study.Status.LOCKED,
            "sources": list(study.sources.order_by("position").values_list("label", flat=True))
            if study.is_unblinded else [],  # with the judges' forward choices the order would name the winner
            "criteria": [list(c) for c in study.criteria.values_list("code", "name")],
            "seed": study.seed if study.is_unblinded else None,  # the seed draws the sides: sealed with the results
            "n_resamples": 1000,
            "judges": [{"run": f"judge-run-{run.pk}", "judge": run.snapshot.get("name", ""),
                        "model": run.snapshot.get("model", ""), "status": run.status}
                       for run in study.judge_runs.order_by("created_at")] if study.is_unblinded else []}


def delphi_settings(study, rounds) -> dict:
    """A Delphi study's consensus rule and each round's kind and items in order."""
    from delphi import services

    return {"study": study.title, "rule": study.consensus_rule(),
            "rounds": [{"number": rnd.number, "kind": rnd.kind, "validation": rnd.is_validation,
                        "items": services.instrument_rows(rnd)} for rnd in rounds]}


def exports(project) -> tuple[list[ArchiveFile], list[dict]]:
    """The preference and Delphi files of the archive and their figure rows (as the app computes them now)."""
    from delphi import services
    from delphi.exports import reporting_sheets, response_rows, to_csv
    from delphi.models import DelphiStudy
    from scoring.preference.analysis import analysis, sealed_results
    from scoring.preference.models import PreferenceStudy
    from scoring.preference.rows import export_rows, human_votes

    files: list[ArchiveFile] = []
    figure_rows: list[dict] = []
    for n, study in enumerate(DelphiStudy.objects.filter(project=project).order_by("pk"), 1):
        rows = list(response_rows(study))
        columns = list(rows[0]) if rows else ["study", "round", "panelist", "item"]
        rounds = list(study.rounds.select_related("version").order_by("number"))
        responses = to_csv(rows, columns)
        panel = to_csv([{"round": rnd.number, **row} for rnd in rounds for row in services.panel_rows(rnd)],
                       PANEL_COLUMNS)
        settings = delphi_settings(study, rounds)
        files += [ArchiveFile(f"delphi/{n}/responses.csv", responses,
                              f"Delphi study {study.title!r}: every panel answer (pseudonyms)"),
                  ArchiveFile(f"delphi/{n}/panel.csv", panel,
                              f"Delphi study {study.title!r}: every participation per round (pseudonyms)"),
                  ArchiveFile(f"delphi/{n}/settings.json", settings,
                              f"Delphi study {study.title!r}: consensus rule and each round's items")]
        for sheet, sheet_columns, sheet_rows in reporting_sheets(study):
            slug = "".join(ch if ch.isalnum() else "-" for ch in sheet.lower()).strip("-")
            files.append(ArchiveFile(f"delphi/{n}/{slug}.csv", to_csv(sheet_rows, sheet_columns),
                                     f"Delphi study {study.title!r}: {sheet}"))
        figures = []
        for rnd in rounds:
            items = services.round_items(rnd)
            frame = services.answers_frame(rnd)
            by_pk = services.item_stats(rnd, items, frame)
            figures.append((rnd.number, delphi_round_figures(
                {i.code: by_pk[i.pk] for i in items}, services.round_summary(rnd, frame),
                services.validation_stats(rnd) if rnd.is_validation else None)))
        figure_rows += delphi_figure_rows(study.title, figures, _fingerprint(responses, panel, _json(settings)))
    for n, study in enumerate(PreferenceStudy.objects.filter(project=project).order_by("pk"), 1):
        rows = export_rows(study, pseudonymous=True)  # raters by pseudonym even where the study shows names
        votes = to_csv(rows, list(rows[0])) if rows else ""
        if rows:
            files.append(ArchiveFile(f"preference/{n}/votes.csv", votes,
                                     f"Preference study {study.name!r}: every vote (sources after unblinding)"))
        settings = preference_settings(study)
        files.append(ArchiveFile(f"preference/{n}/settings.json", settings,
                                 f"Preference study {study.name!r}: sources, criteria, seed, judges, seal"))
        if study.is_unblinded:
            results = analysis(study, n_resamples=settings["n_resamples"], seed=settings["seed"])
        else:
            results = {"sealed": True, "note": "Results per source are sealed until the study is locked and "
                                               "unblinded.",
                       **sealed_results(study=study.name, criteria=[tuple(c) for c in settings["criteria"]],
                                        votes=human_votes(study), locked=settings["locked"])}
        files.append(ArchiveFile(f"preference/{n}/results.json", results,
                                 f"Preference study {study.name!r}: results as the app shows them (sealed until "
                                 "unblinding)"))
        figure_rows += preference_figure_rows(study.name, results, _fingerprint(votes, _json(settings)))
    return files, figure_rows


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


# ---------------------------------------------------------------------------------------------------------------
# check: the same figures from the archive's rows
# ---------------------------------------------------------------------------------------------------------------
def _numbers(archive: Archive, folder: str) -> list[int]:
    pattern = re.compile(rf"^{folder}/(\d+)/settings\.json$")
    return sorted(int(m.group(1)) for m in map(pattern.match, archive.manifest.get("files", {})) if m)


def recompute(archive: Archive) -> list[dict]:
    """Every preference and Delphi figure recomputed from the archive's rows and settings with this code."""
    rows: list[dict] = []
    for n in _numbers(archive, "delphi"):
        rows += _delphi(archive, n)
    for n in _numbers(archive, "preference"):
        rows += _preference(archive, n)
    return rows


def _text(archive: Archive, path: str) -> str:
    return archive.text(path) if archive.has(path) else ""


def _delphi(archive: Archive, n: int) -> list[dict]:
    import pandas as pd

    from delphi import consensus

    settings = archive.json(f"delphi/{n}/settings.json")
    responses, panel = _text(archive, f"delphi/{n}/responses.csv"), _text(archive, f"delphi/{n}/panel.csv")
    answers = [(int(r["round"]), r["panelist"], r["item"], int(r["importance"]))
               for _, r in archive.rows(f"delphi/{n}/responses.csv") if r["completed"] and r["importance"]]
    participations = [(int(r["round"]), {
        "panelist": r["panelist"], "started": r["started"] == "True", "completed": r["completed"] == "True",
        "familiarity": int(r["familiarity"]) if r["familiarity"] else None,
        **{basis: r[basis] for basis in consensus.BASES}}) for _, r in archive.rows(f"delphi/{n}/panel.csv")]
    figures = []
    for rnd in settings["rounds"]:
        frame = pd.DataFrame([(p, code, code, v) for number, p, code, v in answers if number == rnd["number"]],
                             columns=["panelist", "item", "code", "importance"])
        codes = [i["code"] for i in rnd["items"]]
        panel_rows = [row for number, row in participations if number == rnd["number"]]
        figures.append((rnd["number"], delphi_round_figures(
            consensus.items_table(frame, codes, settings["rule"]),
            consensus.round_summary(panel_rows, frame, validation=rnd["validation"]),
            consensus.validation_summary(frame, rnd["items"]) if rnd["validation"] else None)))
    return delphi_figure_rows(settings["study"], figures, _fingerprint(responses, panel, _json(settings)))


def _preference(archive: Archive, n: int) -> list[dict]:
    from scoring.preference.analysis import from_export_rows, results, sealed_results

    settings = archive.json(f"preference/{n}/settings.json")
    votes_text = _text(archive, f"preference/{n}/votes.csv")
    rows = [row for _, row in archive.rows(f"preference/{n}/votes.csv")]
    criteria = [tuple(c) for c in settings["criteria"]]
    if settings["unblinded"]:
        votes, pairs, judges = from_export_rows(rows, sources=settings["sources"], judges=settings["judges"])
        figures = results(study=settings["study"], sources=settings["sources"], criteria=criteria, votes=votes,
                          pairs=pairs, judges=judges, seed=settings["seed"], n_resamples=settings["n_resamples"])
    else:
        votes = [{"criterion": r["criterion"], "choice": r["choice"]} for r in rows if r["rater_kind"] == "human"]
        figures = sealed_results(study=settings["study"], criteria=criteria, votes=votes, locked=settings["locked"])
    return preference_figure_rows(settings["study"], figures, _fingerprint(votes_text, _json(settings)))
