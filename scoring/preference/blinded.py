"""The figures a locked preference study's page shows before unblinding (position bias and agreement, naming no
source), kept in the cache under the study's inputs' fingerprint
(:func:`scoring.preference.results.inputs_fingerprint`): computed once per change of the votes, not on each view.
``scoring.preference.analysis`` (pandas, scipy) is imported only when they are computed (a module of its own:
``results`` is imported by the study services, which analysis imports)."""

from __future__ import annotations

from typing import Any

from scoring.jobs import figures
from scoring.preference.models import PreferenceStudy
from scoring.preference.results import inputs_fingerprint

#: The figures a locked study shows before unblinding are kept this long under its inputs' fingerprint.
SUMMARY_SECONDS = 7 * 24 * 3600


def blinded_summary(study: PreferenceStudy) -> dict[str, Any]:
    """What the study page shows once it is locked (``analysis.blinded_summary``: position bias and agreement,
    naming no source), kept in the cache under the inputs' fingerprint: computed once per change of the votes (the
    results job computes it beside the results), not on each view."""
    from django.core.cache import cache

    def compute() -> dict[str, Any]:
        from scoring.preference import analysis  # pandas, scipy: on use

        return figures.plain(analysis.blinded_summary(study))

    return cache.get_or_set(f"preference:blinded-summary:{study.pk}:{inputs_fingerprint(study)}", compute,
                            SUMMARY_SECONDS)
