"""A Delphi round's statistics as stored figures, so that no page computes them: computed by a worker when a panelist
completes the questionnaire, a round closes, a panelist leaves or the consensus rule changes, and shown at once by the
study, round and validation pages (:mod:`core.jobs.figures`)."""

from __future__ import annotations

import hashlib
import json

from django.db.models import Count, Max, Q

from core.jobs import figures
from core.jobs.models import Job
from delphi.models import DelphiStudy, Participation, Response, Round
from projects import scoping

#: Raise when the statistics change: stored figures of older code are then computed again.
STATISTICS_VERSION = 1


def inputs_fingerprint(rnd: Round) -> str:
    """Changes whenever an answer, a completion, a panelist's removal, the round's state or the rule changes."""
    answers = Response.objects.filter(participation__round=rnd).aggregate(n=Count("id"), last=Max("updated_at"))
    flow = Participation.objects.filter(round=rnd).aggregate(
        n=Count("id"), started=Count("id", filter=Q(started_at__isnull=False)),
        completed=Count("id", filter=Q(completed_at__isnull=False)), last=Max("completed_at"),
        gone=Count("id", filter=Q(panelist__deleted_at__isnull=False)))
    rule = json.dumps(rnd.study.consensus_rule(), sort_keys=True, default=str)
    raw = (f"{rnd.pk}|{rnd.status}|{rnd.kind}|{rnd.version_id}|{answers}|{flow}|{rule}|{STATISTICS_VERSION}")
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


def round_figures(rnd: Round, user=None, *, start: bool = True) -> figures.Figures:
    """The round's stored statistics (``summary``, ``items`` by item id as text, and for a validation round
    ``validation``) and the job computing newer ones."""
    return figures.look(Job.Kind.DELPHI_ROUND, {"round": rnd.pk}, version_key="fingerprint",
                        version=inputs_fingerprint(rnd), project=rnd.owning_project_id, user=user, start=start)


def refresh_round(rnd: Round) -> Job:
    """The round's inputs changed: queue its statistics to be computed once the changes stop (debounced). Enters
    the round's project: a panelist's answers arrive through their link, from any project."""
    with scoping.in_project(rnd.owning_project_id):
        return figures.refresh(Job.Kind.DELPHI_ROUND, {"round": rnd.pk}, project=rnd.owning_project_id)


def refresh_study(study: DelphiStudy) -> list[Job]:
    """Every round of the study (the consensus rule changed, a panelist left)."""
    return [refresh_round(rnd) for rnd in study.rounds.all()]
