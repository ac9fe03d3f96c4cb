"""Text and JSON the databases cannot store, found before it reaches them.

PostgreSQL refuses NUL characters (``\\u0000``) in text and JSON, and neither psycopg nor SQLite can encode an unpaired
surrogate (``"a\\ud800b"`` is valid JSON but not valid Unicode text): saving one ends in a UnicodeEncodeError, a
500. JSON also allows NaN and Infinity, which PostgreSQL's jsonb does not. Every way in checks with this module:
request bodies sent as JSON (``config.failures.RejectUnstorableText``, for the pages' JSON saves and the whole API),
JSON Lines files (``annotation.importers.json_objects``: dialogues, generation cases) and instrument files
(``annotation.instruments.read_file``). Form fields and query strings cannot carry surrogates (Django decodes them
with replacement characters); their NUL characters are refused by the same middleware.
"""

from __future__ import annotations

import math
import re
from typing import Any

NUL = "contains a NUL character (\\u0000)"
SURROGATE = "contains an unpaired surrogate (an invalid \\u escape such as \\ud800)"
MAX_DEPTH = 100

#: JSON text that may decode to something unstorable: a \u0000 or \ud800-\udfff escape, or NaN / Infinity.
_SUSPECT_JSON = re.compile(r"\\u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})|NaN|Infinity")


def text_problem(text: str) -> str | None:
    """Why ``text`` cannot be stored (without saying where), or None."""
    if "\x00" in text:
        return NUL
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return SURROGATE
    return None


def find(value: Any, path: tuple = (), depth: int = 0) -> tuple[tuple, str] | None:
    """The first unstorable part of a parsed JSON value: (path, problem), the path as keys and list indexes from
    0, or None."""
    if depth > MAX_DEPTH:
        return path, "is nested too deeply"
    if isinstance(value, str):
        problem = text_problem(value)
        return (path, problem) if problem else None
    if isinstance(value, float) and not math.isfinite(value):
        return path, f"is {'NaN' if math.isnan(value) else 'Infinity'}, which cannot be stored"
    if isinstance(value, dict):
        for key, item in value.items():
            problem = text_problem(key)
            if problem:
                return path, f"has a key that {problem}"
            found = find(item, (*path, key), depth + 1)
            if found:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = find(item, (*path, index), depth + 1)
            if found:
                return found
    return None


def dotted(path: tuple, *, first_index: int = 1) -> str:
    """``("turns", 0, "text")`` -> ``turns[1].text`` (indexes counted from ``first_index``)."""
    out = ""
    for part in path:
        out += f"[{part + first_index}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def json_problem(value: Any) -> str | None:
    """A sentence for the first unstorable part of a parsed JSON value, e.g. ``"note" contains a NUL ...``."""
    found = find(value)
    if found is None:
        return None
    path, problem = found
    return f'"{dotted(path)[:80]}" {problem}' if path else f"the value {problem}"


def might_be_unstorable(json_text: str) -> bool:
    """False when JSON text cannot decode to anything unstorable (the common case: no parsing needed)."""
    return _SUSPECT_JSON.search(json_text) is not None
