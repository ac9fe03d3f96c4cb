"""What the methods page and its downloads are written from, kept in the cache until the study changes (so
that the page costs a few index lookups instead of counting the labels). The texts are written by
:mod:`studies.methods`."""

from __future__ import annotations

#: The methods page's data and documents are kept in the cache this long under the study's change marks.
VIEW_SECONDS = 24 * 3600


def methods_mark(project) -> tuple[dict, str]:
    """The study's report settings and its change mark: each campaign's change mark
    (:func:`scoring.reports.fingerprint.study_fingerprint`: a new or changed label, a new, submitted or returned
    assignment), each judge run's (:func:`scoring.judges.figures.answers_fingerprint`), the report settings (which
    finished report jobs there are) and the counts of the other rows the page names: a few index lookups."""
    import hashlib
    import json

    from annotation.models import Campaign, CampaignRater, Corpus, Dialogue, RandomSample
    from projects.models import Membership
    from scoring.judges import figures as judge_figures
    from scoring.reports.fingerprint import study_fingerprint
    from studies import figure_rows

    settings = figure_rows.default_settings(project)
    campaigns = Campaign.objects.filter(project=project).order_by("pk")  # deleted ones too: their rows are exported
    marks = {"campaigns": [(c.pk, c.name, c.deleted_at is None, c.rater_kind, study_fingerprint([c]))
                           for c in campaigns],
             "runs": [(key, run.pk, run.status, judge_figures.answers_fingerprint(run))
                      for key, run in figure_rows.run_keys(project).items()],
             # the blinding sentence depends on the raters' roles: a new role is a new page
             "roles": sorted(Membership.objects.filter(project=project).values_list("user_id", "role")),
             "rows": [Corpus.objects.filter(project=project).count(),
                      Dialogue.objects.filter(corpus__project=project).count(),
                      RandomSample.objects.filter(campaign__project=project).count(),
                      CampaignRater.objects.filter(campaign__project=project).count()]}
    key = "studies:methods:" + hashlib.sha256(json.dumps([project.pk, project.name, settings, marks],
                                                         sort_keys=True, default=str).encode()).hexdigest()
    return settings, key


def compute_view(project, settings: dict, key: str) -> dict:
    """What the methods page is written from, computed now: the reports (:func:`studies.figure_rows.cached_reports`,
    without their plots), the archive's row counts (:func:`studies.export.export_counts`) and the provenance."""
    from studies import figure_rows
    from studies.export import SCHEMAS, export_counts
    from studies.provenance import study_provenance

    reports = [{**entry, "report": {k: v for k, v in entry["report"].items() if k != "plots"}}
               if isinstance(entry.get("report"), dict) else entry
               for entry in figure_rows.cached_reports(project, settings)]
    return {"project": project.name, "settings": settings, "reports": reports,
            "counts": export_counts(project, SCHEMAS), "provenance": study_provenance(project), "mark": key}


def methods_view(project) -> dict:
    """What the methods page, its downloads and the checklist are written from (:func:`compute_view`), read in this
    process where no worker is waited for (the demo's checks): the stored figures when current, else computed now,
    and kept in the cache under the study's change mark (:func:`methods_mark`). Requests never call it: they read
    the stored figures (:func:`methods_figures`) and wait for a worker when they are not current."""
    from django.core.cache import cache

    settings, key = methods_mark(project)
    view = cache.get(key)
    if view is None:
        from core.jobs import figures
        from core.jobs.models import Job

        stored = figures.look(Job.Kind.STUDY_METHODS, {"page": "methods"}, version_key="mark", version=key,
                              project=project, start=False)
        view = stored.report if stored.fresh else compute_view(project, settings, key)
        cache.set(key, view, VIEW_SECONDS)
    return view


def methods_figures(project, user=None, *, start: bool = True):
    """The methods page's stored figures (:mod:`core.jobs.figures`): a worker computes the page's data when the
    study changed (:func:`study_methods`), and the page shows the latest stored ones at once, marked "updating"
    while newer ones are computed. Only the change mark is read in the request."""
    from core.jobs import figures
    from core.jobs.models import Job

    _, key = methods_mark(project)
    return figures.look(Job.Kind.STUDY_METHODS, {"page": "methods"}, version_key="mark", version=key,
                        project=project, user=user, start=start)


def study_methods(job) -> dict:
    """The job's body (registered lazily in ``studies.apps``): the methods page's data as they are now, stored as
    the job's result (and kept in the cache for the downloads)."""
    from django.core.cache import cache

    from core.jobs import figures
    from core.jobs import services as jobs
    from projects.models import Project

    project = Project.objects.get(pk=job.project_id)
    settings, key = methods_mark(project)
    figures.stamp(job, mark=key)
    jobs.set_progress(job, 0.1, "reading the study's reports")
    view = compute_view(project, settings, key)
    cache.set(key, view, VIEW_SECONDS)
    jobs.forget_superseded(job, same=("page",), version="mark")
    return figures.plain(view)


def compute_now(project):
    """The methods page's data computed in this process (the demo loader), unless stored for the study as it is."""
    from core.jobs import figures
    from core.jobs.models import Job

    found = methods_figures(project, start=False)
    if found.fresh:
        return found.stored
    return figures.compute_now(Job.Kind.STUDY_METHODS, {"page": "methods"}, project=project)


def refresh_methods(project_id: int) -> None:
    """The study's reports changed: its methods page is computed again (debounced), if anyone has opened it."""
    from core.jobs import figures
    from core.jobs.models import Job

    if Job.objects.filter(kind=Job.Kind.STUDY_METHODS, project_id=project_id,
                          status=Job.Status.SUCCEEDED).exists():
        figures.refresh(Job.Kind.STUDY_METHODS, {"page": "methods"}, project=project_id)


def methods_document(view: dict, what: str) -> bytes:
    """A download of the methods page (``methods.md``, ``methods.docx``, ``tripod-llm.md``) written from the page's
    stored data ``view`` (:func:`methods_figures`), kept in the cache under their change mark: a second download is
    read from the cache, a changed study (a label, a run, a report setting) writes it anew."""
    from django.core.cache import cache

    from studies.methods import methods_docx, methods_markdown, tripod_markdown

    build = {"methods.md": lambda v: methods_markdown(v).encode("utf-8"), "methods.docx": methods_docx,
             "tripod-llm.md": lambda v: tripod_markdown(v).encode("utf-8")}[what]
    key = f"studies:methods-document:{what}:{view['mark'].removeprefix('studies:methods:')}"
    return cache.get_or_set(key, lambda: build(view), VIEW_SECONDS)
