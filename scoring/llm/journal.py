"""The answers journal: every paid answer an engine received, appended to a file of its own on the worker's disk
before it is stored, so that an engine killed between receiving answers and storing them (an out-of-memory kill,
SIGKILL during a deploy) does not make anyone pay for them again: whoever finds the engine dead on the same machine
puts them into the request cache (:func:`scoring.llm.engine.recover_answers`), and its units are then answered
from the cache without a request.

A journal is a series of segments (``var/llm-journal/<engine>.<n>.jsonl``); a segment is deleted once every
answer in it is stored. Appending is one ``write`` per batch of answers, without ``fsync``: a killed process's
writes are in the kernel already; a machine that loses power loses the journal, and those units are asked once
more (never more than once: the engine that asks again journals its own answers).
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.conf import settings

log = logging.getLogger(__name__)

SEGMENT_LINES = 5000  # a new segment after this many answers ...
SEGMENT_SECONDS = 60.0  # ... or this many seconds


def directory() -> Path:
    path = Path(settings.VAR_DIR) / "llm-journal"
    path.mkdir(parents=True, exist_ok=True)
    return path


def file_stem(owner: str) -> str:
    """An engine's id as a file name (host:pid:random: the colons and anything unusual become underscores)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", owner)


def enabled() -> bool:
    return bool(getattr(settings, "LLM_ANSWER_JOURNAL", True))


class _Segment:
    def __init__(self, path: Path):
        self.path = path
        self.handle = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed when the segment is rotated
        self.opened = time.monotonic()
        self.lines = 0
        self.pending = 0
        self.closed = False


class Journal:
    """An engine's journal (written by its driver thread, released by its store thread)."""

    def __init__(self, owner: str):
        self.owner = owner
        self.stem = file_stem(owner)
        self._lock = threading.Lock()
        self._number = 0
        self._current: _Segment | None = None
        self._of: dict[int, _Segment] = {}  # id(request) -> its segment

    def _segment(self) -> _Segment:
        current = self._current
        if current is None or current.lines >= SEGMENT_LINES or time.monotonic() - current.opened > SEGMENT_SECONDS:
            if current is not None:
                self._close(current)
            self._number += 1
            current = self._current = _Segment(directory() / f"{self.stem}.{self._number}.jsonl")
        return current

    def _close(self, segment: _Segment) -> None:
        segment.closed = True
        segment.handle.close()
        if not segment.pending:
            segment.path.unlink(missing_ok=True)

    def write(self, entries: list[tuple[object, dict[str, Any]]]) -> None:
        """Append answers (request, what :func:`scoring.llm.engine.journal_entry` makes of it) before storing them."""
        if not entries:
            return
        text = "".join(json.dumps(entry, separators=(",", ":"), default=str) + "\n" for _, entry in entries)
        with self._lock:
            segment = self._segment()
            segment.handle.write(text)
            segment.handle.flush()
            segment.lines += len(entries)
            segment.pending += len(entries)
            for request, _ in entries:
                self._of[id(request)] = segment

    def stored(self, requests: list) -> None:
        """These answers are in the database: a segment whose answers are all stored is deleted."""
        with self._lock:
            for request in requests:
                segment = self._of.pop(id(request), None)
                if segment is None:
                    continue
                segment.pending -= 1
                if segment.closed and not segment.pending:
                    segment.path.unlink(missing_ok=True)

    def close(self) -> None:
        """The engine stops: the last segment goes when its answers are stored (at once when they are)."""
        with self._lock:
            if self._current is not None and not self._current.closed:
                self._close(self._current)


def segments_of(owner: str) -> list[Path]:
    return sorted(directory().glob(f"{file_stem(owner)}.*.jsonl"))


def owners_with_segments() -> set[str]:
    """The file stems of engines that left a journal in this machine's var folder."""
    return {path.name.rsplit(".", 2)[0] for path in directory().glob("*.jsonl")}


def read(path: Path) -> Iterator[dict[str, Any]]:
    """The entries of a segment; a line cut short by the kill is skipped."""
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                continue


def remove(path: Path) -> None:
    path.unlink(missing_ok=True)
