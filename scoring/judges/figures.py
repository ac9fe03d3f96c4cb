"""The judge-vs-physicians report as a background job, cached like the campaign agreement report.

A report is one :class:`~core.jobs.models.Job` of kind ``judge_report`` whose ``params["key"]`` hashes
everything the report depends on:

* the run (its id) or the jury ("jury:<id>") and the campaign;
* the physicians' labels: :func:`scoring.reports.fingerprint.study_fingerprint` (newest label and last change of the
  campaign's labels, count and last change of its assignments: a new, changed, submitted or returned label changes
  it);
* the judge's answers: :func:`answers_fingerprint` (count per status, the sum of the values and the last change
  of the run's results, and the run's status: a new answer, a retried or imported one changes it);
* the verdict settings (floor, minimum dialogues, margin, interval method);
* whether the reader may see the physicians' names (:func:`scoring.reports.exports.may_see_names`, the README's
  one rule): a coordinator and an analyst of a campaign without *Allow names* read different reports;
* :data:`REPORT_VERSION`, raised when the computation changes, so no report of older code is served.

Reports are computed when their inputs change (:func:`refresh_reports`: a run finishes, labels are submitted or
imported) and stored (:mod:`core.jobs.figures`). The page shows the latest stored report of its run, campaign,
settings and name rule at once, marked "updating" while a newer one is computed; the downloads and the API serve
only the report of the current key (202 or 409 while it is being computed). ``scoring.judges.report``
(pandas, scipy) is imported inside the functions: the URLconf imports this module and start-up should not wait
for the statistics stack.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from annotation.models import Campaign
from core.jobs import figures
from core.jobs import services as jobs
from core.jobs.models import Job
from scoring.judges.models import JudgeResult, JudgeRun, Jury
from scoring.reports.exports import may_see_names

#: Raise when the report's computation or layout changes: cached reports of older code are then not served.
# 5: sentences stored with their message ids (said in the page's language); 4: juries (run.is_jury, a jury's
# provenance); 3: the instrument's words, decimals, null limits
REPORT_VERSION = 5


def is_jury(source) -> bool:
    return bool(getattr(source, "is_jury", False))  # not scoring.judges.sources: it loads pandas


def answers_fingerprint(run: JudgeRun) -> str:
    """Changes whenever an answer of the run is added, changed, retried or imported, or the run changes status; a
    jury's whenever one of its members' does (its rule and members are fixed when it is made)."""
    from django.db.models import Count, Max, Q, Sum

    if is_jury(run):
        raw = "|".join([f"jury{run.pk}", run.rule, run.tie_rule, str(run.round_to_grid),
                        *(answers_fingerprint(member) for member in run.member_runs())])
        return hashlib.sha256(raw.encode()).hexdigest()[:16]

    counts = JudgeResult.objects.filter(run=run).order_by().aggregate(
        n=Count("id"), done=Count("id", filter=Q(status=JudgeResult.Status.DONE)),
        failed=Count("id", filter=Q(status=JudgeResult.Status.FAILED)),
        unscored=Count("id", filter=Q(status=JudgeResult.Status.UNSCORED)), values=Sum("value"),
        last=Max("updated_at"))
    raw = f"{run.pk}|{run.status}|{counts['n']}|{counts['done']}|{counts['failed']}|{counts['unscored']}|" \
          f"{counts['values']}|{counts['last']}"
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


#: A run's own scores (the run page) are kept this long under the fingerprint of its answers.
SCORES_SECONDS = 7 * 24 * 3600


def stored_judge_scores(run: JudgeRun) -> dict[str, Any]:
    """The run's own scores (``scoring.judges.report.judge_scores``: a bootstrap per model and criterion), kept in the
    cache under the fingerprint of its answers: the run page reads them instead of computing them per view. The
    report jobs that follow the run's end store them ahead (:func:`judge_report`)."""
    from django.core.cache import cache

    key = f"judge-scores:{run_param(run)}:{answers_fingerprint(run)}:{REPORT_VERSION}"
    scores = cache.get(key)
    if scores is None:
        from scoring.judges.report import judge_scores

        scores = judge_scores(run)
        cache.set(key, scores, SCORES_SECONDS)
    return scores


def report_subject(run: JudgeRun, campaign: Campaign, names: bool, verdict) -> dict[str, Any]:
    """What names one judge report (:mod:`core.jobs.figures`): run, campaign, name rule, verdict settings and
    the code's :data:`REPORT_VERSION`; its version (``key``) hashes these with the labels' and answers'
    fingerprints."""
    return {"run": run_param(run), "campaign": campaign.pk, "names": names, "settings": verdict.as_dict(),
            "version": REPORT_VERSION}


def report_inputs(run: JudgeRun, campaign: Campaign) -> dict[str, str]:
    """The fingerprints of what a report reads now: the campaign's labels and the run's answers."""
    from scoring.reports.fingerprint import study_fingerprint

    return {"labels": study_fingerprint([campaign]), "answers": answers_fingerprint(run)}


def report_key(run: JudgeRun, campaign: Campaign, subject: dict[str, Any],
               inputs: dict[str, str] | None = None) -> str:
    """The version of a report's inputs now (see the module docstring)."""
    params = {**subject, **(inputs or report_inputs(run, campaign))}
    return hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:32]


def report_params(run: JudgeRun, campaign: Campaign, user, verdict, names: bool | None = None) -> dict[str, Any]:
    """What the report of ``run`` against ``campaign`` depends on for ``user`` with ``verdict`` settings (``names``
    given: with or without raters' names whoever asks), and the key that names its inputs now (see the module
    docstring)."""
    names = may_see_names(user, [campaign]) if names is None else names
    subject = report_subject(run, campaign, names, verdict)
    return {**subject, "key": report_key(run, campaign, subject)}


def report_figures(run: JudgeRun, campaign: Campaign, user, verdict, *, start: bool = True,
                   retry: bool = False, names: bool | None = None) -> figures.Figures:
    """The stored report ``user`` reads with ``verdict`` settings and the job computing a newer one
    (:func:`core.jobs.figures.look`)."""
    params = report_params(run, campaign, user, verdict, names)
    key = params.pop("key")
    return figures.look(Job.Kind.JUDGE_REPORT, params, version_key="key", version=key, project=run.project_id,
                        user=user, start=start, retry=retry)


def run_param(source) -> int | str:
    """How a report job names its judge: a run by its id, a jury as "jury:<id>"."""
    return f"jury:{source.pk}" if is_jury(source) else source.pk


def current_report_job(run: JudgeRun, campaign: Campaign, user, verdict, *, start: bool = True,
                       retry: bool = False) -> Job | None:
    """The report job for the current labels, answers and settings: a finished one if stored, else a running one,
    else the one that failed (the same data would fail again). With ``start`` a new one is queued when there is
    none, or with ``retry`` when the last one failed. For the API and the downloads, which never serve figures of
    older inputs."""
    return report_figures(run, campaign, user, verdict, start=start, retry=retry).current_job


def compute_now(run: JudgeRun, campaign: Campaign, user, verdict=None, *, names: bool | None = None) -> Job:
    """The report ``user`` would see, computed in this process (the demo loader precomputes the demo run's report
    so that it shows at first login); a finished job for the same inputs is returned as it is. ``names=False``:
    the report without raters' names, which the methods page and the study archive read whoever looks."""
    from scoring.judges.verdicts import VerdictSettings

    verdict = verdict or VerdictSettings()
    names = may_see_names(user, [campaign]) if names is None else names
    found = report_figures(run, campaign, user, verdict, start=False, names=names)
    if found.fresh:
        return found.stored
    return figures.compute_now(Job.Kind.JUDGE_REPORT, report_subject(run, campaign, names, verdict),
                               project=run.project_id, user=user)


def comparable_campaigns(run: JudgeRun) -> list[Campaign]:
    """The live campaigns a run can be compared with: same corpus, on the scale version of the run's prompts (as
    ``scoring.judges.report.check_comparable`` asks, without loading the statistics stack in a web process)."""
    from scoring.judges.models import PromptSet

    version_id = run.scale_version_id  # imported runs (no prompt set)
    if not version_id:
        prompt_set_id = (run.snapshot or {}).get("prompt_set") or getattr(run.config, "prompt_set_id", None)
        version_id = PromptSet.objects.filter(pk=prompt_set_id).values_list("scale_version_id", flat=True).first()
    return list(Campaign.objects.alive().filter(corpus_id=run.corpus_id, scale_version_id=version_id))


#: A campaign's new labels refresh the default reports of this many of the latest finished runs on its corpus.
LATEST_RUNS = 10


def refresh_reports(*, run: JudgeRun | None = None, campaign: Campaign | None = None) -> list[Job]:
    """A run finished or its answers changed (``run``), or a campaign's labels changed (``campaign``): queue the
    judge reports they feed to be computed once the changes stop (debounced). For a finished run: against every
    comparable campaign; for a campaign: against the latest finished runs on its corpus (:data:`LATEST_RUNS`);
    each with the default settings, with names (coordinators) and without (analysts where names are hidden, and
    always the methods page and the study archive). Variants someone has read lately are refreshed too."""
    from scoring.judges.verdicts import VerdictSettings

    subjects: list[tuple[JudgeRun, Campaign, dict[str, Any]]] = []
    keys = ("run", "campaign", "names", "settings", "version")
    pairs: list[tuple[JudgeRun, Campaign]] = []
    if run is not None and run.status in JudgeRun.FINISHED:
        pairs += [(run, other) for other in comparable_campaigns(run)]
    if campaign is not None:
        finished = (JudgeRun.objects.filter(corpus_id=campaign.corpus_id, status__in=JudgeRun.FINISHED)
                    .order_by("-created_at")[:LATEST_RUNS])
        pairs += [(other, campaign) for other in finished if campaign in comparable_campaigns(other)]
    for the_run, the_campaign in pairs:
        for names in (True, False):
            subjects.append((the_run, the_campaign,
                             report_subject(the_run, the_campaign, names, VerdictSettings())))
    seen = Job.objects.filter(kind=Job.Kind.JUDGE_REPORT, status=Job.Status.SUCCEEDED,
                              project=(run or campaign).project_id).exclude(result={})
    seen = seen.filter(params__run=run.pk) if run is not None else seen.filter(params__campaign=campaign.pk)
    runs = {run.pk: run} if run is not None else {}
    campaigns = {campaign.pk: campaign} if campaign is not None else {}
    for params in seen.order_by("-created_at").values_list("params", flat=True)[:20]:
        subject = {key: params.get(key) for key in keys}
        if subject["version"] != REPORT_VERSION or any(s == subject for _, _, s in subjects):
            continue
        the_run = runs.get(subject["run"]) or JudgeRun.objects.filter(pk=subject["run"]).first()
        the_campaign = (campaigns.get(subject["campaign"])
                        or Campaign.objects.alive().filter(pk=subject["campaign"]).first())
        if the_run is None or the_campaign is None:
            continue
        runs[the_run.pk], campaigns[the_campaign.pk] = the_run, the_campaign
        subjects.append((the_run, the_campaign, subject))
    return [figures.refresh(Job.Kind.JUDGE_REPORT, subject, project=the_run.project_id)
            for the_run, _, subject in subjects]


def report_job(pk: int, run_id: int | str) -> Job:
    """A judge report job of this run or jury (:func:`run_param`; for the progress poll; the caller found the run in
    the request's project); Job.DoesNotExist otherwise."""
    return Job.objects.get(pk=pk, kind=Job.Kind.JUDGE_REPORT, params__run=run_id)


@jobs.handler(Job.Kind.JUDGE_REPORT)
def judge_report(job: Job) -> dict[str, Any]:
    """The job's body: the report of the job's run against its campaign with its settings, reporting progress."""
    from scoring.judges.report import VerdictSettings, judge_vs_physicians

    params = job.params
    if str(params["run"]).startswith("jury:"):
        run = Jury.objects.select_related("corpus").get(pk=int(str(params["run"])[5:]))
    else:
        run = JudgeRun.objects.select_related("config", "corpus").get(pk=params["run"])
    campaign = Campaign.objects.select_related("corpus", "scale_version").get(pk=params["campaign"])
    subject = {key: params[key] for key in ("run", "campaign", "names", "settings", "version")}
    inputs = report_inputs(run, campaign)  # the inputs it reads from now on (the study archive looks them up)
    figures.stamp(job, key=report_key(run, campaign, subject, inputs), **inputs)
    jobs.set_progress(job, 0.02, "loading labels and answers")
    with single_blas_thread():
        report = judge_vs_physicians(run, campaign, verdict=VerdictSettings(**params["settings"]),
                                     names=params.get("names", False),
                                     progress=lambda fraction, message: jobs.set_progress(job, fraction, message))
    # Reports of the same run, campaign, settings and name rule on older labels, answers or code are never served
    # again: drop their figures.
    jobs.forget_superseded(job, same=("run", "campaign", "names", "settings"), version="key")
    stored_judge_scores(run)  # the run page's own scores, ahead of its first view
    return report


def single_blas_thread():
    """The report's matrix products on one BLAS thread. The workers share the machine's cores (the README's
    layout runs several worker processes on two cores); BLAS threads that wait for a busy core spin, so the same
    report took 3.5-5.8 s with two threads and 2.5-3.2 s with one on a machine where another process was busy
    (bench/bench_judge_report.py), and used half the CPU time."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")
