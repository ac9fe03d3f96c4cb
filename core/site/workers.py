"""The LLM worker ``make run`` starts (``config.run``), as the pages that find none name it: LLM calls wait on the
network, so a threads pool keeps many in flight on few cores."""

from __future__ import annotations

LLM_WORKER_POOL = "threads"
LLM_WORKER_CONCURRENCY = 16


def llm_worker_hint(queue: str) -> str:
    """The command that starts the LLM worker ``make run`` starts, on its own (for pages and messages)."""
    return (f"python -m config.run worker --queues {queue} --pool {LLM_WORKER_POOL} "
            f"--concurrency {LLM_WORKER_CONCURRENCY}")
