"""Browser tests of the annotation workflow (Debian's chromium through Playwright)."""

import re

import pytest

from annotation.models import Assignment, Corpus, Label
from tests.conftest import ARTIFACTS, wait_js
from tests.factories import campaign_with


def login(page, username, password):
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(re.compile(r".*/$"))


def wait_all_saved(page):
    wait_js(page, """() => {
        const states = Array.from(document.querySelectorAll('fieldset.item .save-state'));
        return states.length && states.every(s => s.dataset.state === 'saved');
    }""")


@pytest.mark.browser
def test_physician_rates_by_keyboard_reloads_submits_and_moves_on(page, make_user):
    physician = make_user("kbd", "physician", password="a-long-password-1")
    campaign = campaign_with([physician], n=2, overlap=1, name="Keyboard")
    first, second = Assignment.objects.filter(campaign=campaign).order_by("position")
    login(page, "kbd", "a-long-password-1")
    page.get_by_role("link", name="Start rating").click()
    page.wait_for_url(f"**/rate/{first.pk}/")
    answers = ["1", "0"] * 11 + ["1"]  # 23 binary items, then item 4
    for key in answers:
        page.keyboard.press(key)
    page.keyboard.press("3")  # item 4: Excellent
    wait_all_saved(page)
    assert page.locator("#submit-btn").is_enabled()
    page.keyboard.press("ArrowUp")
    page.keyboard.press("k")  # back to item 3.6; choosing again changes the answer
    page.keyboard.press("1")
    wait_all_saved(page)
    page.reload()
    checked = page.eval_on_selector_all(
        "fieldset.item", "els => els.map(el => (el.querySelector('input:checked') || {}).value || '')")
    expected = answers[:]
    expected[21] = "1"
    assert checked == expected + ["3"]
    values = dict(Label.objects.filter(assignment=first).values_list("item__code", "value"))
    assert values["1.1"] == 1 and values["1.2"] == 0 and values["3.6"] == 1 and values["4"] == 3
    assert len(values) == 24
    page.screenshot(path=str(ARTIFACTS / "rating-page.png"), full_page=False)
    page.locator("#submit-btn").click()
    page.wait_for_url(f"**/rate/{second.pk}/")
    first.refresh_from_db()
    assert first.status == "submitted"


@pytest.mark.browser
def test_no_click_is_lost_when_the_server_is_unreachable(page, make_user):
    physician = make_user("offline", "physician", password="a-long-password-1")
    campaign = campaign_with([physician], n=1, overlap=1, name="Offline")
    assignment = Assignment.objects.get(campaign=campaign)
    login(page, "offline", "a-long-password-1")
    page.goto(f"/rate/{assignment.pk}/")
    # The network fails for every label save.
    page.route("**/label/", lambda route: route.abort("connectionrefused"))
    page.locator("fieldset.item").nth(0).locator("label.choice.yes").click()
    page.locator("fieldset.item").nth(1).locator("label.choice.no").click()
    page.wait_for_selector("fieldset.item .save-state[data-state=retrying]")
    assert page.locator("#sync-banner").is_visible()
    assert "not saved yet" in page.locator("#sync-banner").inner_text()
    assert not Label.objects.exists()
    # The rater reloads while still offline: the answers come back from the browser's outbox.
    page.evaluate("window.onbeforeunload = null")
    page.reload(wait_until="domcontentloaded")
    assert page.locator("fieldset.item").nth(0).locator("input[value='1']").is_checked()
    assert page.locator("fieldset.item").nth(1).locator("input[value='0']").is_checked()
    # The server comes back: everything is sent and confirmed.
    page.unroute("**/label/")
    page.evaluate("window.dispatchEvent(new Event('online'))")
    wait_js(page, "document.querySelectorAll('fieldset.item .save-state[data-state=saved]').length === 2")
    assert dict(Label.objects.values_list("item__code", "value")) == {"1.1": 1, "1.2": 0}
    assert page.locator("#sync-banner").is_hidden()


@pytest.mark.browser
def test_server_error_is_retried_until_saved(page, make_user):
    physician = make_user("flaky", "physician", password="a-long-password-1")
    campaign = campaign_with([physician], n=1, overlap=1, name="Flaky")
    assignment = Assignment.objects.get(campaign=campaign)
    login(page, "flaky", "a-long-password-1")
    page.goto(f"/rate/{assignment.pk}/")
    failures = {"left": 2}

    def flaky(route):
        if failures["left"]:
            failures["left"] -= 1
            route.fulfill(status=503, content_type="application/json", body='{"detail": "maintenance"}')
        else:
            route.continue_()

    page.route("**/label/", flaky)
    page.locator("fieldset.item").nth(2).locator("label.choice.yes").click()
    page.wait_for_selector("fieldset.item .save-state[data-state=saved]", timeout=20_000)
    assert failures["left"] == 0
    assert Label.objects.get().value == 1


@pytest.mark.browser
def test_coordinator_sees_the_line_numbers_of_a_bad_import(page, make_user, tmp_path):
    make_user("coord2", "coordinator", password="a-long-password-1")
    login(page, "coord2", "a-long-password-1")
    page.goto("/corpora/upload/")
    path = tmp_path / "corpus.jsonl"
    path.write_text(
        '{"id": "a", "self_report": "cough", "turns": [{"role": "doctor", "text": "Hello"}]}\n'
        '{"id": "b", "self_report": "fever", "turns": []}\n'
        '{"id": "c", "self_report": "rash", "turns": [{"role": "doctor", "text": "Hi"}]}\n'
        'this is not json\n', encoding="utf-8")
    page.get_by_label("Corpus", exact=True).fill("Browser import")
    page.get_by_label("File").set_input_files(str(path))
    page.get_by_role("button", name="Import").click()
    errors = page.locator("#import-errors")
    errors.wait_for()
    text = errors.inner_text()
    assert "Nothing was imported" in text and "line 2:" in text and "line 4:" in text and "line 1:" not in text
    assert not Corpus.objects.filter(name="Browser import").exists()
    page.screenshot(path=str(ARTIFACTS / "import-errors.png"))
