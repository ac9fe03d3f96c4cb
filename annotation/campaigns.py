"""Campaign services: create, staff, assign with overlap, reassign, track progress, audit samples."""

from __future__ import annotations

import base64
import random
import secrets
from collections import Counter, defaultdict

from django.db import transaction
from django.db.models import Count, Q
from django.utils.crypto import salted_hmac
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from annotation import scales
from annotation.models import (
    Assignment,
    Campaign,
    CampaignRater,
    Dialogue,
    Label,
)
from annotation.queue import AssignResult, Seat, WorkQueue, progress_counts
from annotation.signals import send_labels_changed
from projects.access import projects_of
from projects.models import AuditEvent
from projects.pseudonyms import pseudonyms
from projects.roles import COORDINATOR, PHYSICIAN, has_role


class CampaignError(ValueError):
    """A request the campaign rules refuse; the message says why."""


class CampaignClosed(CampaignError):
    """Staffing or assigning a campaign that is closed (the API answers 409)."""


CLOSED_TO = {
    "new raters": _("Campaign %(name)s is closed: it takes no new raters."),
    "new assignments": _("Campaign %(name)s is closed: it takes no new assignments."),
    "reassignments": _("Campaign %(name)s is closed: it takes no reassignments."),
}


def check_open(campaign: Campaign, action: str) -> None:
    """Raise :class:`CampaignClosed` unless ``campaign`` is open: a closed campaign takes no new raters or work
    (``action``: a key of :data:`CLOSED_TO`)."""
    if campaign.status != Campaign.Status.OPEN:
        raise CampaignClosed(str(CLOSED_TO[action]) % {"name": campaign.name})


def blind_id(campaign_id: int, dialogue_id: int) -> str:
    """The opaque id under which the raters of a campaign see a dialogue, e.g. "D-K3QZ7M2A".

    Raters never see the external id or the database id (both can reveal the source model or the order in
    which dialogues were made). Stable per campaign and dialogue, so a rater can quote it to the coordinator,
    who sees it next to the external id; unguessable without the server's secret key.
    """
    digest = salted_hmac("minicex.blind-dialogue", f"{campaign_id}:{dialogue_id}").digest()
    return "D-" + base64.b32encode(digest[:5]).decode()


# ------------------------------------------------------------------------------------------- who sees names


def shows_names(viewer, campaign: Campaign | None = None, *, project=None) -> bool:
    """Coordinators (in the campaign's project, or ``project``) and admins see raters' usernames; everyone else
    (analysts) sees the project's pseudonyms, unless the coordinator allowed names in ``campaign`` (the rule of the
    API, the pages, the reports and exports)."""
    project = campaign.project_id if campaign is not None else getattr(project, "pk", project)
    if viewer is not None and has_role(viewer, COORDINATOR, project=project):
        return True
    return campaign is not None and bool(campaign.allow_names)


def rater_names(users, viewer, campaign: Campaign | None = None, *, project=None) -> dict[int, str]:
    """User id -> the name ``viewer`` may see: the username, or the rater's pseudonym in the campaign's project (or
    ``project``), created on first use so that pages, the API and exports agree."""
    users = [u for u in users if u is not None]
    if shows_names(viewer, campaign, project=project):
        return {u.pk: u.username for u in users}
    project = campaign.project_id if campaign is not None else getattr(project, "pk", project)
    return pseudonyms(project, [u.pk for u in users])


def check_target(scale_version, corpus, error: type[Exception]) -> None:
    """Raise ``error`` unless the scale rates what the corpus holds (dialogues, or answers to questions)."""
    scale = scale_version.scale
    if scale.target != corpus.kind:
        raise error(gettext('%(scale)s rates %(target)s, but corpus "%(corpus)s" holds %(kind)s: choose a matching '
                            'scale or corpus.') % {"scale": scale, "target": scale.get_target_display().lower(),
                                                   "corpus": corpus, "kind": corpus.get_kind_display().lower()})


@transaction.atomic
def create_campaign(*, name: str, corpus, scale_version, overlap: int, phase: str = Campaign.Phase.FORMAL,
                    user=None, **options) -> Campaign:
    """Create a campaign on a published scale version (which becomes locked: it is now in use), in the project
    of its corpus."""
    if overlap < 1:
        raise CampaignError(gettext("Overlap must be at least 1 rater per dialogue."))
    if scale_version.status != "published":
        raise CampaignError(gettext("%(version)s is not published; publish it before rating with it.")
                            % {"version": scale_version})
    check_target(scale_version, corpus, CampaignError)
    options.setdefault("project_id", corpus.project_id)
    campaign = Campaign.objects.create(name=name.strip(), corpus=corpus, scale_version=scale_version,
                                       overlap=overlap, phase=phase, created_by=user, **options)
    scales.lock(scale_version, f"used by campaign {campaign.name}"[:200])
    AuditEvent.record(user, "campaign.create", campaign, overlap=overlap, phase=phase)
    return campaign


@transaction.atomic
def add_rater(campaign: Campaign, user, *, team: str = "", capacity: int | None = None,
              available_until=None, added_by=None) -> CampaignRater:
    check_open(campaign, "new raters")
    rater, created = CampaignRater.objects.get_or_create(
        campaign=campaign, user=user,
        defaults={"team": team, "capacity": capacity, "available_until": available_until, "added_by": added_by},
    )
    if not created:
        rater.team, rater.capacity, rater.available_until, rater.active = team, capacity, available_until, True
        rater.save(update_fields=["team", "capacity", "available_until", "active"])
    AuditEvent.record(added_by, "campaign.add_rater", campaign, rater=user.username, team=team, capacity=capacity)
    return rater


class CampaignQueue(WorkQueue):
    """Campaigns as rating queues: a unit is a dialogue in the campaign's scope; available raters take work while
    the campaign is open. The rater's side (answers, refusals) is :class:`annotation.labels.CampaignRating`."""

    work = Assignment
    container_field, unit_field = "campaign", "dialogue"
    not_a_rater = _("%(rater)s is not a rater of this campaign; add them first.")
    had_it_already = _("%(rater)s already had this dialogue; a rater never gets a dialogue twice.")
    work_event, container_event = "assignment", "campaign"
    staffing_error = CampaignError

    def seats(self, campaign: Campaign) -> list[Seat]:
        return [Seat(r.user_id, r.capacity) for r in campaign.raters.all() if r.is_available()]

    def is_rater(self, campaign: Campaign, user) -> bool:
        return CampaignRater.objects.filter(campaign=campaign, user=user).exists()

    def unit_ids(self, campaign: Campaign) -> list[int]:
        return list(campaign.dialogues().order_by("id").values_list("id", flat=True))

    def check_takes_work(self, campaign: Campaign, action: str) -> None:
        check_open(campaign, action)

    def check_answerable(self, locked: Assignment) -> None:
        """Open work takes answers in a closed campaign too: closing stops new raters and assignments only."""

    def submitted(self, locked: Assignment) -> None:
        send_labels_changed(locked.campaign)

    def open_containers(self) -> Q:
        return Q(campaign__status=Campaign.Status.OPEN, campaign__deleted_at__isnull=True)

    def rater_projects(self, user) -> list[int]:
        return rating_projects(user)


QUEUE = CampaignQueue()


def assign(campaign: Campaign, *, user=None) -> AssignResult:
    """Give every dialogue in scope ``overlap`` raters (:meth:`WorkQueue.assign`: least-loaded first, never a
    dialogue twice to one rater, within capacity and availability; re-running tops up)."""
    return QUEUE.assign(campaign, user=user)


def reassign(assignment: Assignment, to_user, *, by=None, reason: str = "") -> Assignment:
    """Move unfinished work to another rater of the campaign; the old row stays as history (withdrawn)."""
    return QUEUE.reassign(assignment, to_user, by=by, reason=reason)


def rater_progress(campaign: Campaign) -> list[dict]:
    """Per rater: counts by status, in the campaign's rater order (:func:`progress_counts`)."""
    counts = defaultdict(Counter)
    for rater_id, status, n in (Assignment.objects.filter(campaign=campaign)
                                .values_list("rater_id", "status").annotate(n=Count("id"))):
        counts[rater_id][status] = n
    rows = []
    for rater in campaign.raters.select_related("user").order_by("team", "user__username"):
        c = counts[rater.user_id]
        rows.append({
            "rater": rater, **progress_counts(c),
            "in_progress": c[Assignment.Status.IN_PROGRESS], "not_started": c[Assignment.Status.ASSIGNED],
            "returned": c[Assignment.Status.RETURNED],
        })
    return rows


def dialogue_progress(campaign: Campaign, dialogue_ids: list[int] | None = None):
    """Per dialogue in scope (or of ``dialogue_ids``, one page of them): raters assigned, submitted, skipped and
    flagged, counted by the database."""
    dialogues = campaign.dialogues() if dialogue_ids is None else Dialogue.objects.filter(pk__in=dialogue_ids)
    return (dialogues.annotate(
        assigned=Count("assignments", filter=Q(assignments__campaign=campaign)
                       & Q(assignments__status__in=Assignment.COUNTED_STATUSES)),
        submitted=Count("assignments", filter=Q(assignments__campaign=campaign,
                                                assignments__status=Assignment.Status.SUBMITTED)),
        skipped=Count("assignments", filter=Q(assignments__campaign=campaign,
                                              assignments__status=Assignment.Status.SKIPPED)),
        flagged=Count("assignments", filter=Q(assignments__campaign=campaign, assignments__flagged=True)),
    ).order_by("external_id"))


def rating_projects(user) -> list[int]:
    """Ids of the projects whose campaigns a physician's queue spans: every project where they are a physician."""
    return list(projects_of(user, PHYSICIAN).values_list("pk", flat=True))


def next_assignment(user, campaign: Campaign | None = None, after: Assignment | None = None) -> Assignment | None:
    """The rater's next open dialogue: returned work first, then in queue order (across every project where they
    are a physician)."""
    return QUEUE.next_for(user, campaign, after)


def queue_place(assignment: Assignment) -> dict[str, int | None]:
    """Where a dialogue stands in its rater's queue of one campaign (:meth:`WorkQueue.place`)."""
    return QUEUE.place(assignment)


def disagreement_by_dialogue(campaign: Campaign) -> dict[int, int]:
    """Dialogue id -> number of items on which submitted raters did not all agree."""
    values = defaultdict(set)
    for dialogue_id, item_id, value in (Label.objects.filter(
            campaign=campaign, assignment__status=Assignment.Status.SUBMITTED, value__isnull=False)
            .values_list("dialogue_id", "item_id", "value")):
        values[(dialogue_id, item_id)].add(value)
    result: Counter = Counter()
    for (dialogue_id, _item), seen in values.items():
        result[dialogue_id] += len(seen) > 1
    return dict(result)


def new_seed() -> int:
    """A seed for a random draw, short enough to write down and type again."""
    return secrets.randbelow(1_000_000)


def audit_sample(campaign: Campaign, *, size: int, method: str = "random", seed: int | None = None) -> list[int]:
    """Dialogue ids for a quality audit: a random sample of submitted ones, or those with most disagreement.
    The same seed draws the same sample while the submitted dialogues stay the same."""
    submitted = sorted(set(Assignment.objects.filter(campaign=campaign, status=Assignment.Status.SUBMITTED)
                           .values_list("dialogue_id", flat=True)))
    if method == "disagreement":
        scores = disagreement_by_dialogue(campaign)
        return sorted(submitted, key=lambda d: (-scores.get(d, 0), d))[:size]
    if method != "random":
        raise CampaignError(gettext("Unknown sampling method %(method)s; choose random or disagreement.")
                            % {"method": repr(method)})
    rng = random.Random(new_seed() if seed is None else seed)
    return sorted(rng.sample(submitted, min(size, len(submitted))))
