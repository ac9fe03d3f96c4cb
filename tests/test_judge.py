"""LLM judge runs against the fake OpenAI-compatible server (real HTTP, the real openai client)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import Corpus, Dialogue, ScaleVersion
from scoring.judges import runs as judging
from scoring.judges.models import JudgeConfig, JudgeResult, JudgeRun
from scoring.llm import engine, gateway, limiter
from scoring.llm.models import LLMCall, LLMWorker


@pytest.fixture
def server(fake_llm):
    return fake_llm


@pytest.fixture
def corpus(db):
    corpus = Corpus.objects.create(name="judged")
    for i in range(3):
        Dialogue.objects.create(
            corpus=corpus, external_id=f"j{i}", self_report=f"Headache for {i + 2} days.", source_model="m",
            turns=[{"role": "doctor", "text": "Hello, how can I help you today?"},
                   {"role": "patient", "text": f"I have had a headache for {i + 2} days."},
                   {"role": "doctor", "text": "I am sorry to hear that. Any fever?"}])
    return corpus


@pytest.fixture
def make_config(server, monkeypatch):
    monkeypatch.setenv("LLM_KEY_MINICEX_TEST", "sk-test")

    def make(name="judge", mode=JudgeConfig.Mode.PER_ITEM, **extra):
        version = ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=1)
        config = JudgeConfig.objects.create(
            name=name, base_url=server.base_url, api_key_env="LLM_KEY_MINICEX_TEST", model="fake-judge", mode=mode,
            prompt_set=judging.default_prompt_set(version), timeout_seconds=2, max_attempts=3,
            price_input_per_1k="0.5", price_output_per_1k="1.5", **extra)
        limiter.reset(f"judge-{config.pk}")
        return config

    return make


def drain(run: JudgeRun, max_rounds: int = 20) -> list[str]:
    """Process every pending unit synchronously, as workers would (retries immediately)."""
    states = []
    for _ in range(max_rounds):
        run.refresh_from_db()
        pending = JudgeResult.objects.filter(run=run, status="pending")
        if not pending.exists() or run.status != JudgeRun.Status.RUNNING:
            break
        units = (pending.values_list("dialogue_id", flat=True).distinct() if run.snapshot["mode"] == "per-dialogue"
                 else pending.values_list("dialogue_id", "item_id"))
        for unit in list(units):
            dialogue_id, item_id = (unit, None) if isinstance(unit, int) else unit
            states.append(judging.process_unit(run.pk, dialogue_id, item_id).state)
    run.refresh_from_db()
    return states


def start(config, corpus, **kwargs) -> JudgeRun:
    run = judging.create_run(config, corpus, **kwargs)
    judging.start(run)
    return run


def test_default_prompts_put_the_dialogue_first_and_the_question_last(make_config, corpus):
    config = make_config()
    prompt = config.prompt_set.prompts.get(item__code="2.1")
    assert prompt.question.startswith("Item 2.1: Does the doctor show respect")
    assert "in the dialogue above?" in prompt.question and "Answer Yes or No" in prompt.question
    dialogue = corpus.dialogues.first()
    payload = judging.build_payload(judging.config_snapshot(config), config.prompt_set, dialogue,
                                    [prompt.item], {prompt.item_id: prompt.question})
    user = payload["messages"][1]["content"]
    assert user.index("Doctor: Hello") < user.index("Item 2.1") and payload["logprobs"] is True


def test_per_item_run_scores_every_unit_and_records_tokens_and_cost(make_config, corpus, server):
    run = start(make_config(), corpus, item_codes=["1.1", "2.1", "4"])
    states = drain(run)
    assert run.status == "succeeded" and states.count("done") == 9
    assert len(server.chat_requests) == 9
    results = JudgeResult.objects.filter(run=run)
    assert set(results.values_list("status", flat=True)) == {"done"}
    binary = results.filter(item__code="1.1").first()
    assert binary.value in (0, 1) and binary.p_yes is not None and 0 <= binary.p_yes <= 1
    assert (binary.value == 1) == (binary.p_yes > 0.5)
    # the judge's uncertainty from the same log-probabilities: sqrt(probability that the other answer is right)
    assert binary.uncertainty == pytest.approx(min(binary.p_yes, 1 - binary.p_yes) ** 0.5, rel=1e-9)
    assert set(results.filter(item__code="4").values_list("value", flat=True)) <= {1, 2, 3}
    # item 4 on levels 1-3: the fake weighs the neighbouring levels, so every answer has an uncertainty below 1
    assert all(0 < u < 1 for u in results.filter(item__code="4").values_list("uncertainty", flat=True))
    progress = judging.progress(run)
    assert progress["calls"] == 9 and progress["prompt_tokens"] > 0 and progress["cost"] > 0
    call = LLMCall.objects.first()
    expected = (call.prompt_tokens * 0.5 + call.completion_tokens * 1.5) / 1000
    assert float(call.cost) == pytest.approx(expected)
    assert call.response["choices"][0]["message"]["content"] == call.content


def test_per_dialogue_mode_uses_a_json_schema_with_every_item(make_config, corpus, server):
    run = start(make_config(mode=JudgeConfig.Mode.PER_DIALOGUE), corpus)
    drain(run)
    assert run.status == "succeeded" and len(server.chat_requests) == 3
    body = server.requests[0]["json"]
    schema = body["response_format"]["json_schema"]["schema"]
    assert len(schema["required"]) == 24 and schema["properties"]["4"]["enum"] == [1, 2, 3]
    assert JudgeResult.objects.filter(run=run, status="done").count() == 72


def test_a_second_run_makes_no_calls(make_config, corpus, server):
    config = make_config()
    drain(start(config, corpus, item_codes=["1.1", "1.2"]))
    server.reset()
    again = start(config, corpus, item_codes=["1.1", "1.2"])
    assert set(drain(again)) == {"cached"} and len(server.chat_requests) == 0
    assert again.status == "succeeded"
    assert judging.progress(again)["cached"] == 6 and judging.progress(again)["calls"] == 0
    first_values = dict(JudgeResult.objects.filter(run__config=config).exclude(run=again)
                        .values_list("dialogue_id", "value"))
    assert set(first_values) <= set(JudgeResult.objects.filter(run=again).values_list("dialogue_id", flat=True))


def test_unparseable_answer_is_unscored_with_the_raw_text_and_can_be_retried(make_config, corpus, server):
    run = start(make_config(), corpus, item_codes=["1.1"])
    server.inject({"malformed": True, "content": "Perhaps, it depends."})
    drain(run)
    unscored = JudgeResult.objects.get(run=run, status="unscored")
    assert unscored.value is None and unscored.rationale == "Perhaps, it depends."
    # 1 of 3 answers unusable: more than the 5 % a run may lose and still say "Finished"
    assert run.status == "problems" and "1 of 3 units failed or were unscored" in run.error
    assert "could not be parsed" in run.error
    before = len(server.chat_requests)
    judging.retry_failed(run)
    drain(run)
    unscored.refresh_from_db()
    assert unscored.status == "done" and unscored.value in (0, 1) and unscored.retry_round == 1
    assert len(server.chat_requests) == before + 1  # asked again, not answered from the cache


def test_malformed_json_in_per_dialogue_mode_is_unscored_not_zero(make_config, corpus, server):
    run = start(make_config(mode=JudgeConfig.Mode.PER_DIALOGUE), corpus)
    server.inject({"malformed": True})
    drain(run)
    assert JudgeResult.objects.filter(run=run, status="unscored").count() == 24
    assert not JudgeResult.objects.filter(run=run, status="unscored", value=0).exists()


def test_401_pauses_the_run_at_once_naming_the_key(make_config, corpus, server):
    run = start(make_config(), corpus, item_codes=["1.1", "1.2"])
    server.inject({"status": 401})
    states = drain(run)
    assert states[0] == "fatal" and run.status == "paused"
    assert "Incorrect API key provided" in run.error and "LLM_KEY_MINICEX_TEST" in run.error
    assert len(server.chat_requests) == 1  # nothing else was sent after the refusal
    assert not JudgeResult.objects.filter(run=run, status="failed").exists()  # not the units' fault: still open
    judging.start(run)  # the key is fixed: resume
    drain(run)
    assert run.status == "succeeded" and JudgeResult.objects.filter(run=run, status="done").count() == 6


def test_429_is_retried_after_retry_after_and_5xx_with_backoff(make_config, corpus, server):
    run = start(make_config(), corpus, item_codes=["1.1"])
    dialogue = corpus.dialogues.order_by("id").first()
    item_id = JudgeResult.objects.filter(run=run).first().item_id
    server.inject({"status": 429, "retry_after": 7})
    outcome = judging.process_unit(run.pk, dialogue.pk, item_id)
    assert outcome.state == "retry" and outcome.retry_in >= 7
    server.inject({"status": 503})
    outcome = judging.process_unit(run.pk, dialogue.pk, item_id)
    assert outcome.state == "retry" and 0.5 <= outcome.retry_in <= 3.0 + 1e-9
    assert judging.process_unit(run.pk, dialogue.pk, item_id).state == "done"
    result = JudgeResult.objects.get(run=run, dialogue=dialogue)
    assert result.status == "done" and result.attempts == 2


def test_timeouts_are_retried_and_give_up_after_max_attempts(make_config, corpus, server):
    run = start(make_config(), corpus, item_codes=["1.1"])
    dialogue = corpus.dialogues.order_by("id").first()
    item_id = JudgeResult.objects.filter(run=run).first().item_id
    server.inject({"timeout": 5}, {"drop": True}, {"status": 500})
    states = [judging.process_unit(run.pk, dialogue.pk, item_id).state for _ in range(3)]
    assert states == ["retry", "retry", "failed"]
    result = JudgeResult.objects.get(run=run, dialogue=dialogue)
    assert result.status == "failed" and "gave up after 3 attempts" in result.error


def test_a_claimed_unit_is_not_sent_twice_until_its_engine_is_gone(make_config, corpus, server):
    run = start(make_config(), corpus, item_codes=["1.1"])
    result = JudgeResult.objects.filter(run=run).first()
    engine.ensure_registered("other-engine")  # a live engine (its heartbeat is fresh) holds the unit
    assert [u.pk for u in engine.claim(judging.HANDLER, run, 1, "other-engine")] == [result.pk]
    busy = judging.process_unit(run.pk, result.dialogue_id, result.item_id)
    assert busy.state == "busy" and len(server.chat_requests) == 0
    LLMWorker.objects.filter(owner="other-engine").update(seen_at=timezone.now() - timedelta(minutes=1))
    engine.live_owners(fresh=True)  # its heartbeat stopped: the claim no longer counts
    assert judging.process_unit(run.pk, result.dialogue_id, result.item_id).state == "done"
    assert len(server.chat_requests) == 1


def test_concurrency_limit_is_shared(make_config, corpus, server):
    config = make_config(concurrency=2)
    name = engine.endpoint_limit(gateway.resolve_endpoint(config.base_url, config.api_key_env), {}).name
    taken = limiter.acquire_many(name, 2, 5, 30, "another-engine")
    assert len(taken) == 2 and limiter.acquire_many(name, 2, 1, 30, "another-engine") == []
    run = start(config, corpus, item_codes=["1.1"])
    result = JudgeResult.objects.filter(run=run).first()
    outcome = judging.process_unit(run.pk, result.dialogue_id, result.item_id)
    assert outcome.state == "retry" and len(server.chat_requests) == 0
    # Another judge on the same endpoint and key shares the budget (providers limit per key, not per judge).
    other = start(make_config(name="second judge", concurrency=2), corpus, item_codes=["1.1"])
    unit = JudgeResult.objects.filter(run=other).first()
    assert judging.process_unit(other.pk, unit.dialogue_id, unit.item_id).state == "retry"
    limiter.release_many(name, taken[:1])
    assert judging.process_unit(run.pk, result.dialogue_id, result.item_id).state == "done"
    assert limiter.purge_owner("another-engine") == 1 and limiter.in_use(name) == 0


def test_requests_per_minute_budget_delays_calls(make_config, corpus, server):
    config = make_config(requests_per_minute=2)
    run = start(config, corpus, item_codes=["1.1"])
    states = [judging.process_unit(run.pk, r.dialogue_id, r.item_id) for r in JudgeResult.objects.filter(run=run)]
    assert [s.state for s in states[:2]] == ["done", "done"]
    assert states[2].state == "retry" and states[2].retry_in >= 20  # one request per 30 s after the burst
    assert len(server.chat_requests) == 2


def test_pause_and_cancel(make_config, corpus, server):
    run = start(make_config(), corpus, item_codes=["1.1"])
    judging.set_status(run, JudgeRun.Status.PAUSED)
    assert drain(run) == [] and len(server.chat_requests) == 0
    judging.start(run)
    drain(run)
    assert run.status == "succeeded"
    with pytest.raises(judging.RunError):
        judging.set_status(run, JudgeRun.Status.CANCELLED)


def test_missing_endpoint_says_how_to_configure(db, settings):
    settings.OPENAI_BASE_URL = ""
    with pytest.raises(gateway.NotConfigured, match="OPENAI_BASE_URL"):
        gateway.resolve_endpoint("", "OPENAI_API_KEY")


def test_request_key_covers_every_parameter():
    base = {"model": "m", "messages": [{"role": "user", "content": "x"}], "temperature": 0}
    assert gateway.request_key("u", base) == gateway.request_key("u", dict(base))
    assert gateway.request_key("u", base) != gateway.request_key("u", {**base, "temperature": 0.5})
    assert gateway.request_key("u", base) != gateway.request_key("v", base)


@pytest.mark.parametrize(("content", "expected"), [
    ("Yes\nThe doctor asked.", 1), ("no.", 0), ("**Yes** because", 1), ("是\n原因", 1), ("否", 0),
    ("Maybe", None), ("", None), ("Yesterday the doctor", None)])
def test_strict_verdict_parse(content, expected, db):
    from annotation.models import Item

    item = Item.objects.get(version__number=1, code="1.1")
    assert judging.parse_item(content, item)[0] == expected


def test_a_prompt_template_fills_its_slots_as_plain_text(make_config, corpus, server):
    """A coordinator's template never reaches Python's format mini-language: a format spec stays literal text and
    other braces (a JSON example) stay as they are."""
    config = make_config()
    prompt_set = config.prompt_set
    prompt_set.pk, prompt_set.version = None, prompt_set.version + 100
    prompt_set.dialogue_template = 'Report: {self_report}\n{turns}\nWidth: {turns:>5000000} Example: {"a": 1}'
    prompt_set.locked_at = None
    prompt_set.save()
    text = judging.render_dialogue(prompt_set, corpus.dialogues.first())
    assert "{turns:>5000000}" in text and '{"a": 1}' in text and len(text) < 2000
    assert text.startswith("Report: Headache for")


def test_self_consistency_asks_k_answers_in_each_request(make_config, corpus, server):
    """draws = 3: one request per unit as before (the spending guard counts requests and their tokens), each asking
    for n = 3 answers at the draw temperature; the spread of the answers is the stored uncertainty (the test
    server answers the same three times: spread 0)."""
    run = start(make_config(draws=3, draw_temperature=0.7), corpus, item_codes=["1.1", "4"])
    drain(run)
    assert run.status == "succeeded" and len(server.chat_requests) == 6
    assert run.snapshot["draws"] == 3 and run.snapshot["draw_temperature"] == 0.7
    bodies = [r["json"] for r in server.requests if r["json"].get("messages")]
    assert all(b["n"] == 3 and b["temperature"] == 0.7 for b in bodies)
    assert set(JudgeResult.objects.filter(run=run).values_list("uncertainty", flat=True)) == {0.0}
