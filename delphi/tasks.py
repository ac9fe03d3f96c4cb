"""Celery tasks of the Delphi app. Thin: each loads its row and calls a service."""

from celery import shared_task

from delphi import services
from delphi.models import Round


@shared_task(name="delphi.send_round_reminders")
def send_round_reminders(round_id: int, force: bool = False) -> int:
    """E-mail a reminder to the round's panelists who have not completed it. Queued with a countdown when a
    round opens (every ``reminder_days``); harmless when delivered twice (recently contacted panelists are
    skipped) or after the round closed (nothing is sent)."""
    rnd = Round.objects.filter(pk=round_id).first()
    if rnd is None:
        return 0
    return services.send_reminders(rnd, force=force)


@shared_task(name="delphi.remind_open_rounds")
def remind_open_rounds() -> int:
    """Remind due panelists of every open round (for a Celery beat schedule, e.g. daily)."""
    return sum(services.send_reminders(rnd) for rnd in Round.objects.filter(status=Round.Status.OPEN,
                                                                             study__deleted_at__isnull=True))
