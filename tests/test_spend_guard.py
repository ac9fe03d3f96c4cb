"""No LLM job spends without bound: requests are counted in the database before they are sent and never exceed the
job's units x attempts; answers that cannot be stored are kept and pause the job; a refused key pauses it at once;
spending caps pause it; end states say what happened ("Finished", "Finished with problems", "Failed" with causes).

In process (the engine's synchronous path) and through real worker processes, in whichever mode the suite runs
(SQLite and the filesystem broker, or PostgreSQL and Redis)."""

from __future__ import annotations

import io
import time
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.models import Corpus, Dialogue, ScaleVersion
from scoring.judges import runs as judging
from scoring.judges.models import JudgeConfig, JudgeResult, JudgeRun
from scoring.llm import engine, gateway, limiter
from scoring.llm.models import LLMCall
from tests.conftest import wait_until
from tests.fake_openai import FakeOpenAI, messages_text, mini_cex_answer

KEY = "LLM_KEY_MINICEX_TEST"


@pytest.fixture
def corpus(db):
    corpus = Corpus.objects.create(name="guarded")
    for i in range(3):
        Dialogue.objects.create(corpus=corpus, external_id=f"g{i}", self_report=f"Chest pain for {i + 1} days.",
                                turns=[{"role": "doctor", "text": f"Hello, where does it hurt? ({i})"},
                                       {"role": "patient", "text": "Behind the breastbone."}])
    return corpus


def make_config(server_url: str, monkeypatch, name: str = "guarded judge", **extra) -> JudgeConfig:
    monkeypatch.setenv(KEY, "sk-test")
    version = ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=1)
    config = JudgeConfig.objects.create(
        name=name, base_url=server_url, api_key_env=KEY, model="fake-judge",
        prompt_set=judging.default_prompt_set(version), timeout_seconds=2,
        **{"max_attempts": 3, "concurrency": 4, **extra})
    limiter.reset(f"judge-{config.pk}")
    return config


def started(config: JudgeConfig, corpus: Corpus, codes: list[str], **caps) -> JudgeRun:
    run = judging.create_run(config, corpus, item_codes=codes, **caps)
    judging.start(run)
    return run


def drain(run: JudgeRun, timeout: float = 60) -> JudgeRun:
    engine.run_until_idle(judging.HANDLER.kind, run.pk, timeout=timeout)
    run.refresh_from_db()
    return run


# ------------------------------------------------------------------------------------------------ store failures
def test_an_answer_that_cannot_be_stored_is_kept_and_pauses_the_run(instrument, corpus, monkeypatch):
    with FakeOpenAI(responder=mini_cex_answer) as server:
        run = started(make_config(server.base_url, monkeypatch), corpus, ["1.1", "1.2"])

        def cannot_store(self, run, requests, open_ids):
            raise ValueError('Cannot assign "1": "JudgeResult.call" must be a "LLMCall" instance.')

        with monkeypatch.context() as patch:
            patch.setattr(judging.JudgeHandler, "apply", cannot_store)
            run = drain(run)
        units = 6
        sent = len(server.chat_requests)
        assert run.status == "paused"
        assert "Answers could not be stored" in run.error and "JudgeResult.call" in run.error
        assert 0 < sent <= 4  # one round (the judge's concurrency), never re-sent in a loop
        assert run.requests_sent == sent and LLMCall.objects.count() == sent  # the paid answers are kept
        assert JudgeResult.objects.filter(run=run, status="pending", claimed_by="").count() == units
        spent = run.spent_tokens
        assert spent > 0
        # the bug is fixed: resuming applies the kept answers without asking for them again
        judging.start(run)
        run = drain(run)
        assert run.status == "succeeded" and JudgeResult.objects.filter(run=run, status="done").count() == units
        assert len(server.chat_requests) == units and run.requests_sent == units  # only the ones never sent
        assert JudgeResult.objects.filter(run=run, from_cache=True).count() == sent


def test_whatever_fails_the_run_never_sends_more_than_its_units_times_attempts(instrument, corpus, monkeypatch):
    """The backstop: a handler that loses every answer and a cache that never answers (a loop like the one the
    default mode once had) still stop at units x attempts, and the run says why."""
    with FakeOpenAI(responder=mini_cex_answer) as server:
        run = started(make_config(server.base_url, monkeypatch), corpus, ["1.1"])

        def loses_answers(self, run, requests, open_ids):
            engine.release(self, [u for r in requests for u in r.units])

        monkeypatch.setattr(judging.JudgeHandler, "apply", loses_answers)
        monkeypatch.setattr(engine, "cached_calls", lambda keys: {})
        run = drain(run, timeout=30)
        assert run.request_limit == 3 * 3
        assert run.requests_sent == len(server.chat_requests) == 9
        assert run.status == "failed" and "request limit" in run.error
        assert JudgeResult.objects.filter(run=run, status="failed").count() == 3


def test_a_prepared_request_that_waited_past_its_claim_is_given_back_not_sent(instrument, corpus, monkeypatch):
    """A worker's engine prepares requests ahead and keeps them until a slot is free. Another engine may hold every
    slot for longer than the units' claim lasts; the units can then be claimed and sent by someone else, so the
    waiting requests must not go out after all: they are given back unsent (units, reservations, charge), and a
    fresh claim sends them once."""
    from scoring.llm import worker

    with FakeOpenAI(responder=mini_cex_answer) as server:
        run = started(make_config(server.base_url, monkeypatch), corpus, ["1.1"])
        eng = worker.Engine()
        state = worker._JobState(judging.HANDLER, JudgeRun.objects.get(pk=run.pk))
        before = time.monotonic()
        assert eng._refill(state, 3) and len(state.ready) == 3
        waiting = list(state.ready)
        # sendable for as long as an answer (the 2 s timeout) still comes before the claim (2 x 1.5 + 5 s) lapses
        lease = engine.lease_seconds(judging.HANDLER.config(run))
        assert all(before + lease - 2 - worker.STALE_MARGIN <= r.send_before <= time.monotonic() + lease - 2
                   for r in waiting)
        assert JudgeRun.objects.get(pk=run.pk).requests_sent == 3
        for r in waiting[1:]:  # as if they had waited that long for a slot
            r.send_before = time.monotonic() - 0.1
        # a slot comes free: the one still in time is sent, the others are given back
        eng._send_ready(state, 4)
        assert eng.in_flight == 1 and not state.ready
        wait_until(lambda: len(server.chat_requests) == 1 and eng.finished.qsize() == 1, 10, "the one answer")
        eng._free(eng._collect(0))
        engine.finish(state.handler, state.job, state.answered)
        state.answered = []
        waiting = waiting[1:]
        assert JudgeRun.objects.get(pk=run.pk).requests_sent == 1  # the others' charge is refunded
        assert JudgeResult.objects.filter(run=run, status="pending", claimed_by="").count() == 2
        assert limiter.reserve([r.key for r in waiting], 5, "someone else") == {r.key for r in waiting}
        limiter.unreserve([r.key for r in waiting])
        # claimed afresh, and every slot busy (none is free for a while): when they are stale they are given back
        # all the same, while the claim is still this engine's (a unit claimed by another engine meanwhile keeps
        # its claim)
        assert eng._refill(state, 3) and len(state.ready) == 2
        JudgeResult.objects.filter(pk=state.ready[1].units[0]).update(claimed_by="another engine")
        for r in state.ready:
            r.send_before = time.monotonic() - 0.1
        eng.jobs[state.key] = state
        eng.max_in_flight = 0
        eng._cycle()
        assert not state.ready and len(server.chat_requests) == 1
        assert JudgeRun.objects.get(pk=run.pk).requests_sent == 1
        assert set(JudgeResult.objects.filter(run=run, status="pending").values_list("claimed_by", flat=True)) == {
            "", "another engine"}
        # claimed afresh with free slots, they go out at once: one request each
        JudgeResult.objects.filter(run=run).update(claimed_by="")
        eng.max_in_flight = 1024
        assert eng._refill(state, 3) and len(state.ready) == 2
        eng._send_ready(state, 4)
        assert eng.in_flight == 2
        wait_until(lambda: len(server.chat_requests) == 3 and eng.finished.qsize() == 2, 10, "the two answers")
        eng._free(eng._collect(0))
        assert len(state.answered) == 2 and all(r.outcome.ok for r in state.answered)
        engine.finish(state.handler, state.job, state.answered)
    run.refresh_from_db()
    assert run.requests_sent == 3 and JudgeResult.objects.filter(run=run, status="done").count() == 3


def test_while_a_jobs_slots_are_busy_its_next_requests_are_prepared_and_none_sent(instrument, corpus, monkeypatch):
    """Each answer's slot goes straight to a prepared request (the event loop's hand-over): while every slot holds
    one of the job's requests, the engine prepares the next batch (bench_judge: the answers of a wave of 256 waited
    for the next 256 to be claimed). Nothing more is sent, and with none of the job's requests in flight and no slot
    free, nothing is prepared."""
    from scoring.llm import worker

    run = started(make_config("http://127.0.0.1:9/v1", monkeypatch, concurrency=2), corpus, ["1.1", "1.2", "1.3"])
    eng = worker.Engine()
    idle = worker._JobState(judging.HANDLER, JudgeRun.objects.get(pk=run.pk))
    eng.max_in_flight = 0
    eng._top_up(idle)
    assert not idle.ready and JudgeRun.objects.get(pk=run.pk).requests_sent == 0
    eng.max_in_flight = 1024
    busy = worker._JobState(judging.HANDLER, JudgeRun.objects.get(pk=run.pk), in_flight=2)
    eng._top_up(busy)
    assert len(busy.ready) == 2 and eng.in_flight == 0  # a wave of the run's concurrency, charged, none sent
    assert JudgeRun.objects.get(pk=run.pk).requests_sent == 2


def test_once_the_last_answers_are_stored_the_engine_looks_at_the_job_at_once(instrument, corpus, monkeypatch):
    """With its units all claimed and answers still to come, a job is looked at again half a second later; once the
    store thread has stored its last answers, at once (bench_judge: runs ended up to 0.5 s after their last answer).
    While requests are in flight the wait stands."""
    from scoring.llm import worker

    run = started(make_config("http://127.0.0.1:9/v1", monkeypatch), corpus, ["1.1"])
    eng = worker.Engine()
    later = time.monotonic() + 0.5
    waiting = worker._JobState(judging.HANDLER, JudgeRun.objects.get(pk=run.pk), next_at=later, in_flight=1)
    done = worker._JobState(judging.HANDLER, JudgeRun.objects.get(pk=run.pk), next_at=later)
    for state in (waiting, done):
        eng.to_store.put((state, []))
    eng.to_store.put(None)
    eng._store_loop()  # the store thread's loop, here: it returns at the None
    assert waiting.next_at == later and done.next_at < later


# ------------------------------------------------------------------------------------------------ refusals
def test_a_refused_key_pauses_at_once_and_nothing_more_is_sent(instrument, corpus, monkeypatch):
    with FakeOpenAI(responder=mini_cex_answer, require_api_key="sk-other") as server:
        config = make_config(server.base_url, monkeypatch, concurrency=2)
        run = started(config, corpus, ["1.1", "1.2", "2.1"])
        run = drain(run)
        assert run.status == "paused" and "401" in run.error and KEY in run.error
        first_round = len(server.chat_requests)
        assert first_round <= 9 and run.requests_sent == first_round
        assert not JudgeResult.objects.filter(run=run).exclude(status="pending").exists()
        drain(run)
        assert len(server.chat_requests) == first_round  # paused: nothing more


def test_unparseable_answers_end_the_run_as_failed_with_the_cause(instrument, corpus, monkeypatch):
    with FakeOpenAI(responder=lambda body: "I would rather not say.") as server:
        for mode, units, requests in ((JudgeConfig.Mode.PER_ITEM, 6, 6), (JudgeConfig.Mode.PER_DIALOGUE, 6, 3)):
            run = started(make_config(server.base_url, monkeypatch, name=f"unparseable {mode}", mode=mode),
                          corpus, ["1.1", "1.2"])
            before = len(server.chat_requests)
            run = drain(run)
            sent = len(server.chat_requests) - before
            assert sent == requests <= units * 3
            assert run.status == "failed" and "No answer could be used" in run.error
            assert f"all {units} units failed or were unscored" in run.error


def test_a_share_of_problems_above_five_percent_finishes_with_problems(instrument, monkeypatch):
    corpus = Corpus.objects.create(name="mixed")
    for i in range(40):
        Dialogue.objects.create(corpus=corpus, external_id=f"m{i:02d}", self_report="Cough.",
                                turns=[{"role": "doctor", "text": f"Hello {i}"}, {"role": "patient", "text": "Hi"}])

    def answer_some(bad: set[str]):
        def respond(body):
            text = messages_text(body) + "\n"
            return "Hard to tell." if any(f"Hello {i}\n" in text for i in bad) else mini_cex_answer(body)
        return respond

    with FakeOpenAI(responder=answer_some({"1"})) as server:
        run = drain(started(make_config(server.base_url, monkeypatch, name="one bad"), corpus, ["1.1"]))
        assert run.status == "succeeded" and JudgeResult.objects.filter(run=run, status="unscored").count() == 1
    with FakeOpenAI(responder=answer_some({"1", "2", "3"})) as server:
        run = drain(started(make_config(server.base_url, monkeypatch, name="three bad"), corpus, ["1.1"]))
        assert run.status == "problems"
        assert "3 of 40 units failed or were unscored" in run.error and "could not be parsed" in run.error
        progress = judging.progress(run)
        assert [s["kind"] for s in progress["segments"]] == ["done", "unscored"]
        assert progress["causes"][0][1] == 3


def test_an_unknown_host_fails_the_run_within_seconds_with_that_cause(instrument, corpus, monkeypatch):
    with FakeOpenAI(responder=mini_cex_answer) as server:
        config = make_config(server.base_url, monkeypatch)
    # a new run is refused before anything is stored or sent
    JudgeConfig.objects.filter(pk=config.pk).update(base_url="http://synthetic.invalid/v1")
    config.refresh_from_db()
    with pytest.raises(gateway.NotConfigured, match="host synthetic.invalid does not resolve"):
        judging.create_run(config, corpus, item_codes=["1.1"])
    # a run whose host stopped resolving after it was created fails at its first answer, not after timeouts
    with FakeOpenAI(responder=mini_cex_answer) as server:
        JudgeConfig.objects.filter(pk=config.pk).update(base_url=server.base_url)
        config.refresh_from_db()
        run = judging.create_run(config, corpus, item_codes=["1.1", "1.2"])
    JudgeRun.objects.filter(pk=run.pk).update(snapshot={**run.snapshot, "base_url": "http://synthetic.invalid/v1"})
    judging.start(run)
    began = time.monotonic()
    run = drain(run)
    assert time.monotonic() - began < 10
    assert run.status == "failed" and "host synthetic.invalid does not resolve" in run.error
    assert run.requests_sent <= 6


def test_a_refused_connection_is_retried_then_named_as_the_cause(instrument, corpus, monkeypatch):
    with FakeOpenAI(responder=mini_cex_answer) as server:
        config = make_config(server.base_url, monkeypatch, max_attempts=2)
        run = started(config, corpus, ["1.1"])
        port = server.port
    # the pages no longer offer it...
    assert f"nothing answers at http://127.0.0.1:{port}" in gateway.endpoint_problem(config.base_url, KEY)
    run = drain(run)  # ...and the run whose server went away after it started says so
    assert run.status == "failed" and f"connection refused by 127.0.0.1:{port}" in run.error
    assert "timeout" not in run.error
    assert run.requests_sent == 3 * 2  # each unit, with its one retry


# ------------------------------------------------------------------------------------------------ spending caps
def test_a_spending_cap_pauses_the_run_and_a_higher_one_lets_it_finish(instrument, corpus, monkeypatch,
                                                                        coordinator):
    with FakeOpenAI(responder=mini_cex_answer) as server:
        config = make_config(server.base_url, monkeypatch, price_input_per_1k="0.5", price_output_per_1k="1.5",
                             currency="EUR", concurrency=1)
        run = started(config, corpus, ["1.1", "1.2", "2.1"], cost_cap=Decimal("0.0001"))
        engine.process(judging.HANDLER.kind, run.pk, limit=2)
        run = drain(run)
        assert run.status == "paused" and "Spending cap reached" in run.error and "EUR" in run.error
        assert len(server.chat_requests) == run.requests_sent == 1 and run.spent_cost >= Decimal("0.0001")
        engine.set_caps(judging.HANDLER, run, cost_cap=Decimal("10"), token_cap=None, user=coordinator,
                        action="judge_run")
        judging.start(run)
        run = drain(run)
        assert run.status == "succeeded" and len(server.chat_requests) == 9
        spend = judging.progress(run)["spend"]
        assert spend["cost_text"].endswith(" EUR") and spend["cost"] == pytest.approx(float(run.spent_cost))


def test_a_token_cap_pauses_the_run(instrument, corpus, monkeypatch):
    with FakeOpenAI(responder=mini_cex_answer) as server:
        run = started(make_config(server.base_url, monkeypatch), corpus, ["1.1", "1.2", "2.1"], token_cap=10)
        engine.process(judging.HANDLER.kind, run.pk, limit=1)
        run = drain(run)
        assert run.status == "paused" and "Token cap reached" in run.error and len(server.chat_requests) == 1


def test_the_spend_is_added_and_read_back_in_one_statement_as_the_orm_reads_it(instrument, corpus, monkeypatch,
                                                                               django_assert_num_queries):
    """The engine adds each batch's cost and tokens and reads the account back with UPDATE ... RETURNING: the row
    it gets equals the ORM's (Decimal to the field's places, not a float), and a cap reached to the last digit
    pauses the job."""
    config = make_config("http://127.0.0.1:9/v1", monkeypatch, price_input_per_1k="0.5", currency="EUR")
    run = started(config, corpus, ["1.1"], cost_cap=Decimal("0.0010"), token_cap=1000)
    with django_assert_num_queries(1):
        row = engine._add_spend(JudgeRun, run.pk, Decimal("0.000123"), 7)
    for cost, tokens in ((Decimal("0.000654"), 11), (Decimal("0.1") / 3, 0)):  # a sum a float would not keep exact
        row = engine._add_spend(JudgeRun, run.pk, cost, tokens)
    stored = JudgeRun.objects.filter(pk=run.pk).values(*engine._ACCOUNT).first()
    assert row == stored and type(row["spent_cost"]) is Decimal and type(row["cost_cap"]) is Decimal
    assert row["spent_cost"] == Decimal("0.034110") and row["spent_tokens"] == 18 and row["status"] == "running"
    assert engine._add_spend(JudgeRun, 10**9, Decimal("1"), 1) is None
    run.refresh_from_db()
    JudgeRun.objects.filter(pk=run.pk).update(spent_cost=0, spent_tokens=0)
    request = engine.Request(units=[], endpoint=None, payload={}, key="k", limit=None, timeout=1,
                             prices=(Decimal("1"), Decimal("0")), attempts=0, max_attempts=1, data=[])
    request.outcome = gateway.Outcome(ok=True, prompt_tokens=1000, completion_tokens=0)  # 1.0000 EUR, at the cap
    JudgeRun.objects.filter(pk=run.pk).update(cost_cap=Decimal("1.0000"), token_cap=None)
    run.refresh_from_db()
    assert "Spending cap reached: 1.0000 EUR spent of a cap of 1.0000 EUR" in engine.record_spend(
        judging.HANDLER, run, [request])
    run.refresh_from_db()
    assert run.status == "paused" and run.spent_cost == Decimal("1") and run.spent_tokens == 1000


def test_answers_are_stored_in_one_statement_on_open_units_only(instrument, corpus, monkeypatch,
                                                                  django_assert_num_queries):
    """The engine stores a batch of answers with one UPDATE ... FROM (VALUES ...) in both modes (Django's
    bulk_update built a CASE per field and row: nine tenths of storing answers on SQLite): every type reads back as
    the ORM wrote it, and a unit no longer open (failed, here) is left as it is."""
    from django.utils import timezone

    from scoring.judges.runs import RESULT_FIELDS

    config = make_config("http://127.0.0.1:9/v1", monkeypatch)
    run = started(config, corpus, ["1.1", "1.2"])
    units = list(JudgeResult.objects.filter(run=run).order_by("pk"))
    JudgeResult.objects.filter(pk=units[-1].pk).update(status="failed", error="gave up")
    call = LLMCall.objects.create(key="k" * 64, project=run.project, endpoint="e", model="m", request={},
                                  response={}, content="{}")
    now = timezone.now()
    values = [[3, 0.25, 0.125, 'Says "why" \u2014 \u95ee\u8bca', "done", "", call.pk, True, now],
              [2.5, None, None, "", "unscored", "The answer could not be parsed as a verdict.", None, False, now]]
    assert all(len(row) == len(RESULT_FIELDS) for row in values)
    rows = [(unit.pk, values[n % 2]) for n, unit in enumerate(units)]
    with django_assert_num_queries(1):
        engine.bulk_set(JudgeResult, rows, RESULT_FIELDS, {"claimed_by": "", "claimed_until": None},
                        only_status=["pending"])
    stored = {r.pk: r for r in JudgeResult.objects.filter(run=run)}
    for n, unit in enumerate(units[:-1]):
        got = [getattr(stored[unit.pk], name if name != "call" else "call_id") for name in RESULT_FIELDS]
        assert got == values[n % 2], (n, got)
    assert type(stored[units[0].pk].value) is int and stored[units[0].pk].claimed_by == ""
    assert (stored[units[-1].pk].status, stored[units[-1].pk].error, stored[units[-1].pk].call_id) == (
        "failed", "gave up", None)
    with django_assert_num_queries(0):
        engine.bulk_set(JudgeResult, rows, RESULT_FIELDS, only_status=[])
    with django_assert_num_queries(0), pytest.raises(ValueError, match="9 fields .* but rows of 8 values"):
        engine.bulk_set(JudgeResult, [(units[0].pk, values[0][1:])], RESULT_FIELDS)  # misaligned: stores nothing


def test_cost_without_prices_is_unknown_not_zero(instrument, corpus, monkeypatch, coordinator):
    with FakeOpenAI(responder=mini_cex_answer) as server:
        config = make_config(server.base_url, monkeypatch)
        estimate = judging.estimate(config, corpus, item_codes=["1.1"])
        assert estimate["cost"] is None and "no prices set for judge guarded judge: cost unknown" in \
            estimate["cost_text"]
        run = drain(started(config, corpus, ["1.1"]))
        spend = judging.progress(run)["spend"]
        assert spend["cost"] is None and "cost unknown" in spend["cost_text"]
        priced = make_config(server.base_url, monkeypatch, name="priced", price_input_per_1k="1")
        assert judging.estimate(priced, corpus, item_codes=["1.1"])["cost_text"].endswith(" USD")


# ------------------------------------------------------------------------------------------------ through workers
@pytest.mark.integration
def test_a_worker_that_cannot_store_answers_pauses_the_run_instead_of_resending(workers, corpus, monkeypatch):
    with FakeOpenAI(latency=0.05, responder=mini_cex_answer) as server:
        workers(concurrency=4, env={"MINICEX_TEST_FAULT": "apply"}, app="tests.fault_celery")
        run = started(make_config(server.base_url, monkeypatch), corpus, ["1.1", "1.2", "2.1", "2.2"])
        wait_until(lambda: JudgeRun.objects.get(pk=run.pk).status == "paused", 30, "the run did not pause")
        # Every request is charged before it is sent, and only while the run is running: what was charged when it
        # paused bounds what can ever reach the endpoint. Requests charged just before the pause may still be on
        # their way on a loaded machine (two arrived after it in one CI run), so wait until the endpoint is quiet.
        charged = JudgeRun.objects.get(pk=run.pk).requests_sent
        seen = -1
        deadline = time.monotonic() + 30
        while (seen != len(server.chat_requests) or server.in_flight) and time.monotonic() < deadline:
            seen = len(server.chat_requests)
            time.sleep(1.5)
        sent = len(server.chat_requests)
        time.sleep(3)
        run.refresh_from_db()
        assert len(server.chat_requests) == sent <= charged <= 12 * 3  # nothing more after the pause
        assert run.requests_sent >= sent and "Answers could not be stored" in run.error
        assert LLMCall.objects.count() == sent  # every paid answer kept


@pytest.mark.integration
def test_a_refused_key_through_a_worker_sends_at_most_the_requests_in_flight(workers, monkeypatch):
    monkeypatch.setenv(KEY, "sk-test")
    corpus = Corpus.objects.create(name="refused-cli")
    for i in range(10):
        Dialogue.objects.create(corpus=corpus, external_id=f"r{i}", self_report="Fever.",
                                turns=[{"role": "doctor", "text": f"Hello {i}"}, {"role": "patient", "text": "Hi"}])
    with FakeOpenAI(latency=0.2, responder=mini_cex_answer, require_api_key="sk-other") as server:
        workers(concurrency=4)
        err = io.StringIO()
        with pytest.raises(CommandError, match=f"paused: 401.*{KEY}"):
            call_command("run_judge", stdout=io.StringIO(), stderr=err, corpus="refused-cli", model="fake-judge",
                         base_url=server.base_url, api_key_env=KEY, items="1.1,1.2,2.1", concurrency=4, wait=True,
                         poll=0.2)
        assert len(server.chat_requests) <= 4  # the requests in flight when the first 401 came back
        run = JudgeRun.objects.get(corpus=corpus)
        assert run.status == "paused" and run.requests_sent <= 4 + 4  # charged ahead for the ready buffer at most
    # --wait exits non-zero for a run that ended without a usable answer, naming the cause
    with FakeOpenAI(latency=0.02, responder=lambda body: "Who knows.") as server:
        with pytest.raises(CommandError, match="failed: No answer could be used"):
            call_command("run_judge", stdout=io.StringIO(), stderr=io.StringIO(), corpus="refused-cli",
                         model="fake-judge", base_url=server.base_url, api_key_env=KEY, items="1.1",
                         concurrency=4, wait=True, poll=0.2)
        assert len(server.chat_requests) == 10
