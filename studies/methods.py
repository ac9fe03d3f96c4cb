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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext_noop

from core.stats import formatting
from scoring.reports.sentences import Said, Tagged, joined, said, word
from studies import replicates

NOT_RECORDED = "not recorded"
#: "not recorded" as a sentence's part: the page says it in its language.
NR = said(gettext_noop("not recorded"))

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
#: The same as parts of a sentence, said in the page's language.
RATER_KIND_SAID = {"physicians": word("physicians"),
                   "experts": said(gettext_noop("human experts who are not physicians")),
                   "llm": said(gettext_noop("LLM scoring iterations"))}
#: The study's words that are not the reports' words (:mod:`scoring.reports.wording`): texts of both kinds.
_OWN_WORDS = {"text": said(gettext_noop("text")), "texts": said(gettext_noop("texts"))}


@dataclass(frozen=True)
class Quoted:
    """A sentence a stored report wrote: its English text and, where the report stored it, its message id and
    parameters (:mod:`scoring.reports.sentences`); a report computed before has only the English."""

    text: str
    said: Mapping[str, Any] | None = None

    def stored(self) -> Mapping[str, Any] | None:
        return self.said

    def __str__(self) -> str:
        return self.text


def quoted(holder: Mapping[str, Any], name: str) -> Quoted:
    """``holder[name]`` (a report's sentence) with its message id where the report stored one."""
    from scoring.reports.sentences import KEY

    return Quoted(str(holder.get(name, "")), ((holder.get(KEY) or {}).get(name)))


def inner(sentence: Said | Quoted | str) -> Said | Tagged | str:
    """A sentence as a part of another one."""
    if isinstance(sentence, Quoted):
        return Tagged("sentence", dict(sentence.said), english=sentence.text) if sentence.said else sentence.text
    return sentence


def w(text: str) -> Tagged | Said:
    """One of the study's words ("answers", "doctor model", "texts") as a part of a sentence."""
    return _OWN_WORDS.get(text) or word(text)


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
        for slug, name, key in SOURCE_CITATIONS:
            if instrument.get("slug", "").startswith(slug) or name in (instrument.get("source") or ""):
                keys.append(key)
                break
    return list(dict.fromkeys(keys))


def _n(value: Any) -> str | Said:
    if value is None:
        return NR
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return formatting.number(value, 2)


def _table(header: list[str], rows: Iterable[list[str]]) -> list[str]:
    clean = [[str(c).replace("|", "/").replace("\n", " ") for c in row] for row in rows]
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + ["| " + " | ".join(r) + " |"
                                                                              for r in clean]


def _sha(value: str) -> str | Said:
    return f"SHA-256 {value}" if value else said(gettext_noop("SHA-256 not recorded"))


def _and(parts: Sequence[Said]) -> Said:
    """"a and b" (and so on), said in the page's language."""
    out = parts[0]
    for part in parts[1:]:
        out = said(gettext_noop("%(first)s and %(second)s"), first=out, second=part)
    return out


# --- the data section: each sentence from a recorded property -----------------------------------------------------
def data_paragraphs(view: dict) -> list[Said]:
    """The data section's sentences (see docs/users/archive.md, "What the methods text says and why")."""
    counts = view.get("counts", {})
    prov = view.get("provenance") or {}
    W = study_words(view)
    texts = prov.get("texts") or {}
    if len(texts) > 1:  # corpora of dialogues and of answers
        what = _and([said(gettext_noop("%(n)s %(units)s"), n=_n(n), units=w(target_words(kind, False)["units"]))
                     for kind, n in sorted(texts.items())])
    else:
        what = said(gettext_noop("%(n)s %(units)s"), n=_n(counts.get("data/dialogues.csv", 0)), units=w(W["units"]))
    out = [said(gettext_noop("%(texts)s in %(corpora)s corpora (data/dialogues.csv: as shown to raters, with the "
                             "SHA-256 of each original)."), texts=what, corpora=_n(counts.get("data/corpora.csv", 0)))]
    for instrument in prov.get("instruments", []):
        source = (instrument.get("source") or "").strip() or next(
            (CITATIONS[key] for slug, _, key in SOURCE_CITATIONS if instrument.get("slug", "").startswith(slug)), "")
        rating = (gettext_noop("Instrument: %(name)s (%(key)s; data/items.csv), rating answers to questions. Source: "
                               "%(source)s") if instrument.get("target") == "answer" else
                  gettext_noop("Instrument: %(name)s (%(key)s; data/items.csv), rating dialogues. Source: %(source)s"))
        out.append(said(rating, name=instrument.get("name", ""), key=instrument.get("key", ""), source=source or NR))
    for campaign in prov.get("campaigns", []):
        if campaign.get("labels"):
            out.append(labels_sentence(campaign, campaign_words(view, campaign.get("name"))))
    samples = prov.get("samples", [])
    out += [sample_sentence(s, campaign_words(view, s.get("campaign"))) for s in samples]
    if not samples and any(c.get("labels") for c in prov.get("campaigns", [])):
        out.append(said(gettext_noop("Random sample: none is recorded (the app holds neither a drawn sample nor a "
                                     "declaration on importing).")))
    out += [judge_sentence(r, target_words(r.get("target") or prov.get("target") or "dialogue", False))
            for r in prov.get("judge_runs", [])]
    out.append(said(gettext_noop("Report settings: settings/reports.json; software: %(software)s."),
                    software=software_sentence(prov.get("software"))))
    return out


def labels_sentence(campaign: dict, W: dict) -> Said:
    """How one campaign's labels arrived and who gave them."""
    name, kind = campaign.get("name", ""), campaign.get("rater_kind", "")
    who = RATER_KIND_SAID.get(kind)
    head = {"name": name, "labels": _n(campaign.get("labels")), "raters": _n(campaign.get("raters"))}
    if campaign.get("origin") == "imported":
        files = campaign.get("files") or []
        where = (joined([said(gettext_noop("%(file)s (%(sha)s)"), file=f.get("file") or NR,
                              sha=_sha(f.get("sha256", ""))) for f in files], "; ")
                 if files else said(gettext_noop("a file whose name and SHA-256 are not recorded")))
        raters = (said(gettext_noop("%(kind)s, as the coordinator stated on importing"), kind=who) if who
                  else said(gettext_noop("raters; who the raters are (physicians, other experts, LLM iterations) is "
                                         "not recorded")))
        return said(gettext_noop('Campaign "%(name)s": %(labels)s labels by %(raters)s %(who)s, imported from '
                                 "%(where)s (data/labels.csv). The labels were not given in the app: what the raters "
                                 "saw and whether they were blinded to the %(model)s is not recorded."),
                    **head, who=raters, where=where, model=w(W["model"]))
    raters = (said(gettext_noop("%(kind)s (raters holding the project's physician role)"), kind=who) if who
              else said(gettext_noop("raters whose profession is not recorded")))
    seen = campaign.get("model_visible_raters") or 0
    if not seen:
        blinding = said(gettext_noop("The rating page shows no %(model)s, and none of the raters holds a role in the "
                                     "project whose pages show the %(models)s: the raters were blinded to the "
                                     "%(model)s."), model=w(W["model"]), models=w(W["models"]))
    else:
        blinding = said(gettext_noop("The rating page shows no %(model)s, but %(n)s of the raters also holds a "
                                     "coordinator's or analyst's role in the project, whose pages show the "
                                     "%(models)s: blinding to the %(model)s is not assured for their labels.")
                        if seen == 1 else
                        gettext_noop("The rating page shows no %(model)s, but %(n)s of the raters also hold a "
                                     "coordinator's or analyst's role in the project, whose pages show the "
                                     "%(models)s: blinding to the %(model)s is not assured for their labels."),
                        model=w(W["model"]), models=w(W["models"]), n=seen)
    return said(gettext_noop('Campaign "%(name)s": %(labels)s labels by %(raters)s %(who)s, rated in the app '
                             "(data/labels.csv, data/label_changes.csv). %(blinding)s"),
                **head, who=raters, blinding=blinding)


def sample_sentence(sample: dict, W: dict) -> Said:
    """A random sample drawn here (seed, population) or declared for imported labels."""
    name = sample.get("campaign", "")
    if sample.get("kind") == "drawn":
        strata = (said(gettext_noop(", stratified by %(model)s (equal allocation)"), model=w(W["model"]))
                  if sample.get("stratified") else "")
        return said(gettext_noop('Random sample of campaign "%(name)s": %(size)s of %(population)s %(units)s, drawn '
                                 "in the app with seed %(seed)s%(strata)s (data/random_samples.csv: population and "
                                 "sample by external id)."),
                    name=name, size=_n(sample.get("size")), population=_n(sample.get("population")),
                    units=w(W["units"]), seed=sample.get("seed"), strata=strata)
    return said(gettext_noop('Random sample of campaign "%(name)s": its %(size)s labelled %(units)s were declared a '
                             "random sample on importing; how they were drawn (seed, population) is not recorded "
                             "(data/random_samples.csv)."), name=name, size=_n(sample.get("size")), units=w(W["units"]))


def judge_sentence(run: dict, W: dict) -> Said:
    """How one judge run ran: live (model, parameters, prompts, requests) or imported (file, hash)."""
    head = {"key": run.get("key", ""), "name": run.get("name", ""), "results": _n(run.get("results"))}
    if run.get("source") == "imported":
        given = run.get("prompts_given") or 0
        prompts = (said(gettext_noop("the prompt text as the file gave it for %(n)s of the scores "
                                     "(data/judge_results.csv, imported_prompt)"), n=_n(given)) if given
                   else said(gettext_noop("prompts not recorded")))
        return said(gettext_noop('Judge run %(key)s ("%(name)s"): %(results)s scores, imported from %(file)s '
                                 "(%(sha)s; data/judge_runs.csv); model as the file names it: %(model)s; parameters "
                                 "(temperature, maximum tokens, seed) not recorded; %(prompts)s. The app sent no "
                                 "request for it."),
                    **head, file=run.get("file") or NR, sha=_sha(run.get("sha256", "")),
                    model=run.get("model") or NR, prompts=prompts)
    params = said(gettext_noop("temperature %(temperature)s, maximum tokens %(max_tokens)s, seed %(seed)s"),
                  **{key: NR if run.get(key) is None else run.get(key)
                     for key in ("temperature", "max_tokens", "seed")})
    calls = run.get("calls") or 0
    requests = (said(gettext_noop("%(n)s request(s) with their raw answers (data/llm_calls.csv)"), n=_n(calls))
                if calls else
                said(gettext_noop("no request is recorded (%(n)s sent; 0 rows in data/llm_calls.csv)"),
                     n=_n(run.get("requests_sent") or 0)))
    return said(gettext_noop('Judge run %(key)s ("%(name)s"): %(results)s scores, run in the app with model %(model)s '
                             "(%(params)s; frozen configuration in data/judge_runs.csv); prompt set "
                             '"%(prompt_set)s" with %(prompts)s item prompts (data/prompt_sets.csv, '
                             "data/prompts.csv); %(requests)s."),
                **head, model=run.get("model") or NR, params=params, prompt_set=run.get("prompt_set") or NR,
                prompts=_n(run.get("prompts") or 0), requests=requests)


def software_sentence(software: dict | None) -> Said:
    if not software:
        return NR
    return said(gettext_noop("%(versions)s (software.json)"),
                versions=", ".join(f"{name} {ver}" for name, ver in software.items()))


# --- sections -----------------------------------------------------------------------------------------------------
def sections(view: dict) -> list[dict]:
    """The document as sections of paragraphs and tables: [{"title", "paragraphs": [...], "tables": [{"title",
    "lines", "source"}]}]."""
    out = [{"title": said(gettext_noop("Data")), "paragraphs": data_paragraphs(view), "tables": []}]
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
    out.append({"title": said(gettext_noop("References")),
                "paragraphs": [CITATIONS[k] for k in dict.fromkeys(references)], "tables": []})
    return out


def _scale(criterion: dict | None) -> tuple[Any, Any] | None:
    if not isinstance(criterion, dict) or criterion.get("min") is None or criterion.get("max") is None:
        return None
    return criterion["min"], criterion["max"]


def _agreement_section(view: dict, entry: dict, report: dict, source: str, W: dict) -> dict:
    methods = report.get("methods") or {}
    paragraphs: list[Said | Quoted] = [quoted(methods, k) for k in ("agreement", "icc", "reliability",
                                                                     "rater_matrix", "models", "ordered", "ci",
                                                                     "undefined") if methods.get(k)]
    instrument = [CITATIONS[k].split(".")[0] for k in instrument_citations(view)]
    paragraphs.append(said(gettext_noop("Citations: Krippendorff (2004) for alpha; Shrout & Fleiss (1979) for the "
                                        "ICC; Gwet (2008) for AC1%(instrument)s."),
                           instrument=said(gettext_noop("; the instrument: %(names)s"), names=", ".join(instrument))
                           if instrument else ""))
    paragraphs.append(said(gettext_noop("%(labels)s labels on %(n)s %(units)s by %(raters_n)s %(raters)s; "
                                        "%(resamples)s bootstrap resamples, seed %(seed)s. Figures: %(source)s; rows "
                                        "'%(figure)s ...' of figures/figures.csv; data fingerprint %(fingerprint)s."),
                           labels=_n(report.get("n_labels", 0)), n=_n(report.get("n_dialogues", 0)),
                           units=w(W["units"]), raters_n=_n(report.get("n_raters", 0)), raters=w(W["raters"]),
                           resamples=_n(report.get("n_resamples")), seed=report.get("seed"), source=source,
                           figure=entry["figure"], fingerprint=entry["fingerprint"][:16]))
    tables = []
    items = report.get("items", [])
    if items:
        tables.append({"title": said(gettext_noop("Agreement between %(raters)s per item (95%% bootstrap CIs)"),
                                     raters=w(W["raters"])), "source": source,
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
        tables.append({"title": said(gettext_noop("Scores per %(model)s from the %(raters)s' labels (mean over "
                                                  "%(units)s, 95%% bootstrap CI over them)"),
                                     model=w(W["model"]), raters=w(W["raters"]), units=w(W["units"])),
                       "source": source,
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
        paragraphs.append(quoted(replicates, "method"))
        tables.append({"title": said(gettext_noop("Mean and SD over replicates per %(model)s from the %(raters)s' "
                                                  "labels (%(n)s replicates of %(cases)s cases; 95%% t-interval over "
                                                  "replicates)"), model=w(W["model"]), raters=w(W["raters"]),
                                     n=_n(replicates.get("n_replicates")), cases=_n(replicates.get("n_cases"))),
                       "source": source,
                       "lines": _table([W["model"].capitalize()] + [f"{c}, mean [95% CI] (SD)" for c in codes], rows)})
    return {"title": said(gettext_noop("Agreement: %(figure)s"), figure=entry["figure"]), "paragraphs": paragraphs,
            "tables": tables}


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


def _judge_method(report: dict, key: str) -> Said | Quoted:
    """One entry of a judge report's methods, "heading: text": said in the page's language where the report stored
    its message ids, else its English."""
    from scoring.judges.report.methods import method_titles_said

    title = (report.get("method_titles") or {}).get(key, key)
    text = quoted(report.get("methods") or {}, key)
    english = f"{title}: {text}"
    heading = method_titles_said(report.get("words")).get(key)
    if text.said is None or heading is None or heading.text != title:
        return Quoted(english)
    return said(gettext_noop("%(title)s: %(text)s"), title=heading, text=inner(text))


def _judge_section(view: dict, entry: dict, report: dict, source: str, W: dict) -> dict:
    methods = report.get("methods") or {}
    paragraphs = [_judge_method(report, k) for k, v in methods.items() if isinstance(v, str)]
    estimates = report.get("model_estimates") or {}
    if _ppi_informative(report):
        paragraphs.append(said(gettext_noop("Model estimates combine the judge's scores on every %(unit)s with the "
                                            "%(raters)s' labels on the random sample (prediction-powered inference, "
                                            "Angelopoulos et al. 2023; %(citation)s)."),
                               unit=w(W["unit"]), raters=w(W["raters"]), citation=estimates.get("citation", "")))
    paragraphs.append(said(gettext_noop("Figures: %(source)s; rows '%(figure)s ...' of figures/figures.csv; data "
                                        "fingerprint %(fingerprint)s."),
                           source=source, figure=entry["figure"], fingerprint=entry["fingerprint"][:16]))
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
    tables = [{"title": said(gettext_noop("Judge vs %(raters)s: verdicts per item, on the statistic each verdict "
                                          "rests on"), raters=w(W["raters"])),
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
        title = said(gettext_noop("Model estimates (%(raters)s alone, judge alone)"), raters=w(W["raters"]))
        if _ppi_informative(report):
            header.append("PPI [95% CI]")
            title = said(gettext_noop("Model estimates (%(raters)s alone, judge alone, prediction-powered)"),
                         raters=w(W["raters"]))
        tables.append({"title": title, "lines": _table(header, rows), "source": source})
    return {"title": said(gettext_noop("Judge vs %(raters)s: %(figure)s"), raters=w(W["raters"]),
                          figure=entry["figure"]), "paragraphs": paragraphs, "tables": tables}


def methods_markdown(view: dict) -> str:
    lines = [f"# Methods and results: {view.get('project', '')}", "",
             "_Written by Mini-CEX Workbench from the study archive and its recorded provenance: what the records do "
             "not hold is written \"not recorded\". Every table names the archive file it comes from; "
             "`manage.py verify_study` recomputes every figure._", ""]
    for section in sections(view):
        lines += [f"## {section['title']}", ""]
        for paragraph in section["paragraphs"]:
            lines += [str(paragraph), ""]
        for table in section["tables"]:
            lines += [f"**{table['title']}** (source: `{table['source']}`)", "", *table["lines"], ""]
    return "\n".join(lines)


def methods_docx(view: dict) -> bytes:
    """The same document as DOCX (python-docx)."""
    from docx import Document

    doc = Document()
    doc.add_heading(f"Methods and results: {view.get('project', '')}", level=1)
    for section in sections(view):
        doc.add_heading(str(section["title"]), level=2)
        for paragraph in section["paragraphs"]:
            doc.add_paragraph(str(paragraph))
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
    ("1", gettext_noop("Title"),
     gettext_noop("Identify the study as developing, fine-tuning or evaluating an LLM; task, population, "
                  "outcome"), "All", "All"),
    ("2", gettext_noop("Abstract"), gettext_noop("Abstract (TRIPOD-LLM for Abstracts)"), "All", "All"),
    ("3a", gettext_noop("Background"),
     gettext_noop("Healthcare context and use case; rationale; existing approaches"), "All", "All"),
    ("3b", gettext_noop("Background"),
     gettext_noop("Target population and intended use in the care pathway; intended users"), "E H", "All"),
    ("4", gettext_noop("Objectives"),
     gettext_noop("Objectives: development, fine-tuning or validation of an LLM"), "All", "All"),
    ("5a", gettext_noop("Data"),
     gettext_noop("Sources of the training, tuning and evaluation data, and why"), "All", "All"),
    ("5b", gettext_noop("Data"),
     gettext_noop("Data points and their distribution (source, languages, countries)"), "All", "All"),
    ("5c", gettext_noop("Data"), gettext_noop("Dates of the oldest and newest text used"), "All", "All"),
    ("5d", gettext_noop("Data"), gettext_noop("Pre-processing and quality checking"), "All", "All"),
    ("5e", gettext_noop("Data"), gettext_noop("Missing and imbalanced data; data left out and why"), "All", "All"),
    ("6a", gettext_noop("Analytical methods"),
     gettext_noop("LLM name, version and last date of training"), "All", "All"),
    ("6b", gettext_noop("Analytical methods"),
     gettext_noop("LLM development: architecture, training, fine-tuning, alignment"), "M D", "All"),
    ("6c", gettext_noop("Analytical methods"),
     gettext_noop("How text was generated: prompt engineering and inference settings"), "M D E", "All"),
    ("6d", gettext_noop("Analytical methods"),
     gettext_noop("The LLM's initial and post-processed output"), "All", "All"),
    ("6e", gettext_noop("Analytical methods"),
     gettext_noop("Classification: rationale, probabilities and thresholds"), "All", "C OF"),
    ("7a", gettext_noop("LLM output"),
     gettext_noop("Metrics of the quality of generated output against gold standards"), "All", "QA IR DG SS MT"),
    ("7b", gettext_noop("LLM output"),
     gettext_noop("Relevance of the metrics at deployment; correlation with human evaluation"), "E H", "All"),
    ("7c", gettext_noop("LLM output"),
     gettext_noop("Outcome, how predictions were computed, date of inference, metrics"), "E H", "All"),
    ("7d", gettext_noop("LLM output"),
     gettext_noop("Subjective assessment: assessors' qualifications, instructions, demographics, "
                  "agreement"), "All", "All"),
    ("7e", gettext_noop("LLM output"), gettext_noop("Comparison with other LLMs, humans and benchmarks"), "All", "All"),
    ("8a", gettext_noop("Annotation"), gettext_noop("How text was labelled; annotation guidelines"), "All", "All"),
    ("8b", gettext_noop("Annotation"),
     gettext_noop("Number of annotators, share labelled by more than one, inter-annotator agreement"), "All", "All"),
    ("8c", gettext_noop("Annotation"),
     gettext_noop("Annotators' background, or the models that labelled"), "All", "All"),
    ("9a", gettext_noop("Prompting"), gettext_noop("Prompt design, curation and selection"), "All", "All"),
    ("9b", gettext_noop("Prompting"), gettext_noop("Data used to develop the prompts"), "All", "All"),
    ("10", gettext_noop("Summarization"), gettext_noop("Pre-processing before summarisation"), "All", "SS"),
    ("11", gettext_noop("Instruction tuning/alignment"),
     gettext_noop("Instructions, data and interface of instruction tuning or alignment"), "M D", "All"),
    ("12", gettext_noop("Compute"), gettext_noop("Compute or its proxies (time, cost, machines)"), "M D E", "All"),
    ("13", gettext_noop("Ethical approval"), gettext_noop("Ethics committee and consent"), "All", "All"),
    ("14a", gettext_noop("Open science"), gettext_noop("Funding and the funders' role"), "All", "All"),
    ("14b", gettext_noop("Open science"), gettext_noop("Conflicts of interest"), "All", "All"),
    ("14c", gettext_noop("Open science"), gettext_noop("Study protocol"), "H", "All"),
    ("14d", gettext_noop("Open science"), gettext_noop("Registration"), "H", "All"),
    ("14e", gettext_noop("Open science"), gettext_noop("Availability of the study data"), "All", "All"),
    ("14f", gettext_noop("Open science"), gettext_noop("Availability of the code"), "All", "All"),
    ("15", gettext_noop("Public involvement"), gettext_noop("Patient and public involvement"), "H", "All"),
    ("16a", gettext_noop("Participants"),
     gettext_noop("Flow of texts through the study; numbers with and without labels"), "E H", "All"),
    ("16b", gettext_noop("Participants"),
     gettext_noop("Characteristics per data source, setting and split"), "E H", "All"),
    ("16c", gettext_noop("Participants"),
     gettext_noop("Clinical variables in development vs evaluation data"), "E H", "All"),
    ("16d", gettext_noop("Participants"), gettext_noop("Numbers in each analysis"), "E H", "All"),
    ("17", gettext_noop("Performance"),
     gettext_noop("Performance on pre-specified metrics and human evaluation"), "All", "All"),
    ("18", gettext_noop("LLM updating"), gettext_noop("Results of any LLM updating"), "All", "All"),
    ("19a", gettext_noop("Interpretation"), gettext_noop("Overall interpretation, fairness"), "All", "All"),
    ("19b", gettext_noop("Limitations"),
     gettext_noop("Limitations: biases, uncertainty, generalisability"), "All", "All"),
    ("19c", gettext_noop("Usability in context"),
     gettext_noop("Known challenges of the data for the task and domain"), "E H", "All"),
    ("19d", gettext_noop("Usability in context"),
     gettext_noop("Intended use: input, end user, autonomy and human oversight"), "E H", "All"),
    ("19e", gettext_noop("Usability in context"), gettext_noop("Handling poor or missing input in use"), "E H", "All"),
    ("19f", gettext_noop("Usability in context"), gettext_noop("Users' interaction and expertise"), "E H", "All"),
    ("19g", gettext_noop("Usability in context"), gettext_noop("Next steps for research"), "All", "All"),
)
TRIPOD_SOURCE = gettext_noop(
    "Item numbers, sections and applicability codes of TRIPOD-LLM (Gallifant et al., Nature Medicine 2025: 19 main "
    "items, 50 sub-items), from the guideline's checklist table as distributed with it (the 2024 preprint's table; "
    "the topics here are paraphrased). Check each against the published sheet before submission.")
#: The study's research design in the guideline's terms: the workbench evaluates existing LLMs' texts.
DESIGN = "E"


def _applies(designs: str, tasks: str, task: str) -> Said | None:
    """None when the item applies to an evaluation study (design E) of ``task``; else why not."""
    codes = designs.split()
    if designs != "All" and DESIGN not in codes:
        if codes == ["H"]:
            return said(gettext_noop("not applicable because the guideline asks it only of LLM evaluations in "
                                     "healthcare settings (H); the workbench records no care setting for this study"))
        return said(gettext_noop("not applicable because the study evaluates existing LLMs' texts and develops or "
                                 "tunes no LLM (the item is for designs %(designs)s)"), designs=designs)
    if tasks != "All" and task not in tasks.split():
        return said(gettext_noop("not applicable because the task evaluated (%(task)s) is none of the item's tasks "
                                 "(%(tasks)s)"), task=TASK_NAMES.get(task, task), tasks=tasks)
    return None


#: The evaluated task in the guideline's codes; a dialogue instrument's diagnostic conversation ("DC") is none of
#: the guideline's task categories.
TASK_NAMES = {"QA": said(gettext_noop("long-form question answering")),
              "DC": said(gettext_noop("diagnostic conversation"))}


def checklist(view: dict) -> list[dict]:
    """TRIPOD-LLM's items by number, each answered "reported at ...", "not applicable because ..." or "not
    recorded", from the study's records only: ``section``, ``topic`` (message ids), ``applies``, ``answer``
    (English) and under ``said`` the last two as sentences (:class:`scoring.reports.sentences.Said`) for the page."""
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
    named = {RATER_KIND_TEXT.get(c.get("rater_kind", ""), NOT_RECORDED): RATER_KIND_SAID.get(c.get("rater_kind", ""),
                                                                                           NR) for c in campaigns}
    kinds = joined([named[text] for text in sorted(named)], ", ")
    labelled = counts.get("data/labels.csv", 0)

    def runs_text(live_text: Said, imported_text: Said) -> Said:
        """``live_text`` and ``imported_text`` each start "reported at" or "not recorded"."""
        parts = []
        if live:
            parts.append(said(gettext_noop("%(answer)s (the %(n)s judge run(s) in the app)"), answer=live_text,
                              n=len(live)))
        if imported:
            parts.append(said(gettext_noop("%(answer)s (the %(n)s imported judge run(s))"), answer=imported_text,
                              n=len(imported)))
        if len(parts) == 2:
            return said(gettext_noop("%(live)s; %(imported)s"), live=parts[0], imported=parts[1])
        return parts[0] if parts else said(gettext_noop("not recorded (the study has no judge run)"))

    def S(msgid: str, **params: Any) -> Said:
        return said(msgid, **params)

    no_labels = S(gettext_noop("not recorded (no labels)"))
    units, unit, model = w(W["units"]), w(W["unit"]), w(W["model"])
    answers = {
        "5a": S(gettext_noop("reported at methods/methods.md, Data (%(n)s %(units)s in %(corpora)s corpora; "
                             "data/corpora.csv, data/dialogues.csv); the evaluated models' training data: not "
                             "recorded"),
                n=_n(counts.get("data/dialogues.csv", 0)), units=units, corpora=_n(counts.get("data/corpora.csv", 0))),
        "5b": S(gettext_noop("reported at data/dialogues.csv (the %(model)s, language, split, case and replicate of "
                             "each %(unit)s); countries of origin: not recorded"), model=model, unit=unit),
        "5c": S(gettext_noop("not recorded (the app records when %(units)s were imported, not when they were "
                             "written)"), units=units),
        "5d": S(gettext_noop("reported at data/dialogues.csv (privacy_status, privacy_findings) and "
                             "data/redactions.csv (redacted spans by position)")),
        "5e": S(gettext_noop("reported at methods/methods.md (n per item in each table) and figures/reports/*.json "
                             "(each undefined figure with its reason)")),
        "6a": S(gettext_noop("reported at data/dialogues.csv (the %(model)s of each %(unit)s) and "
                             "data/judge_runs.csv (the judge's model); versions beyond the model names and last "
                             "training dates: not recorded"), model=model, unit=unit),
        "6c": S(gettext_noop("%(runs)s; how the evaluated %(units)s were generated: not recorded"),
                runs=runs_text(S(gettext_noop("reported at data/judges.csv, data/prompt_sets.csv and "
                                              "data/prompts.csv (model, temperature, maximum tokens, seed, prompts)")),
                               S(gettext_noop("not recorded: parameters; prompts only as the file gave them "
                                              "(data/judge_results.csv)"))),
                units=units),
        "6d": runs_text(S(gettext_noop("reported at data/llm_calls.csv (raw answers) and data/judge_results.csv "
                                       "(parsed scores)")),
                        S(gettext_noop("reported at data/judge_results.csv (raw response as rationale, score as "
                                       "value)"))),
        "7a": S(gettext_noop("reported at methods/methods.md (scores per model with 95% CIs) and "
                             "figures/figures.csv")),
        "7b": S(gettext_noop("reported at methods/methods.md, Judge vs %(raters)s (agreement of the judge with the "
                             "%(raters)s' labels); relevance at deployment: not recorded"), raters=w(W["raters"]))
              if judge_reports else S(gettext_noop("not recorded (no judge report); relevance at deployment: not "
                                                   "recorded")),
        "7c": S(gettext_noop("reported at data/items.csv (the instrument) and methods/methods.md (each analysis' "
                             "methods); the judge's date of inference: %(runs)s"),
                runs=runs_text(S(gettext_noop("reported at data/judge_runs.csv (started_at, finished_at)")), NR)),
        "7d": S(gettext_noop("reported at methods/methods.md, Data (raters: %(kinds)s), data/campaigns.csv "
                             "(instructions) and the agreement tables; the raters' demographics: not recorded"),
                kinds=kinds) if campaigns else no_labels,
        "7e": S(gettext_noop("reported at methods/methods.md (scores per model; judge vs %(raters)s)"),
                raters=w(W["raters"])) if reports else S(gettext_noop("not recorded (no report)")),
        "8a": S(gettext_noop("reported at data/items.csv (items, guidance, anchors) and data/campaigns.csv "
                             "(instructions)")) if labelled else no_labels,
        "8b": S(gettext_noop("reported at data/raters.csv (%(n)s raters), data/campaigns.csv (raters per text), "
                             "data/assignments.csv and the agreement tables of methods/methods.md"),
                n=_n(counts.get("data/raters.csv", 0))) if labelled else no_labels,
        "8c": S(gettext_noop("reported at methods/methods.md, Data (raters: %(kinds)s)"), kinds=kinds)
              if campaigns else no_labels,
        "9a": S(gettext_noop("reported at data/prompt_sets.csv (the prompt versions); the design process: not "
                             "recorded")) if live else NR,
        "9b": NR,
        "12": runs_text(S(gettext_noop("reported at data/llm_calls.csv (tokens, cost and latency of every "
                                       "request)")), NR),
        "14e": S(gettext_noop("reported at this archive (manifest.json, datapackage.json, ro-crate-metadata.json)")),
        "14f": S(gettext_noop("reported at software.json (app version, git commit, uv.lock SHA-256)")),
        "16a": S(gettext_noop("reported at methods/methods.md, Data (labels per campaign) and data/assignments.csv")),
        "16b": S(gettext_noop("reported at data/dialogues.csv (split, model, language per text)")),
        "16c": S(gettext_noop("not applicable because the study has no clinical outcome")),
        "16d": S(gettext_noop("reported at methods/methods.md (n in every table)")),
        "17": S(gettext_noop("reported at methods/methods.md and figures/figures.csv (every figure with its data "
                             "fingerprint)")),
        "18": S(gettext_noop("not applicable because the study updates no LLM")),
    }
    rows = []
    for number, section, topic, designs, tasks in TRIPOD_ITEMS:
        why_not = _applies(designs, tasks, task)
        answer = why_not or answers.get(number, NR)
        if number == "7a" and why_not is not None:  # the scores are reported all the same
            answer = S(gettext_noop("%(answer)s; the instrument's scores per %(model)s are reported at "
                                    "methods/methods.md (item 17)"), answer=answer, model=model)
        applies = S(gettext_noop("design %(designs)s; task %(tasks)s"), designs=_all(designs), tasks=_all(tasks))
        rows.append({"item": number, "section": section, "topic": topic, "applies": applies.text,
                     "answer": answer.text, "said": {"applies": applies, "answer": answer}})
    return rows


def _all(codes: str) -> str | Said:
    """A checklist item's codes; "All" said in the page's language."""
    return said(gettext_noop("All")) if codes == "All" else codes


def applicability(view: dict) -> Said:
    prov = view.get("provenance") or {}
    task = (said(gettext_noop("long-form question answering (QA)")) if prov.get("target") == "answer"
            else said(gettext_noop("diagnostic conversation (none of the guideline's task categories: only items for "
                                   "all tasks apply)")))
    return said(gettext_noop("Applicability: research design LLM evaluation (E): the study evaluates existing LLMs' "
                             "texts and develops none; task: %(task)s. Each item is answered \"reported at ...\", "
                             "\"not applicable because ...\" or \"not recorded\" (for the authors to report)."),
                task=task)


def tripod_markdown(view: dict) -> str:
    lines = [f"# TRIPOD-LLM checklist: {view.get('project', '')}", "", f"_{TRIPOD_SOURCE}_", "",
             str(applicability(view)), ""]
    lines += _table(["Item", "Section", "Topic", "Applies to", "Answer"],
                    [[c["item"], c["section"], c["topic"], c["applies"], c["answer"]] for c in checklist(view)])
    return "\n".join(lines) + "\n"
