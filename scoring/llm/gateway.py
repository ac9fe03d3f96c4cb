"""The LLM gateway: one place that talks to OpenAI-compatible endpoints (OpenAI, Azure, vLLM, Ollama).

It resolves the endpoint and key of a configuration, sends chat completions with the real ``openai`` client (its
own retries off: the engine schedules retries, never sleeps on them), and sorts failures into retryable (429, 5xx,
timeouts, dropped connections) and fatal (400, 401, 403, 404: the provider's message is shown on the run).

Requests go through ``openai.AsyncOpenAI`` on one event loop per process (:class:`AsyncRunner`), so a worker keeps
hundreds of requests in flight on one thread and without a database connection per request.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import hashlib
import json
import os
import socket
import ssl
import threading
import time
from collections.abc import Coroutine
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings

from scoring.llm.keys import is_allowed, refusal, sanitize_error

# Keep-alive connections per endpoint: enough for the largest concurrency a run may ask for, so connections are
# reused instead of opened for every request.
MAX_CONNECTIONS = 2048
KEEPALIVE_CONNECTIONS = 1024


class NotConfigured(Exception):
    """No endpoint is configured; the message says how to configure one."""


@dataclass(frozen=True)
class Endpoint:
    base_url: str
    api_key: str = field(repr=False)
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


# getaddrinfo's "no such name" answers (EAI_NONAME, EAI_NODATA): retrying cannot make the host exist. A temporary
# failure of the resolver (EAI_AGAIN) is retried.
_NO_SUCH_HOST = {socket.EAI_NONAME, getattr(socket, "EAI_NODATA", socket.EAI_NONAME)}


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


_host_checks: dict[str, tuple[float, str]] = {}
HOST_CHECK_SECONDS = 3.0


def host_problem(base_url: str, *, listening: bool = False) -> str:
    """Why requests to ``base_url`` cannot go out ("" when its host resolves). Looked up with a short timeout and
    remembered for a minute; skipped behind a proxy (the proxy resolves the host, not this machine). With
    ``listening``, a server on this machine must also accept connections now (the pages ask that before offering to
    start; a job already created rather retries until it answers, and then says it was refused)."""
    parts = urlsplit(base_url)
    host = parts.hostname
    if host in ("localhost", "::1") or (host or "").startswith("127."):
        return _local_problem(parts) if listening else ""
    if not host or any(os.environ.get(v) for v in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy",
                                                     "ALL_PROXY", "all_proxy")):
        return ""
    now = time.monotonic()
    cached = _host_checks.get(host)
    if cached and now - cached[0] < 60:
        return cached[1]
    result: list[str] = []

    def look_up() -> None:
        try:
            socket.getaddrinfo(host, None)
            result.append("")
        except socket.gaierror as exc:
            result.append(f"host {host} does not resolve (check the base URL {base_url})"
                          if exc.errno in _NO_SUCH_HOST else "")
        except OSError:
            result.append("")

    thread = threading.Thread(target=look_up, daemon=True)
    thread.start()
    thread.join(HOST_CHECK_SECONDS)
    problem = result[0] if result else f"host {host} could not be looked up within {HOST_CHECK_SECONDS:g} s"
    _host_checks[host] = (now, problem)
    return problem


def _local_problem(parts) -> str:
    """A server on this machine (vLLM, Ollama, the built-in fake endpoint): something must listen on its port."""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname, port), timeout=0.5):
            return ""
    except OSError:
        from django.utils.translation import gettext

        return gettext("nothing answers at %(address)s (start the server, e.g. python -m config.run fake-llm for "
                       "the built-in fake endpoint)") % {"address": f"{parts.scheme}://{parts.hostname}:{port}"}


def endpoint_problem(base_url: str, api_key_env: str) -> str:
    """Why a judge or job with this endpoint cannot send anything now ("" when it can), for the pages: no URL
    configured, a refused key variable, a host that does not resolve, or nothing listening on a local server."""
    try:
        endpoint = resolve_endpoint(base_url, api_key_env)
    except NotConfigured as exc:
        return str(exc)
    return host_problem(endpoint.base_url, listening=True)


def usable_endpoint(base_url: str, api_key_env: str) -> Endpoint:
    """The endpoint of a new job, or NotConfigured saying why nothing could be sent to it."""
    endpoint = resolve_endpoint(base_url, api_key_env)
    problem = host_problem(endpoint.base_url)
    if problem:
        raise NotConfigured(f"Nothing can be sent: {problem}.")
    return endpoint


def request_key(endpoint: str, payload: dict, *, project: int | None = None) -> str:
    """Hash of endpoint, model, messages and every parameter: identical requests share one cached answer. With
    ``project`` (the job's), the key is that project's own (:func:`project_key`) unless an administrator shares the
    cache across projects (setting ``LLM_CACHE_SHARED``)."""
    canonical = json.dumps({"endpoint": endpoint, **payload}, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    key = hashlib.sha256(canonical.encode()).hexdigest()
    if project is None or getattr(settings, "LLM_CACHE_SHARED", False):
        return key
    return project_key(project, key)


def project_key(project: int, key: str) -> str:
    """A request key made a project's own: another project's identical request has another key, so the cache never
    tells one project what another has judged (scoring migration 0015 re-keys older calls the same way)."""
    return hashlib.sha256(f"project:{project}:{key}".encode()).hexdigest()


def cost(prompt_tokens: int, completion_tokens: int, price_in: Decimal, price_out: Decimal) -> Decimal:
    return (Decimal(prompt_tokens) * Decimal(price_in) + Decimal(completion_tokens) * Decimal(price_out)) / 1000


# ---------------------------------------------------------------------------------------------------------------
# one event loop per process
# ---------------------------------------------------------------------------------------------------------------
class AsyncRunner:
    """An asyncio event loop on a daemon thread, with one ``AsyncOpenAI`` client per endpoint, key and timeout.

    Threads hand it coroutines with :meth:`submit` and get ``concurrent.futures.Future`` objects back."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._clients: dict[tuple[str, str], Any] = {}
        self._thread = threading.Thread(target=self._run, name="llm-event-loop", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def submit(self, coro: Coroutine) -> concurrent.futures.Future:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def close(self) -> None:
        """Close the clients' connections (at exit, so aiohttp does not warn about open sessions)."""
        async def close_all() -> None:
            for client in self._clients.values():
                with contextlib.suppress(Exception):
                    await client.close()
            self._clients.clear()

        if self._thread.is_alive():
            with contextlib.suppress(Exception):
                self.submit(close_all()).result(timeout=5)

    def client(self, endpoint: Endpoint):
        """The client of an endpoint and key, one per process so its connections are reused by every job (only
        called on the loop's thread; the timeout is given per request)."""
        import httpx2
        import openai

        cache_key = (endpoint.base_url, endpoint.api_key)
        client = self._clients.get(cache_key)
        if client is None:
            # aiohttp as the client's transport (openai's [aiohttp] extra): with hundreds of requests in flight,
            # httpx's connection pool walks every connection on each request and costs several times the CPU.
            http = openai.DefaultAioHttpClient(limits=httpx2.Limits(
                max_connections=MAX_CONNECTIONS, max_keepalive_connections=KEEPALIVE_CONNECTIONS))
            client = openai.AsyncOpenAI(base_url=endpoint.base_url, api_key=endpoint.api_key, max_retries=0,
                                        http_client=http)
            self._clients[cache_key] = client
        return client


_runner: AsyncRunner | None = None
_runner_pid: int | None = None
_runner_lock = threading.Lock()


def runner() -> AsyncRunner:
    """This process's event loop (a forked child starts its own)."""
    global _runner, _runner_pid
    with _runner_lock:
        if _runner is None or _runner_pid != os.getpid():
            _runner, _runner_pid = AsyncRunner(), os.getpid()
            atexit.register(_runner.close)
        return _runner


# ---------------------------------------------------------------------------------------------------------------
# one chat completion
# ---------------------------------------------------------------------------------------------------------------
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


async def acomplete(endpoint: Endpoint, payload: dict, timeout: float) -> Outcome:
    """Send one chat completion on the runner's loop; never raises for provider or network failures."""
    import httpx2
    import openai

    started = time.monotonic()
    try:
        # The client's own POST with the raw HTTP response: the payload is already the JSON the endpoint takes, so
        # the per-field request transformation and the pydantic response models of ``chat.completions.create`` are
        # skipped (they cost more CPU than the rest of a call); errors, timeouts and headers are the client's.
        raw = await runner().client(endpoint).post("/chat/completions", body=payload, cast_to=httpx2.Response,
                                                   options={"timeout": timeout})
    except openai.APIConnectionError as exc:  # APITimeoutError included: the transport reports most failures so
        return connection_failure(exc, endpoint, timeout)
    except openai.APIStatusError as exc:
        status = exc.status_code
        retryable = status in (408, 409, 429) or status >= 500
        return Outcome(ok=False, retryable=retryable, status=status, retry_after=_retry_after(exc.response.headers),
                       error=f"HTTP {status}: {_message(exc)}")
    latency = int((time.monotonic() - started) * 1000)
    return parse_completion(raw.content, latency)


# The provider refused the key (401) or its rights (403): the job pauses until the key is fixed.
KEY_REFUSED = (401, 403)


def _causes(exc: BaseException):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def connection_failure(exc: Exception, endpoint: Endpoint, timeout: float) -> Outcome:
    """What really went wrong with a request that got no HTTP answer, in words. The aiohttp transport reports an
    unknown host or a refused connection as a timeout, so the cause chain is read instead of the exception's type."""
    host = urlsplit(endpoint.base_url).hostname or endpoint.base_url
    for cause in _causes(exc):
        if isinstance(cause, socket.gaierror):
            if cause.errno in _NO_SUCH_HOST:
                return Outcome(ok=False, retryable=False, extra={"cause": "dns"},
                               error=f"host {host} does not resolve (check the base URL {endpoint.base_url})")
            return Outcome(ok=False, retryable=True, error=f"host {host} could not be looked up now ({cause})")
        if isinstance(cause, ConnectionRefusedError):
            port = urlsplit(endpoint.base_url).port
            return Outcome(ok=False, retryable=True,
                           error=f"connection refused by {host}{f':{port}' if port else ''} (is the server up?)")
        if isinstance(cause, ssl.SSLError):
            return Outcome(ok=False, retryable=True, error=f"TLS handshake with {host} failed ({cause})")
    if any(type(cause).__name__ in ("ReadTimeout", "ConnectTimeout", "TimeoutError", "ServerTimeoutError",
                                    "APITimeoutError", "PoolTimeout", "WriteTimeout")
           and "Cannot connect" not in str(cause) for cause in _causes(exc)):
        return Outcome(ok=False, retryable=True, error=f"timeout after {timeout:g} s (no answer from {host})")
    first = next((c for c in _causes(exc) if c is not exc), exc)
    return Outcome(ok=False, retryable=True, error=f"connection to {host} failed: {first}")


def parse_completion(body: bytes | str | dict, latency_ms: int = 0) -> Outcome:
    """An Outcome from a chat-completion body (live answers and Batch API result lines)."""
    if isinstance(body, dict):
        data = body
    else:
        try:
            data = json.loads(body)
        except ValueError:
            return Outcome(ok=False, retryable=True, error="the endpoint answered with something that is not JSON")
    if not isinstance(data, dict):
        return Outcome(ok=False, retryable=True, error="the endpoint answered with unexpected JSON")
    choice = (data.get("choices") or [{}])[0]
    usage = data.get("usage") or {}
    return Outcome(ok=True, content=(choice.get("message") or {}).get("content") or "", response=data,
                   prompt_tokens=int(usage.get("prompt_tokens") or 0),
                   completion_tokens=int(usage.get("completion_tokens") or 0), latency_ms=latency_ms)


def complete(endpoint: Endpoint, payload: dict, timeout: float) -> Outcome:
    """Send one chat completion and wait for it (for callers without an event loop)."""
    return runner().submit(acomplete(endpoint, payload, timeout)).result()


def sync_client(endpoint: Endpoint, timeout: float = 60.0):
    """A plain ``openai.OpenAI`` client (Batch API files and batches)."""
    import openai

    return openai.OpenAI(base_url=endpoint.base_url, api_key=endpoint.api_key, max_retries=0, timeout=timeout)
