"""Schemathesis hooks of tests/test_api_contract.py (loaded with SCHEMATHESIS_HOOKS): one more check, that no
answer shows another project's rows. The tests' world (tests/two_projects.py) names every object, username and
external id of its second project with the marker in MINICEX_OTHER_PROJECT ("bravo"), and the tokens are the first
project's: generated ids hit the other project's objects often, the ids being small."""

from __future__ import annotations

import os
import re

import schemathesis


@schemathesis.check
def no_other_projects_rows(ctx, response, case):
    """Fail when the answer holds the other project's marker."""
    marker = os.environ.get("MINICEX_OTHER_PROJECT")
    if not marker:
        return None
    text = response.text or ""
    found = re.search(marker, text, flags=re.IGNORECASE)
    if found:
        context = text[max(0, found.start() - 60):found.end() + 60].replace("\n", " ")
        raise AssertionError(f"The answer shows another project's rows: ...{context}...")
    return None
