"""The preference study's refusal, shared by its services, analysis and LLM judging without importing each other."""

from __future__ import annotations


class PreferenceError(ValueError):
    """A request the study rules refuse; the message says why (``status`` is the HTTP status to answer)."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


#: Why per-source results are refused before unblinding (they would break the blinding).
SEALED = "Results per source are sealed until the coordinator locks and unblinds the study."
