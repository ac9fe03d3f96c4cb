"""The API keeps its schema's promises: Schemathesis' command line (as an analyst's CI would run it) against the live
test server, every operation of /api/schema/, all its checks (server errors, status codes, content types, response
bodies and headers against the schema, schema-valid data accepted and invalid data refused, authentication not
ignored, 405 for other methods, the stateful links between operations) and one of ours (tests/schemathesis_hooks.py:
no answer shows another project's rows), once per role of the tests' world and once without a token: no failure.

The world is tests/two_projects.py's (projects Alpha and Bravo, one of every kind of object in each); the tokens are
Alpha's, and every Bravo name, external id and username contains "bravo". Operations whose schema-valid requests may
name objects that do not exist are listed in tests/schemathesis.toml (they may answer 400).

Bounded: a few examples per operation, deterministic generation, no shrinking, a time budget per run; the roles are
four tests, which the suite's processes share. Schemathesis' coverage phase (boundary values of every parameter) takes
two minutes a role here (2,600 requests) and is left to a run by hand (docs/tests.md gives the command)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from rest_framework.authtoken.models import Token

from tests.two_projects import build_world

EXAMPLES = 2
MAX_SECONDS = 8  # per role; Schemathesis fuzzes until then (docs/tests.md has the test's time)
CONFIG = Path(__file__).with_name("schemathesis.toml")
ROLES = ["coordinator", "analyst", "physician", None]


def run_schemathesis(schema: Path, base_url: str, token: str | None, *, report: Path,
                     phases: str = "examples,fuzzing,stateful", examples: int = EXAMPLES,
                     max_seconds: int = MAX_SECONDS) -> subprocess.CompletedProcess:
    """Schemathesis' CLI on ``schema`` against ``base_url``, with all checks and ours."""
    command = [str(Path(sys.executable).parent / "schemathesis"), "--config-file", str(CONFIG), "run", str(schema),
               "--url", base_url, "--checks", "all", "--phases", phases, "--max-examples", str(examples),
               "--no-shrink", "--generation-deterministic", "--max-time", str(max_seconds), "--request-timeout", "30",
               "--suppress-health-check", "all", "--continue-on-failure", "--warnings", "off",
               "--report", "ndjson", "--report-ndjson-path", str(report), "--output-truncate", "false"]
    if token:
        command += ["--header", f"Authorization: Token {token}"]
    env = {**os.environ, "NO_COLOR": "1", "SCHEMATHESIS_HOOKS": "tests.schemathesis_hooks",
           "MINICEX_OTHER_PROJECT": "bravo", "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    # run in the report's folder: Schemathesis keeps a cache (.schemathesis/) in its working directory
    return subprocess.run(command, capture_output=True, text=True, timeout=max_seconds * 4, env=env,
                          cwd=report.parent)


@pytest.mark.parametrize("role", ROLES, ids=[role or "no-token" for role in ROLES])
def test_schemathesis_finds_nothing(live_server, transactional_db, instrument, tmp_path, role):
    world = build_world()
    tokens = {name: Token.objects.create(user=world.alpha.user(name)).key for name in ROLES if name}
    reader, token = tokens["coordinator"], tokens.get(role)
    schema = tmp_path / "schema.json"
    answer = requests.get(f"{live_server.url}/api/schema/?format=json",
                          headers={"Authorization": f"Token {reader}"}, timeout=30)
    assert answer.status_code == 200, answer.text[:300]
    schema.write_text(answer.text)
    started = time.monotonic()
    result = run_schemathesis(schema, live_server.url, token, report=tmp_path / "report.ndjson")
    print(f"{role or 'no token'}: exit {result.returncode} in {time.monotonic() - started:.1f} s")
    print(result.stdout[-1500:])
    assert "Tested: 5" in result.stdout or "Selected:" in result.stdout, result.stdout[-3000:] + result.stderr[-2000:]
    assert result.returncode == 0, f"{result.stdout[-30000:]}\n{result.stderr[-2000:]}"


pytestmark = pytest.mark.integration
