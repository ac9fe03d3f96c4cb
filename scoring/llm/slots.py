"""Prompt templates with named slots in braces (``{turns}``), filled as plain text: only the known slots are
replaced and nothing else of the template is interpreted, so a coordinator's template may hold other braces (JSON
examples) and can never reach Python's format mini-language (``{turns:>5000000}`` stays literal text)."""

from __future__ import annotations


def fill(template: str, **slots: object) -> str:
    """Put the values of the named slots into a template; other braces stay as they are."""
    text = template
    for name, value in slots.items():
        text = text.replace("{" + name + "}", str(value))
    return text
