"""How exports, pages and commands name a judge as a rater: one module that imports nothing, so that the label
exports, the juries and the commands share it without loading each other (the juries load pandas)."""

from __future__ import annotations


def judge_rater_name(run) -> str:
    """The stable rater label of a run's answers, e.g. "gpt-4o per-item (run 12)"."""
    return f"{run.name} (run {run.pk})"


def jury_rater_name(jury) -> str:
    """The stable rater label of a jury's answers in exports, e.g. "panel of three (jury 3)"."""
    return f"{jury.name} (jury {jury.pk})"
