"""A download whose figures are still being computed, in Chromium: the "Preparing the file" page follows the job
and, once it has succeeded, fetches the file by itself and says the file is ready, with a link to download it again
(the file is an attachment, so the page stays: it must not go on saying "Computing…"). In English and Chinese."""

from __future__ import annotations

import random
import re

import pytest
from django.urls import reverse

from core.jobs.models import Job
from tests.conftest import browser_page
from tests.factories import campaign_with
from tests.test_figures import run_due
from tests.test_reports import rate_everything

PASSWORD = "correct-horse-battery"


@pytest.fixture
def rated(make_user, coordinator):
    raters = [make_user(f"dl{i}", "physician") for i in range(3)]
    campaign = campaign_with(raters, n=4, overlap=3, name="Download")
    rate_everything(campaign, random.Random(5))
    run_due()  # the campaign's reports are stored; the methods page's figures are not yet
    return campaign


def login(page, username: str) -> None:
    page.goto("/accounts/login/")
    page.locator("input[name=username]").fill(username)
    page.locator("input[name=password]").fill(PASSWORD)
    page.locator("form button[type=submit]").last.click()
    page.wait_for_url(re.compile(r".*/$"))


@pytest.mark.browser
@pytest.mark.parametrize("locale,ready,again,computing", [
    ("en-GB", "The file is ready", "Download it again", "Computing…"),
    ("zh-CN", "文件已就绪", "重新下载", "正在计算…"),
], ids=["en", "zh_Hans"])
def test_the_preparing_page_fetches_the_file_and_says_it_is_ready(browser, live_server, transactional_db, instrument,
                                                                   rated, coordinator, locale, ready, again,
                                                                   computing):
    url = reverse("study-archive-document", args=["methods.md"])
    with browser_page(browser, live_server.url, locale=locale) as page:
        login(page, coordinator.username)
        page.goto(url)
        pending = page.get_by_test_id("download-pending")
        assert computing in pending.inner_text()
        assert Job.objects.filter(kind=Job.Kind.STUDY_METHODS, status=Job.Status.QUEUED).exists()
        with page.expect_download(timeout=15_000) as download:
            run_done = run_due(Job.Kind.STUDY_METHODS)  # a worker stores the figures; the page notices
            assert run_done
        assert download.value.suggested_filename == "methods.md"
        state = page.get_by_test_id("download-ready")
        state.wait_for()
        text = state.inner_text()
        assert ready in text and computing not in page.locator("main").inner_text()
        link = state.get_by_test_id("download-again")
        assert link.inner_text().strip() == again and link.get_attribute("href") == url
        with page.expect_download() as again_download:
            link.click()
        assert again_download.value.suggested_filename == "methods.md"
        assert page.get_by_test_id("download-ready").is_visible()  # still the page that says so
