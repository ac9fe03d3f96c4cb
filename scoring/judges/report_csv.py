"""A judge's report and a judge's own scores as flat CSV rows: what ``manage.py judge_report --format csv`` writes
and the API answers with ``?format=csv`` (the same rows, one writer)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator
from typing import Any

from core.site.spreadsheet import safe_row
from scoring.reports.agreement_csv import replicate_rows

CSV_HEADER = ["section", "scope", "statistic", "value", "ci_low", "ci_high", "n", "interpretation", "note"]


def csv_text(rows: Iterable[Iterable[Any]]) -> str:
    """Rows as CSV text, every cell guarded against spreadsheet formulas (names come from data)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    for row in rows:
        writer.writerow(safe_row("" if v is None else v for v in row))
    return buffer.getvalue()


def csv_rows(report: dict) -> Iterator[list[Any]]:
    """The report as flat rows: per item the verdict and its figures, the model ranking and the models' scores."""
    from scoring.reports.wording import Words

    W = Words(report.get("words") or None)  # the instrument's words: physicians or raters, dialogues or answers
    yield CSV_HEADER
    for item in report["items"]:
        decision, agreement = item["decision"], item["physicians_agreement"]
        yield ["verdict", item["code"], "verdict", decision["verdict"], "", "", item["n_dialogues"], "",
               " ".join(decision["reasons"])]
        yield ["verdict", item["code"], f"{W.raters}' agreement ({agreement['name']})", agreement["value"],
               agreement["ci_low"], agreement["ci_high"], item["n_dialogues"],
               (agreement.get("interpretation") or {}).get("label", ""), agreement.get("ci_note") or ""]
        for key in ("exact", "within_one"):
            if agreement.get(key):
                fig = agreement[key]
                yield ["verdict", item["code"], f"{W.raters}' {key.replace('_', '-')} agreement", fig["value"],
                       fig["ci_low"], fig["ci_high"], item["n_dialogues"], "", fig.get("ci_note") or ""]
        if item["difference"]:
            d = item["difference"]
            yield ["verdict", item["code"], f"judge minus {W.raters} ({d['name']})", d["value"], d["ci_low"],
                   d["ci_high"], item["n_dialogues"], "", d.get("ci_note") or ""]
        for key, name in (("kappa", f"kappa vs each {W.rater}"), ("gwet_ac1", f"AC1 vs each {W.rater}"),
                          ("weighted_kappa", f"weighted kappa vs each {W.rater}"),
                          ("gwet_ac2", f"AC2 vs each {W.rater}")):
            fig = item["vs_physicians"].get(key)
            if fig:
                yield [f"judge vs {W.raters}", item["code"], name, fig["value"], fig["ci_low"], fig["ci_high"],
                       item["n_dialogues"], (fig.get("interpretation") or {}).get("label", ""),
                       fig.get("ci_note") or ""]
        table5 = item["vs_majority"]
        for key in ("accuracy", "precision", "recall", "f1"):
            fig = table5[key]
            yield [f"vs {W.rater} majority", item["code"], key, fig["value"], fig["ci_low"], fig["ci_high"],
                   table5["n"], "", table5["ties"]]
    for scope in report["ranking"]["scopes"]:
        tau = scope["tau"]
        yield ["ranking", scope["name"], "Kendall tau", tau["value"], tau["ci_low"], tau["ci_high"],
               report["ranking"]["n_models"], "", tau.get("ci_note") or ""]
    for model in report["models"]:
        for code, c in (model.get("criteria") or {}).items():
            for side in ("physicians", "judge"):
                yield ["models", model["model"], f"{code} {W.raters}' mean" if side == "physicians" else f"{code} "
                       "judge's mean", c[side]["mean"], c[side]["ci_low"], c[side]["ci_high"], c["n_dialogues"], "",
                       c[side].get("ci_note") or ""]
    for side in ("judge", "physicians"):
        yield from replicate_rows((report.get("replicates") or {}).get(side),
                                  f"replicates ({W.raters if side == 'physicians' else side})")
    if report.get("uncertainty"):
        from scoring.judges import uncertainty  # loads pandas: not when the command only starts

        yield from uncertainty.csv_rows(report["uncertainty"])


def score_rows(scores: dict) -> Iterator[list[Any]]:
    """The judge's own scores as flat rows: per model and criterion its mean with the bootstrap CI over the model's
    texts, then Table 2 of repeated answers (mean over cases, SD and CI over replicates)."""
    yield CSV_HEADER
    for model in scores["models"]:
        for code, c in model["criteria"].items():
            yield ["judge scores", model["model"], f"{code} mean", c["mean"], c["ci_low"], c["ci_high"], c["n"], "",
                   c.get("ci_note") or ""]
    yield from replicate_rows(scores.get("replicates"), "replicates (judge)")
