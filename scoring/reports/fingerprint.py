"""What a campaign report depends on, without the statistics stack: the labels' change mark
(:func:`study_fingerprint`) and the report's options. Pages that look a stored report up import this module, not
:mod:`scoring.reports.agreement` (pandas and scipy: a second or more on a new server's first view)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from django.db.models import Max

from annotation.models import Assignment, Campaign, Label

CI_METHODS = ("percentile", "bca")
CORRELATIONS = ("pearson", "tetrachoric")


def study_fingerprint(campaigns: Sequence[Campaign]) -> str:
    """Changes whenever a label, a submission or a return in these campaigns changes: the newest label's id and the
    last change of their labels (a new label has a higher id; a changed one a later ``updated_at``; labels are never
    deleted, their history protects them), and the number and last change of their assignments. Each is one seek
    in an index (:func:`last_of`), not a count of every label: 0.5 s for the 643,200 labels of a MedEval-sized
    campaign on SQLite with the count, which every report page and the methods page read."""
    ids = sorted(c.pk for c in campaigns)
    # the campaigns came through the scoped managers; the scoped ones would join the campaign table to every row
    work = Assignment.unscoped.filter(campaign_id__in=ids).order_by().count()
    raw = (f"{ids}|label {last_of(Label, ids, 'id')}|{last_of(Label, ids, 'updated_at')}|"
           f"{work}|{last_of(Assignment, ids, 'updated_at')}")
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


def last_of(model, campaign_ids: Sequence[int], field: str) -> Any:
    """The largest ``field`` of ``model``'s rows in these campaigns, one index seek per campaign (the indexes on
    campaign and on (campaign, updated_at)); None when there are none."""
    lasts = [model.unscoped.filter(campaign_id=pk).order_by().aggregate(last=Max(field))["last"]
             for pk in campaign_ids]
    return max((last for last in lasts if last is not None), default=None)
