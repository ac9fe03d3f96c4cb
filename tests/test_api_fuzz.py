"""Fuzzing the API from its own schema (issue 12): schemathesis generates requests for every operation of
/api/schema/ (data that fits the schema and data that does not), each sent with a coordinator's and a
physician's token to a live server on the test database; no answer may be a 5xx. Bounded: about 20 examples
per operation, no shrinking, a couple of minutes in all."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from rest_framework.authtoken.models import Token
from schemathesis import GenerationMode

from tests.factories import campaign_with

EXAMPLES = {GenerationMode.POSITIVE: 12, GenerationMode.NEGATIVE: 8}  # about 20 per operation
FUZZ_SETTINGS = dict(deadline=None, database=None, derandomize=True, phases=[Phase.explicit, Phase.generate],
                     suppress_health_check=list(HealthCheck), report_multiple_bugs=False)


def _describe(case, response) -> str:
    answer = response.text[:300].replace("\n", " ")
    sent = case.body if isinstance(case.body, dict | list | str | int | float) else "-"
    return f"{case.method} {case.formatted_path} query={case.query!r} body={sent!r} -> {response.status_code} {answer}"


def _fuzz(operation, mode, examples: int, base_url: str, tokens: list[str], failures: list[str]) -> None:
    """Send ``examples`` generated requests for one operation, each with every token; note each 5xx once."""
    seen: set[str] = set()

    @settings(max_examples=examples, **FUZZ_SETTINGS)
    @given(case=operation.as_strategy(generation_mode=mode))
    def send(case):
        for token in tokens:
            response = case.call(base_url=base_url, headers={"Authorization": f"Token {token}"}, timeout=30)
            if response.status_code >= 500 and case.formatted_path not in seen:
                seen.add(case.formatted_path)
                failures.append(_describe(case, response))

    send()


def test_no_api_operation_answers_5xx(live_server, transactional_db, instrument, make_user):
    coordinator = make_user("fuzz-coord", "coordinator")
    physicians = [make_user(f"fuzz-doc{i}", "physician") for i in range(2)]
    campaign_with(physicians, n=3, overlap=2, name="Fuzz")
    tokens = {"coordinator": Token.objects.create(user=coordinator).key,
              "physician": Token.objects.create(user=physicians[0]).key}
    schema = schemathesis.openapi.from_url(f"{live_server.url}/api/schema/",
                                           headers={"Authorization": f"Token {tokens['coordinator']}"})
    failures: list[str] = []
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1
        for mode, examples in EXAMPLES.items():
            try:
                _fuzz(operation, mode, examples, live_server.url, list(tokens.values()), failures)
            except Exception as exc:  # a case schemathesis cannot build or send is a finding too
                if "Unsatisfiable" not in type(exc).__name__:
                    failures.append(f"{operation.method.upper()} {operation.path}: {type(exc).__name__}: {exc}")
    assert operations >= 20, "the schema lists fewer operations than the API has"
    assert not failures, "5xx answers:\n" + "\n".join(failures)


pytestmark = pytest.mark.integration
