"""The worker's engine: one per worker process, driving every LLM job it was woken for.

One thread claims, prepares and sends (a buffer of prepared requests refills freed slots without a database round
trip); the gateway's event loop keeps the requests in flight; one thread stores the answers in batches; one beats
the engine's heartbeat. The steps themselves (claims, admission, storing) are in :mod:`scoring.llm.engine`.
"""

from __future__ import annotations

import logging
import os
import queue
import sys
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.db import close_old_connections
from django.utils import timezone

from projects.scoping import in_project
from scoring.llm import engine as steps
from scoring.llm import gateway, journal, limiter
from scoring.llm.engine import (
    TRACE,
    Handler,
    Request,
    _quiet_limiter,
    _setting,
    admit,
    claim,
    engine_owner,
    ensure_registered,
    finish,
    give_back,
    handler_for,
    release,
    resolve_cached,
)
from scoring.llm.models import LLMWorker

log = logging.getLogger(__name__)


@dataclass
class _JobState:
    handler: Handler
    job: Any
    in_flight: int = 0
    next_at: float = 0.0       # monotonic time of the next attempt to send or claim
    checked_at: float = 0.0    # monotonic time the job row was last read
    stopping: bool = False     # paused, cancelled or finished: send nothing more
    idle_rounds: int = 0
    # Claimed and prepared, waiting for a free slot: a freed slot is refilled without a database round trip.
    ready: deque = field(default_factory=deque)
    # Answered, not yet stored: stored in batches (every STORE_BATCH answers or STORE_LINGER seconds).
    answered: list = field(default_factory=list)
    answered_at: float = 0.0
    storing: int = 0           # answers handed to the store thread and not yet stored

    @property
    def key(self) -> str:
        return f"{self.handler.kind}:{self.job.pk}"


# Answers are stored in batches of up to STORE_BATCH, at the latest STORE_LINGER seconds after the first of them.
STORE_BATCH = 128
STORE_LINGER = 0.05


@dataclass
class _Finished:
    state: _JobState
    request: Request
    handed_over: bool = False  # its slot went straight to the job's next ready request


# A prepared request is sent only if it can be answered (its timeout) this many seconds before its units' claim
# lapses; later it is given back unsent.
STALE_MARGIN = 2.0
# Units claimed at once when nothing of a job is in flight yet.
FIRST_CLAIM = 32
# How often an engine looks for running jobs it does not work on yet.
DISCOVER_SECONDS = 2.0
# Slots held by requests in flight are renewed by the heartbeat (a slot handed from request to request would
# otherwise outlive its lease); an engine that dies stops renewing them and the reconciler frees them.
SLOT_LEASE = 60.0


class Engine:
    """Drives the jobs a worker process was woken for: one thread claims, prepares and sends; the gateway's event
    loop keeps the requests in flight; one thread stores the answers in batches; a heartbeat thread keeps the
    engine's claims alive."""

    def __init__(self) -> None:
        self.owner = engine_owner()
        self.max_in_flight = int(_setting("LLM_MAX_IN_FLIGHT", 1024))
        self.claim_batch = int(_setting("LLM_CLAIM_BATCH", 256))
        self.jobs: dict[str, _JobState] = {}
        self.in_flight = 0
        self.slots: dict[str, str] = {}  # slot token -> limit name, of the requests in flight
        self._discovered_at = 0.0
        self.wakes: queue.SimpleQueue[tuple[str, int]] = queue.SimpleQueue()
        self.finished: queue.SimpleQueue[_Finished] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.runner = gateway.runner()
        self.to_store: queue.SimpleQueue[tuple[_JobState, list[Request]] | None] = queue.SimpleQueue()
        self.driver = threading.Thread(target=self._drive, name="llm-engine", daemon=True)
        self.storer = threading.Thread(target=self._store_loop, name="llm-store", daemon=True)
        self.heart = threading.Thread(target=self._beat, name="llm-heartbeat", daemon=True)
        # Answers are journaled before they are stored: if this process is killed, whoever finds it dead puts them
        # into the request cache and nobody pays for them again.
        self.journal = journal.Journal(self.owner) if journal.enabled() else None
        # The last heartbeat that reached the database: an engine that cannot beat may be taken for dead (its claims
        # are then another engine's), so it sends nothing until it beats again (fenced).
        self.beat_at = time.monotonic()
        self.fence_after = steps.dead_after() / 2
        self._reaped = threading.Event()
        self._others_died = threading.Event()  # another engine was found dead: its units are claimable now

    def start(self) -> Engine:
        # The event loop's thread shares the GIL with the driver and the store thread; a shorter switch interval
        # (Python's default is 5 ms) lets it answer a socket sooner, which keeps slots busy.
        sys.setswitchinterval(min(sys.getswitchinterval(), 0.001))
        self.driver.start()
        self.storer.start()
        self.heart.start()
        return self

    def wake(self, kind: str, job_id: int) -> None:
        handler_for(kind)  # unknown kinds fail in the task, not in the engine
        self.wakes.put((kind, job_id))
        self.finished.put(None)  # interrupts the driver's wait

    def stop(self, timeout: float = 10.0) -> None:
        """Stop claiming, let requests in flight finish (up to ``timeout``), release what is left."""
        self._stop.set()
        self.finished.put(None)
        self.driver.join(timeout)

    # -- storing answers (its own thread and database connection: sending never waits for it) ----------------
    def _store_loop(self) -> None:
        while True:
            item = self.to_store.get()
            if item is None:
                return
            state, requests = item
            try:
                with in_project(state.job.project_id):  # the units and their dialogues are the job's project's
                    finish(state.handler, state.job, requests)
                if self.journal is not None:
                    self.journal.stored(requests)
                status = state.handler.job_model.unscoped.filter(pk=state.job.pk).values_list(
                    "status", flat=True).first()
                if status != state.handler.running_status:  # paused by a cap or a kept answer, failed, cancelled
                    state.stopping = True
            except Exception as exc:
                # Only an unreachable database gets here (finish keeps and pauses on anything else): the answers
                # stay in memory and are stored when it is back; their units stay claimed by this engine.
                close_old_connections()
                if self._stop.is_set():
                    log.error("could not store %d answers of %s before stopping: %s", len(requests), state.key, exc)
                else:
                    steps.warn_now_and_then(f"store-{state.key}", "storing %d answers of %s failed (%s); trying "
                                            "again", len(requests), state.key, exc)
                    time.sleep(1.0)
                    self.to_store.put((state, requests))
                    continue
            with self._lock:
                state.storing -= len(requests)
                if not state.in_flight and not state.ready:
                    # the last answers are in (or a dialogue's next step is claimable): look now, not when the
                    # half-second wait for answers ends (_refill_in_project); a run ended up to 0.5 s late
                    state.next_at = min(state.next_at, time.monotonic())
            self.finished.put(None)  # the driver may finish the job now

    # -- heartbeat ------------------------------------------------------------------------------------------
    def _beat(self) -> None:
        interval = steps.heartbeat_seconds()
        while not self._stop.wait(interval):
            self.beat_once()

    def beat_once(self) -> None:
        """One heartbeat: this engine's row refreshed, dead engines looked for (and reaped), held slots renewed."""
        try:
            with self._lock:
                jobs = sorted(self.jobs)
            if not ensure_registered(self.owner, in_flight=self.in_flight, jobs=jobs):
                self._reaped.set()  # taken for dead meanwhile: its claims may be another engine's now
            self.beat_at = time.monotonic()
            # On every beat, every live engine looks for dead ones (and reaps them): a dead engine's units are
            # taken up within a beat of its silence counting as death, by whichever engine finds it, without
            # waiting for the reconciler's round or for this engine's idle jobs' next look.
            before = steps.reaped_total
            steps.live_owners(fresh=True)
            if steps.reaped_total != before:
                self._others_died.set()
                self.finished.put(None)  # interrupts the driver's wait
        except Exception as exc:  # the database is down: keep beating when it is back
            log.warning("engine heartbeat failed: %s", exc)
            close_old_connections()
        held: dict[str, list[str]] = defaultdict(list)
        for token, name in list(self.slots.items()):
            held[name].append(token)
        with _quiet_limiter():
            limiter.renew(held, SLOT_LEASE)

    # -- the driver -----------------------------------------------------------------------------------------
    def _drive(self) -> None:
        try:
            ensure_registered(self.owner)
        except Exception as exc:
            log.warning("engine could not register: %s", exc)
        while True:
            try:
                if self._stop.is_set():
                    self._drain_and_release()
                    return
                self._cycle()
            except Exception:
                log.exception("LLM engine cycle failed; retrying")
                close_old_connections()
                time.sleep(1.0)

    def _discover(self) -> None:
        """Every few seconds, take up running jobs with units nobody holds, without waiting for a message: the
        engines of all LLM workers share a job, and a job whose wake-up message was lost is not left waiting."""
        now = time.monotonic()
        if now - self._discovered_at < DISCOVER_SECONDS:
            return
        self._discovered_at = now
        for handler in steps.HANDLERS.values():
            for job_id in handler.job_model.unscoped.filter(status=handler.running_status).values_list("pk",
                                                                                                       flat=True):
                if f"{handler.kind}:{job_id}" not in self.jobs and steps.claimable(handler, job_id).exists():
                    self.wakes.put((handler.kind, job_id))

    def _cycle(self) -> None:
        """Wait for answers (or the next thing due), free their slots, refill the freed capacity from the ready
        requests, then store answers in batches: sending again never waits for the database."""
        t0 = time.monotonic()
        if self._reaped.is_set():
            self._reaped.clear()
            for state in self.jobs.values():
                self._unsend(state)  # prepared for claims that may have lapsed: given back (those still held)
        if self._others_died.is_set():
            self._others_died.clear()
            self._discovered_at = 0.0  # jobs this engine does not work on yet: looked at now
            for state in self.jobs.values():
                state.next_at, state.idle_rounds = 0.0, 0
        self._discover()
        self._take_wakes()
        self._refresh(time.monotonic())
        batch = self._collect(self._next_wait())
        t1 = time.monotonic()
        if batch:
            self._free(batch)
        now = time.monotonic()
        sent_before = self.in_flight
        for state in list(self.jobs.values()):
            if state.ready:
                self._drop_stale(state)
            if not state.stopping and state.next_at <= now:
                self._top_up(state)
        t2 = time.monotonic()
        stored = self._store_due()
        self._retire()
        if TRACE:
            log.warning("cycle wait %.0f ms, answers %d, top-up %.0f ms (+%d sent), stored %d in %.0f ms, "
                        "in flight %d", 1000 * (t1 - t0), len(batch), 1000 * (t2 - now),
                        self.in_flight - sent_before + len(batch), stored, 1000 * (time.monotonic() - t2),
                        self.in_flight)

    def _take_wakes(self) -> None:
        while True:
            try:
                kind, job_id = self.wakes.get_nowait()
            except queue.Empty:
                return
            key = f"{kind}:{job_id}"
            state = self.jobs.get(key)
            if state is not None:
                state.next_at = 0.0
                state.idle_rounds = 0
                continue
            handler = handler_for(kind)
            job = handler.job_model.unscoped.filter(pk=job_id).first()
            if job is None or job.status != handler.running_status:
                continue
            with self._lock:
                self.jobs[key] = _JobState(handler, job, checked_at=time.monotonic())
            if TRACE:
                log.warning("woken for %s", key)
            handler.job_model.unscoped.filter(pk=job_id).update(activity_at=timezone.now())

    def _refresh(self, now: float) -> None:
        """Re-read the jobs' rows every second: a paused, cancelled or failed job gets nothing more sent."""
        stale = [s for s in self.jobs.values() if now - s.checked_at > 1.0]
        by_kind: dict[Handler, list[_JobState]] = defaultdict(list)
        for s in stale:
            by_kind[s.handler].append(s)
        for handler, states in by_kind.items():
            rows = handler.job_model.unscoped.in_bulk([s.job.pk for s in states])
            for s in states:
                s.checked_at = now
                row = rows.get(s.job.pk)
                if row is None or row.status != handler.running_status:
                    s.stopping = True
                else:
                    s.job = row

    def fenced(self) -> bool:
        """No heartbeat reached the database for a while: others may take this engine for dead any moment."""
        return time.monotonic() - self.beat_at > self.fence_after

    def _top_up(self, state: _JobState) -> None:
        if self.fenced():
            state.next_at = time.monotonic() + 0.5
            return
        handler, job = state.handler, state.job
        config = handler.config(job)
        if config.get("batch") and steps.batch_submitter is not None:
            submitted = steps.batch_submitter(handler, job, self.owner)
            state.idle_rounds = 0 if submitted else state.idle_rounds + 1
            state.next_at = time.monotonic() + (1.0 if submitted else 5.0)
            return
        concurrency = int(config.get("concurrency") or 1)
        cap = min(concurrency, self.max_in_flight - self.in_flight) - state.in_flight
        # Keep up to a batch of requests prepared beyond the free capacity (one wave of the job's concurrency: a
        # prepared request waits about one answer's time, well within its units' claim), so that each answer's slot
        # is handed the next at once (_hand_over). While this job's requests are in flight the batch is refilled
        # below half, not when a wave of answers frees the slots: at 256 in flight a wave's answers then waited for
        # the next 256 to be claimed and prepared. (Only this job's answers free its slots: with none in flight
        # nothing is prepared for slots that are not free.)
        target = min(self.claim_batch, max(cap, concurrency))
        if not state.in_flight and not state.ready:
            # Nothing of the job in flight yet (its start, or after a pause): a small first claim, so that its first
            # requests go out after preparing a few, not a whole batch (256 prompts: half a second of CPU).
            target = min(target, FIRST_CLAIM)
        low = max(cap, target // 2 if state.in_flight else 0)
        if len(state.ready) < low and not self._refill(state, target - len(state.ready)):
            return
        if cap <= 0:
            state.next_at = time.monotonic() + 0.02
            return
        self._send_ready(state, cap)

    def _refill(self, state: _JobState, want: int) -> bool:
        """Claim and prepare up to ``want`` units (answering cached ones at once); False when the job is done."""
        with in_project(state.job.project_id):  # the units and their dialogues are the job's project's
            return self._refill_in_project(state, want)

    def _refill_in_project(self, state: _JobState, want: int) -> bool:
        handler, job = state.handler, state.job
        claimed_at = time.monotonic()
        units = claim(handler, job, max(1, want), self.owner)
        if not units:
            if state.ready:
                return True
            if state.in_flight or state.answered or state.storing:  # answers free units (a dialogue's next step)
                state.next_at = time.monotonic() + 0.5
                return False
            if handler.maybe_finish(job.pk):  # one cheap query; the job is done the moment its last answer is in
                state.stopping = True
                return False
            state.idle_rounds += 1
            state.next_at = time.monotonic() + min(2.0, 0.05 * 2 ** min(state.idle_rounds, 6))
            return False
        state.idle_rounds = 0
        try:
            requests = handler.prepare(job, units)
        except gateway.NotConfigured as exc:
            release(handler, [u.pk for u in units])
            handler.fail_job(job.pk, str(exc))
            state.stopping = True
            return False
        except Exception:
            release(handler, [u.pk for u in units])
            raise
        try:
            misses = resolve_cached(handler, job, requests)
        except steps.AnswersNotStored:  # the job is paused with the error
            state.stopping = True
            return bool(state.ready)
        # Counted before they can be sent: a job never sends more than its request limit allows.
        wanted = len(misses)
        misses = steps.charge(handler, job, misses)
        if wanted and not misses:
            state.stopping = True  # not running any more, a spending cap or the request limit is reached
        if misses:
            # A request waiting for a slot (another engine may hold them all) is sent only while it can still be
            # answered within its units' claim; after that it is given back unsent (_send_ready), never sent once
            # another engine may have claimed and sent the same units.
            claim_lease = steps.lease_seconds(handler.config(job))
            for r in misses:
                r.send_before = claimed_at + claim_lease - r.timeout - STALE_MARGIN
            # Reserved now, so that a freed slot can go straight to the next of them (see _hand_over).
            lease = max(r.timeout for r in misses) * 1.5 + 5
            try:
                reserved = limiter.reserve([r.key for r in misses], lease, self.owner)
            except limiter.LimiterUnavailable:
                reserved = set()
            busy = []
            for r in misses:
                if r.key in reserved:
                    r.reserved = True
                    state.ready.append(r)
                elif reserved:  # another engine sends this request now: its answer is cached in a moment
                    busy.append(r)
                else:
                    state.ready.append(r)  # the limiter is away: admit() reserves it later
            release(handler, [u for r in busy for u in r.units],
                    not_before=timezone.now() + timedelta(seconds=1))
            steps.refund_requests(handler, job.pk, busy)
        return bool(state.ready)

    def _send_ready(self, state: _JobState, cap: int) -> None:
        group, stale = [], []
        now = time.monotonic()
        while len(group) < cap:
            try:  # the event loop's thread takes from the same deque (_hand_over)
                r = state.ready.popleft()
            except IndexError:
                break
            (group if now < r.send_before else stale).append(r)
        if stale:
            self._give_back_unsent(state, stale)
        by_limit: dict[str, list[Request]] = defaultdict(list)
        for r in group:
            by_limit[r.limit.name].append(r)
        wait = 0.0
        sent = 0
        for requests in by_limit.values():
            admission = admit(state.handler, requests, self.owner, keep_refused=True)
            steps.refund_requests(state.handler, state.job.pk, admission.released)
            for r in admission.admitted:
                self._send(state, r)
                sent += 1
            state.ready.extendleft(reversed(admission.refused))
            if admission.refused:
                wait = max(wait, admission.deferred_for or 0.05)
        if wait and not sent:
            state.next_at = time.monotonic() + min(wait, 1.0)

    def _send(self, state: _JobState, request: Request) -> None:
        request.job_id = state.job.pk
        state.in_flight += 1
        self.in_flight += 1
        self._launch(state, request)

    def _launch(self, state: _JobState, request: Request) -> None:
        if request.slot:
            self.slots[request.slot] = request.limit.name
        future = self.runner.submit(gateway.acomplete(request.endpoint, request.payload, request.timeout))
        future.add_done_callback(lambda f: self._done(state, request, f))

    def _done(self, state: _JobState, request: Request, future) -> None:
        """On the event loop's thread, as each answer arrives: hand its slot to the job's next ready request (so a
        slot never waits for this engine's other work), and queue the answer for the driver."""
        try:
            request.outcome = future.result()
        except Exception as exc:
            request.outcome = gateway.Outcome(ok=False, retryable=True, error=f"{type(exc).__name__}: {exc}")
        if self.journal is not None and request.outcome.ok and state.handler.answers_recoverable:
            # Journaled as it arrives: from here on a kill of this process does not lose a paid answer.
            try:
                self.journal.write([(request, steps.journal_entry(state.handler, state.job, request))])
            except (OSError, TypeError, ValueError) as exc:  # a full disk: the answer is still stored as usual
                steps.warn_now_and_then("journal", "could not journal an answer: %s", exc)
        if steps.stops_the_job(request.outcome):
            state.stopping = True  # a refused key or an unknown host: not one more request of this job
        handed = self._hand_over(state, request)
        self.finished.put(_Finished(state, request, handed))

    def _hand_over(self, state: _JobState, request: Request) -> bool:
        limit, outcome = request.limit, request.outcome
        if not request.slot or state.stopping or limit.requests_per_minute or limit.tokens_per_minute:
            return False  # rate budgets are taken by the driver (admit)
        if self.fenced():
            return False
        if outcome is not None and outcome.retry_after:
            return False  # the provider asked us to wait
        try:
            following = state.ready.popleft()
        except IndexError:
            return False
        if following.limit.name != limit.name or not following.reserved or time.monotonic() >= following.send_before:
            state.ready.appendleft(following)  # a stale one is given back by the driver (_send_ready)
            return False
        following.slot, request.slot = request.slot, None
        following.job_id = state.job.pk
        self._launch(state, following)
        return True

    def _next_wait(self) -> float:
        if not self.jobs:
            return 0.5
        now = time.monotonic()
        soonest = min((s.next_at for s in self.jobs.values() if not s.stopping), default=now + 0.5)
        stores = [s.answered_at + STORE_LINGER for s in self.jobs.values() if s.answered]
        if stores:
            soonest = min(soonest, min(stores))
        return max(0.0, min(0.5, soonest - now))

    def _collect(self, timeout: float) -> list[_Finished]:
        """Wait up to ``timeout`` for answers, then take every answer that is in (one batch to store)."""
        batch: list[_Finished] = []
        try:
            first = self.finished.get(timeout=timeout) if timeout > 0 else self.finished.get_nowait()
        except queue.Empty:
            return batch
        if first is not None:  # None only interrupts the wait (a wake-up, a stored batch)
            batch.append(first)
        while len(batch) < 1000:
            try:
                item = self.finished.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                batch.append(item)
        return batch

    def _free(self, batch: list[_Finished]) -> None:
        """The requests are answered: their slots (not yet their reservations) go back, the capacity is free, and
        the answers wait to be stored with the next batch."""
        slots: dict[str, list[str]] = defaultdict(list)
        now = time.monotonic()
        for item in batch:
            r, state = item.request, item.state
            if not state.answered:
                state.answered_at = now
            state.answered.append(r)
            state.next_at, state.idle_rounds = 0.0, 0
            if item.handed_over:  # its slot carries the next request: nothing freed, one in flight as before
                continue
            if r.slot:
                slots[r.limit.name].append(r.slot)
                self.slots.pop(r.slot, None)
                r.slot = None
            state.in_flight -= 1
            self.in_flight -= 1
            if r.outcome is not None and r.outcome.retry_after:
                # The provider asked everyone to wait: so do we, for this job, rather than keep hitting it.
                state.next_at = max(state.next_at, time.monotonic() + min(r.outcome.retry_after, 30.0))
        with _quiet_limiter():
            limiter.give_back(slots, [])

    def _store_due(self, *, everything: bool = False) -> int:
        """Store the answers of jobs whose batch is full, old enough, or that have nothing else in flight."""
        now = time.monotonic()
        stored = 0
        for state in list(self.jobs.values()):
            if not state.answered:
                continue
            if everything or state.stopping or not state.in_flight or len(state.answered) >= STORE_BATCH or \
                    now - state.answered_at >= STORE_LINGER:
                requests, state.answered = state.answered, []
                stored += len(requests)
                with self._lock:
                    state.storing += len(requests)
                self.to_store.put((state, requests))
        return stored

    def _retire(self) -> None:
        """Forget jobs with nothing in flight that are stopped, or have had nothing to claim for a while."""
        for key, state in list(self.jobs.items()):
            if state.stopping and state.ready:  # paused or cancelled: the prepared requests go back unsent
                self._unsend(state)
            if state.in_flight or state.answered or state.ready or state.storing:
                continue
            if state.stopping or state.idle_rounds >= 8:
                if state.stopping:  # e.g. the request limit was reached while answers were still coming in
                    state.handler.maybe_finish(state.job.pk)
                else:
                    state.handler.maybe_finish(state.job.pk)
                    if steps.claimable(state.handler, state.job.pk).exists():
                        state.idle_rounds = 0
                        continue
                    if state.handler.open_units(state.job.pk).exists():
                        # Units wait for a retry time (or another engine holds them): look again later; the
                        # reconciler wakes the job if we are gone by then.
                        state.idle_rounds = 4
                        state.next_at = time.monotonic() + 2.0
                        continue
                with self._lock:
                    del self.jobs[key]

    def _unsend(self, state: _JobState) -> None:
        """Give the prepared requests of a job back unsent: units released, slots and reservations freed, their
        charge refunded."""
        unsent = []
        while True:
            try:  # the event loop's thread may take from the same deque until the job stopped
                unsent.append(state.ready.popleft())
            except IndexError:
                break
        self._give_back_unsent(state, unsent)

    def _drop_stale(self, state: _JobState) -> None:
        """Give back the prepared requests that can no longer be sent (see ``Request.send_before``) while their
        units' claim and reservation are still this engine's: every cycle, whether or not a slot is free. They are
        the oldest, at the head of the queue."""
        now = time.monotonic()
        stale = []
        while True:
            try:  # the event loop's thread takes from the same deque (_hand_over)
                r = state.ready.popleft()
            except IndexError:
                break
            if now < r.send_before:
                state.ready.appendleft(r)
                break
            stale.append(r)
        self._give_back_unsent(state, stale)

    def _give_back_unsent(self, state: _JobState, unsent: list[Request]) -> None:
        """Prepared requests that will not be sent: units released, slots and reservations freed, charge refunded."""
        if not unsent:
            return
        release(state.handler, [u for r in unsent for u in r.units], owner=self.owner)
        give_back(unsent)
        steps.refund_requests(state.handler, state.job.pk, unsent)

    def _drain_and_release(self) -> None:
        for state in self.jobs.values():
            state.stopping = True  # no slot is handed over any more
        deadline = time.monotonic() + 10.0
        while self.in_flight and time.monotonic() < deadline:
            batch = self._collect(0.2)
            if batch:
                self._free(batch)
        self._store_due(everything=True)
        self.to_store.put(None)
        self.storer.join(30)
        for state in self.jobs.values():
            if state.ready:
                self._unsend(state)
            state.handler.unit_model.unscoped.filter(claimed_by=self.owner).update(claimed_by="",
                                                                                  claimed_until=None)
        LLMWorker.objects.filter(owner=self.owner).delete()
        if self.journal is not None:
            self.journal.close()


_engine: Engine | None = None
_engine_pid: int | None = None
_engine_lock = threading.Lock()


def engine() -> Engine:
    """This process's engine, started on first use (in a worker process: by the first wake-up)."""
    global _engine, _engine_pid
    with _engine_lock:
        if _engine is None or _engine_pid != os.getpid():
            _engine, _engine_pid = Engine().start(), os.getpid()
        return _engine


def stop_engine() -> None:
    global _engine
    with _engine_lock:
        if _engine is not None and _engine_pid == os.getpid():
            _engine.stop()
            _engine = None


