"""Long lists come a page at a time (a campaign of 2,680 dialogues rendered every row on each view):
the campaign's dialogues and a corpus's, with page links that keep the query string, "showing X-Y of N", counts
over the whole set, and a number of queries that does not grow with the rows. The preference studies' list counts
items and comparisons without joining them. Run in both modes (embedded, and with DATABASE_URL for PostgreSQL)."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import Assignment
from core.site.paging import PAGE_SIZE
from tests.factories import campaign_with, corpus_with

N = 120  # more than a page (PAGE_SIZE rows)


def _ids(html: str) -> list[str]:
    """The dialogues' ids in the order the page lists them (the factories name them d000, d001, ...)."""
    return re.findall(r">(d\d{3})</a>", html)


@pytest.fixture
def raters(make_user):
    return [make_user(f"pager{i}", "physician") for i in range(2)]


def test_a_campaigns_dialogues_come_a_page_at_a_time(client, coordinator, raters):
    campaign = campaign_with(raters, n=N, overlap=2, name="Long")
    Assignment.objects.filter(campaign=campaign, dialogue__external_id="d110", rater=raters[0]).update(
        status=Assignment.Status.SUBMITTED)
    client.force_login(coordinator)
    url = reverse("campaign-detail", args=[campaign.pk])
    first = client.get(url).content.decode()
    assert _ids(first) == [f"d{i:03d}" for i in range(PAGE_SIZE)]
    assert f"Showing 1–{PAGE_SIZE} of {N} dialogues." in first
    assert 'aria-label="Pages of dialogues"' in first and 'aria-current="page"' in first
    assert "?page=2#dialogues" in first and 'rel="next"' in first
    # the rater table counts every assignment, not only this page's
    assert re.search(rf"<td>{N}</td><td>1</td>", first), "rater progress over the whole campaign"
    second = client.get(url, {"page": 2}).content.decode()
    assert _ids(second) == [f"d{i:03d}" for i in range(PAGE_SIZE, N)]
    assert f"Showing {PAGE_SIZE + 1}–{N} of {N} dialogues." in second
    assert re.search(r'd110</a></td><td>2 / 2</td><td>1</td>', second), "the page's counts"
    # past the end: the last page; not a number: a 400
    assert _ids(client.get(url, {"page": 99}).content.decode()) == _ids(second)
    assert client.get(url, {"page": "x"}).status_code == 400
    assert client.get(url, {"page": 0}).status_code == 400


def test_the_page_links_keep_the_query_string_and_the_samples_seed(client, coordinator, raters):
    campaign = campaign_with(raters, n=N, overlap=2, name="Seeded")
    client.force_login(coordinator)
    page = client.get(reverse("campaign-detail", args=[campaign.pk]), {"sample": "random", "size": 3}).content
    seed = re.search(r"with seed <strong>(\d+)</strong>", page.decode()).group(1)
    assert f"?sample=random&amp;size=3&amp;seed={seed}&amp;page=2#dialogues" in page.decode()
    again = client.get(reverse("campaign-detail", args=[campaign.pk]),
                       {"sample": "random", "size": 3, "seed": seed, "page": 2}).content.decode()
    assert f"with seed <strong>{seed}</strong>" in again
    assert f"?sample=random&amp;size=3&amp;seed={seed}&amp;page=1#dialogues" in again


def _queries(client, url) -> int:
    client.get(url)  # sessions, content types and caches warmed
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(url).status_code == 200
    return len(ctx.captured_queries)


def test_the_campaign_and_corpus_pages_cost_the_same_queries_for_10_and_120_dialogues(client, coordinator, raters):
    small, large = (campaign_with(raters, n=n, overlap=2, name=f"Q{n}") for n in (10, N))
    client.force_login(coordinator)
    for name, args in (("campaign-detail", lambda c: [c.pk]), ("corpus-detail", lambda c: [c.corpus_id])):
        few, many = (_queries(client, reverse(name, args=args(c))) for c in (small, large))
        assert few == many, (name, few, many)


def test_a_corpus_lists_a_page_of_dialogues_and_counts_them_all(client, coordinator):
    corpus = corpus_with(N, name="Long corpus")
    client.force_login(coordinator)
    url = reverse("corpus-detail", args=[corpus.pk])
    first = client.get(url).content.decode()
    assert _ids(first) == [f"d{i:03d}" for i in range(PAGE_SIZE)]
    assert f"Showing 1–{PAGE_SIZE} of {N} dialogues." in first
    assert f"<td>{N // 2}</td>" in first  # the composition: each doctor model's dialogues, over the whole corpus
    second = client.get(url, {"page": 2, "keep": "me"}).content.decode()
    assert _ids(second) == [f"d{i:03d}" for i in range(PAGE_SIZE, N)]
    assert 'href="?page=1&amp;keep=me#dialogues"' in second


def test_a_short_list_has_no_page_links(client, coordinator):
    corpus = corpus_with(3, name="Short corpus")
    client.force_login(coordinator)
    page = client.get(reverse("corpus-detail", args=[corpus.pk])).content.decode()
    assert "Showing 1–3 of 3 dialogues." in page and 'data-testid="pager"' not in page


def test_the_preference_list_counts_without_joining_items_and_comparisons(client, coordinator, make_user):
    from scoring.preference import services as preference
    from scoring.preference.models import PreferenceTask
    from tests.test_preference import answers_jsonl

    study = preference.create_study(name="Counted", kind="answer", criteria="response", overlap=2, seed=3,
                                    user=coordinator)
    preference.import_answers(study, answers_jsonl(n_items=5), coordinator)
    for n in range(3):
        preference.add_rater(study, make_user(f"pref{n}", "physician"), added_by=coordinator)
    preference.open_study(study, coordinator)
    task = PreferenceTask.objects.filter(study=study).select_related("rater").first()
    for criterion in study.criteria.all():
        preference.save_answer(task, criterion.pk, "A", task.rater)
    preference.submit_task(task, task.rater)
    client.force_login(coordinator)
    with CaptureQueriesContext(connection) as ctx:
        page = client.get(reverse("preference-list")).content.decode()
    joined = [q["sql"] for q in ctx.captured_queries
              if "preferenceitem" in q["sql"] and "preferencetask" in q["sql"]]
    assert not joined, joined
    tasks = study.tasks.count()
    assert tasks > 1
    assert re.search(rf"<td>5</td><td>1 / {tasks}</td>", page), page


def test_reassigning_lists_the_unfinished_work_of_the_pages_dialogues(client, coordinator, raters):
    campaign = campaign_with(raters, n=N, overlap=2, name="Reassign")
    client.force_login(coordinator)
    url = reverse("campaign-detail", args=[campaign.pk])
    first = client.get(url).content.decode()
    options = re.findall(r"<option value=\"/assignments/\d+/reassign/\">\w+ · (d\d{3})", first)
    assert sorted(set(options)) == [f"d{i:03d}" for i in range(PAGE_SIZE)] and len(options) == 2 * PAGE_SIZE
    assert f"{2 * N} in the campaign" in first
    second = client.get(url, {"page": 2}).content.decode()
    options = re.findall(r"<option value=\"/assignments/\d+/reassign/\">\w+ · (d\d{3})", second)
    assert sorted(set(options)) == [f"d{i:03d}" for i in range(PAGE_SIZE, N)]


def test_a_page_without_unfinished_work_says_where_the_rest_is(client, coordinator, raters):
    campaign = campaign_with(raters, n=N, overlap=2, name="Half done")
    Assignment.objects.filter(campaign=campaign, dialogue__external_id__lt=f"d{PAGE_SIZE:03d}").update(
        status=Assignment.Status.SUBMITTED)
    client.force_login(coordinator)
    page = client.get(reverse("campaign-detail", args=[campaign.pk])).content.decode()
    assert "The 0 unfinished assignments of the dialogues on this page" in page
    assert f"{2 * (N - PAGE_SIZE)} in the campaign" in page and 'id="reassign-form"' not in page
