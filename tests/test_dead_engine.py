"""A dead engine's work resumes at once, without waiting out its leases: its claims, slots and reservations of
request keys are free as soon as it is found dead (its process gone on this machine, or its heartbeat silent), and
the answers it received but had not stored are recovered from its journal instead of being asked again. In process,
in whichever mode the suite runs (SQLite and the filesystem limiter, or PostgreSQL and Redis); the worker-process
kill is in tests/test_judge_worker.py and bench/faults.py."""

from __future__ import annotations

import subprocess
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from annotation.models import Corpus, Dialogue, ScaleVersion
from scoring.judges import runs as judging
from scoring.judges.models import JudgeConfig, JudgeResult, JudgeRun
from scoring.llm import engine, gateway, journal, limiter
from scoring.llm.models import LLMCall, LLMWorker

KIND = judging.HANDLER.kind


@pytest.fixture
def run(db, fake_llm, monkeypatch) -> JudgeRun:
    monkeypatch.setenv("LLM_KEY_MINICEX_TEST", "sk-test")
    corpus = Corpus.objects.create(name="resumed")
    Dialogue.objects.bulk_create([Dialogue(corpus=corpus, external_id=f"r{i}", self_report=f"Fever ({i}).",
                                           turns=[{"role": "doctor", "text": f"Hello ({i})."}]) for i in range(3)])
    config = JudgeConfig.objects.create(
        name="resumed judge", base_url=fake_llm.base_url, api_key_env="LLM_KEY_MINICEX_TEST", model="fake-judge",
        prompt_set=judging.default_prompt_set(ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=1)),
        timeout_seconds=60, max_attempts=2, concurrency=8, price_input_per_1k="0.5", price_output_per_1k="1.5")
    limiter.reset(f"judge-{config.pk}")
    run = judging.create_run(config, corpus, item_codes=["1.1", "2.1"])
    judging.start(run)
    return run


def engine_process(host: str = engine.HOSTNAME) -> tuple[str, subprocess.Popen]:
    """The heartbeat row of another engine (a process of its own, killed by the test) on ``host``."""
    child = subprocess.Popen(["sleep", "60"])
    owner = f"{host}:{child.pid}:deadbeef"
    LLMWorker.objects.create(owner=owner, hostname=host, pid=child.pid, seen_at=timezone.now())
    return owner, child


def kill(child: subprocess.Popen) -> None:
    child.kill()
    child.wait()


def held_by(owner: str, run: JudgeRun) -> list[engine.Request]:
    """What a dead engine left: every unit claimed (for the lease of a 60 s timeout: 95 s), its requests charged,
    their keys reserved and slots taken."""
    job = JudgeRun.objects.get(pk=run.pk)
    units = engine.claim(judging.HANDLER, job, 100, owner)
    with engine.scoping.in_project(job.project_id):
        requests = judging.HANDLER.prepare(job, units)
    assert engine.charge(judging.HANDLER, job, requests) == requests
    assert limiter.reserve([r.key for r in requests], 95, owner) == {r.key for r in requests}
    assert len(limiter.acquire_many(requests[0].limit.name, 8, len(requests), 60, owner)) == len(requests)
    return requests


def test_a_dead_engines_units_resume_at_once_and_its_unstored_answers_are_not_asked_again(run, fake_llm):
    owner, child = engine_process()
    requests = held_by(owner, run)
    assert len(requests) == 6
    # Two answers came back before the process was killed, and were journaled but not stored.
    answered = requests[:2]
    for r in answered:
        r.outcome = gateway.runner().submit(gateway.acomplete(r.endpoint, r.payload, r.timeout)).result()
        assert r.outcome.ok
    journal.Journal(owner).write([(r, engine.journal_entry(judging.HANDLER, run, r)) for r in answered])
    assert journal.segments_of(owner)
    kill(child)  # SIGKILL: its claims, slots and reservations would hold for 95 s, its answers be lost

    states = engine.run_until_idle(KIND, run.pk, timeout=20)

    run.refresh_from_db()
    assert run.status == "succeeded"
    assert JudgeResult.objects.filter(run=run, status="done").count() == 6
    # 2 asked by the dead engine (recovered from its journal) + 4 asked once by the live one: nothing twice.
    assert len(fake_llm.chat_requests) == 6
    assert sorted(states).count("cached") == 2
    assert not journal.segments_of(owner) and not LLMWorker.objects.filter(owner=owner).exists()
    assert limiter.reserved_by([r.key for r in requests]) == {}
    assert limiter.in_use(requests[0].limit.name) == 0
    # Every answer paid for is charged once, the recovered ones included; the requests stay within the bound.
    calls = LLMCall.objects.filter(key__in=[r.key for r in requests])
    assert calls.count() == 6
    assert run.spent_cost == sum((c.cost for c in calls), Decimal(0)) > 0
    assert run.requests_sent <= run.request_limit == 6 * 2


def test_an_engine_silent_elsewhere_frees_its_reservations_once_its_heartbeat_is_late(run, fake_llm):
    owner, child = engine_process(host="another-machine")  # beating a moment ago: alive as far as anyone can tell
    kill(child)  # (its pid means nothing on this machine)
    requests = held_by(owner, run)
    unit = JudgeResult.objects.filter(run=run).order_by("pk").first()
    engine.live_owners(fresh=True)
    assert judging.process_unit(run.pk, unit.dialogue_id, unit.item_id).state == "busy"
    assert len(fake_llm.chat_requests) == 0
    LLMWorker.objects.filter(owner=owner).update(seen_at=timezone.now() - timedelta(seconds=engine.dead_after() + 1))
    engine.live_owners(fresh=True)  # a few beats missed: it is dead, its reservations go with it
    assert limiter.reserved_by([r.key for r in requests]) == {}
    assert judging.process_unit(run.pk, unit.dialogue_id, unit.item_id).state == "done"
    assert len(fake_llm.chat_requests) == 1


def test_a_journal_segment_goes_once_its_answers_are_stored(settings, tmp_path, run):
    settings.VAR_DIR = tmp_path
    book = journal.Journal("here:1:abc")
    first, second = engine.Request([1], None, {}, "k1", None, 1, (0, 0), 0, 1), \
        engine.Request([2], None, {}, "k2", None, 1, (0, 0), 0, 1)
    book.write([(first, {"key": "k1"}), (second, {"key": "k2"})])
    (segment,) = journal.segments_of("here:1:abc")
    book.close()
    book.stored([first])
    assert segment.exists() and [e["key"] for e in journal.read(segment)] == ["k1", "k2"]
    book.stored([second])
    assert not segment.exists()


def test_every_live_engine_reaps_a_silent_one_on_its_beat_and_looks_at_its_jobs_again(db, settings):
    """Silence of a few beats is death (LLM_WORKER_MISSED_BEATS), and a live engine finds it on its own beat, not on
    the reconciler's round: the dead engine's row goes and the live one's driver is told to look again."""
    from scoring.llm import worker

    assert engine.dead_after() == settings.LLM_HEARTBEAT_SECONDS * settings.LLM_WORKER_MISSED_BEATS
    owner, child = engine_process(host="another-machine")
    kill(child)
    LLMWorker.objects.filter(owner=owner).update(seen_at=timezone.now() - timedelta(seconds=engine.dead_after() + 1))
    live = worker.Engine()  # not started: one beat of its heartbeat, here
    live.beat_once()
    assert live._others_died.is_set()
    assert not LLMWorker.objects.filter(owner=owner).exists()
    assert LLMWorker.objects.filter(owner=live.owner).exists()  # its own beat went in first
    LLMWorker.objects.filter(owner=live.owner).delete()


def test_an_engine_of_this_machine_whose_process_is_there_is_slow_not_dead(db):
    """A sibling engine late with its heartbeat on a loaded machine keeps its claims for a longer silence (its
    requests would otherwise be sent again while it works); gone, it is dead at once."""
    owner, child = engine_process()
    try:
        late = timezone.now() - timedelta(seconds=engine.dead_after() + 1)
        LLMWorker.objects.filter(owner=owner).update(seen_at=late)
        assert owner in engine.live_owners(fresh=True)
        silent = timezone.now() - timedelta(seconds=engine.dead_after() * engine.LIVE_PROCESS_GRACE + 1)
        LLMWorker.objects.filter(owner=owner).update(seen_at=silent)
        assert owner not in engine.live_owners(fresh=True)
    finally:
        kill(child)


@pytest.mark.parametrize("skew", [timedelta(minutes=10), -timedelta(minutes=10)], ids=["ahead", "behind"])
def test_silence_is_measured_on_the_databases_clock_whatever_this_machines_clock_says(db, monkeypatch, skew):
    """Machines' clocks disagree; the database's is the one clock every engine shares. A machine whose clock is
    ahead must not take an engine that beat a moment ago for dead, one whose clock is behind must not keep a silent
    one alive, and the beats it writes itself must read as recent to everyone."""
    from django.db.models import DurationField, ExpressionWrapper, F
    from django.db.models.functions import Now

    beating, beating_child = engine_process(host="another-machine")
    silent, silent_child = engine_process(host="another-machine")
    try:
        LLMWorker.objects.filter(owner=beating).update(seen_at=Now() - timedelta(seconds=1))
        LLMWorker.objects.filter(owner=silent).update(seen_at=Now() - timedelta(seconds=engine.dead_after() + 2))
        real_now = timezone.now
        monkeypatch.setattr(timezone, "now", lambda: real_now() + skew)  # this machine's clock is off
        live = engine.live_owners(fresh=True)
        assert beating in live
        assert silent not in live and not LLMWorker.objects.filter(owner=silent).exists()  # reaped
        here = engine.engine_owner()
        engine.ensure_registered(here)  # this machine's own beat
        monkeypatch.undo()
        silence = (LLMWorker.objects.filter(owner=here)
                   .annotate(silence=ExpressionWrapper(Now() - F("seen_at"), output_field=DurationField()))
                   .values_list("silence", flat=True).get())
        assert abs(silence) < timedelta(seconds=5)
        assert here in engine.live_owners(fresh=True)
    finally:
        kill(beating_child)
        kill(silent_child)
        LLMWorker.objects.all().delete()
