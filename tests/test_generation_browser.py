"""A coordinator in a real browser imports cases, starts a generation job for two doctor models at two
temperatures, and watches it finish through a real worker (htmx polling), then reaches the campaign form."""

import json

import pytest
from playwright.sync_api import expect

from projects.scoping import active_project_id
from scoring.llm.models import LLMEndpoint
from tests.conftest import ARTIFACTS, WorkerProcess, purge_queues
from tests.fake_openai import FakeOpenAI
from tests.generation_fake import Clinic
from tests.test_generation import OSCE, SELF


@pytest.mark.browser
@pytest.mark.integration
def test_coordinator_generates_dialogues_in_the_browser(page, make_user, tmp_path, monkeypatch):
    make_user("gencoord", "coordinator", password="a-long-password-1")
    cases_file = tmp_path / "cases.jsonl"
    cases_file.write_text(json.dumps(OSCE) + "\n" + json.dumps(SELF) + "\n")
    purge_queues()
    worker = WorkerProcess(pool="threads", concurrency=4)
    try:
        worker.wait_ready()
        with FakeOpenAI(latency=0.02, responder=Clinic(diagnose_at=2)) as server:
            LLMEndpoint.objects.create(name="Browser clinic", base_url=server.base_url).projects.add(
                active_project_id())  # an administrator's, granted to the project
            page.goto("/accounts/login/")
            page.get_by_label("Username").fill("gencoord")
            page.get_by_label("Password").fill("a-long-password-1")
            page.get_by_role("button", name="Log in").click()
            page.wait_for_url("**/")
            page.get_by_role("link", name="Generate").click()
            page.get_by_role("link", name="Import cases").click()
            page.get_by_label("Cases file (JSON Lines)").set_input_files(str(cases_file))
            page.get_by_label("Case set").fill("Browser cases")
            page.get_by_role("button", name="Import").click()
            expect(page.get_by_text("Imported 2 case(s) into Browser cases")).to_be_visible()
            page.get_by_role("link", name="Generate dialogues").click()
            page.get_by_label("Output corpus").fill("Browser generated")
            page.get_by_label("Doctor model(s) under test").fill("doc-a, doc-b")
            page.get_by_label("Doctor endpoint", exact=True).select_option(label="Browser clinic")
            page.get_by_label("Patient simulator model").fill("patient-sim")
            page.get_by_label("Patient endpoint", exact=True).select_option(label="Browser clinic")
            page.get_by_label("Doctor temperatures").fill("0.2, 0.8")
            page.get_by_role("button", name="Start generating").click()
            page.wait_for_selector('#generation-progress[data-status="succeeded"]', timeout=60_000)
            assert "8 of 8" in page.locator('[data-testid="job-figures"]').inner_text()
            assert page.locator('[data-testid="accuracy-by-condition"] tbody tr').count() == 4
            page.screenshot(path=str(ARTIFACTS / "generation-job.png"), full_page=True)
            page.get_by_role("link", name="Start an annotation campaign on it").click()
            assert page.get_by_label("Corpus").input_value() != ""
    finally:
        worker.stop()
