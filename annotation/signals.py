"""Signals other apps listen to without annotation importing them (the layering of tests/test_layering.py)."""

from django.dispatch import Signal

#: A campaign's analysable labels changed: work submitted or returned, labels imported, or its name rule changed.
#: Sent with ``campaign`` (the Campaign) from inside the change's transaction; scoring recomputes the campaign's
#: stored reports when the changes stop (scoring/jobs/figures.py).
labels_changed = Signal()


def send_labels_changed(campaign) -> None:
    labels_changed.send(sender=type(campaign), campaign=campaign)
