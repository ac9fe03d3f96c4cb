"""Closed campaigns, the analyst's home links, admin names, 403s in the log, and the
API's edges (root links, lockout Retry-After, 401 for bad tokens, comment length, turn roles, paging parameters)."""

import logging
import re
from datetime import timedelta

import pytest
from django.contrib import admin
from django.urls import reverse
from django.utils import timezone
from rest_framework.authtoken.models import Token

from annotation import labels
from annotation.campaigns import CampaignClosed, add_rater, assign, reassign
from annotation.models import Assignment, Campaign, CampaignRater, Corpus, Dialogue, PrivacyStatus
from tests.factories import campaign_with, rating_items

# ------------------------------------------------------------------------------------------- closed campaigns


@pytest.fixture
def closed(make_user):
    raters = [make_user("closed-a", "physician"), make_user("closed-b", "physician")]
    campaign = campaign_with(raters[:1], n=4, overlap=1, name="Closed")
    Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.CLOSED)
    campaign.refresh_from_db()
    return campaign, raters


def test_a_closed_campaign_offers_no_raters_or_assignment_and_refuses_them(client, coordinator, closed):
    campaign, (rater, newcomer) = closed
    client.force_login(coordinator)
    page = client.get(reverse("campaign-detail", args=[campaign.pk])).content.decode()
    assert "Add raters" not in page and "Assign dialogues" not in page and "Reassign" not in page
    assert "This campaign is closed" in page
    assignments = Assignment.objects.filter(campaign=campaign).count()
    response = client.post(reverse("campaign-add-raters", args=[campaign.pk]), {"users": [newcomer.pk]},
                           follow=True)
    assert "Campaign Closed is closed: it takes no new raters." in response.content.decode()
    response = client.post(reverse("campaign-assign", args=[campaign.pk]), follow=True)
    assert "it takes no new assignments" in response.content.decode()
    assert not CampaignRater.objects.filter(campaign=campaign, user=newcomer).exists()
    assert Assignment.objects.filter(campaign=campaign).count() == assignments
    with pytest.raises(CampaignClosed):
        add_rater(campaign, newcomer)
    with pytest.raises(CampaignClosed):
        assign(campaign)
    with pytest.raises(CampaignClosed):
        reassign(Assignment.objects.filter(campaign=campaign).first(), newcomer)


def test_the_api_refuses_raters_and_assignment_on_a_closed_campaign_with_409(client, coordinator, closed):
    campaign, (_, newcomer) = closed
    auth = {"HTTP_AUTHORIZATION": f"Token {Token.objects.create(user=coordinator).key}"}
    response = client.post(f"/api/campaigns/{campaign.pk}/raters/", {"user": newcomer.username}, **auth)
    assert response.status_code == 409 and "closed" in response.json()["detail"]
    response = client.post(f"/api/campaigns/{campaign.pk}/assign/", **auth)
    assert response.status_code == 409 and "closed" in response.json()["detail"]
    assert not CampaignRater.objects.filter(campaign=campaign, user=newcomer).exists()


# ------------------------------------------------------------------------------------------- the analyst's home


@pytest.fixture
def flagged_corpus(db):
    corpus = Corpus.objects.create(name="Flagged")
    Dialogue.objects.create(corpus=corpus, external_id="f1", self_report="My name is Jane Roe.",
                            turns=[{"role": "doctor", "text": "Hello"}], privacy_status=PrivacyStatus.FLAGGED)
    return corpus


def links(html: str) -> set[str]:
    return {href for href in re.findall(r'href="(/[^"#?]*)', html) if not href.startswith("/static/")}


def test_no_link_on_the_analysts_home_or_corpus_page_answers_403(client, analyst, coordinator, flagged_corpus):
    review = reverse("privacy-review", args=[flagged_corpus.pk])
    client.force_login(analyst)
    home = client.get("/").content.decode()
    corpus_page = client.get(reverse("corpus-detail", args=[flagged_corpus.pk])).content.decode()
    assert "1 flagged for privacy review" in home and review not in home + corpus_page
    for href in links(home) | links(corpus_page):
        assert client.get(href).status_code != 403, href
    client.force_login(coordinator)
    assert review in client.get("/").content.decode()
    assert client.get(review).status_code == 200


# ------------------------------------------------------------------------------------------- the admin's names


def test_the_admin_names_every_model_in_proper_english():
    names = {model._meta.verbose_name_plural for model in admin.site._registry}
    assert "LLM batches" in names and "LLM calls" in names and "preference criteria" in names
    for model in admin.site._registry:
        singular, plural = str(model._meta.verbose_name), str(model._meta.verbose_name_plural)
        assert "llm" not in singular + plural, singular  # the acronym is written LLM
        # Django's default plural adds an "s": wrong after ch, sh, s, x, z, a consonant and y, and for "criterion".
        if singular.endswith(("ch", "sh", "s", "x", "z", "criterion")) or re.search(r"[^aeiou]y$", singular):
            assert plural != singular + "s", plural


# ------------------------------------------------------------------------------------------- 403s in the log


def test_a_403_is_one_log_line_without_a_traceback(client, physician, caplog):
    caplog.set_level(logging.INFO)
    client.force_login(physician)
    assert client.get(reverse("campaign-list")).status_code == 403
    records = [r for r in caplog.records if r.name == "django.request"]
    assert len(records) == 1, [r.getMessage() for r in records]
    record = records[0]
    assert record.levelno == logging.WARNING and record.exc_info is None and not record.exc_text
    assert record.getMessage().startswith("Forbidden (Permission denied): GET /campaigns/ by user #")
    assert "This page is for" in record.getMessage()


# ------------------------------------------------------------------------------------------- the API's edges


def test_the_api_root_links_the_api_lists_not_the_html_pages(client, analyst):
    client.force_login(analyst)
    root = client.get("/api/").json()
    assert root["scales"] == "http://testserver/api/scales/"
    assert root["scale-versions"] == "http://testserver/api/scale-versions/"
    assert all(url.startswith("http://testserver/api/") for url in root.values()), root
    assert client.get(root["scales"]).json()["results"][0]["slug"]


def test_a_lockout_answers_429_with_retry_after(client, physician, settings):
    settings.LOGIN_MAX_FAILURES, settings.LOGIN_LOCKOUT_SECONDS = 2, 600
    for _ in range(2):
        client.post(reverse("login"), {"username": "dr_p", "password": "wrong"})
    page = client.post(reverse("login"), {"username": "dr_p", "password": "correct-horse-battery"})
    assert page.status_code == 429 and page["Retry-After"] == "600"
    api = client.post("/api/auth/token/", {"username": "dr_p", "password": "correct-horse-battery"})
    assert api.status_code == 429 and api["Retry-After"] == "600" and "Too many" in api.json()["detail"]


def test_bad_expired_or_missing_tokens_answer_401_with_www_authenticate(client, physician, settings):
    for headers in ({"HTTP_AUTHORIZATION": "Token not-a-real-token"}, {}):
        response = client.get("/api/assignments/", **headers)
        assert response.status_code == 401 and response["WWW-Authenticate"] == "Token", headers
    token = Token.objects.create(user=physician)
    Token.objects.filter(pk=token.pk).update(created=timezone.now() - timedelta(days=settings.API_TOKEN_DAYS + 1))
    response = client.get("/api/assignments/", HTTP_AUTHORIZATION=f"Token {token.key}")
    assert response.status_code == 401 and response["WWW-Authenticate"] == "Token"
    assert "expired" in response.json()["detail"]
    client.force_login(physician)  # the session still works, and a role it lacks is a 403
    assert client.get("/api/assignments/").status_code == 200
    assert client.get("/api/labels/").status_code == 403


def test_the_rating_page_caps_comments_at_the_apis_10000_characters(client, make_user):
    rater = make_user("long-comment", "physician")
    campaign = campaign_with([rater], n=1, overlap=1, name="Long")
    assignment = Assignment.objects.get(campaign=campaign)
    item = rating_items(campaign)[0]
    client.force_login(rater)
    page = client.get(reverse("rate", args=[assignment.pk])).content.decode()
    assert page.count(f'maxlength="{labels.MAX_TEXT}"') == 24 + 1 + 2  # items, the page comment, skip and flag
    url = reverse("rate-label", args=[assignment.pk])
    too_long = client.post(url, {"item": item.pk, "value": 1, "comment": "x" * 10_001, "seq": 1})
    assert too_long.status_code == 400 and "10,001 characters" in too_long.json()["detail"]
    assert client.post(url, {"item": item.pk, "value": 1, "comment": "x" * 10_000, "seq": 2}).status_code == 200
    too_long = client.post(reverse("rate-comment", args=[assignment.pk]), {"comment": "y" * 100_000})
    assert too_long.status_code == 400
    assert client.post(reverse("rate-flag", args=[assignment.pk]), {"note": "z" * 10_001}).status_code == 400
    api = client.post(f"/api/assignments/{assignment.pk}/labels/", {"item": "1.1", "value": 1,
                                                                   "comment": "x" * 10_001},
                      content_type="application/json")
    assert api.status_code == 400


def test_the_schema_lists_every_turn_role(client, analyst):
    client.force_login(analyst)
    schema = client.get("/api/schema/", {"format": "json"}).json()
    role = schema["components"]["schemas"]["Turn"]["properties"]["role"]
    ref = role["$ref"] if "$ref" in role else role["allOf"][0]["$ref"]
    enum = schema["components"]["schemas"][ref.rsplit("/", 1)[-1]]["enum"]
    assert set(enum) == {"doctor", "patient", "measurement", "question", "answer", "reference"}
    limit = next(p for p in schema["paths"]["/api/labels/"]["get"]["parameters"] if p["name"] == "limit")
    assert limit["schema"]["minimum"] == 1


@pytest.mark.parametrize("query", ["limit=false", "limit=1.5", "limit=0", "limit=-3", "limit=1e3", "offset=1.5",
                                   "offset=false", "offset=-1"])
def test_paging_parameters_that_are_not_whole_numbers_are_refused(client, analyst, query):
    client.force_login(analyst)
    response = client.get(f"/api/scale-versions/?{query}")
    assert response.status_code == 400, query
    assert query.split("=")[0] in response.json()["detail"]


def test_good_paging_parameters_still_page(client, analyst):
    client.force_login(analyst)
    body = client.get("/api/scale-versions/?limit=5000&offset=0").json()
    assert body["count"] >= 1 and len(body["results"]) == body["count"]
    assert client.get("/api/scale-versions/?limit=&offset=").status_code == 200
    assert client.get("/api/scale-versions/?offset=1000").json()["results"] == []
    assert client.get("/api/scale-versions/?offset=99999999999999999999").json()["results"] == []
