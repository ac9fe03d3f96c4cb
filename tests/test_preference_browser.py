"""A physician completes preference comparisons by keyboard in a real browser (Debian's chromium)."""

import pytest
from playwright.sync_api import expect

from scoring.preference import services as preference
from scoring.preference.models import PreferenceAnswer, PreferenceTask
from tests.conftest import ARTIFACTS, wait_js
from tests.test_browser_annotation import login
from tests.test_preference import SOURCES, answers_jsonl


def wait_all_saved(page):
    wait_js(page, """() => {
        const states = Array.from(document.querySelectorAll('fieldset.criterion .save-state'));
        return states.length && states.every(s => s.dataset.state === 'saved');
    }""")


@pytest.mark.browser
def test_physician_completes_three_comparisons_by_keyboard(page, make_user):
    coordinator = make_user("pcoord", "coordinator")
    physician = make_user("pdoc", "physician", password="a-long-password-1")
    study = preference.create_study(name="Keyboard study", kind="answer", criteria="evaluation", overlap=1, seed=9,
                                    user=coordinator)
    preference.import_answers(study, answers_jsonl(1), coordinator)  # one item, three sources: three pairs
    preference.add_rater(study, physician, added_by=coordinator)
    preference.open_study(study, coordinator)
    tasks = list(PreferenceTask.objects.filter(study=study).order_by("position"))
    assert len(tasks) == 3
    login(page, "pdoc", "a-long-password-1")
    page.get_by_role("link", name="Compare").click()
    keys = [["a", "t", "b"], ["b", "b", "t"], ["t", "a", "a"]]
    for task, presses in zip(tasks, keys, strict=True):
        page.wait_for_url(f"**/compare/{task.pk}/")
        html = page.content().lower()
        assert all(source.lower() not in html for source in SOURCES)
        for key in presses:
            page.keyboard.press(key)
        wait_all_saved(page)
        if task == tasks[0]:
            # back to the first criterion and change it; the change is saved too
            page.keyboard.press("k")
            page.keyboard.press("k")
            page.keyboard.press("b")
            wait_all_saved(page)
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "preference-task.png"), full_page=False)
            presses = ["b", "t", "b"]
        assert page.locator("#submit-btn").is_enabled()
        page.keyboard.press("Enter")
        page.wait_for_url(lambda url, t=task: f"/compare/{t.pk}/" not in url)
        expected = dict(zip(study.criteria.values_list("code", flat=True), [
            {"a": "A", "t": "tie", "b": "B"}[k] for k in presses], strict=True))
        saved = dict(PreferenceAnswer.objects.filter(task=task).values_list("criterion__code", "choice"))
        assert saved == expected
    expect(page.get_by_text("No comparison is waiting for you.")).to_be_visible()
    assert set(PreferenceTask.objects.filter(study=study).values_list("status", flat=True)) == {"submitted"}
