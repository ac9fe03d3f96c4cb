"""Fuzzing the API from its own schema (issue 12): schemathesis generates requests for every operation of
/api/schema/ (data that fits the schema and data that does not), each sent with a coordinator's and a
physician's token to a live server on the test database; no answer may be a 5xx. Bounded: about 20 examples
per operation, no shrinking, a couple of minutes in all (in two tests, each with every other operation).

With two projects (issue 29): the database holds the world of tests/two_projects.py (projects Alpha and Bravo, one
of every kind of object in each), the tokens are Alpha's coordinator's and physician's, and no answer may hold a
Bravo row (every Bravo name, external id and username contains "bravo"): generated ids hit Bravo's objects often,
the ids being small."""

from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token

from tests.two_projects import build_world

# schemathesis and hypothesis are imported by the test, not when pytest collects the suite (seconds in every worker;
# schemathesis' pytest plugin is not loaded either: pyproject.toml's -p no:schemathesis).
EXAMPLES = {"POSITIVE": 12, "NEGATIVE": 8}  # about 20 per operation


def fuzz_settings() -> dict:
    from hypothesis import HealthCheck, Phase

    return dict(deadline=None, database=None, derandomize=True, phases=[Phase.explicit, Phase.generate],
                suppress_health_check=list(HealthCheck), report_multiple_bugs=False)


def _describe(case, response) -> str:
    answer = response.text[:300].replace("\n", " ")
    sent = case.body if isinstance(case.body, dict | list | str | int | float) else "-"
    return f"{case.method} {case.formatted_path} query={case.query!r} body={sent!r} -> {response.status_code} {answer}"


def _fuzz(operation, mode, examples: int, base_url: str, tokens: list[str], failures: list[str],
          leaks=lambda text: []) -> None:
    """Send ``examples`` generated requests for one operation, each with every token; note each 5xx and each answer
    that shows another project's rows (``leaks``) once."""
    from hypothesis import given, settings

    seen: set = set()

    @settings(max_examples=examples, **fuzz_settings())
    @given(case=operation.as_strategy(generation_mode=mode))
    def send(case):
        for token in tokens:
            response = case.call(base_url=base_url, headers={"Authorization": f"Token {token}"}, timeout=30)
            if response.status_code >= 500 and case.formatted_path not in seen:
                seen.add(case.formatted_path)
                failures.append(_describe(case, response))
            found = leaks(response.text)
            if found and ("leak", case.formatted_path) not in seen:
                seen.add(("leak", case.formatted_path))
                failures.append(f"another project's rows {found[:2]}: " + _describe(case, response))

    send()


# The operations are fuzzed in SHARDS tests (every SHARDS-th operation each), which the suite's test processes share:
# in one test, they kept one process busy for a minute and a half or more, often at the end of the suite.
SHARDS = 2


@pytest.mark.parametrize("shard", range(SHARDS), ids=[f"shard-{n + 1}-of-{SHARDS}" for n in range(SHARDS)])
def test_no_api_operation_answers_5xx_or_another_projects_rows(live_server, transactional_db, instrument, shard):
    import schemathesis
    from schemathesis import GenerationMode

    world = build_world()
    alpha = world.alpha
    tokens = {"coordinator": Token.objects.create(user=alpha.coordinator).key,
              "physician": Token.objects.create(user=alpha.physicians[0]).key}
    schema = schemathesis.openapi.from_url(f"{live_server.url}/api/schema/",
                                           headers={"Authorization": f"Token {tokens['coordinator']}"})
    failures: list[str] = []
    operations = 0
    for n, result in enumerate(schema.get_all_operations()):
        operation = result.ok()
        operations += 1
        if n % SHARDS != shard:
            continue
        for name, examples in EXAMPLES.items():
            mode = GenerationMode[name]
            try:
                _fuzz(operation, mode, examples, live_server.url, list(tokens.values()), failures,
                      leaks=world.bravo.leaks)
            except Exception as exc:  # a case schemathesis cannot build or send is a finding too
                if "Unsatisfiable" not in type(exc).__name__:
                    failures.append(f"{operation.method.upper()} {operation.path}: {type(exc).__name__}: {exc}")
    assert operations >= 20, "the schema lists fewer operations than the API has"
    assert not failures, "5xx answers or another project's rows:\n" + "\n".join(failures)


pytestmark = pytest.mark.integration
