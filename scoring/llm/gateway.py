"""The LLM gateway: one place that talks to OpenAI-compatible endpoints (OpenAI, Azure, vLLM, Ollama).

It resolves the endpoint and key of a judge configuration, sends one chat completion with the real ``openai``
client (its own retries off: retries are scheduled by Celery, never slept in a worker), and sorts failures into
retryable (429, 5xx, timeouts, dropped connections) and fatal (400, 401, 403, 404: the provider's message is
shown on the run).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.conf import settings

from scoring.llm.keys import is_allowed, refusal, sanitize_error

_clients: dict[tuple[str, str, float], Any] = {}
_clients_lock = threading.Lock()


class NotConfigured(Exception):
    """No endpoint is configured; the message says how to configure one."""


@dataclass
class Endpoint:
    base_url: str
    api_key: str
    key_source: str


@dataclass
class Outcome:
    ok: bool
    content: str = ""
    response: dict | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: int = 0
    retryable: bool = False
    retry_after: float | None = None
    error: str = ""
    status: int | None = None
    extra: dict = field(default_factory=dict)

    def __post_init__(self):
        self.error = sanitize_error(self.error)  # stored on runs and shown on pages: short, no headers or keys


HOW_TO_CONFIGURE = (
    "No LLM endpoint is configured. Set OPENAI_BASE_URL (e.g. https://api.openai.com/v1, an Azure OpenAI "
    "deployment URL, http://localhost:8000/v1 for vLLM or http://localhost:11434/v1 for Ollama) and put the key in "
    "OPENAI_API_KEY (or the variable named in the judge configuration), or give the configuration its own base URL."
)


def resolve_endpoint(base_url: str, api_key_env: str) -> Endpoint:
    url = (base_url or settings.OPENAI_BASE_URL or "").strip().rstrip("/")
    if not url:
        raise NotConfigured(HOW_TO_CONFIGURE)
    env = (api_key_env or "OPENAI_API_KEY").strip()
    if not is_allowed(env):  # checked again here: a name that slipped past a form never sends its value out
        raise NotConfigured(refusal(env))
    key = os.environ.get(env, "").strip()
    if not key and env == "OPENAI_API_KEY":
        key = settings.OPENAI_API_KEY
    # Local servers (vLLM, Ollama) accept any key; a missing key is reported by the provider as 401 if it matters.
    return Endpoint(base_url=url, api_key=key or "not-set", key_source=env)


def request_key(endpoint: str, payload: dict) -> str:
    """Hash of endpoint, model, messages and every parameter: identical requests share one cached answer."""
    canonical = json.dumps({"endpoint": endpoint, **payload}, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def _client(endpoint: Endpoint, timeout: float):
    import openai

    cache_key = (endpoint.base_url, endpoint.api_key, timeout)
    with _clients_lock:
        client = _clients.get(cache_key)
        if client is None:
            client = openai.OpenAI(base_url=endpoint.base_url, api_key=endpoint.api_key, max_retries=0,
                                   timeout=timeout)
            _clients[cache_key] = client
        return client


def _retry_after(headers) -> float | None:
    if headers is None:
        return None
    for name in ("retry-after-ms", "retry-after"):
        raw = headers.get(name)
        if raw:
            try:
                value = float(raw)
            except ValueError:
                continue
            return value / 1000 if name.endswith("-ms") else value
    return None


def _message(exc) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
    return str(exc)


def complete(endpoint: Endpoint, payload: dict, timeout: float) -> Outcome:
    """Send one chat completion; never raises for provider or network failures."""
    import openai

    started = time.monotonic()
    try:
        # The raw response skips building pydantic models: the JSON is all we store, and it is cheaper on CPU.
        raw = _client(endpoint, timeout).chat.completions.with_raw_response.create(**payload)
    except openai.APITimeoutError as exc:
        return Outcome(ok=False, retryable=True, error=f"timeout after {timeout:g} s ({exc})")
    except openai.APIConnectionError as exc:
        return Outcome(ok=False, retryable=True, error=f"connection failed: {exc}")
    except openai.APIStatusError as exc:
        status = exc.status_code
        retryable = status in (408, 409, 429) or status >= 500
        return Outcome(ok=False, retryable=retryable, status=status, retry_after=_retry_after(exc.response.headers),
                       error=f"HTTP {status}: {_message(exc)}")
    latency = int((time.monotonic() - started) * 1000)
    try:
        data = raw.http_response.json()
    except ValueError:
        return Outcome(ok=False, retryable=True, error="the endpoint answered with something that is not JSON")
    if not isinstance(data, dict):
        return Outcome(ok=False, retryable=True, error="the endpoint answered with unexpected JSON")
    choice = (data.get("choices") or [{}])[0]
    usage = data.get("usage") or {}
    return Outcome(ok=True, content=(choice.get("message") or {}).get("content") or "", response=data,
                   prompt_tokens=int(usage.get("prompt_tokens") or 0),
                   completion_tokens=int(usage.get("completion_tokens") or 0), latency_ms=latency)


def cost(prompt_tokens: int, completion_tokens: int, price_in: Decimal, price_out: Decimal) -> Decimal:
    return (Decimal(prompt_tokens) * Decimal(price_in) + Decimal(completion_tokens) * Decimal(price_out)) / 1000
