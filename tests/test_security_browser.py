"""In a real browser: the pages the other browser tests do not visit (the report with its plots,
the judge and generation forms, the admin, the API documentation) work under the Content-Security-Policy and
report no violation (the ``page`` fixture fails the test on any)."""

import random

import pytest

from annotation.models import GoldLabel
from projects.scoping import active_project_id
from scoring.llm.models import LLMEndpoint
from tests.conftest import ARTIFACTS, wait_js, wait_until
from tests.factories import campaign_with
from tests.test_browser_annotation import login
from tests.test_report_pages import run_pending
from tests.test_reports import rate_everything


@pytest.mark.browser
def test_pages_work_under_the_content_security_policy(page, make_user, fake_llm):
    make_user("boss", "admin", password="a-long-password-1", is_superuser=True)
    raters = [make_user(f"doc{i}", "physician") for i in range(3)]
    campaign = campaign_with(raters, n=6, overlap=3, name="Plots")
    rate_everything(campaign, random.Random(2))
    # a server that answers: one that does not is offered with its reason beside its name
    LLMEndpoint.objects.create(name="Local vLLM", base_url=fake_llm.base_url, api_key_env="LLM_KEY_VLLM").projects.add(
        active_project_id())  # granted to the project
    login(page, "boss", "a-long-password-1")

    page.goto(f"/campaigns/{campaign.pk}/report/")
    run_pending()
    page.goto(f"/campaigns/{campaign.pk}/report/")
    plot = page.locator("figure.plot svg").first
    plot.wait_for()
    # the plots' colours come from presentation attributes: drawn, not black boxes
    assert plot.locator("[fill='#ffffff']").count() > 0
    page.screenshot(path=str(ARTIFACTS / "csp-report.png"), full_page=False)

    # behaviour moved out of inline handlers: a gold value is saved on choosing it; the reassign form posts to
    # the chosen assignment
    trial = campaign_with(raters[:1], n=1, overlap=1, phase="trial", name="Trial")
    dialogue = trial.corpus.dialogues.get()
    page.goto(f"/campaigns/{trial.pk}/dialogues/{dialogue.pk}/")
    # choosing posts the form and the answer redirects back here: wait for that page before leaving it
    with page.expect_navigation(url=f"**/campaigns/{trial.pk}/dialogues/{dialogue.pk}/"):
        page.get_by_label("Gold for 1.1", exact=True).select_option("1")
    wait_until(lambda: GoldLabel.objects.filter(dialogue=dialogue, item__code="1.1", value=1).exists(), 10,
               "the gold value was not saved")
    page.goto(f"/campaigns/{trial.pk}/")
    assignment = trial.assignments.get()
    page.locator("#reassign-assignment").select_option(index=1)
    action = page.locator("#reassign-form").evaluate("form => form.getAttribute('action')")
    assert action == f"/assignments/{assignment.pk}/reassign/"

    page.goto("/judges/new/")
    page.get_by_label("Endpoint").select_option(label="Local vLLM")
    page.goto("/generation/jobs/new/")
    page.get_by_label("Doctor endpoint", exact=True).select_option(label="Local vLLM")

    page.goto("/admin/scoring/llmendpoint/")
    page.get_by_text("Local vLLM").wait_for()
    page.goto("/admin/scoring/llmendpoint/add/")
    page.get_by_label("Api key env").wait_for()

    page.goto("/accounts/token/")
    page.get_by_role("button", name="Make a token").click()
    page.get_by_test_id("token-expires").wait_for()

    page.goto("/api/docs/")
    page.locator(".swagger-ui .info").wait_for()
    wait_js(page, "document.querySelectorAll('.opblock').length > 5")
    page.screenshot(path=str(ARTIFACTS / "csp-api-docs.png"), full_page=False)
