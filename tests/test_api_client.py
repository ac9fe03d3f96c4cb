"""The API as an analyst's, a coordinator's and a physician's scripts meet it, through the Python client that
openapi-python-client generates from the current /api/schema/ (rebuilt here, offline, in a few seconds): list and
find by name, download the labels as CSV and JSON (with an ETag and a 304 when nothing changed), the agreement
figures, create a campaign (its Location), save a whole dialogue's answers in one call and submit, and sync labels
incrementally with updated_after. Also the contract's refusals a script meets first: an unknown parameter or enum
value names the valid ones, a check of the input never answers before authentication, the token endpoint's errors
carry ``detail``. The world is tests/two_projects.py's; docs/api.md shows the same workflow."""

from __future__ import annotations

import datetime
import importlib
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from rest_framework.authtoken.models import Token

from tests.two_projects import build_world

PACKAGE = "minicex_api_client"


def generate_client(schema_text: str, where: Path):
    """openapi-python-client's package for ``schema_text``, imported from ``where``."""
    schema = where / "schema.json"
    schema.write_text(schema_text)
    config = where / "config.yaml"
    config.write_text(f"package_name_override: {PACKAGE}\npost_hooks: []\n")
    result = subprocess.run([str(Path(sys.executable).parent / "openapi-python-client"), "generate", "--path",
                             str(schema), "--meta", "none", "--output-path", str(where / PACKAGE), "--config",
                             str(config)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "Warning" not in result.stdout, result.stdout + result.stderr
    sys.path.insert(0, str(where))
    try:
        return importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(where))


@pytest.fixture
def api(live_server, transactional_db, instrument, tmp_path):
    world = build_world()
    tokens = {role: Token.objects.create(user=world.alpha.user(role)).key
              for role in ("coordinator", "analyst", "physician")}
    schema = httpx.get(f"{live_server.url}/api/schema/?format=json",
                       headers={"Authorization": f"Token {tokens['analyst']}"})
    assert schema.status_code == 200
    package = generate_client(schema.text, tmp_path)
    yield world, tokens, package
    for name in [name for name in sys.modules if name == PACKAGE or name.startswith(PACKAGE + ".")]:
        del sys.modules[name]


def test_generated_client_runs_the_analysts_coordinators_and_physicians_workflow(api, live_server):
    from annotation.models import Assignment
    from scoring.reports.figures import compute_now

    world, tokens, package = api
    client_module = importlib.import_module(f"{PACKAGE}.client")
    endpoints = importlib.import_module(f"{PACKAGE}.api")
    models = importlib.import_module(f"{PACKAGE}.models")

    def as_role(role):
        return client_module.AuthenticatedClient(base_url=live_server.url, token=tokens[role], prefix="Token")

    def call(module: str, operation: str):
        return importlib.import_module(f"{endpoints.__name__}.{module}.{operation}")

    alpha = world.alpha
    campaign = alpha.objects["campaign"]

    # The physician: their open assignments, a whole dialogue's answers in one call, then submit.
    physician = as_role("physician")
    mine = call("assignments", "assignments_list").sync(client=physician, status=models.AssignmentsListStatus.ASSIGNED)
    assert mine.count >= 1 and all(row.rater == alpha.physicians[0].username for row in mine.results)
    assignment = mine.results[0]
    version = call("scale_versions", "scale_versions_retrieve").sync(assignment.campaign.scale_version,
                                                                     client=physician)
    answers = [models.AnswerInputRequest(item=item.code, value=item.allowed_values[0]) for item in version.rating_items]
    before_save = datetime.datetime.now(datetime.UTC)
    saved = call("assignments", "assignments_answers_create").sync(
        assignment.id, client=physician, body=models.AnswersInputRequest(answers=answers))
    assert isinstance(saved, models.AnswersResult), saved
    assert saved.changed == len(answers) == len(saved.labels)
    again = call("assignments", "assignments_answers_create").sync_detailed(
        assignment.id, client=physician, body=models.AnswersInputRequest(answers=answers[:1] + answers[:1]))
    assert again.status_code == 400 and "twice" in again.parsed.detail  # all or nothing: nothing saved twice
    submitted = call("assignments", "assignments_submit_create").sync(assignment.id, client=physician,
                                                                       body=models.SubmitInputRequest())
    assert submitted.status == Assignment.Status.SUBMITTED
    late = call("assignments", "assignments_answers_create").sync_detailed(
        assignment.id, client=physician, body=models.AnswersInputRequest(answers=answers[:1]))
    assert late.status_code == 409 and late.parsed.detail
    refused = call("labels", "labels_list").sync_detailed(client=physician)
    assert refused.status_code == 403 and refused.parsed.detail

    # The analyst: find the campaign by name, sync the labels by change time, download them as CSV and JSON.
    analyst = as_role("analyst")
    found = call("campaigns", "campaigns_list").sync(client=analyst, name=campaign.name)
    assert [row.id for row in found.results] == [campaign.pk]
    assert call("campaigns", "campaigns_list").sync(client=analyst, name="no such campaign").count == 0
    changed = call("labels", "labels_list").sync(client=analyst, campaign=campaign.pk, updated_after=before_save,
                                                 limit=1000)
    assert {row.item_code for row in changed.results if row.assignment == assignment.id} == {a.item for a in answers}
    newest = max(row.updated_at for row in changed.results)
    later = call("labels", "labels_list").sync(client=analyst, campaign=campaign.pk, updated_after=newest)
    assert {row.id for row in later.results} <= {row.id for row in changed.results}
    labels = call("campaigns", "campaigns_labels_list")
    as_json = labels.sync(campaign.pk, client=analyst)
    assert len([row for row in as_json if row.rater_kind == "human"]) >= len(answers)
    # CSV is text, not a model: the client's own httpx client fetches it
    as_csv = analyst.get_httpx_client().get(f"/api/campaigns/{campaign.pk}/labels/", params={"format": "csv"})
    assert as_csv.status_code == 200 and as_csv.headers["content-type"].startswith("text/csv")
    assert as_csv.content.decode().splitlines()[0].startswith("dialogue_id,rater,item,value")
    etag = as_csv.headers["etag"]
    by_accept = httpx.get(f"{live_server.url}/api/campaigns/{campaign.pk}/labels/",
                          headers={"Authorization": f"Token {tokens['analyst']}", "Accept": "text/csv",
                                   "If-None-Match": etag})
    assert by_accept.status_code == 304 and by_accept.headers["etag"] == etag

    # The agreement figures: 202 while a worker computes them, then JSON and CSV.
    pending = call("campaigns", "campaigns_report_retrieve").sync_detailed(campaign.pk, client=analyst)
    assert pending.status_code in (200, 202)
    compute_now(campaign, world.alpha.analyst)
    report = call("campaigns", "campaigns_report_retrieve").sync_detailed(campaign.pk, client=analyst)
    assert report.status_code == 200 and report.parsed.items and report.headers["etag"]
    figures = analyst.get_httpx_client().get(f"/api/campaigns/{campaign.pk}/report/",
                                             headers={"Accept": "text/csv"})
    assert figures.content.decode().startswith("section,scope,statistic,value")

    # A judge run's own scores, as JSON and as CSV (the judge_report command's rows), with an ETag.
    run = alpha.objects["judge_run"]
    scores = call("judge_runs", "judge_runs_scores_retrieve").sync_detailed(run.pk, client=analyst)
    assert scores.status_code == 200 and scores.parsed.kind == "judge_scores"
    scores_csv = analyst.get_httpx_client().get(f"/api/judge-runs/{run.pk}/scores/", headers={"Accept": "text/csv"})
    assert scores_csv.status_code == 200 and scores_csv.headers["content-type"].startswith("text/csv")
    assert analyst.get_httpx_client().get(f"/api/judge-runs/{run.pk}/scores/", params={"format": "csv"}, headers={
        "If-None-Match": scores_csv.headers["etag"]}).status_code == 304

    # The coordinator: create a campaign; its Location is its address in the API.
    coordinator = as_role("coordinator")
    created = call("campaigns", "campaigns_create").sync_detailed(client=coordinator, body=models.CampaignRequest(
        name="Scripted campaign", corpus=alpha.objects["corpus"].pk, scale_version=campaign.scale_version_id))
    assert created.status_code == 201, created.content
    assert created.headers["location"].endswith(f"/api/campaigns/{created.parsed.id}/")

    # The refusals a script meets first (same world: one build for both parts).
    refusals_name_what_is_accepted_and_come_after_authentication(world, tokens, live_server)


def refusals_name_what_is_accepted_and_come_after_authentication(world, tokens, live_server):
    base = f"{live_server.url}/api"
    analyst = {"Authorization": f"Token {tokens['analyst']}"}
    typo = httpx.get(f"{base}/campaigns/?status=opne", headers=analyst)
    assert typo.status_code == 400 and "closed, open" in typo.json()["detail"]
    unknown = httpx.get(f"{base}/labels/?campaign_id=1", headers=analyst)
    assert unknown.status_code == 400 and "campaign, dialogue" in unknown.json()["detail"]
    for params in ({"privacy_status": "secret"}, {"phase": "x"}):
        assert httpx.get(f"{base}/dialogues/" if "privacy_status" in params else f"{base}/campaigns/",
                         params=params, headers=analyst).status_code == 400
    assert httpx.get(f"{base}/labels/?updated_after=yesterday", headers=analyst).status_code == 400
    # authentication, then permission, then the input
    assert httpx.get(f"{base}/labels/?item=%00").status_code == 401
    physician = {"Authorization": f"Token {tokens['physician']}"}
    assert httpx.get(f"{base}/labels/?item=%00", headers=physician).status_code == 403
    nul = httpx.get(f"{base}/labels/?item=%00", headers=analyst)
    assert nul.status_code == 400 and "NUL character" in nul.json()["detail"]
    # the token endpoint: detail on every error, 401 for a wrong password
    blank = httpx.post(f"{base}/auth/token/", json={"username": "", "password": ""})
    assert blank.status_code == 400 and "username" in blank.json()["detail"]
    wrong = httpx.post(f"{base}/auth/token/", json={"username": world.alpha.analyst.username, "password": "no"})
    assert wrong.status_code == 401 and wrong.json()["detail"]
    # the docs with a token, as docs/api.md says
    assert httpx.get(f"{base}/docs/", headers=analyst).status_code == 200
    assert httpx.get(f"{base}/docs/", headers={"Authorization": "Token bad"}).status_code == 401


pytestmark = pytest.mark.integration
