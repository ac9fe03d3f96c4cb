"""Where the inputs of stored figures change, the figures are queued to be computed again
(:mod:`core.jobs.figures`). Each app registers which of its figures follow which change (``follow``, from its
``AppConfig.ready``, by dotted path: a figure's module may pull in the statistics stack, which is imported only when
the change happens); this module imports none of them."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.utils.module_loading import import_string

from projects import scoping

log = logging.getLogger(__name__)

LABELS = "labels"  # labels of a campaign were submitted, returned or imported, or its name rule changed
JUDGE_RUN = "judge_run"  # a judge run finished or was imported
PREFERENCE_JUDGE_RUN = "preference_judge_run"  # an LLM judge of a preference study finished

# change -> dotted paths of callables, run in the order registered with the change's subject as keywords:
# ``fn(campaign=...)``, ``fn(run=...)``, ``fn(study=...)``
FOLLOWERS: dict[str, list[str]] = {}


def follow(change: str, dotted_path: str) -> None:
    """Register the callable at ``dotted_path`` to run when ``change`` happens (once per path)."""
    paths = FOLLOWERS.setdefault(change, [])
    if dotted_path not in paths:
        paths.append(dotted_path)


def _followers(change: str) -> list[Callable[..., object]]:
    return [import_string(path) for path in FOLLOWERS.get(change, [])]


def changed(change: str, **subject) -> None:
    """``change`` happened to ``subject``: every figure registered to follow it is queued again."""
    for fn in _followers(change):
        fn(**subject)


def on_labels_changed(sender, campaign, **kwargs) -> None:
    """Labels of ``campaign`` changed (annotation's ``labels_changed`` signal): every figure registered to follow
    them, in the campaign's project."""
    with scoping.in_project(campaign.project_id):  # a label save may run outside any project scope
        for fn in _followers(LABELS):
            fn(campaign=campaign)


def on_judge_run_finished(run) -> None:
    """A judge run finished (or was imported): every figure registered to follow it."""
    changed(JUDGE_RUN, run=run)
