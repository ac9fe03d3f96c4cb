"""Signals other apps listen to without annotation importing them (the layering of tests/test_layering.py)."""

import contextlib
import contextvars
from collections.abc import Iterator

from django.dispatch import Signal

#: A campaign's analysable labels changed: work submitted or returned, labels imported, or its name rule changed.
#: Sent with ``campaign`` (the Campaign) from inside the change's transaction; scoring recomputes the campaign's
#: stored reports when the changes stop (core/jobs/figures.py).
labels_changed = Signal()


#: Campaigns whose labels changed inside :func:`labels_changes_batched`, by primary key (None outside one).
_batched: contextvars.ContextVar[dict | None] = contextvars.ContextVar("labels_changes_batched", default=None)


def send_labels_changed(campaign) -> None:
    batch = _batched.get()
    if batch is not None:
        batch[campaign.pk] = campaign
        return
    labels_changed.send(sender=type(campaign), campaign=campaign)


@contextlib.contextmanager
def labels_changes_batched() -> Iterator[None]:
    """Within: a bulk change of labels (the demo's hundreds of submissions) tells the listeners once per campaign,
    at the end, rather than once per submission. Nothing is sent when the block raises (its transaction is rolled
    back too)."""
    if _batched.get() is not None:  # already inside a batch: the outer one sends
        yield
        return
    token = _batched.set({})
    try:
        yield
        campaigns = list(_batched.get().values())
    finally:
        _batched.reset(token)
    for campaign in campaigns:
        labels_changed.send(sender=type(campaign), campaign=campaign)
