"""Every figure of a study that the archive keeps and :mod:`studies.verify` recomputes: the campaign agreement
reports (:func:`scoring.reports.agreement.compute`), the judge-vs-physicians reports with their verdicts and
model estimates (:func:`scoring.judges.report.judge_vs_physicians`) and each judge run's table of repeated answers
(:mod:`studies.replicates`), computed by the app's own code with the
settings the study used. A report is flattened into one row per figure (a number or a verdict) with a stable name
that does not depend on database ids, so that the same study loaded into another project or instance gives the
same names."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator
from typing import Any

from annotation.models import Assignment, Campaign, Label
from projects.pseudonyms import pseudonyms

DEFAULT_SEED = 20240501
DEFAULT_RESAMPLES = 1000
# Parts of a report that are not figures: ids, timings, plots, prose, the software and the data fingerprint
# (kept on its own row).
SKIP = {"id", "ids", "campaign", "campaigns", "run", "fingerprint", "seconds", "plots", "methods", "software",
        "warnings", "words", "title", "provenance", "note", "notes", "ci_note", "method", "text", "reasons",
        "reason", "settings", "key", "config", "config_id", "planner", "rule", "acceptance_rule", "summary_text"}
VERDICT_KEYS = {"verdict", "outcome", "band", "decision"}


def printed(value: Any) -> str:
    """A figure as the app prints it: three decimals for reals, whole numbers as they are, undefined as such."""
    if value is None:
        return "undefined"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, str)):
        return str(value)
    from core.stats import formatting

    # the one number formatter: never "-0.000", and noise around a zero by construction is 0
    return "undefined" if math.isnan(value) else formatting.number(value, 3)


def _element_key(element: Any, index: int) -> str:
    if isinstance(element, dict):
        for name in ("code", "item", "model", "name", "rater", "scope", "form", "type", "dimension", "label"):
            value = element.get(name)
            if isinstance(value, (str, int)) and not isinstance(value, bool):
                return str(value)
    return str(index)


def flatten(report: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(name, value) for every number and verdict of a report."""
    if isinstance(report, dict):
        for key in sorted(report):
            if key in SKIP or key.endswith("_id"):
                continue
            yield from flatten(report[key], f"{prefix}/{key}" if prefix else str(key))
    elif isinstance(report, list):
        seen: dict[str, int] = {}
        for index, element in enumerate(report):
            key = _element_key(element, index)
            seen[key] = seen.get(key, 0) + 1
            if seen[key] > 1:
                key = f"{key}#{seen[key]}"
            yield from flatten(element, f"{prefix}/{key}")
    elif _is_figure(report, prefix):
        yield prefix, report


def _is_figure(value: Any, name: str) -> bool:
    """A number, or a verdict (a word under one of :data:`VERDICT_KEYS`)."""
    if isinstance(value, str):
        return name.rsplit("/", 1)[-1] in VERDICT_KEYS
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _multiset_digest(rows) -> str:
    """A SHA-256-based digest of a set of rows that does not depend on their order (the sum of each row's SHA-256
    modulo 2**256, with the count): streamed, so 643,200 labels are never sorted in memory."""
    total, count = 0, 0
    for row in rows:
        total = (total + int.from_bytes(hashlib.sha256("\t".join(row).encode()).digest(), "big")) % (1 << 256)
        count += 1
    return hashlib.sha256(f"{count}:{total:064x}".encode()).hexdigest()


def _value_text(value) -> str:
    return printed(float(value)) if value is not None else ""


def labels_fingerprint(campaign: Campaign) -> str:
    """Digest of the submitted labels a campaign's figures are computed from, by dialogue external id, rater
    pseudonym, item code and value: the same in any project or instance holding the same labels."""
    qs = (Label.objects.filter(campaign=campaign, assignment__status=Assignment.Status.SUBMITTED).order_by()
          .values_list("dialogue__external_id", "rater_id", "item__code", "value"))
    names = pseudonyms(campaign.project_id, qs.values_list("rater_id", flat=True).distinct())
    return _multiset_digest((ext, names[rater], code, _value_text(value))
                            for ext, rater, code, value in qs.iterator(chunk_size=10000))


#: Digests of a campaign's labels and a run's answers are kept this long under their change marks.
DIGEST_SECONDS = 7 * 24 * 3600


def stored_labels_digest(campaign: Campaign) -> str:
    """:func:`labels_fingerprint`, kept in the cache under the campaign's change mark
    (:func:`scoring.reports.fingerprint.study_fingerprint`: its newest label and last changes, from the indexes):
    the methods page reads it instead of streaming every label (seconds for 643,200 labels). The workers store it
    when a report on the campaign's labels has been computed (:func:`keep_digests`)."""
    from django.core.cache import cache

    from scoring.reports.fingerprint import study_fingerprint

    key = f"studies:labels-digest:{campaign.pk}:{study_fingerprint([campaign])}"
    digest = cache.get(key)
    if digest is None:
        digest = labels_fingerprint(campaign)
        cache.set(key, digest, DIGEST_SECONDS)
    return digest


def stored_answers_digest(run) -> str:
    """:func:`answers_fingerprint`, kept in the cache under the run's change mark
    (:func:`scoring.judges.figures.answers_fingerprint`), as :func:`stored_labels_digest`."""
    from django.core.cache import cache

    from scoring.judges import figures as judge_figures

    key = f"studies:answers-digest:{run.pk}:{judge_figures.answers_fingerprint(run)}"
    digest = cache.get(key)
    if digest is None:
        digest = answers_fingerprint(run)
        cache.set(key, digest, DIGEST_SECONDS)
    return digest


def keep_digests(job) -> None:
    """After a campaign or judge report job (a worker): the digests of the labels and answers it read, ahead of the
    methods page (registered in ``studies.apps``)."""
    from scoring.judges.models import JudgeRun

    campaign = Campaign.objects.filter(pk=job.params.get("campaign")).first()
    if campaign is not None:
        stored_labels_digest(campaign)
    run = job.params.get("run")
    if isinstance(run, int) and (found := JudgeRun.objects.filter(pk=run).first()) is not None:
        stored_answers_digest(found)


def run_keys(project) -> dict[str, Any]:
    """Judge runs by their archive key ("run-1", ... in creation order), the same before and after a load."""
    from scoring.judges.models import JudgeRun

    return {f"run-{n}": run for n, run in enumerate(JudgeRun.objects.filter(project=project).order_by("pk"), 1)}


def default_settings(project) -> dict:
    """The report settings of a study: every option set a finished report of the project used, else the defaults,
    for each campaign with submitted labels and each judge run with a comparable campaign; and the table of
    repeated answers of each finished run with replicates (:mod:`studies.replicates`), campaign or not."""
    from core.jobs.models import Job
    from scoring.judges.report import VerdictSettings, run_scale_version_id

    campaigns = [c for c in Campaign.objects.alive().filter(project=project).order_by("pk")
                 if c.assignments.filter(status=Assignment.Status.SUBMITTED).exists()]
    jobs = list(Job.objects.filter(project=project, status=Job.Status.SUCCEEDED,
                                   kind__in=[Job.Kind.CAMPAIGN_REPORT, Job.Kind.JUDGE_REPORT])
                .only("kind", "params").order_by("pk"))  # not the reports: a large study's are megabytes
    campaign_reports = []
    for campaign in campaigns:
        options = {(j.params.get("ci_method", "percentile"), j.params.get("correlation", "pearson"))
                   for j in jobs if j.kind == Job.Kind.CAMPAIGN_REPORT and j.params.get("campaign") == campaign.pk}
        for ci_method, correlation in sorted(options or {("percentile", "pearson")}):
            campaign_reports.append({"campaign": campaign.name, "ci_method": ci_method, "correlation": correlation,
                                     "seed": DEFAULT_SEED, "n_resamples": DEFAULT_RESAMPLES})
    judge_reports = []
    for key, run in run_keys(project).items():
        if run.status not in ("succeeded", "problems"):
            continue
        version = run_scale_version_id(run)
        for campaign in campaigns:
            if campaign.corpus_id != run.corpus_id or campaign.scale_version_id != version:
                continue
            chosen = [j.params["settings"] for j in jobs if j.kind == Job.Kind.JUDGE_REPORT
                      and j.params.get("run") == run.pk and j.params.get("campaign") == campaign.pk]
            unique = {tuple(sorted(s.items())): s for s in chosen} or {(): VerdictSettings().as_dict()}
            for settings in unique.values():
                judge_reports.append({"run": key, "campaign": campaign.name, "verdict": settings,
                                      "seed": DEFAULT_SEED, "n_resamples": DEFAULT_RESAMPLES})
    from studies import replicates

    return {"campaign_reports": campaign_reports, "judge_reports": judge_reports,
            "replicate_tables": replicates.settings_entries(run_keys(project))}


def _tag(entry: dict) -> str:
    if "run" in entry:
        v = entry["verdict"]
        return (f"judge {entry['run']} vs {entry['campaign']} [floor {v['floor']}, min {v['min_dialogues']}, "
                f"margin {v['margin']}, {v['ci_method']}]")
    return f"agreement {entry['campaign']} [{entry['ci_method']}, {entry['correlation']}]"


def _same_resampling(report: dict, entry: dict) -> bool:
    return report.get("seed") == entry["seed"] and report.get("n_resamples") == entry["n_resamples"]


def stored_campaign_report(campaign: Campaign, entry: dict) -> dict | None:
    """The agreement report the app already holds for ``entry``: a finished report job (without raters' names) on
    the campaign's current labels with the same options, seed and resamples; None when there is none."""
    from core.jobs.models import Job
    from scoring.reports.fingerprint import study_fingerprint

    job = (Job.objects.filter(kind=Job.Kind.CAMPAIGN_REPORT, status=Job.Status.SUCCEEDED, project=campaign.project_id,
                              params__campaign=campaign.pk, params__names=False,
                              params__ci_method=entry["ci_method"], params__correlation=entry["correlation"],
                              params__fingerprint=study_fingerprint([campaign]))
           .exclude(result={}).order_by("-created_at").first())
    report = job.result if job is not None else None
    return report if report and _same_resampling(report, entry) else None


def stored_judge_report(run, campaign: Campaign, entry: dict) -> dict | None:
    """The judge report the app already holds for ``entry`` (the same run, campaign, verdict settings, labels,
    answers and report code, without names); None when there is none."""
    from core.jobs.models import Job
    from scoring.judges import figures as judge_figures
    from scoring.reports.fingerprint import study_fingerprint

    jobs = (Job.objects.filter(kind=Job.Kind.JUDGE_REPORT, status=Job.Status.SUCCEEDED, project=campaign.project_id,
                               params__run=judge_figures.run_param(run), params__campaign=campaign.pk,
                               params__names=False, params__version=judge_figures.REPORT_VERSION,
                               params__labels=study_fingerprint([campaign]),
                               params__answers=judge_figures.answers_fingerprint(run))
            .exclude(result={}).order_by("-created_at"))
    for job in jobs:
        if job.params.get("settings") == entry["verdict"] and _same_resampling(job.result, entry):
            return job.result
    return None


def compute_reports(project, settings: dict, *, stored: bool = False) -> list[dict]:
    """Each report of ``settings`` from the project's data: {"figure": tag, "kind", "method", "fingerprint",
    "report"}. With ``stored`` a report the app already computed on the same data and settings (a finished report
    job) is taken as it is, as the pages show it, and so are the data digests the workers kept
    (:func:`stored_labels_digest`); otherwise, and by ``verify_study`` always, each is computed now."""
    from scoring.judges.report import VerdictSettings, judge_vs_physicians
    from scoring.reports import agreement

    by_name = {c.name: c for c in Campaign.objects.alive().filter(project=project)}
    runs = run_keys(project)
    digests: dict[int, str] = {}  # a campaign's labels are digested once however many reports use them

    def labels_digest(campaign: Campaign) -> str:
        if campaign.pk not in digests:
            digests[campaign.pk] = stored_labels_digest(campaign) if stored else labels_fingerprint(campaign)
        return digests[campaign.pk]

    def answers_digest(run) -> str:
        return stored_answers_digest(run) if stored else answers_fingerprint(run)

    out = []
    for entry in settings.get("campaign_reports", []):
        campaign = by_name.get(entry["campaign"])
        if campaign is None:
            out.append({"figure": _tag(entry), "kind": "agreement", "missing": True})
            continue
        report = stored_campaign_report(campaign, entry) if stored else None
        if report is None:
            study = agreement.load_study([campaign], names=False)
            report = agreement.compute(study, n_resamples=entry["n_resamples"], seed=entry["seed"], plots=False,
                                       ci_method=entry["ci_method"], correlation=entry["correlation"])
        out.append({"figure": _tag(entry), "kind": "agreement", "report": report,
                    "method": " ".join(str(v) for k, v in sorted(report.get("methods", {}).items())
                                       if isinstance(v, str)),  # not the software, nor the message ids
                    "fingerprint": labels_digest(campaign)})
    for entry in settings.get("judge_reports", []):
        campaign, run = by_name.get(entry["campaign"]), runs.get(entry["run"])
        if campaign is None or run is None:
            out.append({"figure": _tag(entry), "kind": "judge", "missing": True})
            continue
        report = stored_judge_report(run, campaign, entry) if stored else None
        if report is None:
            report = judge_vs_physicians(run, campaign, verdict=VerdictSettings(**entry["verdict"]),
                                         n_resamples=entry["n_resamples"], seed=entry["seed"])
        methods = report.get("methods") or {}
        out.append({"figure": _tag(entry), "kind": "judge", "report": report,
                    "method": " ".join(str(v) for k, v in sorted(methods.items()) if isinstance(v, str))
                    if isinstance(methods, dict) else str(methods),
                    "fingerprint": labels_digest(campaign) + ":" + answers_digest(run)})
    from studies import replicates

    for entry in settings.get("replicate_tables", []):
        run = runs.get(entry["run"])
        report = replicates.compute(run, entry, stored=stored) if run is not None else None
        if report is None:
            out.append({"figure": replicates.tag(entry), "kind": "replicates", "missing": True})
            continue
        out.append({"figure": replicates.tag(entry), "kind": "replicates", "report": report,
                    "method": report.get("method", ""), "fingerprint": answers_digest(run)})
    return out


def answers_fingerprint(run) -> str:
    """Digest of a run's answers by dialogue external id, item code, status and value (see
    :func:`_multiset_digest`)."""
    from scoring.judges.models import JudgeResult

    rows = (JudgeResult.objects.filter(run=run).order_by()
            .values_list("dialogue__external_id", "item__code", "status", "value"))
    return _multiset_digest((ext, code, status, _value_text(value))
                            for ext, code, status, value in rows.iterator(chunk_size=10000))


def figure_rows(reports: list[dict]) -> list[dict]:
    """One row per figure: the report's tag and the figure's path, its printed value, and the report's fingerprint
    (as its own row, so that changed data shows even where no figure moves)."""
    rows = []
    for entry in reports:
        if entry.get("missing"):
            rows.append({"figure": f"{entry['figure']} (report)", "value": "missing", "kind": entry["kind"]})
            continue
        rows.append({"figure": f"{entry['figure']} data fingerprint", "value": entry["fingerprint"],
                     "kind": entry["kind"], "fingerprint": entry["fingerprint"]})
        for name, value in flatten(entry["report"]):
            rows.append({"figure": f"{entry['figure']} {name}", "value": printed(value), "kind": entry["kind"],
                         "fingerprint": entry["fingerprint"]})
    return rows


def cached_reports(project, settings: dict) -> list[dict]:
    """:func:`compute_reports` taking the finished report jobs, cached until a label or judge answer they use changes
    (the pages show the methods and checklist without recomputing every bootstrap)."""
    import json

    from django.core.cache import cache

    from scoring.judges import figures as judge_figures
    from scoring.reports.fingerprint import study_fingerprint

    by_name = {c.name: c for c in Campaign.objects.alive().filter(project=project)}
    runs = run_keys(project)
    # the app's own change marks (counts and last changes), not the streamed digests: those are computed once, below
    prints = [study_fingerprint([c]) for name, c in sorted(by_name.items())]
    prints += [judge_figures.answers_fingerprint(r) for _, r in sorted(runs.items())]
    key = "studies:reports:" + hashlib.sha256(json.dumps([project.pk, settings, prints], sort_keys=True,
                                                         default=str).encode()).hexdigest()
    reports = cache.get(key)
    if reports is None:
        reports = compute_reports(project, settings, stored=True)
        cache.set(key, reports, 24 * 3600)
    return reports
