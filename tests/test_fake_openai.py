"""Self-test of the fake OpenAI-compatible server, driven by the real ``openai`` client over loopback HTTP.

No database needed."""

from __future__ import annotations

import json
import math
import signal
import threading
import time

import pytest

from tests.fake_openai import (
    FakeOpenAI,
    FakeOpenAIProcess,
    Fault,
    control,
    default_answer,
    fetch_stats,
    schema_answer,
)
from tests.lazy import lazy

openai = lazy("openai")

MODEL = "fake-judge"

SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["1.1", "1.2", "2.1"],
    "properties": {
        "1.1": {"type": "integer", "enum": [0, 1]},
        "1.2": {
            "type": "object",
            "additionalProperties": False,
            "required": ["verdict", "rationale"],
            "properties": {
                "verdict": {"type": "string", "enum": ["yes", "no", "not_applicable"]},
                "rationale": {"type": "string"},
            },
        },
        "2.1": {"$ref": "#/$defs/item"},
    },
    "$defs": {
        "item": {
            "type": "object",
            "required": ["verdict", "evidence"],
            "properties": {"verdict": {"type": "integer", "enum": [0, 1]}, "evidence": {"type": "string"}},
        }
    },
}
RESPONSE_FORMAT = {"type": "json_schema", "json_schema": {"name": "mini_cex", "strict": True, "schema": SCHEMA}}


def messages(dialogue: str = "Doctor: Hello, what brings you in?\nPatient: A cough for two weeks.") -> list[dict]:
    return [
        {"role": "system", "content": "You rate doctor-patient dialogues."},
        {"role": "user", "content": f"{dialogue}\n\nDoes the doctor greet the patient? Answer Yes or No."},
    ]


@pytest.fixture
def server():
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture
def client(server):
    with openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0, timeout=2) as c:
        yield c


def test_chat_completion_is_openai_shaped_and_deterministic(server, client):
    first = client.chat.completions.create(model=MODEL, messages=messages(), temperature=0)
    second = client.chat.completions.create(model=MODEL, messages=messages(), temperature=0)

    assert first.object == "chat.completion"
    assert first.model == MODEL
    choice = first.choices[0]
    assert choice.index == 0 and choice.finish_reason == "stop" and choice.message.role == "assistant"
    assert choice.message.content == second.choices[0].message.content
    verdict, _, reason = choice.message.content.partition("\n")
    assert verdict in {"Yes", "No"} and reason
    expected = default_answer({"model": MODEL, "messages": messages()})
    assert choice.message.content == expected
    words = sum(len(m["content"].split()) for m in messages())
    assert first.usage.prompt_tokens == words
    assert first.usage.completion_tokens == len(choice.message.content.split())
    assert first.usage.total_tokens == words + first.usage.completion_tokens

    # Different dialogues get different answers; a tight token budget gets the bare verdict.
    answers = {
        client.chat.completions.create(model=MODEL, messages=messages(f"Doctor: case {i}")).choices[0].message.content
        for i in range(12)
    }
    assert {a.split("\n")[0] for a in answers} == {"Yes", "No"}
    short = client.chat.completions.create(model=MODEL, messages=messages(), max_tokens=1)
    assert short.choices[0].message.content == verdict

    assert server.request_count == 15
    record = server.requests[0]
    assert record["path"] == "/v1/chat/completions" and record["status"] == 200
    assert record["headers"]["authorization"] == "Bearer sk-test"
    assert record["json"]["messages"] == messages()
    assert record["received"] <= record["answered"]
    assert server.stats()["repeated_hashes"] == [record["body_hash"]]


def test_path_without_v1_and_models(server):
    with openai.OpenAI(base_url=server.url, api_key="sk-test", max_retries=0, timeout=2) as bare:
        reply = bare.chat.completions.create(model=MODEL, messages=messages())
    assert reply.choices[0].message.content.split("\n")[0] in {"Yes", "No"}
    with openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0, timeout=2) as c:
        assert MODEL in [m.id for m in c.models.list()]
    assert server.request_count == 1  # the models call is recorded but is not a chat request
    assert len(server.requests) == 2


def test_json_schema_answer_has_every_required_property(client):
    reply = client.chat.completions.create(model=MODEL, messages=messages(), response_format=RESPONSE_FORMAT)
    data = json.loads(reply.choices[0].message.content)
    assert set(data) == {"1.1", "1.2", "2.1"}
    assert data["1.1"] in (0, 1)
    assert data["1.2"]["verdict"] in {"yes", "no", "not_applicable"}
    assert isinstance(data["1.2"]["rationale"], str) and data["1.2"]["rationale"]
    assert data["2.1"]["verdict"] in (0, 1) and isinstance(data["2.1"]["evidence"], str)
    again = client.chat.completions.create(model=MODEL, messages=messages(), response_format=RESPONSE_FORMAT)
    assert json.loads(again.choices[0].message.content) == data
    assert data == schema_answer({"model": MODEL, "messages": messages(), "response_format": RESPONSE_FORMAT})

    bodies = [{"model": MODEL, "messages": messages(f"case {i}"), "response_format": RESPONSE_FORMAT} for i in range(9)]
    seen = {json.dumps(schema_answer(body)) for body in bodies}
    assert len(seen) > 1  # different dialogues, different answers


def test_logprobs_consistent_with_the_answer(client):
    reply = client.chat.completions.create(
        model=MODEL, messages=messages(), logprobs=True, top_logprobs=2, max_tokens=1
    )
    content = reply.choices[0].message.content
    first = reply.choices[0].logprobs.content[0]
    assert first.token == content
    top = {t.token: t.logprob for t in first.top_logprobs}
    assert set(top) == {"Yes", "No"}
    assert math.isclose(math.exp(top["Yes"]) + math.exp(top["No"]), 1.0, abs_tol=1e-4)
    assert top[content] == first.logprob and top[content] > top["No" if content == "Yes" else "Yes"]
    plain = client.chat.completions.create(model=MODEL, messages=messages())
    assert plain.choices[0].logprobs is None


def test_rate_limit_with_retry_after(server, client):
    server.fail_next.append({"status": 429, "retry_after": 2})
    with pytest.raises(openai.RateLimitError) as excinfo:
        client.chat.completions.create(model=MODEL, messages=messages())
    err = excinfo.value
    assert err.response.headers["retry-after"] == "2"
    assert err.code == "rate_limit_exceeded" and err.type == "rate_limit_error"
    assert "Rate limit reached" in err.message
    client.chat.completions.create(model=MODEL, messages=messages())  # the fault was consumed
    assert server.status_counts == {"429": 1, "200": 1}


@pytest.mark.parametrize("status", [500, 503])
def test_server_errors(server, client, status):
    server.inject({"status": status})
    with pytest.raises(openai.InternalServerError) as excinfo:
        client.chat.completions.create(model=MODEL, messages=messages())
    assert excinfo.value.status_code == status


def test_faults_are_consumed_in_order(server, client):
    server.fail_next = [{"status": 429, "retry_after": 1}, {"status": 500}]
    kinds = []
    for _ in range(3):
        try:
            client.chat.completions.create(model=MODEL, messages=messages())
            kinds.append("ok")
        except openai.APIStatusError as exc:
            kinds.append(exc.status_code)
    assert kinds == [429, 500, "ok"]


def test_authentication_and_bad_request_errors(server, client):
    server.inject({"status": 401})
    with pytest.raises(openai.AuthenticationError) as excinfo:
        client.chat.completions.create(model=MODEL, messages=messages())
    assert "Incorrect API key provided" in str(excinfo.value) and excinfo.value.code == "invalid_api_key"

    server.inject({"status": 400, "message": "max_tokens is too large"})
    with pytest.raises(openai.BadRequestError, match="max_tokens is too large"):
        client.chat.completions.create(model=MODEL, messages=messages())

    server.require_api_key = "sk-right"
    with pytest.raises(openai.AuthenticationError):
        client.chat.completions.create(model=MODEL, messages=messages())
    with openai.OpenAI(base_url=server.base_url, api_key="sk-right", max_retries=0, timeout=2) as right:
        assert right.chat.completions.create(model=MODEL, messages=messages()).choices


def test_timeout(server, client):
    server.inject({"timeout": 5})
    started = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        client.with_options(timeout=0.3).chat.completions.create(model=MODEL, messages=messages())
    assert time.monotonic() - started < 1.0
    assert client.chat.completions.create(model=MODEL, messages=messages()).choices
    deadline = time.monotonic() + 1
    while server.in_flight and time.monotonic() < deadline:  # the held request ends when the client hangs up
        time.sleep(0.02)
    assert server.in_flight == 0
    assert server.status_counts == {"timeout": 1, "200": 1}


def test_malformed_content(server, client):
    server.inject({"malformed": True}, {"malformed": True})
    text = client.chat.completions.create(model=MODEL, messages=messages())
    assert text.choices[0].message.content == "Maybe? I am not sure."
    structured = client.chat.completions.create(model=MODEL, messages=messages(), response_format=RESPONSE_FORMAT)
    content = structured.choices[0].message.content
    assert content.startswith('{"1.1": ')
    with pytest.raises(json.JSONDecodeError):
        json.loads(content)


def test_dropped_connection(server, client):
    server.inject({"drop": True})
    with pytest.raises(openai.APIConnectionError) as excinfo:
        client.chat.completions.create(model=MODEL, messages=messages())
    assert not isinstance(excinfo.value, openai.APITimeoutError)
    assert client.chat.completions.create(model=MODEL, messages=messages()).choices
    assert server.status_counts == {"drop": 1, "200": 1}


def test_custom_responder(server, client):
    def responder(body):
        text = body["messages"][-1]["content"]
        if "fail me" in text:
            return Fault(status=503)
        if body.get("response_format"):
            return {"1.1": 1}
        return "Yes"

    server.responder = responder
    assert client.chat.completions.create(model=MODEL, messages=messages()).choices[0].message.content == "Yes"
    structured = client.chat.completions.create(model=MODEL, messages=messages(), response_format=RESPONSE_FORMAT)
    assert json.loads(structured.choices[0].message.content) == {"1.1": 1}
    with pytest.raises(openai.InternalServerError):
        client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "please fail me"}])


def test_responder_error_becomes_500(server, client):
    server.responder = lambda body: 1 / 0
    with pytest.raises(openai.InternalServerError, match="ZeroDivisionError"):
        client.chat.completions.create(model=MODEL, messages=messages())


def test_sequential_calls_are_fast(client):
    """Keep-alive without Nagle/delayed-ACK stalls: a call costs a few ms, not 40."""
    client.chat.completions.create(model=MODEL, messages=messages())
    started = time.monotonic()
    for i in range(20):
        client.chat.completions.create(model=MODEL, messages=messages(f"case {i}"))
    assert time.monotonic() - started < 0.5


def test_concurrency_is_real(server, client):
    server.latency = 0.3
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def call(i: int) -> None:
        barrier.wait()
        try:
            client.chat.completions.create(model=MODEL, messages=messages(f"Doctor: patient {i}"))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(8)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    elapsed = time.monotonic() - started
    assert not errors
    # all eight were held by the server at once; the time only has to beat one after another (8 x 0.3 s), with room
    # for a loaded machine
    assert server.max_concurrency == 8
    assert 0.3 <= elapsed < 8 * 0.3, elapsed
    assert server.in_flight == 0
    stats = server.stats()
    assert stats["requests"] == 8 and stats["repeated_hashes"] == []

    server.reset()
    assert server.requests == [] and server.max_concurrency == 0


def test_concurrency_limit_answers_429(server, client):
    server.latency = 0.2
    server.concurrency_limit = 1
    results: list[object] = []

    def call() -> None:
        try:
            results.append(client.chat.completions.create(model=MODEL, messages=messages()).object)
        except openai.RateLimitError as exc:
            results.append(exc.status_code)

    threads = [threading.Thread(target=call) for _ in range(2)]
    for t in threads:
        t.start()
        time.sleep(0.05)
    for t in threads:
        t.join(2)
    assert sorted(results, key=str) == [429, "chat.completion"]


def test_http_control_and_stats(server, client):
    config = control(server.base_url, latency=0.05, fail_next=[{"status": 500}], yes_rate=1.0)
    assert config["latency"] == 0.05 and config["fail_next"] == [{"status": 500}]
    with pytest.raises(openai.InternalServerError):
        client.chat.completions.create(model=MODEL, messages=messages())
    for i in range(3):
        reply = client.chat.completions.create(model=MODEL, messages=messages(f"case {i}"))
        assert reply.choices[0].message.content.startswith("Yes")
    stats = fetch_stats(server.base_url)
    assert stats["requests"] == 4 and stats["status_counts"] == {"500": 1, "200": 3}
    assert stats["max_concurrency"] == 1 and len(set(stats["body_hashes"])) == 4
    with pytest.raises(ValueError, match="unknown option"):
        control(server.base_url, latenzy=1)
    with pytest.raises(ValueError, match="not a fault"):
        control(server.base_url, fail_next=[{"status_code": 500}])
    control(server.base_url, reset=True, latency=0)
    assert fetch_stats(server.base_url)["requests"] == 0


def test_separate_process_starts_answers_reconfigures_and_stops():
    fake = FakeOpenAIProcess(latency=0.05).start()
    try:
        assert fake.base_url.startswith("http://127.0.0.1:") and fake.base_url.endswith("/v1")
        with openai.OpenAI(base_url=fake.base_url, api_key="sk-test", max_retries=0, timeout=2) as c:
            content = c.chat.completions.create(model=MODEL, messages=messages()).choices[0].message.content
            assert content == default_answer({"model": MODEL, "messages": messages()})
            assert fake.control(fail_next=[{"status": 429, "retry_after": 3}])["fail_next"]
            with pytest.raises(openai.RateLimitError) as excinfo:
                c.chat.completions.create(model=MODEL, messages=messages())
            assert excinfo.value.response.headers["retry-after"] == "3"
        stats = fake.stats()
        assert stats["requests"] == 2 and stats["status_counts"] == {"200": 1, "429": 1}
        assert stats["latency"] == 0.05
        proc = fake.proc
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(2) == 0
    finally:
        fake.stop()
