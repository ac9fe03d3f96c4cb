"""Two judge runs side by side against physicians (:func:`scoring.judges.report.compare_modes`: a per-item run beside
its per-dialogue twin, an imported judge or a jury beside a run) as stored figures (:mod:`core.jobs.figures`):
computed by a worker when a run finishes or the campaign's labels change, and shown by the page at once, marked
"updating" while a newer one is computed, instead of being computed on every view (1.3 s on the demo).

A comparison's *subject* is the pair (``run``: a run's id or "jury:<id>"; ``other``: the run beside it), the
campaign, the name rule and :data:`scoring.judges.figures.REPORT_VERSION`; its version (``key``) hashes the subject
with the fingerprints of the campaign's labels and of both runs' answers. ``scoring.judges.report`` (pandas) is
imported inside the functions, as in :mod:`scoring.judges.figures`.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from annotation.models import Campaign
from core.jobs import figures
from core.jobs import services as jobs
from core.jobs.models import Job
from scoring.judges.figures import REPORT_VERSION, answers_fingerprint, comparable_campaigns, run_param
from scoring.judges.models import JudgeRun, Jury
from scoring.reports.exports import may_see_names

#: What names one comparison (the params every version of it shares).
SUBJECT = ("run", "other", "campaign", "names", "version")


def subject(source, other: JudgeRun, campaign: Campaign, names: bool) -> dict[str, Any]:
    return {"run": run_param(source), "other": other.pk, "campaign": campaign.pk, "names": names,
            "version": REPORT_VERSION}


def inputs(source, other: JudgeRun, campaign: Campaign) -> dict[str, str]:
    """The fingerprints of what a comparison reads now: the campaign's labels and both runs' answers."""
    from scoring.reports.fingerprint import study_fingerprint

    return {"labels": study_fingerprint([campaign]), "answers": answers_fingerprint(source),
            "other_answers": answers_fingerprint(other)}


def key(source, other: JudgeRun, campaign: Campaign, params: dict[str, Any],
        now: dict[str, str] | None = None) -> str:
    """The version of a comparison's inputs now."""
    return hashlib.sha256(json.dumps({**params, **(now or inputs(source, other, campaign))},
                                     sort_keys=True).encode()).hexdigest()[:32]


def compare_figures(source, other: JudgeRun, campaign: Campaign, user, *, start: bool = True,
                    retry: bool = False) -> figures.Figures:
    """The stored comparison ``user`` reads (names as :func:`may_see_names` allows) and the job computing a newer
    one (:func:`core.jobs.figures.look`). The caller checked that the runs and the campaign can be compared."""
    params = subject(source, other, campaign, may_see_names(user, [campaign]))
    return figures.look(Job.Kind.JUDGE_COMPARE, params, version_key="key",
                        version=key(source, other, campaign, params), project=source.project_id, user=user,
                        start=start, retry=retry)


def compute_now(source, other: JudgeRun, campaign: Campaign, user) -> Job:
    """The comparison ``user`` would see, computed in this process (the demo loader: no demo page computes it on
    first view); a finished job for the same inputs is returned as it is."""
    found = compare_figures(source, other, campaign, user, start=False)
    if found.fresh:
        return found.stored
    return figures.compute_now(Job.Kind.JUDGE_COMPARE,
                               subject(source, other, campaign, may_see_names(user, [campaign])),
                               project=source.project_id, user=user)


def partners(run: JudgeRun) -> list[JudgeRun]:
    """Finished runs on the same corpus whose configuration differs from this one only in mode, and, for an
    imported run (or beside one), every finished run of the same scale version: the runs its page offers to
    compare it with."""
    from scoring.judges.report import MODE_COMPARISON_IGNORED, run_scale_version_id

    found = []
    for other in JudgeRun.objects.filter(corpus=run.corpus, status__in=JudgeRun.FINISHED).exclude(pk=run.pk):
        if run.is_imported or other.is_imported:  # imported scores go beside any run of the same scale version
            if run_scale_version_id(run) == run_scale_version_id(other):
                found.append(other)
            continue
        a, b = run.snapshot, other.snapshot
        if a.get("mode") == b.get("mode"):
            continue
        keys = (set(a) | set(b)) - set(MODE_COMPARISON_IGNORED) - {"mode", "name"}
        if all(a.get(k) == b.get(k) for k in keys):
            found.append(other)
    return found


def refresh(*, run: JudgeRun | None = None, campaign: Campaign | None = None, jury: Jury | None = None
            ) -> list[Job]:
    """A run finished (``run``): queue its comparisons with its partners, both ways, against every comparable
    campaign, for coordinators and (where names are hidden) analysts. A jury was made (``jury``): its comparisons
    with each of its members, which its page links to. A campaign's labels changed (``campaign``): queue again the
    comparisons on it that were computed before. Debounced (:func:`core.jobs.figures.refresh`)."""
    pairs: list[tuple[Any, JudgeRun]] = []
    if run is not None and run.status in JudgeRun.FINISHED:
        for other in partners(run):
            pairs += [(run, other), (other, run)]
    if jury is not None:
        pairs += [(jury, member) for member in jury.member_runs()]
    subjects: list[tuple[Any, dict[str, Any]]] = []
    for source, other in pairs:
        for the_campaign in comparable_campaigns(source):
            for names in ([True] if the_campaign.allow_names else [True, False]):
                subjects.append((source, subject(source, other, the_campaign, names)))
    if campaign is not None:
        seen = (Job.objects.filter(kind=Job.Kind.JUDGE_COMPARE, status=Job.Status.SUCCEEDED,
                                   project=campaign.project_id, params__campaign=campaign.pk)
                .exclude(result={}).order_by("-created_at").values_list("params", flat=True)[:20])
        for params in seen:
            found = {name: params.get(name) for name in SUBJECT}
            if found["version"] == REPORT_VERSION and all(found != s for _, s in subjects):
                subjects.append((campaign, found))
    return [figures.refresh(Job.Kind.JUDGE_COMPARE, params, project=owner.project_id) for owner, params in subjects]


def _source(param: int | str):
    if str(param).startswith("jury:"):
        return Jury.objects.select_related("corpus").get(pk=int(str(param)[5:]))
    return JudgeRun.objects.select_related("config", "corpus").get(pk=param)


def comparison_job(pk: int, source) -> Job:
    """A comparison job of this run or jury (for the page's poll); Job.DoesNotExist otherwise."""
    return Job.objects.get(pk=pk, kind=Job.Kind.JUDGE_COMPARE, params__run=run_param(source))


@jobs.handler(Job.Kind.JUDGE_COMPARE)
def judge_compare(job: Job) -> dict[str, Any]:
    """The job's body: the two runs side by side against the campaign's physicians."""
    from scoring.judges.figures import single_blas_thread
    from scoring.judges.report import compare_modes

    params = job.params
    source, other = _source(params["run"]), JudgeRun.objects.select_related("config", "corpus").get(pk=params["other"])
    campaign = Campaign.objects.select_related("corpus", "scale_version").get(pk=params["campaign"])
    now = inputs(source, other, campaign)  # the inputs it reads from now on
    figures.stamp(job, key=key(source, other, campaign, {name: params[name] for name in SUBJECT}, now), **now)
    with single_blas_thread():
        report = compare_modes(source, other, campaign, names=params.get("names", False))
    jobs.forget_superseded(job, same=SUBJECT[:-1], version="key")
    return figures.plain(report)
