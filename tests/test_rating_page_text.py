"""Issue 26 items 7 and 9 on the server side: the rating page's place in the queue, and its words in English and
中文 (the browser tests are in tests/test_browser_rating_page.py)."""

import json
import re

import pytest
from django.urls import reverse

from annotation import labels, ui_text
from annotation.campaigns import queue_place, reassign
from annotation.models import Assignment
from tests.factories import answer_all, campaign_with


@pytest.fixture
def rater(make_user):
    return make_user("queue-rater", "physician")


def place_text(client, assignment) -> str:
    html = client.get(reverse("rate", args=[assignment.pk])).content.decode()
    return re.search(r'data-testid="queue-place">([^<]*)<', html).group(1)


def test_the_place_of_a_dialogue_stays_when_it_is_submitted_and_never_exceeds_the_total(client, rater):
    campaign = campaign_with([rater], n=3, overlap=1, name="Queue")
    first, second, third = Assignment.objects.filter(campaign=campaign, rater=rater).order_by("position", "id")
    client.force_login(rater)
    assert [place_text(client, a) for a in (first, second, third)] == [
        "Dialogue 1 of 3", "Dialogue 2 of 3", "Dialogue 3 of 3"]
    for assignment in (first, second, third):
        answer_all(assignment, rater)
        labels.submit(assignment, rater)
    # Every dialogue rated: before, the first one read "Dialogue 4 of 3" (done + 1 of the total).
    assert [place_text(client, a) for a in (first, second, third)] == [
        "Dialogue 1 of 3", "Dialogue 2 of 3", "Dialogue 3 of 3"]
    assert queue_place(third) == {"place": 3, "total": 3, "done": 3, "skipped": 0}
    html = client.get(reverse("rate", args=[third.pk])).content.decode()
    assert "3 submitted" in html


def test_withdrawn_work_leaves_the_queue_and_the_count(client, rater, make_user):
    other = make_user("queue-other", "physician")
    campaign = campaign_with([rater, other], n=6, overlap=1, name="Withdrawn")
    mine = list(Assignment.objects.filter(campaign=campaign, rater=rater).order_by("position", "id"))
    moved = reassign(mine[0], other)
    withdrawn = Assignment.objects.get(pk=mine[0].pk)
    total = len(mine) - 1
    assert queue_place(withdrawn) == {"place": None, "total": total, "done": 0, "skipped": 0}
    assert queue_place(mine[-1])["place"] == total
    client.force_login(rater)
    assert place_text(client, withdrawn) == f"Withdrawn from your queue of {total}"
    client.force_login(other)
    assert place_text(client, moved).endswith(f"of {Assignment.objects.filter(rater=other).count()}")


def test_the_chinese_switch_translates_the_rating_page_words(client, rater):
    campaign = campaign_with([rater], n=1, overlap=1, name="中文", instructions="Rate carefully.")
    assignment = Assignment.objects.get(campaign=campaign, rater=rater)
    client.force_login(rater)
    english = client.get(reverse("rate", args=[assignment.pk])).content.decode()
    for words in ("Instructions", "Comment", ">Submit<", "Skip…", "Flag a problem…", "Doctor", "Patient",
                  "Patient&#x27;s self-report", "Keyboard shortcuts", "Dialogue 1 of 1"):
        assert words in english, words
    chinese = client.get(reverse("rate", args=[assignment.pk]), {"lang": "zh"}).content.decode()
    for words in ("评分须知", "评论", ">提交<", "跳过…", "报告问题…", "医生", "患者", "患者自述", "键盘快捷键",
                  "第 1 个对话，共 1 个", "未开始", "对话评分"):
        assert words in chinese, words
    visible = re.sub(r"<[^>]+>", " ", chinese.split('<div class="rate"', 1)[1])
    for words in ("Instructions", "Comment", "Submit", "Skip", "Flag a problem", "Doctor", "Patient", "Keyboard",
                  "Not started", "items answered"):
        assert words not in visible, words
    # The script's words come as one JSON block in the page's language (no inline script: the CSP forbids it).
    block = re.search(r'<script id="ui-text" type="application/json">(.*?)</script>', chinese).group(1)
    assert json.loads(block) == ui_text.script_phrases("zh")
    # The choice is remembered, as on the scale page.
    assert "评分须知" in client.get(reverse("rate", args=[assignment.pk])).content.decode()
    assert "编号" in client.get(reverse("scale-detail", args=["llm-mini-cex"])).content.decode()


def test_every_phrase_has_both_languages_and_the_same_placeholders():
    for table in (ui_text.PHRASES, ui_text.SCRIPT_PHRASES):
        for key, (english, chinese) in table.items():
            assert chinese.strip() or key == "answered_before", key
            assert set(re.findall(r"\{(\w+)\}", english)) == set(re.findall(r"\{(\w+)\}", chinese)), key
    assert ui_text.phrase("dialogue_position", "fr", n=2, total=5) == "Dialogue 2 of 5"


def test_the_physicians_home_the_rating_page_and_the_coordinators_table_count_alike(client, rater, coordinator):
    """One definition of the counts (annotation.campaigns.progress_counts): of four dialogues one submitted, one
    skipped, two open read "1 / 4 (1 skipped)", 25 % on the physician's home page, the rating page, the
    coordinator's rater table and the API (before, the home page counted the skip as done: "2 / 4", 50 %)."""
    campaign = campaign_with([rater], n=4, overlap=1, name="Counted")
    first, second, third, _ = Assignment.objects.filter(campaign=campaign, rater=rater).order_by("position", "id")
    answer_all(first, rater)
    labels.submit(first, rater)
    labels.skip(second, rater, "not my field")
    answer_all(third, rater)  # answered, not submitted: not done
    client.force_login(rater)
    home = client.get(reverse("home")).content.decode()
    assert "1 / 4" in home and "(1 skipped)" in home and 'value="25"' in home
    page = client.get(reverse("rate", args=[third.pk])).content.decode()
    assert "1 submitted · 1 skipped" in page
    client.force_login(coordinator)
    table = client.get(reverse("campaign-detail", args=[campaign.pk])).content.decode()
    assert 'value="25" aria-label="25% submitted"' in table
    api = client.get(f"/api/campaigns/{campaign.pk}/progress/").json()
    assert [(r["submitted"], r["skipped"], r["total"], r["percent"]) for r in api] == [(1, 1, 4, 25)]
