"""A fake OpenAI-compatible chat completions server for tests and benchmarks (standard library only).

Real HTTP on loopback, so the real ``openai`` client (and its retry/timeout/error handling) is exercised.

In-process::

    with FakeOpenAI(latency=0.3) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
        server.fail_next.append({"status": 429, "retry_after": 2})
        ...
        server.max_concurrency, server.requests, server.stats()

Out of process (benchmarks, Celery workers)::

    python -m tests.fake_openai --port 0 --latency 0.3      # prints the base URL once listening; SIGTERM stops it

or ``FakeOpenAIProcess(latency=0.3)`` which does the above and offers ``control()``/``stats()``/``stop()``.

Endpoints (each also without the ``/v1`` prefix):

* ``POST /v1/chat/completions``: OpenAI-shaped ``chat.completion``; answers come from ``responder(body)``.
* ``GET /v1/models`` and ``GET /v1/models/{id}``.
* The Batch API: ``POST /v1/files`` (multipart), ``GET /v1/files/{id}`` and ``/content``, ``POST /v1/batches``,
  ``GET /v1/batches/{id}``, ``POST /v1/batches/{id}/cancel``. A batch answers every line of its input file with the
  same responder after ``batch_delay`` seconds; ``batch_fail_lines`` makes chosen lines fail.
* ``POST /_control`` (JSON: any of ``latency``, ``fail_next``, ``add_faults``, ``require_api_key``, ``yes_rate``,
  ``reasons``, ``concurrency_limit``, ``reset``), ``GET /_control`` (current configuration).
* ``GET /_stats`` (counters, peak concurrency, status counts, body hashes) and ``GET /_requests`` (all records).

Faults (``fail_next`` entries, consumed one per chat request in arrival order; a responder may also return a
``Fault``): ``{"status": 429, "retry_after": 2}``, ``{"status": 500}``, ``{"status": 503}``, ``{"status": 401}``,
``{"status": 400, "message": "..."}`` (any status; optional ``message``, ``type``, ``code``, ``headers``,
``retry_after_ms``), ``{"timeout": 30}`` (hold the request that long, then close without answering),
``{"malformed": true}`` (200 with unparseable content; optional ``content``), ``{"drop": true}`` (close the
connection without answering).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = [
    "FakeOpenAI",
    "FakeOpenAIProcess",
    "Fault",
    "body_hash",
    "control",
    "default_answer",
    "fetch_requests",
    "fetch_stats",
    "messages_text",
    "scale_answer",
    "schema_answer",
]

Responder = Callable[[dict], "str | dict"]

# Headers kept in each request record (plus every x-* header).
RECORDED_HEADERS = ("authorization", "content-type", "user-agent", "idempotency-key", "openai-organization",
                    "openai-project", "accept")

FAULT_KEYS = ("status", "timeout", "malformed", "drop")
CONTROL_KEYS = ("latency", "fail_next", "add_faults", "require_api_key", "yes_rate", "reasons",
                "concurrency_limit", "reset")

_POSITIVE = {"yes", "true", "1", "met", "done", "present", "y"}

_ERRORS: dict[int, tuple[str, str, str | None]] = {
    400: ("Invalid request.", "invalid_request_error", None),
    401: ("Incorrect API key provided: sk-te***. You can find your API key at "
          "https://platform.openai.com/account/api-keys.", "invalid_request_error", "invalid_api_key"),
    403: ("You are not allowed to sample from this model.", "invalid_request_error", None),
    404: ("The model does not exist or you do not have access to it.", "invalid_request_error", "model_not_found"),
    429: ("Rate limit reached for {model} in organization org-fake on requests per min (RPM): Limit 60, Used 60, "
          "Requested 1. Please try again in {retry}s.", "rate_limit_error", "rate_limit_exceeded"),
    500: ("The server had an error while processing your request. Sorry about that!", "server_error", None),
    502: ("Bad gateway.", "server_error", None),
    503: ("The engine is currently overloaded, please try again later.", "server_error", None),
}


class Fault(dict):
    """A scripted failure. A responder may return one to fail a particular request."""


# --------------------------------------------------------------------------------------------- deterministic answers


def _unit(*parts: object) -> float:
    """A deterministic number in [0, 1) from the parts."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part.get("text", "") if isinstance(part, dict) else str(part) for part in content
        )
    return str(content)


def messages_text(body: dict) -> str:
    """All message contents of a request, one "role: text" block per message (what the answers hash)."""
    messages = body.get("messages") or []
    return "\n".join(f"{m.get('role', '')}: {_content_text(m.get('content'))}" for m in messages if isinstance(m, dict))


def _words(text: str) -> int:
    return len(text.split())


def prompt_tokens(body: dict) -> int:
    """Whitespace-split words of all message contents."""
    return sum(_words(_content_text(m.get("content"))) for m in body.get("messages") or [] if isinstance(m, dict))


def body_hash(body: Any) -> str:
    """SHA-256 of the canonical JSON of a request body."""
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _pick(options: list, u: float, yes_rate: float) -> Any:
    """Choose from an enum; a two-valued yes/no-like enum honours ``yes_rate``."""
    if not options:
        return None
    if len(options) == 2:
        positive = [o for o in options if str(o).strip().lower() in _POSITIVE]
        if len(positive) == 1:
            negative = options[1 - options.index(positive[0])]
            return positive[0] if u < yes_rate else negative
    return options[min(int(u * len(options)), len(options) - 1)]


def _resolve(schema: Any, root: dict) -> dict:
    seen = 0
    while isinstance(schema, dict) and "$ref" in schema and seen < 20:
        ref = schema["$ref"]
        target: Any = root
        if ref.startswith("#"):
            for part in [p for p in ref[1:].split("/") if p]:
                target = target.get(part.replace("~1", "/").replace("~0", "~"), {}) if isinstance(target, dict) else {}
        else:
            target = {}
        schema = target
        seen += 1
    return schema if isinstance(schema, dict) else {}


def _schema_value(schema: Any, seed: tuple, root: dict, yes_rate: float, name: str = "", depth: int = 0) -> Any:
    schema = _resolve(schema, root)
    u = _unit(*seed)
    if depth > 12:
        return None
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list):
        return _pick(schema["enum"], u, yes_rate)
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            options = [s for s in schema[key] if _resolve(s, root).get("type") != "null"] or schema[key]
            return _schema_value(options[0], seed, root, yes_rate, name, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind is None:
        kind = "object" if "properties" in schema else "string"
    if kind == "object":
        props = schema.get("properties") or {}
        required = schema.get("required")
        keys = required if isinstance(required, list) else list(props)
        return {
            key: _schema_value(props.get(key, {}), (*seed, key), root, yes_rate, key, depth + 1) for key in keys
        }
    if kind == "array":
        count = max(1, int(schema.get("minItems", 1)))
        return [
            _schema_value(schema.get("items", {}), (*seed, i), root, yes_rate, name, depth + 1) for i in range(count)
        ]
    if kind == "integer":
        low, high = schema.get("minimum"), schema.get("maximum")
        if low is None and high is None:
            return 1 if u < yes_rate else 0
        low = int(low if low is not None else high - 1)
        high = int(high if high is not None else low + 1)
        return low + min(int(u * (high - low + 1)), high - low)
    if kind == "number":
        low = float(schema.get("minimum", 0.0))
        high = float(schema.get("maximum", low + 1.0))
        return round(low + u * (high - low), 3)
    if kind == "boolean":
        return u < yes_rate
    if kind == "null":
        return None
    if name.lower() in {"verdict", "answer", "label"}:
        return "yes" if u < yes_rate else "no"
    return f"Fake {name or 'text'} {hashlib.sha256(repr(seed).encode()).hexdigest()[:6]}."


_SCALE_QUESTION = re.compile(r"Answer with a (?:whole )?number from (-?\d+) to (-?\d+)(?: in steps of ([0-9.]+))?")


def scale_answer(body: dict) -> str | None:
    """A per-item question on a scale item ("Answer with a whole number from 0 to 5 ..."): a point of that range on
    the first line and a reason, deterministic in model and messages; None for any other request."""
    last = next((m.get("content") or "" for m in reversed(body.get("messages") or []) if m.get("role") == "user"), "")
    match = _SCALE_QUESTION.search(str(last))
    if match is None or body.get("response_format"):
        return None
    low, high = int(match.group(1)), int(match.group(2))
    step = float(match.group(3) or 1)
    count = int(round((high - low) / step)) + 1
    index = min(int(_unit(body.get("model", ""), messages_text(body), "point") * count), count - 1)
    point = low + index * step
    return f"{point:g}\nThe answer meets this criterion to this degree."


def mini_cex_answer(body: dict) -> str | dict:
    """The judge's questions on any instrument: a level 1-3 when the prompt asks for item 4's levels, a point of
    the range for a scale item, else the default Yes/No (or JSON-schema) answer; deterministic like the default.
    Per-dialogue requests (a ``json_schema``) get one object with every item, each value from its enum."""
    last = next((m.get("content") or "" for m in reversed(body.get("messages") or []) if m.get("role") == "user"), "")
    if "Answer with 1 (" in str(last) and not body.get("response_format"):
        level = 1 + int(_unit(body.get("model", ""), messages_text(body), "level") * 3)
        return f"{min(level, 3)}\nThe overall performance matches this level."
    return scale_answer(body) or default_answer(body)


def schema_answer(body: dict, *, yes_rate: float = 0.5) -> dict:
    """The object the default responder returns for a ``json_schema`` request: every required property of the
    top-level object, each value chosen from a hash of (model, messages text, property name)."""
    spec = (body.get("response_format") or {}).get("json_schema") or {}
    root = spec.get("schema") or {}
    top = _resolve(root, root)
    props = top.get("properties") or {}
    required = top.get("required")
    keys = required if isinstance(required, list) else list(props)
    model, text = body.get("model", ""), messages_text(body)
    return {key: _schema_value(props.get(key, {}), (model, text, key), root, yes_rate, key) for key in keys}


def _verdict(body: dict, yes_rate: float) -> str:
    return "Yes" if _unit(body.get("model", ""), messages_text(body), "verdict") < yes_rate else "No"


def default_answer(body: dict, *, yes_rate: float = 0.5, reasons: bool = True) -> str | dict:
    """What the default responder answers (deterministic in model and messages).

    * ``response_format`` json_schema: ``schema_answer(body)`` (a dict, sent as JSON);
    * ``response_format`` json_object: ``{"verdict": "Yes"|"No", "reason": "..."}``;
    * otherwise "Yes" or "No", followed by a short reason on a new line unless ``reasons`` is false or the request
      allows fewer than 16 completion tokens.
    """
    response_format = body.get("response_format") or {}
    kind = response_format.get("type") if isinstance(response_format, dict) else None
    if kind == "json_schema":
        return schema_answer(body, yes_rate=yes_rate)
    verdict = _verdict(body, yes_rate)
    reason = (
        "The doctor does this in the dialogue."
        if verdict == "Yes"
        else "The dialogue does not show the doctor doing this."
    )
    if kind == "json_object":
        return {"verdict": verdict, "reason": reason}
    limit = body.get("max_completion_tokens") or body.get("max_tokens")
    if not reasons or (isinstance(limit, int) and limit < 16):
        return verdict
    return f"{verdict}\n{reason}"


def _malformed_content(body: dict, answer: Any, fault: dict) -> str:
    if isinstance(fault.get("content"), str):
        return fault["content"]
    response_format = body.get("response_format") or {}
    if isinstance(response_format, dict) and response_format.get("type") in {"json_schema", "json_object"}:
        obj = answer if isinstance(answer, dict) and not isinstance(answer, Fault) else schema_answer(body)
        keys = list(obj)
        if len(keys) >= 2:
            return json.dumps({keys[0]: obj[keys[0]]})[:-1] + ", " + json.dumps(keys[1]) + ":"
        text = json.dumps(obj)
        return text[: max(1, len(text) // 2)]
    return "Maybe? I am not sure."


def _logprobs(body: dict, content: str) -> dict:
    """``choices[0].logprobs`` for the first token of the content, consistent with it."""
    first = content.split()[0] if content.split() else content
    confidence = 0.55 + 0.44 * _unit(body.get("model", ""), messages_text(body), "confidence")
    chosen = math.log(confidence)

    def entry(token: str, logprob: float) -> dict:
        return {"token": token, "logprob": round(logprob, 6), "bytes": list(token.encode())}

    if first in {"Yes", "No"}:
        other = "No" if first == "Yes" else "Yes"
        top = [entry(first, chosen), entry(other, math.log(1.0 - confidence))]
    elif re.fullmatch(r"-?\d+", first):  # a score: the rest of the mass on the neighbouring scores
        rest = math.log((1.0 - confidence) / 2)
        top = [entry(first, chosen), entry(str(int(first) - 1), rest), entry(str(int(first) + 1), rest)]
    else:
        top = [entry(first, chosen)]
    return {"content": [{**entry(first, chosen), "top_logprobs": top}], "refusal": None}


def completion_payload(body: dict, content: str, completion_id: str) -> dict:
    """An OpenAI-shaped ``chat.completion`` answering ``body`` with ``content``."""
    completion_tokens = _words(content)
    usage = {"prompt_tokens": prompt_tokens(body), "completion_tokens": completion_tokens}
    usage["total_tokens"] = usage["prompt_tokens"] + completion_tokens
    logprobs = _logprobs(body, content) if body.get("logprobs") else None
    choices = [
        {"index": i, "message": {"role": "assistant", "content": content, "refusal": None},
         "finish_reason": "stop", "logprobs": logprobs}
        for i in range(max(1, int(body.get("n") or 1)))
    ]
    return {"id": completion_id, "object": "chat.completion", "created": int(time.time()), "model": body.get("model"),
            "choices": choices, "usage": usage, "system_fingerprint": "fp_fake"}


# ---------------------------------------------------------------------------------------------------- the server


def _validate_faults(faults: Any) -> list[dict]:
    if not isinstance(faults, list):
        raise ValueError("fail_next must be a list of fault objects")
    for fault in faults:
        if not isinstance(fault, dict) or not any(key in fault for key in FAULT_KEYS):
            raise ValueError(f"not a fault (needs one of {', '.join(FAULT_KEYS)}): {fault!r}")
    return [dict(fault) for fault in faults]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256  # many workers opening connections at once must not hit the listen backlog

    def __init__(self, address, handler, fake: FakeOpenAI):
        self.fake = fake
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(address, handler)

    def process_request(self, request, client_address):
        with self.connections_lock:
            self.connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request):
        with self.connections_lock:
            self.connections.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request, client_address):
        if isinstance(sys.exc_info()[1], OSError):
            return  # the client went away (timeouts, drops): not worth a traceback
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the openai client pools connections
    disable_nagle_algorithm = True  # headers and body are separate writes: no 40 ms delayed-ACK stalls
    server: _Server
    server_version = "FakeOpenAI/1.0"

    def log_message(self, format, *args):
        if self.server.fake.verbose:
            super().log_message(format, *args)

    # -------------------------------------------------------------------------------------------- plumbing

    def _route(self) -> str:
        path = self.path.split("?", 1)[0].rstrip("/") or "/"
        if path.startswith("/v1/") or path == "/v1":
            path = path[3:] or "/"
        return path

    def _read_json(self) -> tuple[Any, str | None]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None, None
        try:
            return json.loads(raw), None
        except ValueError as exc:
            return None, f"We could not parse the JSON body of your request. ({exc})"

    def _send_json(self, status: int, payload: Any, headers: dict | None = None, record: dict | None = None) -> bool:
        """Write a JSON response. A request record is finished (status, time, in-flight count) just before the
        bytes go out, so a client that has its answer always finds the record complete."""
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, str(value))
            if record is not None:
                self.server.fake._finish(record, status)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
            return True
        except OSError:
            self.close_connection = True
            if record is not None:
                self.server.fake._finish(record, "client_gone", overwrite=True)
            return False

    # -------------------------------------------------------------------------------------------- methods

    def do_GET(self):
        fake = self.server.fake
        path = self._route()
        if path == "/_stats":
            self._send_json(200, fake.stats())
        elif path == "/_requests":
            self._send_json(200, fake.request_log())
        elif path == "/_control":
            self._send_json(200, fake.config())
        elif path.startswith(("/files", "/batches")) and self._refuse_unauthorised():
            return
        elif path.startswith("/files/") and path.endswith("/content"):
            self._file_content(path[len("/files/"):-len("/content")])
        elif path.startswith("/files/"):
            self._json_or_404(fake.file_object(path[len("/files/"):]))
        elif path.startswith("/batches/"):
            self._json_or_404(fake.batch_object(path[len("/batches/"):]))
        elif path == "/models" or path.startswith("/models/"):
            record = fake._begin(self, None, count=False)
            model_id = path[len("/models/"):] if path.startswith("/models/") else None
            if model_id:
                payload = {"id": model_id, "object": "model", "created": 1700000000, "owned_by": "fake"}
            else:
                payload = {"object": "list", "data": [
                    {"id": m, "object": "model", "created": 1700000000, "owned_by": "fake"} for m in fake.models
                ]}
            self._send_json(200, payload, {"x-request-id": f"req_fake_{record['id']}"}, record)
        else:
            self._not_found()

    def do_POST(self):
        fake = self.server.fake
        path = self._route()
        if path.startswith(("/files", "/batches")) and self._refuse_unauthorised():
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            return
        if path == "/files":
            self._upload()
            return
        body, error = self._read_json()
        if path == "/batches":
            self._create_batch(body)
            return
        if path.startswith("/batches/") and path.endswith("/cancel"):
            self._json_or_404(fake.cancel_batch(path[len("/batches/"):-len("/cancel")]))
            return
        if path == "/_control":
            if error or not isinstance(body, dict):
                self._send_json(400, {"error": "JSON object expected"})
                return
            try:
                config = fake.configure(**body)
            except (TypeError, ValueError) as exc:
                self._send_json(400, {"error": str(exc)})
                return
            self._send_json(200, config)
        elif path == "/chat/completions":
            self._chat(body, error)
        else:
            self._not_found()

    # -------------------------------------------------------------------------------------------- Batch API

    def _refuse_unauthorised(self) -> bool:
        """401 (and True) when the server requires a key and the request does not carry it."""
        key = self.server.fake.require_api_key
        if key is None or self.headers.get("Authorization", "") == f"Bearer {key}":
            return False
        message = _ERRORS[401][0]
        self._send_json(401, {"error": {"message": message, "type": "invalid_request_error",
                                        "code": "invalid_api_key"}})
        return True

    def _json_or_404(self, payload: dict | None):
        if payload is None:
            self._not_found()
        else:
            self._send_json(200, payload)

    def _upload(self):
        """POST /v1/files (multipart: ``purpose`` and ``file``)."""
        import email.parser
        import email.policy

        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        header = f"Content-Type: {self.headers.get('Content-Type', '')}\r\n\r\n".encode()
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(header + raw)
        fields: dict[str, tuple[str | None, bytes]] = {}
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            fields[name] = (part.get_filename(), part.get_payload(decode=True) or b"")
        if "file" not in fields:
            self._send_json(400, {"error": {"message": "file is required", "type": "invalid_request_error"}})
            return
        purpose = fields.get("purpose", (None, b"batch"))[1].decode()
        self._send_json(200, self.server.fake.add_file(fields["file"][1], fields["file"][0] or "upload.jsonl",
                                                       purpose))

    def _file_content(self, file_id: str):
        data = self.server.fake.file_bytes(file_id)
        if data is None:
            self._not_found()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _create_batch(self, body: Any):
        fake = self.server.fake
        if not isinstance(body, dict) or fake.file_bytes(body.get("input_file_id", "")) is None:
            self._send_json(400, {"error": {"message": "input_file_id must name an uploaded file",
                                            "type": "invalid_request_error"}})
            return
        self._send_json(200, fake.create_batch(body))

    def _not_found(self):
        self._send_json(404, {"error": {"message": f"Invalid URL ({self.command} {self.path})",
                                        "type": "invalid_request_error", "param": None, "code": None}})

    # -------------------------------------------------------------------------------------------- chat

    def _chat(self, body: Any, parse_error: str | None):
        fake = self.server.fake
        record = fake._begin(self, body, count=True)
        status: int | str = "client_gone"
        try:
            status = self._chat_inner(record, body, parse_error)
        except Exception as exc:  # a broken responder: answer 500 and show the traceback
            traceback.print_exc()
            status = self._error(record, 500, {"message": f"fake server error: {exc!r}"})
        finally:
            fake._finish(record, status)

    def _client_gone(self) -> bool:
        try:
            return self.connection.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except BlockingIOError:
            return False
        except OSError:
            return True

    def _hold(self, seconds: float) -> None:
        """Sleep without answering, ending early when the server stops or the client hangs up."""
        deadline = time.monotonic() + seconds
        while not self.server.fake._stop.wait(min(0.05, max(0.0, deadline - time.monotonic()))):
            if time.monotonic() >= deadline or self._client_gone():
                return

    def _error(self, record: dict, status: int, fault: dict, model: str = "") -> int | str:
        message, kind, code = _ERRORS.get(status, ("Fake error.", "server_error" if status >= 500 else
                                                   "invalid_request_error", None))
        retry = fault.get("retry_after")
        message = fault.get("message") or message.format(model=model or "the model", retry=retry or 1)
        headers = {"x-request-id": f"req_fake_{record['id']}"}
        if retry is not None:
            headers["retry-after"] = retry
        if fault.get("retry_after_ms") is not None:
            headers["retry-after-ms"] = fault["retry_after_ms"]
        headers.update(fault.get("headers") or {})
        error = {"message": message, "type": fault.get("type", kind), "param": fault.get("param"),
                 "code": fault.get("code", code)}
        return status if self._send_json(status, {"error": error}, headers, record) else "client_gone"

    def _chat_inner(self, record: dict, body: Any, parse_error: str | None) -> int | str:
        fake = self.server.fake
        key = fake.require_api_key
        if key is not None and self.headers.get("Authorization", "") != f"Bearer {key}":
            return self._error(record, 401, {})
        if parse_error or not isinstance(body, dict):
            return self._error(record, 400, {"message": parse_error or "A JSON object body is required."})
        limit = fake.concurrency_limit
        if limit is not None and record["in_flight_at_start"] > limit:
            return self._error(record, 429, {"retry_after": 1, "message": f"Too many concurrent requests "
                                             f"(limit {limit})."}, body.get("model", ""))
        fault = fake._next_fault()
        answer: Any = None
        if fault is None:
            answer = fake.respond(body)
            if isinstance(answer, Fault):
                fault, answer = answer, None
        record["fault"] = fault
        if fake.latency and fake._stop.wait(fake.latency):
            self.close_connection = True
            return "stopped"
        model = body.get("model")
        if fault is not None:
            if fault.get("drop"):
                self.close_connection = True
                return "drop"
            if fault.get("timeout") is not None:
                self._hold(float(fault["timeout"]))
                self.close_connection = True
                return "timeout"
            if fault.get("status") is not None:
                return self._error(record, int(fault["status"]), fault, model or "")
        if not model:
            return self._error(record, 400, {"message": "you must provide a model parameter", "param": "model"})
        if not body.get("messages"):
            return self._error(record, 400, {"message": "[] is too short - 'messages'", "param": "messages"})
        if body.get("stream"):
            return self._error(record, 400, {"message": "stream=true is not supported by the fake server",
                                             "param": "stream"})
        if fault is not None and fault.get("malformed"):
            content = _malformed_content(body, fake.respond(body), fault)
        else:
            content = json.dumps(answer) if isinstance(answer, dict | list) else str(answer)
        payload = completion_payload(body, content, f"chatcmpl-fake{record['id']:06d}{record['body_hash'][:12]}")
        record["content"] = content
        record["usage"] = payload["usage"]
        headers = {"x-request-id": f"req_fake_{record['id']}",
                   "openai-processing-ms": int((time.time() - record["received"]) * 1000)}
        return 200 if self._send_json(200, payload, headers, record) else "client_gone"


class FakeOpenAI:
    """An OpenAI-compatible server on 127.0.0.1 (port 0 = a free port), configurable at runtime.

    Attributes that may be changed at any time: ``latency`` (seconds slept per chat request in its handler
    thread), ``fail_next`` (list of faults, consumed in order), ``responder`` (``body -> str | dict | Fault``),
    ``require_api_key``, ``yes_rate`` (share of "Yes" of the default responder), ``reasons``,
    ``concurrency_limit`` (answer 429 above that many chat requests in flight; None = unlimited).
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        latency: float = 0.0,
        responder: Responder | None = None,
        fail_next: list[dict] | None = None,
        require_api_key: str | None = None,
        yes_rate: float = 0.5,
        reasons: bool = True,
        concurrency_limit: int | None = None,
        models: tuple[str, ...] = ("gpt-4o-mini", "gpt-4o", "fake-judge"),
        verbose: bool = False,
    ):
        self.host, self.port = host, port
        self.latency = float(latency)
        self.responder = responder
        self.fail_next: list[dict] = _validate_faults(list(fail_next or []))
        self.require_api_key = require_api_key
        self.yes_rate = float(yes_rate)
        self.reasons = reasons
        self.concurrency_limit = concurrency_limit
        self.models = tuple(models)
        self.verbose = verbose
        self.requests: list[dict] = []
        self.in_flight = 0
        self.max_concurrency = 0
        self._seq = 0
        self.files: dict[str, dict] = {}
        self.batches: dict[str, dict] = {}
        self.batch_requests: list[dict] = []
        self.batch_delay = 0.2
        self.batch_fail_lines: list[dict] = []
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------------------------------ lifecycle

    def start(self) -> FakeOpenAI:
        if self._httpd is not None:
            return self
        self._stop.clear()
        self._httpd = _Server((self.host, self.port), _Handler, self)
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.1},
                                        name=f"fake-openai-{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stop.set()  # wakes handlers sleeping on latency or a timeout fault
        httpd.shutdown()
        with httpd.connections_lock:
            connections = list(httpd.connections)
        for conn in connections:  # end idle keep-alive connections so their threads exit
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    # ------------------------------------------------------------------------------------------ configuration

    def configure(self, **options: Any) -> dict:
        """Change settings (the /_control endpoint calls this). ``reset=True`` first clears records and faults;
        ``fail_next`` replaces the pending faults, ``add_faults`` appends to them."""
        unknown = set(options) - set(CONTROL_KEYS)
        if unknown:
            raise ValueError(f"unknown option(s): {', '.join(sorted(unknown))}; known: {', '.join(CONTROL_KEYS)}")
        with self._lock:
            if options.get("reset"):
                self.reset()
            if "latency" in options:
                self.latency = float(options["latency"] or 0)
            if "fail_next" in options:
                self.fail_next = _validate_faults(options["fail_next"] or [])
            if "add_faults" in options:
                self.fail_next.extend(_validate_faults(options["add_faults"] or []))
            if "require_api_key" in options:
                self.require_api_key = options["require_api_key"] or None
            if "yes_rate" in options:
                self.yes_rate = float(options["yes_rate"])
            if "reasons" in options:
                self.reasons = bool(options["reasons"])
            if "concurrency_limit" in options:
                limit = options["concurrency_limit"]
                self.concurrency_limit = int(limit) if limit else None
            return self.config()

    def config(self) -> dict:
        with self._lock:
            return {
                "base_url": self.base_url,
                "latency": self.latency,
                "fail_next": [dict(f) for f in self.fail_next],
                "require_api_key": bool(self.require_api_key),
                "yes_rate": self.yes_rate,
                "reasons": self.reasons,
                "concurrency_limit": self.concurrency_limit,
                "custom_responder": self.responder is not None,
            }

    def inject(self, *faults: dict) -> None:
        """Append faults to ``fail_next``."""
        with self._lock:
            self.fail_next.extend(_validate_faults(list(faults)))

    def reset(self) -> None:
        """Forget recorded requests, counters and pending faults (settings stay)."""
        with self._lock:
            self.requests.clear()
            self.fail_next.clear()
            self.max_concurrency = self.in_flight

    def respond(self, body: dict) -> str | dict:
        if self.responder is not None:
            return self.responder(body)
        return default_answer(body, yes_rate=self.yes_rate, reasons=self.reasons)

    # ------------------------------------------------------------------------------------------ Batch API

    def add_file(self, data: bytes, filename: str, purpose: str) -> dict:
        with self._lock:
            file_id = f"file-fake{len(self.files) + 1:04d}"
            self.files[file_id] = {"id": file_id, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                                   "filename": filename, "purpose": purpose, "data": data}
            return self.file_object(file_id)

    def file_object(self, file_id: str) -> dict | None:
        with self._lock:
            entry = self.files.get(file_id)
            return None if entry is None else {k: v for k, v in entry.items() if k != "data"}

    def file_bytes(self, file_id: str) -> bytes | None:
        with self._lock:
            entry = self.files.get(file_id)
            return None if entry is None else entry["data"]

    def create_batch(self, body: dict) -> dict:
        """A batch answers every line of its input file after ``batch_delay`` seconds (in a thread); lines whose
        index is in ``batch_fail_lines`` (dicts with ``line`` and ``status``) fail with that status."""
        with self._lock:
            batch_id = f"batch_fake{len(self.batches) + 1:04d}"
            now = int(time.time())
            self.batches[batch_id] = {
                "id": batch_id, "object": "batch", "endpoint": body.get("endpoint", "/v1/chat/completions"),
                "errors": None, "input_file_id": body["input_file_id"],
                "completion_window": body.get("completion_window", "24h"), "status": "validating",
                "output_file_id": None, "error_file_id": None, "created_at": now, "in_progress_at": None,
                "expires_at": now + 86400, "finalizing_at": None, "completed_at": None, "failed_at": None,
                "expired_at": None, "cancelling_at": None, "cancelled_at": None,
                "request_counts": {"total": 0, "completed": 0, "failed": 0}, "metadata": body.get("metadata") or {}}
            batch = dict(self.batches[batch_id])
        threading.Thread(target=self._run_batch, args=(batch_id,), daemon=True).start()
        return batch

    def _run_batch(self, batch_id: str) -> None:
        if self._stop.wait(self.batch_delay):
            return
        with self._lock:
            batch = self.batches[batch_id]
            if batch["status"] in ("cancelling", "cancelled"):
                batch.update(status="cancelled", cancelled_at=int(time.time()))
                return
            batch.update(status="in_progress", in_progress_at=int(time.time()))
            lines = [json.loads(line) for line in self.files[batch["input_file_id"]]["data"].decode().splitlines()
                     if line.strip()]
            failing = {int(f["line"]): int(f.get("status", 500)) for f in self.batch_fail_lines}
        out, errors = [], []
        for index, line in enumerate(lines):
            body = line.get("body") or {}
            with self._lock:
                self.batch_requests.append(body)
            request_id = f"batch_req_{batch_id}_{index}"
            if index in failing:
                status = failing[index]
                message, kind, code = _ERRORS.get(status, ("Fake error.", "server_error", None))
                errors.append({"id": request_id, "custom_id": line.get("custom_id"), "error": None,
                               "response": {"status_code": status, "request_id": request_id,
                                            "body": {"error": {"message": message.format(model=body.get("model"),
                                                                                         retry=1),
                                                               "type": kind, "code": code}}}})
                continue
            answer = self.respond(body)
            content = json.dumps(answer) if isinstance(answer, dict | list) else str(answer)
            out.append({"id": request_id, "custom_id": line.get("custom_id"), "error": None,
                        "response": {"status_code": 200, "request_id": request_id,
                                     "body": completion_payload(body, content, f"chatcmpl-{request_id}")}})
        with self._lock:
            batch = self.batches[batch_id]
            now = int(time.time())
            if out:
                batch["output_file_id"] = self.add_file("\n".join(json.dumps(o) for o in out).encode(),
                                                        f"{batch_id}_output.jsonl", "batch_output")["id"]
            if errors:
                batch["error_file_id"] = self.add_file("\n".join(json.dumps(e) for e in errors).encode(),
                                                       f"{batch_id}_error.jsonl", "batch_output")["id"]
            batch.update(status="completed", finalizing_at=now, completed_at=now,
                         request_counts={"total": len(lines), "completed": len(out), "failed": len(errors)})

    def batch_object(self, batch_id: str) -> dict | None:
        with self._lock:
            batch = self.batches.get(batch_id)
            return None if batch is None else dict(batch)

    def cancel_batch(self, batch_id: str) -> dict | None:
        with self._lock:
            batch = self.batches.get(batch_id)
            if batch is None:
                return None
            if batch["status"] in ("validating", "in_progress"):
                batch.update(status="cancelling", cancelling_at=int(time.time()))
            return dict(batch)

    # ------------------------------------------------------------------------------------------ records

    def _next_fault(self) -> dict | None:
        with self._lock:
            return self.fail_next.pop(0) if self.fail_next else None

    def _begin(self, handler: _Handler, body: Any, *, count: bool) -> dict:
        headers = {
            key.lower(): value
            for key, value in handler.headers.items()
            if key.lower() in RECORDED_HEADERS or key.lower().startswith("x-")
        }
        with self._lock:
            self._seq += 1
            if count:
                self.in_flight += 1
                self.max_concurrency = max(self.max_concurrency, self.in_flight)
            record = {
                "id": self._seq,
                "method": handler.command,
                "path": handler.path,
                "headers": headers,
                "json": body,
                "body_hash": body_hash(body),
                "received": time.time(),
                "answered": None,
                "status": None,
                "fault": None,
                "content": None,
                "usage": None,
                "in_flight_at_start": self.in_flight,
                "counted": count,
            }
            self.requests.append(record)
        return record

    def _finish(self, record: dict, status: int | str, *, overwrite: bool = False) -> None:
        """Mark a request answered (once; ``overwrite`` only corrects the status)."""
        with self._lock:
            if record["answered"] is None:
                if record["counted"]:
                    self.in_flight -= 1
                record["status"] = status
                record["answered"] = time.time()
            elif overwrite:
                record["status"] = status

    @property
    def chat_requests(self) -> list[dict]:
        with self._lock:
            return [r for r in self.requests if r["path"].split("?")[0].rstrip("/").endswith("/chat/completions")]

    @property
    def request_count(self) -> int:
        return len(self.chat_requests)

    @property
    def status_counts(self) -> dict[str, int]:
        with self._lock:
            return dict(Counter(str(r["status"] or "pending") for r in self.chat_requests))

    def request_log(self) -> list[dict]:
        with self._lock:
            return [dict(r) for r in self.requests]

    def stats(self) -> dict:
        """Counters for chat requests (also served as GET /_stats)."""
        with self._lock:
            chats = self.chat_requests
            hashes = [r["body_hash"] for r in chats]
            repeated = sorted(h for h, n in Counter(hashes).items() if n > 1)
            usage = [r["usage"] for r in chats if r["usage"]]
            return {
                "requests": len(chats),
                "all_requests": len(self.requests),
                "in_flight": self.in_flight,
                "max_concurrency": self.max_concurrency,
                "status_counts": dict(Counter(str(r["status"] or "pending") for r in chats)),
                "body_hashes": hashes,
                "repeated_hashes": repeated,
                "prompt_tokens": sum(u["prompt_tokens"] for u in usage),
                "completion_tokens": sum(u["completion_tokens"] for u in usage),
                "first_received": min((r["received"] for r in chats), default=None),
                "last_answered": max((r["answered"] for r in chats if r["answered"]), default=None),
                "fail_next_remaining": len(self.fail_next),
                "latency": self.latency,
            }


# ---------------------------------------------------------------------------------- out-of-process helpers

_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never through a proxy


def _root(base_url: str) -> str:
    url = base_url.rstrip("/")
    return url[:-3] if url.endswith("/v1") else url


def _http_json(url: str, payload: Any = None, timeout: float = 5.0) -> Any:
    data = None if payload is None else json.dumps(payload).encode()
    request = urllib.request.Request(url, data=data, method="GET" if data is None else "POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            return json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        raise ValueError(f"{url}: HTTP {exc.code}: {exc.read().decode(errors='replace')}") from exc


def control(base_url: str, **options: Any) -> dict:
    """Reconfigure a (possibly out-of-process) fake server through POST /_control; returns its configuration."""
    return _http_json(f"{_root(base_url)}/_control", options)


def fetch_stats(base_url: str) -> dict:
    return _http_json(f"{_root(base_url)}/_stats")


def fetch_requests(base_url: str) -> list[dict]:
    return _http_json(f"{_root(base_url)}/_requests")


class FakeOpenAIProcess:
    """Runs ``python -m tests.fake_openai`` in a child process (reachable from other processes, e.g. Celery
    workers and benchmarks). The child also exits when this process dies (its stdin closes)."""

    def __init__(self, *, port: int = 0, latency: float = 0.0, require_api_key: str | None = None,
                 yes_rate: float = 0.5, extra_args: tuple[str, ...] = (), startup_timeout: float = 10.0):
        self.args = [sys.executable, "-m", "tests.fake_openai", "--port", str(port), "--latency", str(latency),
                     "--yes-rate", str(yes_rate), "--exit-on-stdin-eof", *extra_args]
        if require_api_key:
            self.args += ["--require-api-key", require_api_key]
        self.startup_timeout = startup_timeout
        self.proc: subprocess.Popen | None = None
        self.base_url = ""

    def start(self) -> FakeOpenAIProcess:
        self.proc = subprocess.Popen(self.args, cwd=Path(__file__).resolve().parent.parent, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        line: list[str] = []
        reader = threading.Thread(target=lambda: line.append(self.proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(self.startup_timeout)
        if not line or not line[0].startswith("http"):
            self.stop()
            raise RuntimeError(f"fake OpenAI server did not start: {line!r}")
        self.base_url = line[0].strip()
        return self

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def control(self, **options: Any) -> dict:
        return control(self.base_url, **options)

    def stats(self) -> dict:
        return fetch_stats(self.base_url)

    def requests(self) -> list[dict]:
        return fetch_requests(self.base_url)

    def stop(self, timeout: float = 5.0) -> int | None:
        proc, self.proc = self.proc, None
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout)
        for stream in (proc.stdin, proc.stdout):
            if stream:
                stream.close()
        return proc.returncode

    def __enter__(self) -> FakeOpenAIProcess:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fake OpenAI-compatible server (prints its base URL).")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 = a free port")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per chat request")
    parser.add_argument("--require-api-key", default=None)
    parser.add_argument("--yes-rate", type=float, default=0.5)
    parser.add_argument("--no-reasons", action="store_true", help="answer a bare Yes/No")
    parser.add_argument("--concurrency-limit", type=int, default=None)
    parser.add_argument("--fail-next", default=None, help="JSON list of faults")
    parser.add_argument("--exit-on-stdin-eof", action="store_true", help="stop when stdin closes (parent died)")
    parser.add_argument("--verbose", action="store_true", help="log requests on stderr")
    parser.add_argument("--mini-cex", action="store_true", help="answer item 4's level questions with 1-3")
    args = parser.parse_args(argv)

    server = FakeOpenAI(host=args.host, port=args.port, latency=args.latency, require_api_key=args.require_api_key,
                        yes_rate=args.yes_rate, reasons=not args.no_reasons,
                        concurrency_limit=args.concurrency_limit,
                        fail_next=json.loads(args.fail_next) if args.fail_next else None, verbose=args.verbose,
                        responder=mini_cex_answer if args.mini_cex else None)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    server.start()
    print(server.base_url, flush=True)
    if args.exit_on_stdin_eof:
        threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    while not stop.wait(0.5):
        pass
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
