"""The methods and results section of a study, and its TRIPOD-LLM checklist, written from the archived reports:
the methods paragraph of each analysis (the reports' own method texts) with citations, the tables in a journal's
layout (agreement per item; Table 2 style scores per model with 95% CIs; the judge's verdicts; prediction-powered
estimates), each table pointing at its report file and its rows in ``figures/figures.csv``. Markdown, and DOCX
through python-docx."""

from __future__ import annotations

import io
from collections.abc import Iterable
from typing import Any

from studies import replicates

CITATIONS = {
    "shi": "Shi et al. LLM-Mini-CEX: automatic evaluation of large language model for diagnostic conversation.",
    "krippendorff": "Krippendorff K. Content Analysis: An Introduction to Its Methodology. 2nd ed. Sage; 2004.",
    "shrout": "Shrout PE, Fleiss JL. Intraclass correlations: uses in assessing rater reliability. Psychol Bull. "
              "1979;86(2):420-428.",
    "gwet": "Gwet KL. Computing inter-rater reliability and its variance in the presence of high agreement. Br J "
            "Math Stat Psychol. 2008;61(1):29-48.",
    "angelopoulos": "Angelopoulos AN, Bates S, Fannjiang C, Jordan MI, Zrnic T. Prediction-powered inference. "
                    "Science. 2023;382(6671):669-674.",
    "tripod": "Gallifant J, et al. The TRIPOD-LLM reporting guideline for studies using large language models. Nat "
              "Med. 2025;31:60-69.",
}


def _n(value: Any, digits: int = 2) -> str:
    if value is None:
        return "undefined"
    if isinstance(value, (int,)) and not isinstance(value, bool):
        return str(value)
    try:
        return f"{float(value):.{digits}f}"
    except (TypeError, ValueError):
        return str(value)


def _ci(figure: Any, digits: int = 2) -> str:
    """"0.37 [0.20, 0.52]" from a report figure ({"value", "ci_low", "ci_high"})."""
    if not isinstance(figure, dict) or figure.get("value") is None:
        return "undefined"
    low, high = figure.get("ci_low"), figure.get("ci_high")
    interval = f" [{_n(low, digits)}, {_n(high, digits)}]" if low is not None and high is not None else ""
    return f"{_n(figure['value'], digits)}{interval}"


def _table(header: list[str], rows: Iterable[list[str]]) -> list[str]:
    clean = [[str(c).replace("|", "/").replace("\n", " ") for c in row] for row in rows]
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + ["| " + " | ".join(r) + " |"
                                                                              for r in clean]


def sections(view: dict) -> list[dict]:
    """The document as sections of paragraphs and tables: [{"title", "paragraphs": [...], "tables": [{"title",
    "header", "rows", "source"}]}]."""
    counts = view.get("counts", {})
    out = [{"title": "Data", "paragraphs": [
        f"{counts.get('data/dialogues.csv', 0)} texts in {counts.get('data/corpora.csv', 0)} corpora "
        "(data/dialogues.csv, redacted as shown to raters; SHA-256 of each original), "
        f"{counts.get('data/campaigns.csv', 0)} annotation campaigns (data/campaigns.csv) with "
        f"{counts.get('data/labels.csv', 0)} labels by {counts.get('data/raters.csv', 0)} pseudonymised raters "
        f"(data/labels.csv, data/raters.csv), {counts.get('data/judge_runs.csv', 0)} judge runs with "
        f"{counts.get('data/judge_results.csv', 0)} answers (data/judge_runs.csv, data/judge_results.csv, "
        "data/llm_calls.csv). Report settings: settings/reports.json."], "tables": []}]
    for n, entry in enumerate(view.get("reports", []), 1):
        if entry.get("missing"):
            continue
        report, source = entry["report"], f"figures/reports/{n}.json"
        if entry["kind"] == "agreement":
            out.append(_agreement_section(entry, report, source))
        elif entry["kind"] == "replicates":
            out.append(replicates.methods_section(entry, report, source, number=_n, table=_table))
        else:
            out.append(_judge_section(entry, report, source))
    out.append({"title": "References", "paragraphs": list(CITATIONS.values()), "tables": []})
    return out


def _agreement_section(entry: dict, report: dict, source: str) -> dict:
    methods = report.get("methods") or {}
    paragraphs = [str(methods[k]) for k in ("agreement", "icc", "reliability", "rater_matrix", "models", "ordered",
                                            "ci", "undefined") if methods.get(k)]
    paragraphs.append("Citations: Krippendorff (2004) for alpha; Shrout & Fleiss (1979) for the ICC; Gwet (2008) "
                      "for AC1; scores per model as Shi et al. (LLM-Mini-CEX, Table 6).")
    paragraphs.append(f"{report.get('n_labels', 0)} labels on {report.get('n_dialogues', 0)} texts by "
                      f"{report.get('n_raters', 0)} raters; {report.get('n_resamples')} bootstrap resamples, seed "
                      f"{report.get('seed')}. Figures: {source}; rows '{entry['figure']} ...' of figures/figures.csv; "
                      f"data fingerprint {entry['fingerprint'][:16]}.")
    items = _table(["Item", "n", "% agreement", "Fleiss' kappa [95% CI]", "Gwet's AC1 [95% CI]",
                    "Krippendorff's alpha [95% CI]"],
                   [[i.get("code", ""), _n(i.get("n_dialogues")), _ci(i.get("percent_agreement")),
                     _ci(i.get("fleiss_kappa")), _ci(i.get("gwet_ac1")), _ci(i.get("krippendorff_alpha"))]
                    for i in report.get("items", [])])
    dims = sorted({d for m in report.get("models", []) for d in (m.get("dimensions") or {})})
    crits = sorted({c for m in report.get("models", []) for c in (m.get("criteria") or {})})
    table2 = _table(["Model", "n"] + [f"Dimension {d}, % [95% CI]" for d in dims]
                    + [f"Item {c}, mean [95% CI]" for c in crits],
                    [[m.get("model", ""), _n(m.get("n_dialogues"))]
                     + [_pct(m["dimensions"].get(d)) for d in dims]
                     + [_mean(m.get("criteria", {}).get(c)) for c in crits] for m in report.get("models", [])])
    return {"title": f"Agreement: {entry['figure']}", "paragraphs": paragraphs, "tables": [
        {"title": "Agreement per item", "lines": items, "source": source},
        {"title": "Table 2: scores per model", "lines": table2, "source": source}]}


def _pct(d: dict | None) -> str:
    if not d:
        return ""
    return _ci({"value": d.get("score_pct"), "ci_low": d.get("ci_low"), "ci_high": d.get("ci_high")}, 1)


def _mean(c: dict | None) -> str:
    if not c:
        return ""
    return _ci({"value": c.get("mean"), "ci_low": c.get("ci_low"), "ci_high": c.get("ci_high")}, 2)


def _judge_section(entry: dict, report: dict, source: str) -> dict:
    methods = report.get("methods") or {}
    titles = report.get("method_titles") or {}
    paragraphs = [f"{titles.get(k, k)}: {v}" for k, v in methods.items() if isinstance(v, str)]
    estimates = report.get("model_estimates") or {}
    if estimates.get("available"):
        paragraphs.append("Model estimates combine the judge's scores on every text with the physicians' labels on "
                          "the random sample (prediction-powered inference, Angelopoulos et al. 2023; "
                          f"{estimates.get('citation', '')}).")
    paragraphs.append(f"Figures: {source}; rows '{entry['figure']} ...' of figures/figures.csv; data fingerprint "
                      f"{entry['fingerprint'][:16]}.")
    verdicts = _table(["Item", "n", "Accuracy vs majority [95% CI]", "Judge vs physicians, agreement [95% CI]",
                       "Between physicians [95% CI]", "Verdict"],
                      [[i.get("code", ""), _n(i.get("n_dialogues")), _ci((i.get("vs_majority") or {}).get("accuracy")),
                        _ci(_coefficient(i.get("vs_physicians"))), _ci(_coefficient(i.get("ceiling"))),
                        (i.get("decision") or {}).get("verdict", "")] for i in report.get("items", [])])
    tables = [{"title": "Judge vs physicians: verdicts per item", "lines": verdicts, "source": source}]
    rows = []
    for model in estimates.get("models", []) or []:
        for scope, figures in sorted((model.get("scopes") or {}).items()):
            rows.append([model.get("model", ""), scope, _ci(figures.get("physicians"), 1), _ci(figures.get("judge"), 1),
                         _ci(figures.get("ppi"), 1)])
    if rows:
        tables.append({"title": "Model estimates (physicians alone, judge alone, prediction-powered)",
                       "lines": _table(["Model", "Scope", "Physicians [95% CI]", "Judge [95% CI]", "PPI [95% CI]"],
                                       rows), "source": source})
    return {"title": f"Judge vs physicians: {entry['figure']}", "paragraphs": paragraphs, "tables": tables}


def _coefficient(block: dict | None) -> dict | None:
    if not isinstance(block, dict):
        return None
    for name in ("cohen_kappa", "kappa", "weighted_kappa", "gwet_ac1", "accuracy"):
        if isinstance(block.get(name), dict):
            return block[name]
    return None


def methods_markdown(view: dict) -> str:
    lines = [f"# Methods and results: {view.get('project', '')}", "",
             "_Written by Mini-CEX Workbench from the study archive. Every table names the archive file it comes "
             "from; `manage.py verify_study` recomputes every figure._", ""]
    for section in sections(view):
        lines += [f"## {section['title']}", ""]
        for paragraph in section["paragraphs"]:
            lines += [paragraph, ""]
        for table in section["tables"]:
            lines += [f"**{table['title']}** (source: `{table['source']}`)", "", *table["lines"], ""]
    return "\n".join(lines)


def methods_docx(view: dict) -> bytes:
    """The same document as DOCX (python-docx)."""
    from docx import Document

    doc = Document()
    doc.add_heading(f"Methods and results: {view.get('project', '')}", level=1)
    for section in sections(view):
        doc.add_heading(section["title"], level=2)
        for paragraph in section["paragraphs"]:
            doc.add_paragraph(paragraph)
        for table in section["tables"]:
            doc.add_paragraph(f"{table['title']} (source: {table['source']})").runs[0].bold = True
            rows = [[c.strip() for c in line.strip("|").split(" | ")] for line in table["lines"]
                    if not line.startswith("|---")]
            grid = doc.add_table(rows=len(rows), cols=len(rows[0]))
            grid.style = "Table Grid"
            # row by row: python-docx's table.cell(r, c) walks the whole table on each call (1 s for the demo)
            for grid_row, row in zip(grid.rows, rows, strict=True):
                for cell, text in zip(grid_row.cells, row[:len(rows[0])], strict=False):  # short: empty cells
                    cell.text = text
    buffer = io.BytesIO()
    doc.save(buffer)
    return buffer.getvalue()


def checklist(view: dict) -> list[dict]:
    """TRIPOD-LLM topics (Gallifant et al., Nature Medicine 2025) with what the study's data answer, each with a
    pointer into the archive; the rest for the authors to complete."""
    counts = view.get("counts", {})
    reports = [e for e in view.get("reports", []) if not e.get("missing")]
    judge = [e for e in reports if e["kind"] == "judge"]
    todo = "For the authors to complete."
    return [
        {"section": "Title and abstract", "topic": "Title, abstract", "answer": todo, "pointer": ""},
        {"section": "Introduction", "topic": "Background, objectives", "answer": todo, "pointer": ""},
        {"section": "Methods", "topic": "Data sources",
         "answer": f"{counts.get('data/dialogues.csv', 0)} texts in {counts.get('data/corpora.csv', 0)} corpora, "
                   "with doctor model, language, split, case and replicate per text.",
         "pointer": "data/corpora.csv, data/dialogues.csv"},
        {"section": "Methods", "topic": "Data preparation and privacy",
         "answer": "Privacy filter status and findings per text; redacted spans by position; SHA-256 of originals.",
         "pointer": "data/dialogues.csv (privacy_status, privacy_findings), data/redactions.csv"},
        {"section": "Methods", "topic": "Annotation (instrument, process)",
         "answer": f"{counts.get('data/scale_versions.csv', 0)} scale version(s), "
                   f"{counts.get('data/campaigns.csv', 0)} campaign(s), {counts.get('data/labels.csv', 0)} labels "
                   "with their full edit history.",
         "pointer": "data/scale_versions.csv, data/items.csv, data/campaigns.csv, data/labels.csv, "
                    "data/label_changes.csv"},
        {"section": "Methods", "topic": "Rater expertise and number",
         "answer": f"{counts.get('data/raters.csv', 0)} raters (pseudonymised); their expertise: {todo.lower()}",
         "pointer": "data/raters.csv, data/campaign_raters.csv"},
        {"section": "Methods", "topic": "Blinding",
         "answer": "Raters saw texts without their doctor model; preference studies blind sources until "
                   "unblinding (sealed record).", "pointer": "preference/ (when present), data/campaigns.csv"},
        {"section": "Methods", "topic": "Random sample",
         "answer": f"{counts.get('data/random_samples.csv', 0)} random sample(s) with seed and population.",
         "pointer": "data/random_samples.csv"},
        {"section": "Methods", "topic": "LLM: model versions, parameters and prompts",
         "answer": f"{counts.get('data/judge_runs.csv', 0)} judge run(s) with model, parameters and frozen "
                   "configuration; prompt templates; every request and raw answer.",
         "pointer": "data/judges.csv, data/judge_runs.csv, data/prompt_sets.csv, data/prompts.csv, "
                    "data/llm_calls.csv, data/judge_results.csv"},
        {"section": "Methods", "topic": "Evaluation metrics and analysis",
         "answer": f"{len(reports)} report(s) with their methods paragraphs (methods/methods.md).",
         "pointer": "settings/reports.json, figures/reports/"},
        {"section": "Methods", "topic": "Uncertainty",
         "answer": "95% bootstrap intervals (seed and resamples in settings/reports.json); F-distribution CIs for "
                   "ICC; prediction-powered intervals for model estimates.", "pointer": "figures/figures.csv"},
        {"section": "Methods", "topic": "Human oversight of LLM outputs",
         "answer": (f"{len(judge)} judge-vs-physicians comparison(s) with a verdict per item." if judge else todo),
         "pointer": "figures/reports/" if judge else ""},
        {"section": "Methods", "topic": "Ethics, consent, funding, registration", "answer": todo, "pointer": ""},
        {"section": "Results", "topic": "Performance (with uncertainty)",
         "answer": "Every figure with its printed value and data fingerprint.", "pointer": "figures/figures.csv"},
        {"section": "Open science", "topic": "Data and code availability",
         "answer": "This archive; software versions, git commit and uv.lock SHA-256.", "pointer": "software.json"},
        {"section": "Discussion", "topic": "Interpretation, limitations, implications", "answer": todo,
         "pointer": ""},
    ]


def tripod_markdown(view: dict) -> str:
    lines = [f"# TRIPOD-LLM checklist: {view.get('project', '')}", "",
             f"_Topics of TRIPOD-LLM ({CITATIONS['tripod']}). Filled in where the study's data answer, with a "
             "pointer into the archive; match each to the published checklist's item numbers and complete the "
             "rest._", ""]
    lines += _table(["Section", "Topic", "Answer", "Where in the archive"],
                    [[c["section"], c["topic"], c["answer"], c["pointer"]] for c in checklist(view)])
    return "\n".join(lines) + "\n"
