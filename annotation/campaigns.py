"""Campaign services: create, staff, assign with overlap, reassign, track progress, audit samples."""

from __future__ import annotations

import base64
import random
import secrets
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import Count, Q
from django.utils.crypto import salted_hmac

from annotation import scales
from annotation.models import (
    Assignment,
    Campaign,
    CampaignRater,
    Dialogue,
    Label,
)
from projects.access import projects_of
from projects.models import AuditEvent
from projects.pseudonyms import pseudonyms
from projects.roles import COORDINATOR, PHYSICIAN, has_role


class CampaignError(ValueError):
    """A request the campaign rules refuse; the message says why."""


class CampaignClosed(CampaignError):
    """Staffing or assigning a campaign that is closed (the API answers 409)."""


def check_open(campaign: Campaign, action: str) -> None:
    """Raise :class:`CampaignClosed` unless ``campaign`` is open: a closed campaign takes no new raters or work."""
    if campaign.status != Campaign.Status.OPEN:
        raise CampaignClosed(f"Campaign {campaign.name} is closed: it takes no {action}.")


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
        raise error(f"{scale} rates {scale.get_target_display().lower()}, but corpus \"{corpus}\" holds "
                    f"{corpus.get_kind_display().lower()}: choose a matching scale or corpus.")


@transaction.atomic
def create_campaign(*, name: str, corpus, scale_version, overlap: int, phase: str = Campaign.Phase.FORMAL,
                    user=None, **options) -> Campaign:
    """Create a campaign on a published scale version (which becomes locked: it is now in use), in the project
    of its corpus."""
    if overlap < 1:
        raise CampaignError("Overlap must be at least 1 rater per dialogue.")
    if scale_version.status != "published":
        raise CampaignError(f"{scale_version} is not published; publish it before rating with it.")
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


@dataclass
class AssignResult:
    created: int = 0
    short: dict[int, int] = field(default_factory=dict)  # dialogue id -> raters still missing

    @property
    def complete(self) -> bool:
        return not self.short


@transaction.atomic
def assign(campaign: Campaign, *, user=None) -> AssignResult:
    """Give every dialogue in scope ``overlap`` raters.

    Balances load (the least-loaded available rater first), never gives a rater a dialogue twice
    (withdrawn and skipped assignments count as "had it"), and respects capacity and availability.
    Re-running tops up after new raters, skips or reassignments; it never moves existing work.
    """
    campaign = Campaign.objects.select_for_update().get(pk=campaign.pk)  # one assignment run at a time per campaign
    check_open(campaign, "new assignments")
    raters = [r for r in campaign.raters.select_related("user") if r.is_available()]
    rows = list(Assignment.objects.filter(campaign=campaign).values_list("dialogue_id", "rater_id", "status"))
    had: set[tuple[int, int]] = {(d, r) for d, r, _ in rows}
    counted = Counter(d for d, _, s in rows if s in Assignment.COUNTED_STATUSES)
    load = Counter(r for _, r, s in rows if s in Assignment.COUNTED_STATUSES)
    position = Counter(r for _, r, _ in rows)
    rng = random.Random(campaign.seed * 7919 + campaign.pk)
    dialogue_ids = list(campaign.dialogues().order_by("id").values_list("id", flat=True))
    rng.shuffle(dialogue_ids)  # spreads dialogue order so raters do not all start on the same ones
    tiebreak = {r.user_id: rng.random() for r in raters}
    result = AssignResult()
    new: list[Assignment] = []
    for dialogue_id in dialogue_ids:
        missing = campaign.overlap - counted[dialogue_id]
        if missing <= 0:
            continue
        candidates = [
            r for r in raters
            if (dialogue_id, r.user_id) not in had and (r.capacity is None or load[r.user_id] < r.capacity)
        ]
        candidates.sort(key=lambda r: (load[r.user_id], tiebreak[r.user_id]))
        for rater in candidates[:missing]:
            position[rater.user_id] += 1
            new.append(Assignment(campaign=campaign, dialogue_id=dialogue_id, rater_id=rater.user_id,
                                  position=position[rater.user_id]))
            had.add((dialogue_id, rater.user_id))
            load[rater.user_id] += 1
            counted[dialogue_id] += 1
        if counted[dialogue_id] < campaign.overlap:
            result.short[dialogue_id] = campaign.overlap - counted[dialogue_id]
    Assignment.objects.bulk_create(new, batch_size=1000)
    result.created = len(new)
    AuditEvent.record(user, "campaign.assign", campaign, created=result.created, short=len(result.short))
    return result


@transaction.atomic
def reassign(assignment: Assignment, to_user, *, by=None, reason: str = "") -> Assignment:
    """Move unfinished work to another rater of the campaign; the old row stays as history (withdrawn)."""
    assignment = Assignment.objects.select_for_update().get(pk=assignment.pk)
    check_open(assignment.campaign, "reassignments")
    if assignment.status == Assignment.Status.SUBMITTED:
        raise CampaignError("Submitted work cannot be reassigned; return it for re-annotation instead.")
    if assignment.status == Assignment.Status.WITHDRAWN:
        raise CampaignError("This assignment was already reassigned.")
    if not CampaignRater.objects.filter(campaign=assignment.campaign, user=to_user).exists():
        raise CampaignError(f"{to_user} is not a rater of this campaign; add them first.")
    if Assignment.objects.filter(campaign=assignment.campaign, dialogue=assignment.dialogue, rater=to_user).exists():
        raise CampaignError(f"{to_user} already had this dialogue; a rater never gets a dialogue twice.")
    assignment.status = Assignment.Status.WITHDRAWN
    assignment.save(update_fields=["status", "updated_at"])
    last = Assignment.objects.filter(campaign=assignment.campaign, rater=to_user).order_by("-position").first()
    new = Assignment.objects.create(campaign=assignment.campaign, dialogue=assignment.dialogue, rater=to_user,
                                    position=(last.position + 1) if last else 1)
    AuditEvent.record(by, "assignment.reassign", new, reason=reason, from_rater=assignment.rater.username,
                      withdrawn=assignment.pk)
    return new


def progress_counts(by_status: dict[str, int]) -> dict[str, int]:
    """The one definition of how far a rater's work is, for every page, the API, reports and exports: of the
    ``total`` dialogues (withdrawn ones are no one's), ``submitted`` ones are done and counted by the reports,
    ``skipped`` ones left the queue without answers (done for the rater, counted nowhere), ``open`` ones wait;
    ``percent`` is the submitted share, the figure the reports' n rests on. ``by_status``: status -> count."""
    total = sum(n for status, n in by_status.items() if status != Assignment.Status.WITHDRAWN)
    submitted = by_status.get(Assignment.Status.SUBMITTED, 0)
    skipped = by_status.get(Assignment.Status.SKIPPED, 0)
    return {"total": total, "submitted": submitted, "skipped": skipped, "open": total - submitted - skipped,
            "percent": round(100 * submitted / total) if total else 0}


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
    qs = Assignment.objects.filter(rater=user, status__in=Assignment.OPEN_STATUSES,
                                   campaign__status=Campaign.Status.OPEN, campaign__deleted_at__isnull=True,
                                   campaign__project__in=rating_projects(user))
    if campaign is not None:
        qs = qs.filter(campaign=campaign)
    if after is not None:
        qs = qs.exclude(pk=after.pk)
    returned = qs.filter(status=Assignment.Status.RETURNED).order_by("campaign_id", "position").first()
    return returned or qs.order_by("campaign_id", "position", "id").first()


def queue_place(assignment: Assignment) -> dict[str, int | None]:
    """Where a dialogue stands in its rater's queue of one campaign: ``place`` (1-based, in the queue order of
    :func:`next_assignment`; None for withdrawn work, which left the queue), ``total``, ``done`` (submitted, as
    :func:`progress_counts` counts) and ``skipped``. The place does not move when dialogues are submitted, and never
    exceeds the total."""
    queue = (Assignment.objects.filter(rater_id=assignment.rater_id, campaign_id=assignment.campaign_id)
             .exclude(status=Assignment.Status.WITHDRAWN))
    ahead = Q(position__lt=assignment.position) | Q(position=assignment.position, id__lt=assignment.pk)
    counts = queue.aggregate(
        total=Count("id"), ahead=Count("id", filter=ahead),
        done=Count("id", filter=Q(status=Assignment.Status.SUBMITTED)),
        skipped=Count("id", filter=Q(status=Assignment.Status.SKIPPED)))
    withdrawn = assignment.status == Assignment.Status.WITHDRAWN
    return {"place": None if withdrawn else counts["ahead"] + 1, "total": counts["total"], "done": counts["done"],
            "skipped": counts["skipped"]}


def disagreement_by_dialogue(campaign: Campaign) -> dict[int, int]:
    """Dialogue id -> number of items on which submitted raters did not all agree."""
    values = defaultdict(set)
    for dialogue_id, item_id, value in (Label.objects.filter(
            campaign=campaign, assignment__status=Assignment.Status.SUBMITTED, value__isnull=False)
            .values_list("dialogue_id", "item_id", "value")):
        values[(dialogue_id, item_id)].add(value)
    result: Counter = Counter()
    for (dialogue_id, _), seen in values.items():
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
        raise CampaignError(f"unknown sampling method {method!r}")
    rng = random.Random(new_seed() if seed is None else seed)
    return sorted(rng.sample(submitted, min(size, len(submitted))))
