"""The methods and results section of a study, and its TRIPOD-LLM checklist, written from the archived reports and
the study's recorded provenance (:mod:`studies.provenance`).

Every sentence states only what a recorded property of the study licenses (docs/users/archive.md lists each sentence
with the property behind it): how the labels arrived (rated in the app, blinded or not; imported from a file with its
SHA-256), how a random sample came about (drawn with a seed from a population, or declared), how each judge ran (live
with its model, parameters, prompts and requests; imported from a file), who the raters are (the project's
physicians, or what the coordinator stated on importing). A fact the records do not hold is written "not recorded".
The words are the instrument's (dialogues or answers, physicians or raters), the references its source's, and every
number goes through :mod:`core.stats.formatting`. Markdown, and DOCX through python-docx."""

from __future__ import annotations

import io
from collections.abc import Iterable
from typing import Any

from core.stats import formatting
from studies import replicates

NOT_RECORDED = "not recorded"

CITATIONS = {
    "shi": "Shi et al. LLM-Mini-CEX: automatic evaluation of large language model for diagnostic conversation.",
    "hivmedqa": "Cardenal-Antolin et al. HIVMedQA: benchmarking large language models for HIV medical decision "
                "support.",
    "agentclinic": "Schmidgall et al. AgentClinic: a multimodal agent benchmark to evaluate AI in simulated clinical "
                   "environments.",
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

#: Which reference an instrument's source names (by slug, then by words in its ``source`` text).
SOURCE_CITATIONS = (("llm-mini-cex", "LLM-Mini-CEX", "shi"), ("hivmedqa", "HIVMedQA", "hivmedqa"),
                    ("agentclinic", "AgentClinic", "agentclinic"))

#: The raters' kinds as sentences name them.
RATER_KIND_TEXT = {"physicians": "physicians", "experts": "human experts who are not physicians",
                   "llm": "LLM scoring iterations"}


# --- words ------------------------------------------------------------------------------------------------------
def target_words(target: str, physicians: bool) -> dict[str, str]:
    """The words for an instrument rating ``target`` ("answer", "dialogue", or "mixed": texts) by ``physicians``
    (else raters)."""
    if target == "answer":
        words = {"unit": "answer", "units": "answers", "model": "model", "models": "models"}
    elif target == "dialogue":
        words = {"unit": "dialogue", "units": "dialogues", "model": "doctor model", "models": "doctor models"}
    else:
        words = {"unit": "text", "units": "texts", "model": "model", "models": "models"}
    words.update(rater="physician" if physicians else "rater", raters="physicians" if physicians else "raters")
    return words


def study_words(view: dict) -> dict[str, str]:
    """The words for what the study's instruments rate and who rates: answers or dialogues (texts when it has
    both), physicians only where every campaign's raters are recorded as physicians, else raters."""
    prov = view.get("provenance") or {}
    kinds = {c.get("rater_kind", "") for c in prov.get("campaigns", []) if c.get("labels")}
    return target_words(prov.get("target") or "dialogue", kinds == {"physicians"})


def campaign_words(view: dict, campaign: str | None) -> dict[str, str]:
    """The words of one campaign: its instrument's target and its raters."""
    entry = _campaign(view, campaign)
    if entry is None:
        return study_words(view)
    return target_words(entry.get("target") or (view.get("provenance") or {}).get("target") or "dialogue",
                        entry.get("rater_kind") == "physicians")


def _campaign(view: dict, name: str | None) -> dict | None:
    return next((c for c in (view.get("provenance") or {}).get("campaigns", []) if c.get("name") == name), None)


def _report_keys(view: dict) -> list[dict]:
    """The settings entry of each report, in the reports' order (campaign reports, then judge reports)."""
    settings = view.get("settings") or {}
    return list(settings.get("campaign_reports", [])) + list(settings.get("judge_reports", []))


def instrument_citations(view: dict) -> list[str]:
    """The citation keys of the study's instruments' sources (the Mini-CEX cites Shi et al., HIVMedQA's rubric
    Cardenal-Antolin et al.)."""
    keys = []
    for instrument in (view.get("provenance") or {}).get("instruments", []):
        for slug, word, key in SOURCE_CITATIONS:
            if instrument.get("slug", "").startswith(slug) or word in (instrument.get("source") or ""):
                keys.append(key)
                break
    return list(dict.fromkeys(keys))


def _n(value: Any) -> str:
    if value is None:
        return NOT_RECORDED
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return formatting.number(value, 2)


def _table(header: list[str], rows: Iterable[list[str]]) -> list[str]:
    clean = [[str(c).replace("|", "/").replace("\n", " ") for c in row] for row in rows]
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + ["| " + " | ".join(r) + " |"
                                                                              for r in clean]


def _sha(value: str) -> str:
    return f"SHA-256 {value}" if value else f"SHA-256 {NOT_RECORDED}"


# --- the data section: each sentence from a recorded property -----------------------------------------------------
def data_paragraphs(view: dict) -> list[str]:
    """The data section's sentences (see docs/users/archive.md, "What the methods text says and why")."""
    counts = view.get("counts", {})
    prov = view.get("provenance") or {}
    W = study_words(view)
    texts = prov.get("texts") or {}
    if len(texts) > 1:  # corpora of dialogues and of answers
        what = " and ".join(f"{_n(n)} {target_words(kind, False)['units']}" for kind, n in sorted(texts.items()))
    else:
        what = f"{_n(counts.get('data/dialogues.csv', 0))} {W['units']}"
    out = [f"{what} in {_n(counts.get('data/corpora.csv', 0))} corpora (data/dialogues.csv: as shown to raters, "
           "with the SHA-256 of each original)."]
    for instrument in prov.get("instruments", []):
        source = (instrument.get("source") or "").strip() or next(
            (CITATIONS[key] for slug, _, key in SOURCE_CITATIONS if instrument.get("slug", "").startswith(slug)), "")
        out.append(f"Instrument: {instrument.get('name', '')} ({instrument.get('key', '')}; data/items.csv), rating "
                   f"{'answers to questions' if instrument.get('target') == 'answer' else 'dialogues'}. Source: "
                   f"{source or NOT_RECORDED}")
    for campaign in prov.get("campaigns", []):
        if campaign.get("labels"):
            out.append(labels_sentence(campaign, campaign_words(view, campaign.get("name"))))
    samples = prov.get("samples", [])
    out += [sample_sentence(s, campaign_words(view, s.get("campaign"))) for s in samples]
    if not samples and any(c.get("labels") for c in prov.get("campaigns", [])):
        out.append("Random sample: none is recorded (the app holds neither a drawn sample nor a declaration on "
                   "importing).")
    out += [judge_sentence(r, target_words(r.get("target") or prov.get("target") or "dialogue", False))
            for r in prov.get("judge_runs", [])]
    out.append(f"Report settings: settings/reports.json; software: {software_sentence(prov.get('software'))}.")
    return out


def labels_sentence(campaign: dict, W: dict) -> str:
    """How one campaign's labels arrived and who gave them."""
    name, kind = campaign.get("name", ""), campaign.get("rater_kind", "")
    who = RATER_KIND_TEXT.get(kind)
    head = f'Campaign "{name}": {_n(campaign.get("labels"))} labels by {_n(campaign.get("raters"))} '
    if campaign.get("origin") == "imported":
        files = campaign.get("files") or []
        where = ("; ".join(f"{f.get('file') or NOT_RECORDED} ({_sha(f.get('sha256', ''))})" for f in files)
                 if files else f"a file whose name and SHA-256 are {NOT_RECORDED}")
        raters = (f"{who}, as the coordinator stated on importing" if who
                  else f"raters; who the raters are (physicians, other experts, LLM iterations) is {NOT_RECORDED}")
        return (f"{head}{raters}, imported from {where} (data/labels.csv). The labels were not given in the app: "
                f"what the raters saw and whether they were blinded to the {W['model']} is {NOT_RECORDED}.")
    raters = (f"{who} (raters holding the project's physician role)" if who
              else f"raters whose profession is {NOT_RECORDED}")
    seen = campaign.get("model_visible_raters") or 0
    hold = "holds" if seen == 1 else "hold"
    blinding = (f"The rating page shows no {W['model']}, and none of the raters holds a role in the project whose "
                f"pages show the {W['models']}: the raters were blinded to the {W['model']}." if not seen else
                f"The rating page shows no {W['model']}, but {seen} of the raters also {hold} a coordinator's or "
                f"analyst's role in the project, whose pages show the {W['models']}: blinding to the {W['model']} is "
                "not assured for their labels.")
    return f"{head}{raters}, rated in the app (data/labels.csv, data/label_changes.csv). {blinding}"


def sample_sentence(sample: dict, W: dict) -> str:
    """A random sample drawn here (seed, population) or declared for imported labels."""
    name = sample.get("campaign", "")
    if sample.get("kind") == "drawn":
        strata = f", stratified by {W['model']} (equal allocation)" if sample.get("stratified") else ""
        return (f'Random sample of campaign "{name}": {_n(sample.get("size"))} of {_n(sample.get("population"))} '
                f"{W['units']}, drawn in the app with seed {sample.get('seed')}{strata} "
                "(data/random_samples.csv: population and sample by external id).")
    return (f'Random sample of campaign "{name}": its {_n(sample.get("size"))} labelled {W["units"]} were declared a '
            f"random sample on importing; how they were drawn (seed, population) is {NOT_RECORDED} "
            "(data/random_samples.csv).")


def judge_sentence(run: dict, W: dict) -> str:
    """How one judge run ran: live (model, parameters, prompts, requests) or imported (file, hash)."""
    head = f'Judge run {run.get("key", "")} ("{run.get("name", "")}"): {_n(run.get("results"))} scores'
    if run.get("source") == "imported":
        given = run.get("prompts_given") or 0
        prompts = (f"the prompt text as the file gave it for {_n(given)} of the scores (data/judge_results.csv, "
                   "imported_prompt)" if given else f"prompts {NOT_RECORDED}")
        return (f"{head}, imported from {run.get('file') or NOT_RECORDED} ({_sha(run.get('sha256', ''))}; "
                f"data/judge_runs.csv); model as the file names it: {run.get('model') or NOT_RECORDED}; parameters "
                f"(temperature, maximum tokens, seed) {NOT_RECORDED}; {prompts}. The app sent no request for it.")
    params = ", ".join(f"{label} {NOT_RECORDED if run.get(key) is None else run.get(key)}"
                       for key, label in (("temperature", "temperature"), ("max_tokens", "maximum tokens"),
                                          ("seed", "seed")))
    calls = run.get("calls") or 0
    requests = (f"{_n(calls)} request(s) with their raw answers (data/llm_calls.csv)" if calls else
                f"no request is recorded ({_n(run.get('requests_sent') or 0)} sent; 0 rows in data/llm_calls.csv)")
    prompt_set = run.get("prompt_set") or NOT_RECORDED
    return (f"{head}, run in the app with model {run.get('model') or NOT_RECORDED} ({params}; frozen configuration "
            f'in data/judge_runs.csv); prompt set "{prompt_set}" with {_n(run.get("prompts") or 0)} item prompts '
            f"(data/prompt_sets.csv, data/prompts.csv); {requests}.")


def software_sentence(software: dict | None) -> str:
    if not software:
        return NOT_RECORDED
    return ", ".join(f"{name} {ver}" for name, ver in software.items()) + " (software.json)"


# --- sections -----------------------------------------------------------------------------------------------------
def sections(view: dict) -> list[dict]:
    """The document as sections of paragraphs and tables: [{"title", "paragraphs": [...], "tables": [{"title",
    "lines", "source"}]}]."""
    out = [{"title": "Data", "paragraphs": data_paragraphs(view), "tables": []}]
    keys = _report_keys(view)
    for n, entry in enumerate(view.get("reports", []), 1):
        if entry.get("missing"):
            continue
        key = keys[n - 1] if n - 1 < len(keys) else {}
        W = campaign_words(view, key.get("campaign"))
        report, source = entry["report"], f"figures/reports/{n}.json"
        if entry["kind"] == "agreement":
            out.append(_agreement_section(view, entry, report, source, W))
        elif entry["kind"] == "replicates":
            out.append(replicates.methods_section(entry, report, source, number=_n, table=_table))
        else:
            out.append(_judge_section(view, entry, report, source, W))
    references = ["shrout", "krippendorff", "gwet"] + instrument_citations(view)
    if any(_ppi_informative(e.get("report")) for e in view.get("reports", []) if e.get("kind") == "judge"):
        references.append("angelopoulos")
    references.append("tripod")
    out.append({"title": "References", "paragraphs": [CITATIONS[k] for k in dict.fromkeys(references)],
                "tables": []})
    return out


def _scale(criterion: dict | None) -> tuple[Any, Any] | None:
    if not isinstance(criterion, dict) or criterion.get("min") is None or criterion.get("max") is None:
        return None
    return criterion["min"], criterion["max"]


def _agreement_section(view: dict, entry: dict, report: dict, source: str, W: dict) -> dict:
    methods = report.get("methods") or {}
    paragraphs = [str(methods[k]) for k in ("agreement", "icc", "reliability", "rater_matrix", "models", "ordered",
                                            "ci", "undefined") if methods.get(k)]
    instrument = [CITATIONS[k].split(".")[0] for k in instrument_citations(view)]
    paragraphs.append("Citations: Krippendorff (2004) for alpha; Shrout & Fleiss (1979) for the ICC; Gwet (2008) "
                      "for AC1" + (f"; the instrument: {', '.join(instrument)}" if instrument else "") + ".")
    paragraphs.append(f"{_n(report.get('n_labels', 0))} labels on {_n(report.get('n_dialogues', 0))} {W['units']} "
                      f"by {_n(report.get('n_raters', 0))} {W['raters']}; {_n(report.get('n_resamples'))} bootstrap "
                      f"resamples, seed {report.get('seed')}. Figures: {source}; rows '{entry['figure']} ...' of "
                      f"figures/figures.csv; data fingerprint {entry['fingerprint'][:16]}.")
    tables = []
    items = report.get("items", [])
    if items:
        tables.append({"title": f"Agreement between {W['raters']} per item (95% bootstrap CIs)", "source": source,
                       "lines": _table(["Item", f"n {W['units']}", "% agreement", "Fleiss' kappa [95% CI]",
                                        "Gwet's AC1 [95% CI]", "Krippendorff's alpha [95% CI]"],
                                       [[i.get("code", ""), _n(i.get("n_dialogues")),
                                         formatting.figure(i.get("percent_agreement")),
                                         formatting.figure(i.get("fleiss_kappa")), formatting.figure(i.get("gwet_ac1")),
                                         formatting.figure(i.get("krippendorff_alpha"))] for i in items])})
    models = report.get("models", [])
    dims = sorted({d for m in models for d in (m.get("dimensions") or {})})
    crits = sorted({c for m in models for c in (m.get("criteria") or {})})
    if models and (dims or crits):
        rows = [[m.get("model", ""), _n(m.get("n_dialogues"))]
                + [formatting.figure(m["dimensions"].get(d), 1, value_key="score_pct", scale=(0, 100))
                   for d in dims]
                + [formatting.figure(m.get("criteria", {}).get(c), 2, scale=_scale(m.get("criteria", {}).get(c)))
                   for c in crits] for m in models]
        tables.append({"title": f"Scores per {W['model']} from the {W['raters']}' labels (mean over {W['units']}, "
                                "95% bootstrap CI over them)", "source": source,
                       "lines": _table([W["model"].capitalize(), f"n {W['units']}"]
                                       + [f"Dimension {d}, % [95% CI]" for d in dims]
                                       + [f"Item {c}, mean [95% CI]" for c in crits], rows)})
    replicates = report.get("replicates")
    if isinstance(replicates, dict) and replicates.get("models"):
        scales = {c.get("code"): _scale(c) for c in replicates.get("criteria", [])}
        codes = [c.get("code") for c in replicates.get("criteria", [])]
        rows = []
        for m in replicates["models"]:
            row = [m.get("model", "")]
            for code in codes:
                s = (m.get("criteria") or {}).get(code) or {}
                sd = "" if s.get("sd") is None else f" (SD {formatting.number(s['sd'], 2)})"
                row.append(formatting.figure(s, 2, scale=scales.get(code)) + sd)
            rows.append(row)
        paragraphs.append(str(replicates.get("method", "")))
        tables.append({"title": f"Mean and SD over replicates per {W['model']} from the {W['raters']}' labels "
                                f"({_n(replicates.get('n_replicates'))} replicates of {_n(replicates.get('n_cases'))} "
                                "cases; 95% t-interval over replicates)", "source": source,
                       "lines": _table([W["model"].capitalize()] + [f"{c}, mean [95% CI] (SD)" for c in codes], rows)})
    return {"title": f"Agreement: {entry['figure']}", "paragraphs": paragraphs, "tables": tables}


def _ppi_informative(report: dict | None) -> bool:
    """Whether some prediction-powered estimate uses the judge on texts no rater labelled (with every text
    labelled, PPI adds nothing and the paragraph is left out)."""
    estimates = (report or {}).get("model_estimates") or {}
    if not estimates.get("available"):
        return False
    for model in estimates.get("models", []) or []:
        for figures in (model.get("scopes") or {}).values():
            if ((figures or {}).get("ppi") or {}).get("n_unlabeled"):
                return True
    return False


def _judge_section(view: dict, entry: dict, report: dict, source: str, W: dict) -> dict:
    methods = report.get("methods") or {}
    titles = report.get("method_titles") or {}
    paragraphs = [f"{titles.get(k, k)}: {v}" for k, v in methods.items() if isinstance(v, str)]
    estimates = report.get("model_estimates") or {}
    if _ppi_informative(report):
        paragraphs.append(f"Model estimates combine the judge's scores on every {W['unit']} with the {W['raters']}' "
                          "labels on the random sample (prediction-powered inference, Angelopoulos et al. 2023; "
                          f"{estimates.get('citation', '')}).")
    paragraphs.append(f"Figures: {source}; rows '{entry['figure']} ...' of figures/figures.csv; data fingerprint "
                      f"{entry['fingerprint'][:16]}.")
    rows = []
    for i in report.get("items", []):
        agreement = i.get("physicians_agreement") or {}
        key = agreement.get("coefficient")
        name = agreement.get("name") or key or ""
        judge = (i.get("vs_physicians") or {}).get(key) if key else None
        between = (i.get("ceiling") or {}).get(key) if key else None
        rows.append([i.get("code", ""), _n(i.get("n_dialogues")), name, formatting.figure(judge),
                     formatting.figure(between), formatting.figure(i.get("difference"), sign=True),
                     (i.get("decision") or {}).get("verdict", "")])
    tables = [{"title": f"Judge vs {W['raters']}: verdicts per item, on the statistic each verdict rests on",
               "lines": _table(["Item", f"n {W['units']}", "Statistic", f"Judge vs {W['raters']} [95% CI]",
                                f"Between {W['raters']} [95% CI]", "Difference [95% CI]", "Verdict"], rows),
               "source": source}]
    rows = []
    scales = {s.get("key"): _scale(s) for s in estimates.get("scopes", []) or [] if isinstance(s, dict)}
    for model in estimates.get("models", []) or []:
        for scope, figures in sorted((model.get("scopes") or {}).items()):
            scale = scales.get(scope)
            cells = [model.get("model", ""), scope, formatting.figure(figures.get("physicians"), 1, scale=scale),
                     formatting.figure(figures.get("judge"), 1, scale=scale)]
            if _ppi_informative(report):
                cells.append(formatting.figure(figures.get("ppi"), 1, scale=scale))
            rows.append(cells)
    if rows:
        header = [W["model"].capitalize(), "Scope", f"{W['raters'].capitalize()} [95% CI]", "Judge [95% CI]"]
        title = f"Model estimates ({W['raters']} alone, judge alone"
        if _ppi_informative(report):
            header.append("PPI [95% CI]")
            title += ", prediction-powered"
        tables.append({"title": title + ")", "lines": _table(header, rows), "source": source})
    return {"title": f"Judge vs {W['raters']}: {entry['figure']}", "paragraphs": paragraphs, "tables": tables}


def methods_markdown(view: dict) -> str:
    lines = [f"# Methods and results: {view.get('project', '')}", "",
             "_Written by Mini-CEX Workbench from the study archive and its recorded provenance: what the records do "
             "not hold is written \"not recorded\". Every table names the archive file it comes from; "
             "`manage.py verify_study` recomputes every figure._", ""]
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


# --- the TRIPOD-LLM checklist -------------------------------------------------------------------------------------
#: TRIPOD-LLM's items (Gallifant et al., Nature Medicine 2025) by number: section, topic (paraphrased) and the
#: research designs it applies to (All, or M: LLM methods, D: de novo development, E: LLM evaluation, H: evaluation
#: in healthcare settings) and tasks (All, or C: classification, OF: outcome forecasting, QA: long-form question
#: answering, IR: information retrieval, DG: document generation, SS: summarisation, MT: machine translation).
TRIPOD_ITEMS: tuple[tuple[str, str, str, str, str], ...] = (
    ("1", "Title", "Identify the study as developing, fine-tuning or evaluating an LLM; task, population, outcome",
     "All", "All"),
    ("2", "Abstract", "Abstract (TRIPOD-LLM for Abstracts)", "All", "All"),
    ("3a", "Background", "Healthcare context and use case; rationale; existing approaches", "All", "All"),
    ("3b", "Background", "Target population and intended use in the care pathway; intended users", "E H", "All"),
    ("4", "Objectives", "Objectives: development, fine-tuning or validation of an LLM", "All", "All"),
    ("5a", "Data", "Sources of the training, tuning and evaluation data, and why", "All", "All"),
    ("5b", "Data", "Data points and their distribution (source, languages, countries)", "All", "All"),
    ("5c", "Data", "Dates of the oldest and newest text used", "All", "All"),
    ("5d", "Data", "Pre-processing and quality checking", "All", "All"),
    ("5e", "Data", "Missing and imbalanced data; data left out and why", "All", "All"),
    ("6a", "Analytical methods", "LLM name, version and last date of training", "All", "All"),
    ("6b", "Analytical methods", "LLM development: architecture, training, fine-tuning, alignment", "M D", "All"),
    ("6c", "Analytical methods", "How text was generated: prompt engineering and inference settings", "M D E", "All"),
    ("6d", "Analytical methods", "The LLM's initial and post-processed output", "All", "All"),
    ("6e", "Analytical methods", "Classification: rationale, probabilities and thresholds", "All", "C OF"),
    ("7a", "LLM output", "Metrics of the quality of generated output against gold standards", "All",
     "QA IR DG SS MT"),
    ("7b", "LLM output", "Relevance of the metrics at deployment; correlation with human evaluation", "E H", "All"),
    ("7c", "LLM output", "Outcome, how predictions were computed, date of inference, metrics", "E H", "All"),
    ("7d", "LLM output", "Subjective assessment: assessors' qualifications, instructions, demographics, agreement",
     "All", "All"),
    ("7e", "LLM output", "Comparison with other LLMs, humans and benchmarks", "All", "All"),
    ("8a", "Annotation", "How text was labelled; annotation guidelines", "All", "All"),
    ("8b", "Annotation", "Number of annotators, share labelled by more than one, inter-annotator agreement", "All",
     "All"),
    ("8c", "Annotation", "Annotators' background, or the models that labelled", "All", "All"),
    ("9a", "Prompting", "Prompt design, curation and selection", "All", "All"),
    ("9b", "Prompting", "Data used to develop the prompts", "All", "All"),
    ("10", "Summarization", "Pre-processing before summarisation", "All", "SS"),
    ("11", "Instruction tuning/alignment", "Instructions, data and interface of instruction tuning or alignment",
     "M D", "All"),
    ("12", "Compute", "Compute or its proxies (time, cost, machines)", "M D E", "All"),
    ("13", "Ethical approval", "Ethics committee and consent", "All", "All"),
    ("14a", "Open science", "Funding and the funders' role", "All", "All"),
    ("14b", "Open science", "Conflicts of interest", "All", "All"),
    ("14c", "Open science", "Study protocol", "H", "All"),
    ("14d", "Open science", "Registration", "H", "All"),
    ("14e", "Open science", "Availability of the study data", "All", "All"),
    ("14f", "Open science", "Availability of the code", "All", "All"),
    ("15", "Public involvement", "Patient and public involvement", "H", "All"),
    ("16a", "Participants", "Flow of texts through the study; numbers with and without labels", "E H", "All"),
    ("16b", "Participants", "Characteristics per data source, setting and split", "E H", "All"),
    ("16c", "Participants", "Clinical variables in development vs evaluation data", "E H", "All"),
    ("16d", "Participants", "Numbers in each analysis", "E H", "All"),
    ("17", "Performance", "Performance on pre-specified metrics and human evaluation", "All", "All"),
    ("18", "LLM updating", "Results of any LLM updating", "All", "All"),
    ("19a", "Interpretation", "Overall interpretation, fairness", "All", "All"),
    ("19b", "Limitations", "Limitations: biases, uncertainty, generalisability", "All", "All"),
    ("19c", "Usability in context", "Known challenges of the data for the task and domain", "E H", "All"),
    ("19d", "Usability in context", "Intended use: input, end user, autonomy and human oversight", "E H", "All"),
    ("19e", "Usability in context", "Handling poor or missing input in use", "E H", "All"),
    ("19f", "Usability in context", "Users' interaction and expertise", "E H", "All"),
    ("19g", "Usability in context", "Next steps for research", "All", "All"),
)
TRIPOD_SOURCE = ("Item numbers, sections and applicability codes of TRIPOD-LLM (Gallifant et al., Nature Medicine "
                 "2025: 19 main items, 50 sub-items), from the guideline's checklist table as distributed with it "
                 "(the 2024 preprint's table; the topics here are paraphrased). Check each against the published "
                 "sheet before submission.")
#: The study's research design in the guideline's terms: the workbench evaluates existing LLMs' texts.
DESIGN = "E"


def _applies(designs: str, tasks: str, task: str) -> str | None:
    """None when the item applies to an evaluation study (design E) of ``task``; else why not."""
    codes = designs.split()
    if designs != "All" and DESIGN not in codes:
        if codes == ["H"]:
            return ("not applicable because the guideline asks it only of LLM evaluations in healthcare settings (H); "
                    "the workbench records no care setting for this study")
        return ("not applicable because the study evaluates existing LLMs' texts and develops or tunes no LLM "
                f"(the item is for designs {designs})")
    if tasks != "All" and task not in tasks.split():
        return (f"not applicable because the task evaluated ({TASK_NAMES.get(task, task)}) is none of the item's "
                f"tasks ({tasks})")
    return None


#: The evaluated task in the guideline's codes; a dialogue instrument's diagnostic conversation ("DC") is none of
#: the guideline's task categories.
TASK_NAMES = {"QA": "long-form question answering", "DC": "diagnostic conversation"}


def checklist(view: dict) -> list[dict]:
    """TRIPOD-LLM's items by number, each answered "reported at ...", "not applicable because ..." or "not
    recorded", from the study's records only."""
    prov = view.get("provenance") or {}
    counts = view.get("counts", {})
    W = study_words(view)
    task = "QA" if prov.get("target") == "answer" else "DC"
    reports = [e for e in view.get("reports", []) if not e.get("missing")]
    judge_reports = [e for e in reports if e["kind"] == "judge"]
    runs = prov.get("judge_runs", [])
    live = [r for r in runs if r.get("source") != "imported"]
    imported = [r for r in runs if r.get("source") == "imported"]
    campaigns = [c for c in prov.get("campaigns", []) if c.get("labels")]
    kinds = sorted({RATER_KIND_TEXT.get(c.get("rater_kind", ""), NOT_RECORDED) for c in campaigns})
    labelled = counts.get("data/labels.csv", 0)

    def runs_text(live_text: str, imported_text: str) -> str:
        """``live_text`` and ``imported_text`` each start "reported at" or "not recorded"."""
        parts = []
        if live:
            parts.append(f"{live_text} (the {len(live)} judge run(s) in the app)")
        if imported:
            parts.append(f"{imported_text} (the {len(imported)} imported judge run(s))")
        return "; ".join(parts) if parts else f"{NOT_RECORDED} (the study has no judge run)"

    answers = {
        "5a": f"reported at methods/methods.md, Data ({_n(counts.get('data/dialogues.csv', 0))} {W['units']} in "
              f"{_n(counts.get('data/corpora.csv', 0))} corpora; data/corpora.csv, data/dialogues.csv); the "
              f"evaluated models' training data: {NOT_RECORDED}",
        "5b": f"reported at data/dialogues.csv (the {W['model']}, language, split, case and replicate of each "
              f"{W['unit']}); countries of origin: {NOT_RECORDED}",
        "5c": f"{NOT_RECORDED} (the app records when {W['units']} were imported, not when they were written)",
        "5d": "reported at data/dialogues.csv (privacy_status, privacy_findings) and data/redactions.csv (redacted "
              "spans by position)",
        "5e": "reported at methods/methods.md (n per item in each table) and figures/reports/*.json (each undefined "
              "figure with its reason)",
        "6a": f"reported at data/dialogues.csv (the {W['model']} of each {W['unit']}) and data/judge_runs.csv (the "
              f"judge's model); versions beyond the model names and last training dates: {NOT_RECORDED}",
        "6c": runs_text("reported at data/judges.csv, data/prompt_sets.csv and data/prompts.csv (model, temperature, "
                        "maximum tokens, seed, prompts)",
                        f"{NOT_RECORDED}: parameters; prompts only as the file gave them (data/judge_results.csv)")
              + f"; how the evaluated {W['units']} were generated: {NOT_RECORDED}",
        "6d": runs_text("reported at data/llm_calls.csv (raw answers) and data/judge_results.csv (parsed scores)",
                        "reported at data/judge_results.csv (raw response as rationale, score as value)"),
        "7a": "reported at methods/methods.md (scores per model with 95% CIs) and figures/figures.csv",
        "7b": (f"reported at methods/methods.md, Judge vs {W['raters']} (agreement of the judge with the "
               f"{W['raters']}' labels)" if judge_reports else f"{NOT_RECORDED} (no judge report)")
              + f"; relevance at deployment: {NOT_RECORDED}",
        "7c": "reported at data/items.csv (the instrument) and methods/methods.md (each analysis' methods); the "
              "judge's date of inference: " + runs_text("reported at data/judge_runs.csv (started_at, finished_at)",
                                                       NOT_RECORDED),
        "7d": (f"reported at methods/methods.md, Data (raters: {', '.join(kinds)}), data/campaigns.csv "
               f"(instructions) and the agreement tables; the raters' demographics: {NOT_RECORDED}" if campaigns
               else f"{NOT_RECORDED} (no labels)"),
        "7e": (f"reported at methods/methods.md (scores per model; judge vs {W['raters']})" if reports
               else f"{NOT_RECORDED} (no report)"),
        "8a": ("reported at data/items.csv (items, guidance, anchors) and data/campaigns.csv (instructions)"
               if labelled else f"{NOT_RECORDED} (no labels)"),
        "8b": (f"reported at data/raters.csv ({_n(counts.get('data/raters.csv', 0))} raters), data/campaigns.csv "
               "(raters per text), data/assignments.csv and the agreement tables of methods/methods.md"
               if labelled else f"{NOT_RECORDED} (no labels)"),
        "8c": (f"reported at methods/methods.md, Data (raters: {', '.join(kinds)})" if campaigns
               else f"{NOT_RECORDED} (no labels)"),
        "9a": (f"reported at data/prompt_sets.csv (the prompt versions); the design process: {NOT_RECORDED}"
               if live else NOT_RECORDED),
        "9b": NOT_RECORDED,
        "12": runs_text("reported at data/llm_calls.csv (tokens, cost and latency of every request)",
                        NOT_RECORDED),
        "14e": "reported at this archive (manifest.json, datapackage.json, ro-crate-metadata.json)",
        "14f": "reported at software.json (app version, git commit, uv.lock SHA-256)",
        "16a": "reported at methods/methods.md, Data (labels per campaign) and data/assignments.csv",
        "16b": "reported at data/dialogues.csv (split, model, language per text)",
        "16c": "not applicable because the study has no clinical outcome",
        "16d": "reported at methods/methods.md (n in every table)",
        "17": "reported at methods/methods.md and figures/figures.csv (every figure with its data fingerprint)",
        "18": "not applicable because the study updates no LLM",
    }
    rows = []
    for number, section, topic, designs, tasks in TRIPOD_ITEMS:
        why_not = _applies(designs, tasks, task)
        answer = why_not or answers.get(number, NOT_RECORDED)
        if number == "7a" and why_not is not None:  # the scores are reported all the same
            answer += f"; the instrument's scores per {W['model']} are reported at methods/methods.md (item 17)"
        rows.append({"item": number, "section": section, "topic": topic,
                     "applies": f"design {designs}; task {tasks}", "answer": answer})
    return rows


def applicability(view: dict) -> str:
    prov = view.get("provenance") or {}
    task = ("long-form question answering (QA)" if prov.get("target") == "answer"
            else "diagnostic conversation (none of the guideline's task categories: only items for all tasks apply)")
    return (f"Applicability: research design LLM evaluation (E): the study evaluates existing LLMs' texts and "
            f"develops none; task: {task}. Each item is answered \"reported at ...\", \"not applicable because "
            "...\" or \"not recorded\" (for the authors to report).")


def tripod_markdown(view: dict) -> str:
    lines = [f"# TRIPOD-LLM checklist: {view.get('project', '')}", "", f"_{TRIPOD_SOURCE}_", "",
             applicability(view), ""]
    lines += _table(["Item", "Section", "Topic", "Applies to", "Answer"],
                    [[c["item"], c["section"], c["topic"], c["applies"], c["answer"]] for c in checklist(view)])
    return "\n".join(lines) + "\n"
