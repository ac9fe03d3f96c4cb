"""A built-in fake OpenAI-compatible endpoint, to try judges, preference judging and dialogue generation without a
key or a network (in the spirit of Inspect AI's ``mockllm`` provider). Its answers are synthetic: drawn
deterministically from a hash of the request, shaped like real answers so that every job runs end to end. Never a
source of evaluation data.

``python -m config.run fake-llm [--host 127.0.0.1] [--port 8001]`` (by default ``FAKE_LLM_PORT``, else the app's
``PORT`` + 1) serves ``/v1/chat/completions`` and
``/v1/models``; ``make run`` starts it beside the app and the demo's "Built-in fake endpoint" points at it.

What it answers:

* a JSON schema in ``response_format``: an object that satisfies it (enums, integer ranges, required keys), as the
  per-dialogue judge and the preference judge ask;
* a per-item judge question: "Yes"/"No", one of the listed levels, or a point of the stated range, then a reason;
* the generation agents: the doctor asks two questions and then gives a diagnosis after the end marker named in its
  instructions; the patient answers in one sentence; the measurement reader gives results; the moderator says Yes
  or No.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DEFAULT_PORT = 8001


def default_port() -> int:
    """The port the fake endpoint listens on and the demo's endpoint points at: ``FAKE_LLM_PORT``, else the app's
    ``PORT`` + 1 (8001 beside the default 8000), so an app moved to another port brings its fake endpoint along."""
    import os

    explicit = os.environ.get("FAKE_LLM_PORT", "").strip()
    if explicit:
        return int(explicit)
    app = os.environ.get("PORT", "").strip()
    return int(app) + 1 if app.isdigit() else DEFAULT_PORT
MODEL_NAMES = ["fake-judge", "fake-doctor", "fake-patient"]

_DIAGNOSES = ["viral upper respiratory infection", "tension-type headache", "gastro-oesophageal reflux",
              "community-acquired pneumonia", "iron-deficiency anaemia", "type 2 diabetes mellitus"]
_DOCTOR_QUESTIONS = ["When did it start, and has it changed since?",
                     "Do you have any other symptoms, such as fever, pain or tiredness?",
                     "Do you take any medicines, and have you had any illnesses before?"]
_PATIENT_ANSWERS = ["It started about three days ago and has slowly got worse.",
                    "I feel tired and a bit feverish in the evenings.",
                    "I only take vitamins, and I have not been ill like this before."]
_REASONS = ["The dialogue shows it clearly.", "The doctor does this only in part.",
            "There is no sign of it in the dialogue."]


def unit(*parts: object) -> float:
    """A deterministic number in [0, 1) from the parts."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _text(body: dict) -> str:
    out = []
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, list):
            content = " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
        out.append(str(content or ""))
    return "\n".join(out)


def from_schema(schema: dict, seed: str) -> Any:
    """A value that satisfies a (strict, simple) JSON schema."""
    if "enum" in schema:
        options = schema["enum"]
        return options[int(unit(seed) * len(options)) % len(options)] if options else None
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "object":
        props = schema.get("properties") or {}
        return {name: from_schema(sub, f"{seed}/{name}") for name, sub in props.items()}
    if kind == "array":
        return [from_schema(schema.get("items") or {}, f"{seed}/0")]
    if kind in ("integer", "number"):
        low, high = schema.get("minimum", 0), schema.get("maximum", 5)
        value = low + unit(seed) * (high - low)
        return int(round(value)) if kind == "integer" else round(value * 2) / 2
    if kind == "boolean":
        return unit(seed) < 0.7
    return "Synthetic answer of the built-in fake endpoint."


def judge_answer(question: str, seed: str) -> str | None:
    """The first line a judge's per-item question asks for, then a reason; None when it is no such question."""
    reason = _REASONS[int(unit(seed, "reason") * len(_REASONS))]
    if re.search(r"Answer Yes or No", question):
        return ("Yes" if unit(seed) < 0.7 else "No") + f"\n{reason}"
    scale = re.search(r"Answer with (?:a (?:whole )?number )?from (-?\d+(?:\.\d+)?) to (-?\d+(?:\.\d+)?)", question)
    if scale:
        low, high = float(scale.group(1)), float(scale.group(2))
        value = round(low + (0.35 + 0.65 * unit(seed)) * (high - low))
        return f"{value:g}\n{reason}"
    levels = re.search(r"Answer with ((?:-?\d+ \([^)]*\)(?:, )?)+)", question)
    if levels:
        values = re.findall(r"(-?\d+) \(", levels.group(1))
        return f"{values[int(unit(seed) * len(values))]}\n{reason}"
    return None


def chat_answer(body: dict, draw: int = 0) -> str:
    """The synthetic content of a chat completion; ``draw`` > 0: another of the ``n`` answers asked for."""
    text = _text(body)
    seed = f"{body.get('model', '')}|{text}" + (f"|draw {draw}" if draw else "")
    response_format = body.get("response_format") or {}
    schema = (response_format.get("json_schema") or {}).get("schema")
    if schema:
        return json.dumps(from_schema(schema, seed))
    system = next((str(m.get("content") or "") for m in body.get("messages") or [] if m.get("role") == "system"), "")
    last = next((str(m.get("content") or "") for m in reversed(body.get("messages") or [])
                 if m.get("role") == "user"), "")
    answer = judge_answer(last, seed)
    if answer is not None:
        return answer
    if "keys are the criterion codes" in last:  # the preference judge without a schema
        listing = last[last.rfind("Criteria:"):]
        codes = re.findall(r"^- ([^\s:]+):", listing, flags=re.MULTILINE)
        return json.dumps({code: ["A", "B", "tie"][int(unit(seed, code) * 3)] for code in codes})
    if "keys are the item codes" in last:  # the per-dialogue judge without a schema: the items listed after it
        listing = last[last.find("keys are the item codes"):]
        codes = re.findall(r"^([\w.]+): ", listing, flags=re.MULTILINE)
        return json.dumps(dict.fromkeys(codes, 1))
    if "respond only with Yes or No" in system or "Are these the same?" in last:
        return "Yes" if unit(seed) < 0.6 else "No"
    if "measurement reader" in system:
        return "RESULTS: NORMAL READINGS"
    if "You are a doctor" in system:
        marker = re.search(r'write \\?"(.+?) \[diagnosis', system)
        end = marker.group(1).strip() if marker else "DIAGNOSIS READY:"
        turns = sum(1 for m in body.get("messages") or [] if m.get("role") == "assistant")
        if turns >= 2 or "final turn" in last.lower():
            diagnosis = _DIAGNOSES[int(unit(seed, "dx") * len(_DIAGNOSES))]
            return f"{end} {diagnosis}. Rest, drink enough and come back if it gets worse."
        return _DOCTOR_QUESTIONS[turns % len(_DOCTOR_QUESTIONS)]
    if "You are a patient" in system:
        turns = sum(1 for m in body.get("messages") or [] if m.get("role") == "assistant")
        return _PATIENT_ANSWERS[turns % len(_PATIENT_ANSWERS)]
    return "This is a synthetic answer of the built-in fake endpoint."


def first_token_logprobs(body: dict, content: str) -> dict:
    """``choices[0].logprobs`` for the content's first token, as an endpoint asked for ``logprobs`` returns them:
    the token given with a probability from 0.55 to 0.99 and the rest on its alternatives (the other answer of a
    Yes/No question, the neighbouring points of a score)."""
    first = content.split()[0] if content.split() else content
    confidence = 0.55 + 0.44 * unit(f"{body.get('model', '')}|{_text(body)}", "confidence")

    def entry(token: str, p: float) -> dict:
        return {"token": token, "logprob": round(math.log(p), 6), "bytes": list(token.encode())}

    if first in ("Yes", "No"):
        top = [entry(first, confidence), entry("No" if first == "Yes" else "Yes", 1.0 - confidence)]
    elif re.fullmatch(r"-?\d+", first):
        top = [entry(first, confidence), *(entry(str(int(first) + d), (1.0 - confidence) / 2) for d in (-1, 1))]
    else:
        top = [entry(first, confidence)]
    return {"content": [{**top[0], "top_logprobs": top}], "refusal": None}


def completion(body: dict) -> dict:
    draws = max(1, min(int(body.get("n") or 1), 20))
    contents = [chat_answer(body, draw) for draw in range(draws)]
    content = contents[0]
    prompt_tokens = max(1, len(_text(body)) // 4)
    completion_tokens = sum(max(1, len(text) // 4) for text in contents)
    return {"id": f"chatcmpl-fake-{hashlib.sha1(content.encode()).hexdigest()[:12]}", "object": "chat.completion",
            "created": int(time.time()), "model": body.get("model", "fake"),
            "choices": [{"index": i, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text},
                         **({"logprobs": first_token_logprobs(body, text)} if body.get("logprobs") else {})}
                        for i, text in enumerate(contents)],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
            "system_fingerprint": "fp_minicex_fake"}


class _Handler(BaseHTTPRequestHandler):
    server_version = "MiniCEXFakeLLM/1"
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args) -> None:  # quiet: one line per request would drown the app's log
        pass

    def _send(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _path(self) -> str:
        path = self.path.split("?", 1)[0].rstrip("/")
        return path[3:] if path.startswith("/v1") else path

    def do_GET(self) -> None:  # noqa: N802 (http.server's names)
        path = self._path()
        if path == "/models":
            self._send(200, {"object": "list", "data": [{"id": m, "object": "model", "owned_by": "minicex-fake"}
                                                        for m in MODEL_NAMES]})
        elif path.startswith("/models/"):
            self._send(200, {"id": path.split("/", 2)[2], "object": "model", "owned_by": "minicex-fake"})
        else:
            self._send(404, {"error": {"message": f"The fake endpoint has no {path}.", "type": "not_found"}})

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self._path() != "/chat/completions":
            self._send(404, {"error": {"message": "The fake endpoint answers /v1/chat/completions only (no Batch "
                                                  "API).", "type": "not_found"}})
            return
        try:
            body = json.loads(raw or b"{}")
            if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
                raise ValueError("messages must be a list")
        except ValueError as exc:
            self._send(400, {"error": {"message": f"Invalid request: {exc}", "type": "invalid_request_error"}})
            return
        self._send(200, completion(body))


def serve(host: str = "127.0.0.1", port: int = DEFAULT_PORT) -> ThreadingHTTPServer:
    """The server, listening (``serve_forever`` to answer); ``port`` 0 picks a free one."""
    server = ThreadingHTTPServer((host, port), _Handler)
    server.daemon_threads = True
    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m config.run fake-llm", description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=default_port())
    args = parser.parse_args(argv)
    try:
        server = serve(args.host, args.port)
    except OSError as exc:
        print(f"The fake LLM endpoint cannot listen on {args.host}:{args.port}: {exc.strerror or exc}. "
              "Give another --port.", file=sys.stderr)
        return 1
    host, port = server.server_address[:2]
    print(f"Fake LLM endpoint (synthetic answers) at http://{host}:{port}/v1 ; any key is accepted.", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
