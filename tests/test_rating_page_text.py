"""On the server side: the rating page's place in the queue; its words in the rater's language
(or the one the campaign fixes), the instrument's texts in it where the version has them, and the language each
answer records (the browser tests are in tests/test_browser_rating_page.py)."""

import json
import re

import pytest
from django.urls import reverse

from annotation import labels
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


ZH = {"accept-language": "zh-CN,zh;q=0.9"}
EN = {"accept-language": "en-US,en;q=0.9"}


def _visible(html: str) -> str:
    return re.sub(r"<[^>]+>", " ", html.split('<div class="rate"', 1)[1])


def test_the_rating_page_is_in_the_raters_language_and_the_items_in_it_too(client, rater):
    campaign = campaign_with([rater], n=1, overlap=1, name="中文", instructions="Rate carefully.")
    assignment = Assignment.objects.get(campaign=campaign, rater=rater)
    client.force_login(rater)
    english = client.get(reverse("rate", args=[assignment.pk]), headers=EN).content.decode()
    assert '<html lang="en">' in english
    for words in ("Instructions", "Comment", ">Submit<", "Skip…", "Flag a problem…", "Doctor", "Patient",
                  "s self-report", "Keyboard shortcuts", "Dialogue 1 of 1",
                  '<span lang="en">Enquire about current medical history'):
        assert words in english, words
    response = client.get(reverse("rate", args=[assignment.pk]), headers=ZH)
    chinese = response.content.decode()
    assert '<html lang="zh-hans">' in chinese and response["Content-Language"] == "zh-hans"
    for words in ("评分须知", "评论", ">提交<", "跳过…", "报告问题…", "医生", "患者", "患者自述", "键盘快捷键",
                  "第 1 个对话，共 1 个", "未开始", "对话评分", '<span lang="zh">围绕患者主诉询问现病史</span>',
                  'data-item-language="zh"', '<span lang="zh">医学问诊技能</span>'):
        assert words in chinese, words
    for words in ("Instructions", "Comment", "Submit", "Skip", "Flag a problem", "Doctor", "Patient", "Keyboard",
                  "Not started", "items answered", "Enquire about"):
        assert words not in _visible(chinese), words
    # The script's words come from Django's JavaScript catalogue of the page's language (no phrase block).
    assert 'id="ui-text"' not in chinese
    assert f'src="{reverse("javascript-catalog")}?l=zh-hans"' in chinese
    # The instructions and the dialogue keep their own language.
    assert '<div lang="en"><p>Rate carefully.</p></div>' in chinese


def test_a_rater_may_show_the_items_in_the_other_language_and_the_page_keeps_its_own(client, rater):
    campaign = campaign_with([rater], n=1, overlap=1, name="Switch")
    assignment = Assignment.objects.get(campaign=campaign, rater=rater)
    url = reverse("rate", args=[assignment.pk])
    client.force_login(rater)
    page = client.get(url, {"lang": "en"}, headers=ZH).content.decode()
    assert 'data-testid="item-language"' in page
    assert '<span lang="en">Enquire about current medical history' in page and 'data-item-language="en"' in page
    assert "评分须知" not in page and ">提交<" in page  # the page's words stay Chinese
    # remembered in the session, until the page's own language is chosen again
    assert 'data-item-language="en"' in client.get(url, headers=ZH).content.decode()
    assert 'data-item-language="zh"' in client.get(url, {"lang": "zh"}, headers=ZH).content.decode()
    assert 'data-item-language="zh"' in client.get(url, headers=ZH).content.decode()
    assert "编号" in client.get(reverse("scale-detail", args=["llm-mini-cex"]), headers=ZH).content.decode()


def test_a_text_the_version_lacks_in_the_page_language_is_shown_in_the_other_and_marked(client, rater):
    from annotation import scales
    from annotation.models import Item

    campaign = campaign_with([rater], n=1, overlap=1, name="Fallback")
    assignment = Assignment.objects.get(campaign=campaign, rater=rater)
    Item.objects.filter(version=campaign.scale_version, code="1.1").update(text_zh="")
    scales.rating_sheet.cache_clear()
    labels._allowed.cache_clear()
    try:
        client.force_login(rater)
        page = client.get(reverse("rate", args=[assignment.pk]), headers=ZH).content.decode()
    finally:
        scales.rating_sheet.cache_clear()
        labels._allowed.cache_clear()
    legend = re.search(r'<fieldset class="item[^>]*data-code="1\.1".*?</legend>', page, re.S).group(0)
    assert 'data-item-language="en"' in legend
    assert '<span lang="en">Enquire about current medical history' in legend
    assert 'data-testid="language-mark">（英文：此版本没有本语言的文字）</small>' in legend
    assert 'data-item-language="zh"' in page  # the other items in Chinese


def test_the_saved_answer_records_the_language_of_the_item_text(client, rater):
    from annotation.models import Label
    from tests.factories import rating_items

    campaign = campaign_with([rater], n=1, overlap=1, name="Recorded")
    assignment = Assignment.objects.get(campaign=campaign, rater=rater)
    first, second = rating_items(campaign)[:2]
    client.force_login(rater)
    url = reverse("rate-label", args=[assignment.pk])
    answer = client.post(url, {"item": first.pk, "value": 1, "seq": 1, "item_language": "zh"}).json()
    assert answer["item_language"] == "zh"
    client.post(url, {"item": first.pk, "value": 0, "seq": 2})  # not said: the stored language stays
    client.post(url, {"item": second.pk, "value": 1, "seq": 3, "item_language": "fr"})  # not one: not recorded
    stored = dict(Label.objects.filter(assignment=assignment).values_list("item__code", "item_language"))
    assert stored == {first.code: "zh", second.code: ""}


def test_a_campaign_with_a_fixed_language_shows_it_to_a_rater_whose_account_says_english(client, rater):
    from projects.models import AccountSettings

    AccountSettings.objects.create(user=rater, language="en")
    campaign = campaign_with([rater], n=1, overlap=1, name="Fixed", rating_language="zh")
    assignment = Assignment.objects.get(campaign=campaign, rater=rater)
    client.force_login(rater)
    url = reverse("rate", args=[assignment.pk])
    for query in ({}, {"lang": "en"}):  # the item switch does not apply
        response = client.get(url, query, headers=EN)
        page = response.content.decode()
        assert '<html lang="zh-hans">' in page and response["Content-Language"] == "zh-hans"
        assert ">提交<" in page and 'data-item-language="zh"' in page and 'data-item-language="en"' not in page
        assert 'data-testid="fixed-language"' in page and 'data-testid="item-language"' not in page
        assert f'src="{reverse("javascript-catalog")}?l=zh-hans"' in page
    # the page's refusals too
    refused = client.post(reverse("rate-submit", args=[assignment.pk]), headers=EN).json()["detail"]
    assert refused.startswith("提交前请回答所有条目")
    # the script's catalogue is the one the page asks for, whatever the account says
    catalogue = client.get(reverse("javascript-catalog") + "?l=zh-hans", headers=EN).content.decode()
    assert json.dumps("提交（还剩 %(n)s 项）")[1:-1] in catalogue
    # other pages keep the account's language
    assert '<html lang="en">' in client.get(reverse("project-list"), headers=EN).content.decode()


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


def test_the_api_takes_and_shows_the_rating_language_and_the_item_language(rater, coordinator):
    from rest_framework.test import APIClient

    from annotation.models import Campaign, Label
    from tests.factories import corpus_with, mini_cex

    staff = APIClient()
    staff.force_authenticate(coordinator)
    corpus = corpus_with(2, name="corpus-api-language")
    created = staff.post("/api/campaigns/", {"name": "API language", "corpus": corpus.pk,
                                            "scale_version": mini_cex().pk, "rating_language": "zh"}, format="json")
    assert created.status_code == 201 and created.json()["rating_language"] == "zh"
    assert Campaign.objects.get(name="API language").rating_language == "zh"
    refused = staff.post("/api/campaigns/", {"name": "API language 2", "corpus": corpus.pk,
                                            "scale_version": mini_cex().pk, "rating_language": "fr"}, format="json")
    assert refused.status_code == 400 and "rating_language" in refused.json()
    campaign = campaign_with([rater], n=1, overlap=1, name="API labels")
    assignment = Assignment.objects.get(campaign=campaign, rater=rater)
    physician = APIClient()
    physician.force_authenticate(rater)
    saved = physician.post(f"/api/assignments/{assignment.pk}/labels/",
                           {"item": "1.1", "value": 1, "item_language": "en"}, format="json")
    assert saved.status_code == 200 and saved.json()["item_language"] == "en"
    assert Label.objects.get(assignment=assignment).item_language == "en"
    rows = staff.get("/api/labels/", {"campaign": campaign.pk}).json()["results"]
    assert [row["item_language"] for row in rows] == ["en"]
