"""Leases on the database's clock: the background jobs' heartbeats (core.jobs) and the LLM units' claims
(scoring.llm.engine) are stamped and read by the database's clock, the one every machine shares, as the engines'
heartbeats are (tests/test_dead_engine.py). A machine whose clock is ten minutes ahead or behind neither takes a
live lease nor keeps a dead one, and the leases it writes last as long for everyone. In process, in whichever mode
the suite runs (SQLite or PostgreSQL)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db.models import DurationField, ExpressionWrapper, F
from django.db.models.functions import Now
from django.utils import timezone

from core.jobs import services as jobs
from core.jobs.models import Job
from scoring.judges import runs as judging
from scoring.judges.models import JudgeResult
from scoring.llm import engine
from tests.test_dead_engine import run  # noqa: F401 - the fixture: a started judge run of six units

SKEWS = pytest.mark.parametrize("skew", [timedelta(minutes=10), -timedelta(minutes=10)], ids=["ahead", "behind"])


def _skew_this_machine(monkeypatch, skew: timedelta) -> None:
    real_now = timezone.now
    monkeypatch.setattr(timezone, "now", lambda: real_now() + skew)


def _ago(field: str) -> ExpressionWrapper:
    """How long ago ``field`` was, on the database's clock (negative: to come)."""
    return ExpressionWrapper(Now() - F(field), output_field=DurationField())


@SKEWS
def test_a_job_worker_on_a_skewed_clock_neither_runs_a_live_job_again_nor_waits_on_a_dead_one(db, monkeypatch,
                                                                                               skew):
    sent = []
    monkeypatch.setattr(jobs, "send", lambda job_id, countdown=None: sent.append(job_id) or True)
    live = Job.unscoped.create(kind=Job.Kind.WORKER_CHECK, status=Job.Status.RUNNING, attempts=1)
    dead = Job.unscoped.create(kind=Job.Kind.WORKER_CHECK, status=Job.Status.RUNNING, attempts=1)
    Job.unscoped.filter(pk=live.pk).update(heartbeat_at=Now() - timedelta(seconds=1))
    Job.unscoped.filter(pk=dead.pk).update(heartbeat_at=Now() - jobs.HEARTBEAT_STALE - timedelta(seconds=5))
    _skew_this_machine(monkeypatch, skew)

    jobs.execute(live.pk)  # a second message for the live job: left to the worker running it
    assert jobs.reconcile()["requeued"] == [dead.pk] and sent == [dead.pk]
    live.refresh_from_db()
    assert (live.status, live.attempts) == (Job.Status.RUNNING, 1)

    ran = Job.unscoped.create(kind=Job.Kind.WORKER_CHECK)
    jobs.execute(ran.pk)  # its start is a beat this machine stamps
    monkeypatch.undo()
    assert abs(Job.unscoped.annotate(ago=_ago("heartbeat_at")).values_list("ago", flat=True).get(pk=ran.pk)) \
        < timedelta(seconds=5)


@SKEWS
def test_a_claim_on_a_skewed_clock_neither_takes_a_held_unit_nor_leaves_an_expired_one(run, monkeypatch,  # noqa: F811
                                                                                      skew):
    units = list(JudgeResult.unscoped.filter(run=run).order_by("pk").values_list("pk", flat=True))
    held, expired, free = units[:2], units[2:4], units[4:]
    # held by a provider batch (its units are free only when its lease ends), for another minute or for a second past
    JudgeResult.unscoped.filter(pk__in=held).update(claimed_by=f"{engine.BATCH_OWNER}1",
                                                    claimed_until=Now() + timedelta(minutes=1))
    JudgeResult.unscoped.filter(pk__in=expired).update(claimed_by=f"{engine.BATCH_OWNER}2",
                                                       claimed_until=Now() - timedelta(seconds=1))
    _skew_this_machine(monkeypatch, skew)

    assert set(engine.claimable(judging.HANDLER, run.pk).values_list("pk", flat=True)) == {*expired, *free}
    claimed = engine.claim(judging.HANDLER, run, 100, engine.engine_owner())
    assert sorted(unit.pk for unit in claimed) == [*expired, *free]
    monkeypatch.undo()
    lease = timedelta(seconds=engine.lease_seconds(judging.HANDLER.config(run)))
    for ago in JudgeResult.unscoped.filter(pk__in=[*expired, *free]).annotate(ago=_ago("claimed_until")) \
            .values_list("ago", flat=True):
        assert abs(ago + lease) < timedelta(seconds=5)  # the whole lease from now, for everyone
