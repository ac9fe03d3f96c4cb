"""The rating queue: one rater's units of work in a campaign or a preference study, from assignment to submission.

Both kinds of rating work are queues of the same shape: a container (a campaign, a preference study) holds units
(dialogues, pairs of candidates); each unit goes to ``overlap`` raters, each rater works through their units in
``position`` order. What differs (what a unit is, who may take one, what must be answered before submitting) is
said by a :class:`WorkQueue` subclass; the rules written here are shared:

* **assign**: every unit gets ``overlap`` raters, the least-loaded first, never one rater twice (withdrawn and
  skipped work counts as "had it"), within capacity; re-running tops up and never moves existing work;
* **open next**: returned work first, then queue order (container, position, id);
* **claim**: the row is locked (``SELECT ... FOR UPDATE`` of the work row on PostgreSQL; SQLite transactions take
  the write lock at BEGIN, ``transaction_mode`` IMMEDIATE), then checked: the rater's own, still open;
* **submit, skip, comment, withdraw, reassign**, each written to the audit trail (who, when, why).

The work models share their fields (:class:`QueuedWork`) and their statuses (:class:`annotation.status.WorkStatus`),
so a status means the same everywhere it is stored, shown or counted.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db import connection, models, transaction
from django.db.models import Count, Q
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from annotation.status import COUNTED_WORK, OPEN_WORK, WorkStatus
from projects.models import AuditEvent


class QueuedWork(models.Model):
    """The fields every unit of rating work has: its status, its place in the rater's queue, the rater's comment
    and skip reason, and when it was assigned, started and submitted."""

    Status = WorkStatus
    OPEN_STATUSES = OPEN_WORK
    COUNTED_STATUSES = COUNTED_WORK

    status = models.CharField(max_length=12, choices=WorkStatus.choices, default=WorkStatus.ASSIGNED, db_index=True,
                              verbose_name=_("status"))
    position = models.PositiveIntegerField(default=0, help_text=_("Order in the rater's queue."),
                                           verbose_name=_("position"))
    comment = models.TextField(blank=True, help_text=_("The rater's comment on the whole unit."),
                               verbose_name=_("comment"))
    skip_reason = models.TextField(blank=True, verbose_name=_("reason for skipping"))
    created_at = models.DateTimeField(default=timezone.now, verbose_name=_("created at"))
    started_at = models.DateTimeField(null=True, blank=True, verbose_name=_("started at"))
    submitted_at = models.DateTimeField(null=True, blank=True, verbose_name=_("submitted at"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    class Meta:
        abstract = True

    @property
    def is_open(self) -> bool:
        return self.status in OPEN_WORK


class QueueError(ValueError):
    """A queue action the rules refuse; the message says why (``status`` is the HTTP status to answer)."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Seat:
    """A rater who may take new work in a container, with their most units (None: no limit)."""

    user_id: int
    capacity: int | None = None


@dataclass
class AssignResult:
    created: int = 0
    short: dict[int, int] = field(default_factory=dict)  # unit id -> raters still missing

    @property
    def complete(self) -> bool:
        return not self.short


def progress_counts(by_status: dict[str, int]) -> dict[str, int]:
    """The one definition of how far a rater's work is, for every page, the API, reports and exports: of the
    ``total`` units (withdrawn ones are no one's), ``submitted`` ones are done and counted by the reports,
    ``skipped`` ones left the queue without answers (done for the rater, counted nowhere), ``open`` ones wait;
    ``percent`` is the submitted share. ``by_status``: status -> count."""
    total = sum(n for status, n in by_status.items() if status != WorkStatus.WITHDRAWN)
    submitted = by_status.get(WorkStatus.SUBMITTED, 0)
    skipped = by_status.get(WorkStatus.SKIPPED, 0)
    return {"total": total, "submitted": submitted, "skipped": skipped, "open": total - submitted - skipped,
            "percent": round(100 * submitted / total) if total else 0}


def locking(qs: models.QuerySet) -> models.QuerySet:
    """``qs`` locking its own rows only (not the rows it joins, e.g. through the project scope) where the database
    can say so."""
    return qs.select_for_update(of=("self",) if connection.features.has_select_for_update_of else ())


class WorkQueue(ABC):
    """One kind of rating work as the queue sees it. A subclass names the work model and its two fields (the
    container and the unit), its refusal and audit names, and answers the hooks below."""

    work: type[QueuedWork]
    container_field: str  # the work's foreign key to its campaign or study
    unit_field: str  # the work's foreign key to the unit rated
    error: type[QueueError]  # refusals of a rater's action (claim, submit, skip)
    staffing_error: type[Exception]  # refusals of a coordinator's action (reassign)
    work_event: str  # audit prefix of a rater's actions on one unit, e.g. "assignment"
    container_event: str  # audit prefix of the coordinator's actions on the container, e.g. "campaign"
    #: refusals of a reassignment, with ``%(rater)s``: to someone not among the container's raters, and of a unit
    #: the rater already had
    not_a_rater: str
    had_it_already: str
    # The refusals, in the words of this kind of work (translated texts; %(status)s, %(missing)s or %(items)s).
    not_yours: str
    not_open: str
    missing_answers: str
    no_skip_reason: str

    # ---------------------------------------------------------------------------------------------- hooks
    @abstractmethod
    def seats(self, container) -> list[Seat]:
        """Who may take new work in ``container`` now."""

    @abstractmethod
    def unit_ids(self, container) -> list[int]:
        """The units in scope, in a stable order (the queue shuffles them with the container's seed)."""

    def new_work(self, container, unit_id: int, rater_id: int, position: int) -> QueuedWork:
        """An unsaved row of work; the place to record per-row randomisation (e.g. sides)."""
        return self.work(**{self.container_field: container, f"{self.unit_field}_id": unit_id,
                            "rater_id": rater_id, "position": position})

    @abstractmethod
    def check_takes_work(self, container, action: str) -> None:
        """Refuse new work (``action``: what) in a container that takes none."""

    @abstractmethod
    def check_answerable(self, locked: QueuedWork) -> None:
        """Refuse answers to open work whose container no longer takes them."""

    def open_containers(self) -> Q:
        """Which containers' work a rater may open (relative to the work model)."""
        return Q()

    @abstractmethod
    def rater_projects(self, user) -> list[int]:
        """The projects whose work a rater's queue spans."""

    def missing(self, locked: QueuedWork) -> list[str]:
        """What must still be answered before ``locked`` can be submitted."""
        return []

    @abstractmethod
    def submitted(self, locked: QueuedWork) -> None:
        """After a submission (e.g. tell the figures their labels changed)."""

    # ---------------------------------------------------------------------------------------------- assign
    @transaction.atomic
    def assign(self, container, *, user=None) -> AssignResult:
        """Give every unit in scope ``container.overlap`` raters.

        Balances load (the least-loaded rater first, ties broken by the container's seed), never gives a rater a
        unit twice (withdrawn and skipped work counts as "had it"), and respects capacity. Re-running tops up
        after new raters, skips or reassignments; it never moves existing work."""
        container = type(container).objects.select_for_update().get(pk=container.pk)  # one run at a time
        self.check_takes_work(container, "new assignments")
        seats = self.seats(container)
        unit = f"{self.unit_field}_id"
        rows = list(self.work.objects.filter(**{self.container_field: container})
                    .values_list(unit, "rater_id", "status"))
        had: set[tuple[int, int]] = {(u, r) for u, r, _ in rows}
        counted = Counter(u for u, _, s in rows if s in COUNTED_WORK)
        load = Counter(r for _, r, s in rows if s in COUNTED_WORK)
        position = Counter(r for _, r, _ in rows)
        rng = random.Random(container.seed * 7919 + container.pk)
        unit_ids = list(self.unit_ids(container))
        rng.shuffle(unit_ids)  # spreads the order so raters do not all start on the same units
        tiebreak = {s.user_id: rng.random() for s in seats}
        result = AssignResult()
        new: list[QueuedWork] = []
        for unit_id in unit_ids:
            if container.overlap - counted[unit_id] <= 0:
                continue
            candidates = [s for s in seats if (unit_id, s.user_id) not in had
                          and (s.capacity is None or load[s.user_id] < s.capacity)]
            candidates.sort(key=lambda s: (load[s.user_id], tiebreak[s.user_id]))
            for seat in candidates[:container.overlap - counted[unit_id]]:
                position[seat.user_id] += 1
                new.append(self.new_work(container, unit_id, seat.user_id, position[seat.user_id]))
                had.add((unit_id, seat.user_id))
                load[seat.user_id] += 1
                counted[unit_id] += 1
            if counted[unit_id] < container.overlap:
                result.short[unit_id] = container.overlap - counted[unit_id]
        self.work.objects.bulk_create(new, batch_size=1000)
        result.created = len(new)
        AuditEvent.record(user, f"{self.container_event}.assign", container, created=result.created,
                          short=len(result.short))
        return result

    # ---------------------------------------------------------------------------------------------- open next
    def next_for(self, user, container=None, after: QueuedWork | None = None, *,
                 projects: list[int] | None = None) -> QueuedWork | None:
        """The rater's next open unit (in ``container``, or any they rate in the active scope and ``projects``,
        by default :meth:`rater_projects`): returned work first, then in queue order."""
        projects = self.rater_projects(user) if projects is None else projects
        qs = self.work.objects.filter(self.open_containers(), rater=user, status__in=OPEN_WORK,
                                      **{f"{self.container_field}__project__in": projects})
        if container is not None:
            qs = qs.filter(**{self.container_field: container})
        if after is not None:
            qs = qs.exclude(pk=after.pk)
        order = (f"{self.container_field}_id", "position", "id")
        return (qs.filter(status=WorkStatus.RETURNED).order_by(*order).first()
                or qs.order_by(*order).first())

    def place(self, work: QueuedWork) -> dict[str, int | None]:
        """Where a unit stands in its rater's queue of one container: ``place`` (1-based, in the order of
        :meth:`next_for`; None for withdrawn work, which left the queue), ``total``, ``done`` (submitted) and
        ``skipped``. The place does not move when units are submitted, and never exceeds the total."""
        container_id = f"{self.container_field}_id"
        queue = (self.work.objects.filter(rater_id=work.rater_id, **{container_id: getattr(work, container_id)})
                 .exclude(status=WorkStatus.WITHDRAWN))
        ahead = Q(position__lt=work.position) | Q(position=work.position, id__lt=work.pk)
        counts = queue.aggregate(total=Count("id"), ahead=Count("id", filter=ahead),
                                 done=Count("id", filter=Q(status=WorkStatus.SUBMITTED)),
                                 skipped=Count("id", filter=Q(status=WorkStatus.SKIPPED)))
        withdrawn = work.status == WorkStatus.WITHDRAWN
        return {"place": None if withdrawn else counts["ahead"] + 1, "total": counts["total"],
                "done": counts["done"], "skipped": counts["skipped"]}

    # ---------------------------------------------------------------------------------------------- claim, save
    def claim(self, work: QueuedWork, user) -> QueuedWork:
        """``work`` locked for this transaction, refused unless it is ``user``'s and still takes answers."""
        locked = locking(self.work.objects.select_related(self.container_field)).get(pk=work.pk)
        if locked.rater_id != user.pk:
            raise self.error(str(self.not_yours), status=403)
        self.check_answerable(locked)
        if not locked.is_open:
            raise self.error(self.not_open % {"status": locked.get_status_display().lower()}, status=409)
        return locked

    def start(self, work_id: int, status: str, now) -> bool:
        """Mark claimed work as started by its first answer (not started -> in progress); ``status`` is the one
        read under the claim's lock. Returns whether it changed."""
        if status != WorkStatus.ASSIGNED:
            return False
        self.work.unscoped.filter(pk=work_id).update(status=WorkStatus.IN_PROGRESS, started_at=now, updated_at=now)
        return True

    # ---------------------------------------------------------------------------------------------- finish
    @transaction.atomic
    def submit(self, work: QueuedWork, user, *, comment: str | None = None) -> QueuedWork:
        locked = self.claim(work, user)
        missing = self.missing(locked)
        if missing:
            raise self.error(self.missing_answers % {"missing": ", ".join(missing), "items": ", ".join(missing)})
        if comment is not None:
            locked.comment = comment
        locked.status = WorkStatus.SUBMITTED
        locked.submitted_at = timezone.now()
        locked.save(update_fields=["status", "submitted_at", "comment", "updated_at"])
        AuditEvent.record(user, f"{self.work_event}.submit", locked)
        self.submitted(locked)
        return locked

    @transaction.atomic
    def skip(self, work: QueuedWork, user, reason: str) -> QueuedWork:
        if not (reason or "").strip():
            raise self.error(str(self.no_skip_reason))
        locked = self.claim(work, user)
        locked.status = WorkStatus.SKIPPED
        locked.skip_reason = reason.strip()
        locked.save(update_fields=["status", "skip_reason", "updated_at"])
        AuditEvent.record(user, f"{self.work_event}.skip", locked, reason=reason)
        return locked

    @transaction.atomic
    def save_comment(self, work: QueuedWork, user, comment: str) -> QueuedWork:
        locked = self.claim(work, user)
        if locked.comment != comment:
            AuditEvent.record(user, f"{self.work_event}.comment", locked, old=locked.comment, new=comment)
            locked.comment = comment
            locked.save(update_fields=["comment", "updated_at"])
        return locked

    # ---------------------------------------------------------------------------------------------- move work
    def withdraw(self, container, rater_ids: Iterable[int]) -> int:
        """Take the open work of these raters out of their queues (kept as history, status withdrawn); returns
        how many units left. The caller records why."""
        return (self.work.objects.filter(**{self.container_field: container}, rater_id__in=list(rater_ids),
                                         status__in=OPEN_WORK).update(status=WorkStatus.WITHDRAWN))

    @transaction.atomic
    def reassign(self, work: QueuedWork, to_user, *, by=None, reason: str = "") -> QueuedWork:
        """Move unfinished work to another rater of the container, at the end of their queue; the old row stays
        as history (withdrawn)."""
        locked = locking(self.work.objects).get(pk=work.pk)
        container = getattr(locked, self.container_field)
        unit_id = getattr(locked, f"{self.unit_field}_id")
        self.check_takes_work(container, "reassignments")
        if locked.status == WorkStatus.SUBMITTED:
            raise self.staffing_error(gettext("Submitted work cannot be reassigned; return it for re-annotation "
                                              "instead."))
        if locked.status == WorkStatus.WITHDRAWN:
            raise self.staffing_error(gettext("This assignment was already reassigned."))
        if not self.is_rater(container, to_user):
            raise self.staffing_error(self.not_a_rater % {"rater": to_user})
        mine = self.work.objects.filter(**{self.container_field: container}, rater=to_user)
        if mine.filter(**{f"{self.unit_field}_id": unit_id}).exists():
            raise self.staffing_error(self.had_it_already % {"rater": to_user})
        locked.status = WorkStatus.WITHDRAWN
        locked.save(update_fields=["status", "updated_at"])
        last = mine.order_by("-position").first()
        new = self.new_work(container, unit_id, to_user.pk, (last.position + 1) if last else 1)
        new.save()
        AuditEvent.record(by, f"{self.work_event}.reassign", new, reason=reason, from_rater=locked.rater.username,
                          withdrawn=locked.pk)
        return new

    @abstractmethod
    def is_rater(self, container, user) -> bool:
        """Whether ``user`` is on the container's raters (available or not)."""
