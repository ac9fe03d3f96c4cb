"""Real browser (Debian's chromium through Playwright) against the live server."""

import pytest
from playwright.sync_api import expect

from annotation.demo import load_demo
from tests.conftest import ARTIFACTS


@pytest.mark.browser
def test_demo_physician_logs_in_and_reaches_home(page, transactional_db):
    load_demo()
    page.goto("/")
    assert "/accounts/login/" in page.url
    page.get_by_label("Username").fill("physician")
    page.get_by_label("Password").fill("physician-demo")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/")
    expect(page.get_by_role("heading", name="Your assignments")).to_be_visible()
    page.get_by_test_id("account-menu").locator("summary").click()  # the user's roles are in the account menu
    expect(page.get_by_text("Physician (annotator)")).to_be_visible()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "physician-home.png"), full_page=True)
    assert (ARTIFACTS / "physician-home.png").stat().st_size > 10_000


@pytest.mark.browser
def test_scale_page_switches_language(page, transactional_db, make_user):
    make_user("reader", "physician", password="a-long-password-1")
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill("reader")
    page.get_by_label("Password").fill("a-long-password-1")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/")
    page.goto("/scales/llm-mini-cex/")
    assert page.locator("tr[data-code='1.1']").inner_text().startswith("1.1")
    page.get_by_role("link", name="中文").click()
    assert "围绕患者主诉询问现病史" in page.locator("tr[data-code='1.1']").inner_text()
    page.screenshot(path=str(ARTIFACTS / "scale-zh.png"), full_page=True)
