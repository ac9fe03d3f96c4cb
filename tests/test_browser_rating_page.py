"""In the browser (Debian's chromium), at 1366 and 1024 px: the rating page says where a
dialogue stands in the rater's queue, never past the total and the same before and after submitting; a physician
whose browser asks for Chinese rates a whole dialogue in Chinese on a phone (390 px): buttons, labels, items and the
words its script writes, and the language of the item texts stored with her answers."""

import re

import pytest

from annotation.demo import DEMO_FINISHED
from annotation.models import Assignment
from tests.conftest import ARTIFACTS, wait_js
from tests.demo_world import load_full_demo
from tests.factories import campaign_with

WIDTHS = (1366, 1024)


def login(page, username: str, password: str) -> None:
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(re.compile(r".*/$"))


def place(page) -> tuple[int, int]:
    text = page.get_by_test_id("queue-place").inner_text()
    match = re.fullmatch(r"Dialogue (\d+) of (\d+)", text) or re.fullmatch(r"第 (\d+) 个对话，共 (\d+) 个", text)
    assert match, text
    return int(match.group(1)), int(match.group(2))


def fits(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


@pytest.mark.browser
def test_a_rated_demo_dialogue_reads_its_place_within_the_total(page, transactional_db, demo_scope):
    load_full_demo()
    login(page, "physician", "physician-demo")
    page.get_by_test_id("start-here").get_by_role("link", name="A dialogue you rated in the finished demo study") \
        .click()
    page.wait_for_url(re.compile(r".*/rate/\d+/$"))
    rated = Assignment.objects.filter(rater__username="physician", campaign__name=DEMO_FINISHED)
    total = rated.count()
    assert total == 48 and not rated.exclude(status="submitted").exists()
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.reload()
        assert place(page) == (1, total)  # was "Dialogue 49 of 48"
        assert f"{total} submitted" in page.locator(".rate-head").inner_text()
        assert page.get_by_test_id("queue-place").is_visible() and fits(page), width
    last = rated.order_by("-position", "-id").first()
    page.goto(f"/rate/{last.pk}/")
    assert place(page) == (total, total)


@pytest.mark.browser
def test_the_place_stays_when_a_dialogue_is_submitted(page, make_user):
    rater = make_user("placed", "physician", password="a-long-password-1")
    campaign = campaign_with([rater], n=3, overlap=1, name="Places")
    first = Assignment.objects.filter(campaign=campaign).order_by("position", "id").first()
    login(page, "placed", "a-long-password-1")
    page.set_viewport_size({"width": 1366, "height": 900})
    page.goto(f"/rate/{first.pk}/")
    assert place(page) == (1, 3)
    for key in ["1"] * 23 + ["2"]:
        page.keyboard.press(key)
    wait_js(page, "() => !document.getElementById('submit-btn').disabled")
    # n on an answered dialogue not submitted asks first; saying no stays
    asked = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    page.keyboard.press("n")
    assert asked and "not submitted" in asked[0] and page.url.endswith(f"/rate/{first.pk}/")
    page.keyboard.press("Enter")  # Enter submits, as the button does
    page.wait_for_url(re.compile(rf".*/rate/(?!{first.pk}/)\d+/$"))
    assert place(page) == (2, 3)  # the next one
    page.set_viewport_size({"width": 1024, "height": 800})
    page.goto(f"/rate/{first.pk}/")
    # the submitted one keeps its place (before, it read "Dialogue 2 of 3" now: done + 1)
    assert place(page) == (1, 3) and "1 submitted" in page.locator(".rate-head").inner_text()


@pytest.mark.browser
def test_a_physician_rates_a_whole_dialogue_in_chinese_on_a_phone(page, make_user):
    """Her browser asks for Chinese: at 390 px the page is in Chinese (its words, the script's, the items), nothing
    overflows, and every stored answer records that the item texts were Chinese."""
    rater = make_user("zh-rater", "physician", password="a-long-password-1")
    campaign = campaign_with([rater], n=2, overlap=1, name="中文 campaign", instructions="Rate every item.")
    assignment = Assignment.objects.filter(campaign=campaign).order_by("position", "id").first()
    login(page, "zh-rater", "a-long-password-1")
    page.context.set_extra_http_headers({"Accept-Language": "zh-CN,zh;q=0.9"})
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"/rate/{assignment.pk}/")
    assert page.locator("html").get_attribute("lang") == "zh-hans"
    assert place(page) == (1, 2)
    buttons = {name: page.locator(selector).inner_text() for name, selector in (
        ("submit", "#submit-btn"), ("skip", "#skip-btn"), ("flag", "#flag-btn"), ("next", "#next-link"),
        ("redact", "#redact-btn"))}
    assert buttons["submit"].startswith("提交（还剩 24 项）"), buttons  # written by the script
    assert buttons["skip"] == "跳过…" and buttons["flag"] == "报告问题…", buttons
    assert buttons["next"].startswith("下一个对话") and buttons["redact"] == "隐去所选文字", buttons
    assert page.locator("details.instructions summary").inner_text() == "评分须知"
    assert {s.strip() for s in page.locator(".turn .speaker").all_inner_texts()} == {"医生", "患者"}
    first = page.locator("fieldset.item").first
    assert first.locator("legend span[lang=zh]").inner_text() == "围绕患者主诉询问现病史"
    assert first.locator("label.choice.yes").inner_text().startswith("是")
    page.locator("#skip-btn").click()
    dialog = page.locator("#skip-dialog")
    assert dialog.locator("h2").inner_text() == "跳过此对话"
    dialog.get_by_role("button", name="取消").click()
    page.keyboard.press("1")  # the first item: "是"; the script says it is saved, in Chinese
    wait_js(page, "() => document.querySelector('fieldset.item .save-state').dataset.state === 'saved'")
    assert first.locator(".save-state").inner_text() == "已保存"
    for key in ["1"] * 22 + ["2"]:
        page.keyboard.press(key)
    wait_js(page, "() => !document.getElementById('submit-btn').disabled")
    assert page.locator("#submit-btn").inner_text() == "提交"
    selector = ".rate button, .rate summary, .rate label, .rate .speaker, .rate h2, .rate-head p"
    words = " | ".join(page.locator(selector).all_inner_texts())
    for english in ("Submit", "Skip", "Flag", "Comment", "Instructions", "Doctor", "Patient", "Keyboard", "Saved",
                    "Redact", "Cancel", "Not started", "In progress"):
        assert english not in words, english
    assert fits(page)
    page.screenshot(path=str(ARTIFACTS / "rating-page-zh-390.png"), full_page=False)
    page.locator("#submit-btn").click()
    page.wait_for_url(re.compile(rf".*/rate/(?!{assignment.pk}/)\d+/$"))
    assert page.locator("html").get_attribute("lang") == "zh-hans" and place(page) == (2, 2) and fits(page)
    stored = list(assignment.labels.values_list("item_language", flat=True))
    assert len(stored) == 24 and set(stored) == {"zh"}
    assert Assignment.objects.get(pk=assignment.pk).status == "submitted"
