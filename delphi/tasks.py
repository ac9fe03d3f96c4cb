"""Celery tasks of the Delphi app. Thin: each loads its row and calls a service in the row's project."""

from celery import shared_task

from delphi.models import Round
from projects.scoping import in_project


@shared_task(name="delphi.send_round_reminders")
def send_round_reminders(round_id: int, force: bool = False) -> int:
    """E-mail a reminder to the round's panelists who have not completed it. Queued with a countdown when a
    round opens (every ``reminder_days``); harmless when delivered twice (recently contacted panelists are
    skipped) or after the round closed (nothing is sent)."""
    from delphi import services  # here: numpy (its statistics) is no part of a worker's start

    rnd = Round.unscoped.select_related("study").filter(pk=round_id).first()  # the task carries only the id
    if rnd is None:
        return 0
    with in_project(rnd.study.project_id):
        return services.send_reminders(rnd, force=force)


@shared_task(name="delphi.remind_open_rounds")
def remind_open_rounds() -> int:
    """Remind due panelists of every open round of every project (for a Celery beat schedule, e.g. daily)."""
    from delphi import services

    sent = 0
    for rnd in Round.unscoped.select_related("study").filter(status=Round.Status.OPEN,
                                                             study__deleted_at__isnull=True):
        with in_project(rnd.study.project_id):
            sent += services.send_reminders(rnd)
    return sent
