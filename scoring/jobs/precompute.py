"""Where the inputs of stored figures change, the figures are queued to be computed again
(:mod:`scoring.jobs.figures`): one place that says which reports follow which change."""

from __future__ import annotations

import logging

from projects import scoping

log = logging.getLogger(__name__)


def on_labels_changed(sender, campaign, **kwargs) -> None:
    """Labels of ``campaign`` were submitted, returned or imported, or its name rule changed: its agreement reports
    and the judge reports against it."""
    from scoring.judges import comparison, planner_jobs, selection_jobs
    from scoring.judges.service import refresh_reports as refresh_judge_reports
    from scoring.reports.service import refresh_reports

    with scoping.in_project(campaign.project_id):  # a label save may run outside any project scope
        refresh_reports(campaign)
        refresh_judge_reports(campaign=campaign)
        comparison.refresh(campaign=campaign)
        selection_jobs.refresh(campaign=campaign)
        planner_jobs.refresh(campaign=campaign)


def on_judge_run_finished(run) -> None:
    """A judge run finished (or was imported): its reports against every comparable campaign, its comparisons
    with the runs its page offers beside it, and the judge selections computed before on those campaigns."""
    from scoring.judges import comparison, selection_jobs
    from scoring.judges.service import refresh_reports as refresh_judge_reports

    refresh_judge_reports(run=run)
    comparison.refresh(run=run)
    selection_jobs.refresh(run=run)
