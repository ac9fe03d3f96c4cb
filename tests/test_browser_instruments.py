"""Browser tests of instruments beyond the Mini-CEX (Debian's chromium through Playwright): rating HIVMedQA's 0-5
criteria on a question-answer item and AgentClinic's 1-10 ratings by keyboard, and building an instrument."""

import json

import pytest

from annotation.campaigns import add_rater, assign, create_campaign
from annotation.importers import import_dialogues
from annotation.instruments import install_shipped
from annotation.models import Assignment, Corpus, Label, ScaleVersion
from tests.conftest import ARTIFACTS
from tests.test_browser_annotation import login, wait_all_saved


def campaign_on(version, corpus, physician, name):
    campaign = create_campaign(name=name, corpus=corpus, scale_version=version, overlap=1)
    add_rater(campaign, physician)
    assign(campaign)
    return Assignment.objects.get(campaign=campaign)


@pytest.mark.browser
def test_physician_rates_a_0_to_5_rubric_on_an_answer_by_keyboard(page, make_user):
    physician = make_user("qa", "physician", password="a-long-password-1")
    version = install_shipped("hivmedqa-medgpt")[0]
    corpus = Corpus.objects.create(name="answers")
    import_dialogues(corpus, [json.dumps({
        "id": "q1", "question": "How often should antiretroviral therapy be taken?",
        "answer": "Every day, at about the same time.", "reference": "Daily, without interruption."})])
    assignment = campaign_on(version, corpus, physician, "Rubric")
    login(page, "qa", "a-long-password-1")
    page.goto(f"/rate/{assignment.pk}/")
    chat = page.locator(".chat-pane")
    assert chat.locator(".qa-question").inner_text().startswith("Question")
    assert "Every day" in chat.locator(".qa-answer").inner_text()
    assert "Daily, without interruption." in chat.locator(".qa-reference").inner_text()
    assert page.locator("fieldset.item").nth(0).locator("label.choice").all_inner_texts()[0].startswith("0")
    # HIVMedQA's rubric is scored in half points: a digit answers and waits a moment for "." "5"; the next digit
    # answers the next criterion
    for key in ["4", "5", "3", ".", "5", "0", "5"]:  # 4, 5, 3.5, 0, 5
        page.keyboard.press(key)
    wait_all_saved(page)
    assert page.locator("#submit-btn").is_enabled()
    page.keyboard.press("k")  # back to "bias" (the last item stays active after its answer)
    page.keyboard.press("ArrowRight")  # 0 -> 0.5, the next point
    wait_all_saved(page)
    values = dict(Label.objects.filter(assignment=assignment).values_list("item__code", "value"))
    assert values == {"comprehension": 4, "reasoning": 5, "knowledge": 3.5, "bias": 0.5, "harm": 5}
    page.keyboard.press("9")  # not a point of 0-5: nothing changes
    page.reload()
    checked = page.eval_on_selector_all(
        "fieldset.item", "els => els.map(el => (el.querySelector('input:checked') || {}).value || '')")
    assert checked == ["4", "5", "3.5", "0.5", "5"]
    page.screenshot(path=str(ARTIFACTS / "rating-rubric.png"), full_page=False)
    page.locator("#submit-btn").click()
    page.wait_for_url("**/rate/")
    assignment.refresh_from_db()
    assert assignment.status == "submitted"


@pytest.mark.browser
def test_ten_point_scales_take_two_digits_or_arrows_and_text_items_take_a_comment(page, make_user):
    physician = make_user("ten", "physician", password="a-long-password-1")
    version = install_shipped("agentclinic-ratings")[0]
    corpus = Corpus.objects.create(name="clinic")
    import_dialogues(corpus, [json.dumps({"id": "c1", "self_report": "I have a cough.", "turns": [
        {"role": "doctor", "text": "Since when?"}, {"role": "patient", "text": "Two weeks."}]})])
    assignment = campaign_on(version, corpus, physician, "Clinic")
    login(page, "ten", "a-long-password-1")
    page.goto(f"/rate/{assignment.pk}/")
    fieldsets = page.locator("fieldset.item")
    page.keyboard.press("1")
    page.keyboard.press("0")  # confidence: 10 (two keystrokes)
    page.keyboard.press("7")  # compliance: 7 (cannot grow: moves on at once)
    page.keyboard.press("1")  # consultation: 1, waits for a second digit, then moves on by itself
    page.wait_for_function("() => document.querySelectorAll('fieldset.item')[3].classList.contains('active')")
    page.keyboard.press("ArrowLeft")  # doctor: nothing chosen yet, left starts from the top (10)
    page.keyboard.press("ArrowLeft")  # 9
    page.keyboard.press("j")
    for key in ["6", "5", "8"]:  # patient, measurement, empathy
        page.keyboard.press(key)
    assert "active" in (fieldsets.nth(7).get_attribute("class") or "")  # the free-text item
    page.keyboard.press("Enter")
    page.keyboard.type("The doctor did not open with an inviting question.")
    page.keyboard.press("Escape")
    page.keyboard.press("k")  # keys work again once the box is left
    page.keyboard.press("ArrowRight")  # empathy 8 -> 9
    wait_all_saved(page)
    page.wait_for_function("() => document.querySelectorAll('fieldset.item')[7].querySelector('.save-state')"
                           ".dataset.state === 'saved'")
    labels = {code: (value, comment) for code, value, comment in Label.objects.filter(
        assignment=assignment).values_list("item__code", "value", "comment")}
    assert {code: value for code, (value, _) in labels.items()} == {
        "confidence": 10, "compliance": 7, "consultation": 1, "doctor": 9, "patient": 6, "measurement": 5,
        "empathy": 9, "comments": None}
    assert labels["comments"][1] == "The doctor did not open with an inviting question."
    assert page.locator("#submit-btn").is_enabled()  # the comment item is optional
    assert page.locator("#answered-count").inner_text() == "7"


@pytest.mark.browser
def test_coordinator_builds_and_publishes_an_instrument_in_the_browser(page, make_user):
    make_user("builder", "coordinator", password="a-long-password-1")
    login(page, "builder", "a-long-password-1")
    page.goto("/scales/")
    page.get_by_role("link", name="New instrument").click()
    page.get_by_label("Name (English)").fill("Ward round rubric")
    page.get_by_label("Slug").fill("ward-round")
    page.get_by_label("Rates").select_option("answer")
    page.get_by_role("button", name="Create draft").click()
    page.wait_for_url("**/scales/ward-round/v1/")
    page.locator("#add-dimension").get_by_label("Code").fill("1")
    page.locator("#add-dimension").get_by_label("Name (English)").fill("Content")
    page.get_by_role("button", name="Add dimension").click()
    form = page.locator("#add-item")
    form.get_by_label("Code").fill("1.1")
    form.get_by_label("Text (English)").fill("Accurate against the reference")
    form.get_by_label("Response type").select_option("scale")
    form.get_by_label("Scale: lowest point").fill("0")
    form.get_by_label("Scale: highest point").fill("10")
    form.get_by_label("Scale: anchor labels").fill("0 = wrong\n10 = exact")
    page.get_by_role("button", name="Add item").click()
    page.wait_for_selector("tr[data-code='1.1']")
    assert "0–10" in page.locator("tr[data-code='1.1']").inner_text()
    page.get_by_role("button", name="Publish version 1").click()
    page.wait_for_selector("text=is published")
    version = ScaleVersion.objects.get(scale__slug="ward-round")
    assert version.status == "published" and version.items.get().allowed_values() == list(range(11))
    assert version.scale.target == "answer"
