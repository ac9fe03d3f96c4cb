"""REST API for corpora, dialogues, campaigns, assignments and labels: role-based access, blind dialogues,
label saving through the services, and JSON errors with a "detail" message."""

from __future__ import annotations

import json

import pytest
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation import labels as label_service
from annotation.campaigns import add_rater, assign, create_campaign
from annotation.importers import import_dialogues
from annotation.models import (
    Assignment,
    Campaign,
    Corpus,
    Label,
    LabelChange,
    Redaction,
    ScaleVersion,
)
from projects.pseudonyms import pseudonym
from projects.scoping import active_project_id

SECRET_MODEL = "secret-doctor-llm-v7"


@pytest.fixture(autouse=True)
def _fresh_allowed_cache():
    label_service._allowed.cache_clear()
    yield
    label_service._allowed.cache_clear()


@pytest.fixture
def version(db):
    return ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=1)


@pytest.fixture
def corpus(db, coordinator):
    corpus = Corpus.objects.create(name="API corpus", created_by=coordinator)
    lines = [
        json.dumps({
            "id": f"d{n}", "self_report": f"I have had a cough for {n} days.", "model": SECRET_MODEL,
            "language": "en", "split": "test", "meta": {"temperature": 0.7, "note": "internal"},
            "turns": [
                {"role": "doctor", "text": "Hello, what brings you in today?"},
                {"role": "patient", "text": f"A dry cough, doctor, for {n} days now."},
            ],
        })
        for n in (1, 2, 3)
    ]
    import_dialogues(corpus, lines)
    return corpus


@pytest.fixture
def other_physician(make_user):
    return make_user("dr_q", "physician")


@pytest.fixture
def campaign(corpus, version, coordinator, physician, other_physician):
    """Overlap 2 with two raters: each physician gets all three dialogues."""
    campaign = create_campaign(name="API formal", corpus=corpus, scale_version=version, overlap=2, user=coordinator)
    add_rater(campaign, physician, team="A", added_by=coordinator)
    add_rater(campaign, other_physician, team="B", added_by=coordinator)
    result = assign(campaign, user=coordinator)
    assert result.created == 6 and result.complete
    return campaign


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def own(campaign, user) -> Assignment:
    return Assignment.objects.filter(campaign=campaign, rater=user).order_by("position").first()


def answer_all(assignment: Assignment, user, skip_codes: tuple[str, ...] = ()) -> None:
    for item_id, (code, allowed) in label_service.rating_items(assignment.campaign.scale_version_id).items():
        if code not in skip_codes:
            label_service.save_label(assignment, item_id, allowed[-1], user)


def test_physician_token_sees_only_own_assignments(campaign, physician, other_physician):
    token = Token.objects.create(user=physician)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    body = api.get("/api/assignments/").json()
    assert body["count"] == 3
    assert {row["rater"] for row in body["results"]} == {"dr_p"}
    mine = set(Assignment.objects.filter(rater=physician).values_list("pk", flat=True))
    assert {row["id"] for row in body["results"]} == mine
    assert api.get("/api/assignments/", {"campaign": campaign.pk, "status": "assigned"}).json()["count"] == 3


def test_physician_cannot_reach_another_raters_assignment(campaign, physician, other_physician):
    api = client_for(physician)
    theirs = own(campaign, other_physician)
    for method, url, data in [
        ("get", f"/api/assignments/{theirs.pk}/", None),
        ("get", f"/api/assignments/{theirs.pk}/labels/", None),
        ("post", f"/api/assignments/{theirs.pk}/labels/", {"item": "1.1", "value": 1}),
        ("post", f"/api/assignments/{theirs.pk}/submit/", {}),
        ("post", f"/api/assignments/{theirs.pk}/skip/", {"reason": "x"}),
        ("post", f"/api/assignments/{theirs.pk}/flag/", {"note": "x"}),
    ]:
        response = getattr(api, method)(url, data, format="json")
        assert response.status_code == 404, url
        assert response.json()["detail"]
    assert not Label.objects.filter(assignment=theirs).exists()


def test_physician_cannot_read_labels_corpora_or_campaigns(campaign, physician, other_physician):
    first_item = next(iter(label_service.rating_items(campaign.scale_version_id)))
    label_service.save_label(own(campaign, other_physician), first_item, 1, other_physician)
    api = client_for(physician)
    for url in ["/api/labels/", f"/api/labels/?campaign={campaign.pk}", f"/api/labels/{Label.objects.get().pk}/",
                "/api/corpora/", f"/api/corpora/{campaign.corpus_id}/dialogues/", "/api/dialogues/",
                f"/api/dialogues/?corpus={campaign.corpus_id}", "/api/campaigns/", f"/api/campaigns/{campaign.pk}/",
                f"/api/campaigns/{campaign.pk}/progress/"]:
        response = api.get(url)
        assert response.status_code == 403, url
        assert response.json()["detail"]


def test_assignment_dialogue_is_blind_and_redacted(campaign, physician, coordinator):
    assignment = own(campaign, physician)
    dialogue = assignment.dialogue
    Redaction.objects.create(dialogue=dialogue, field="turn", turn=1, start=2, end=11, source="annotator",
                             created_by=physician)  # "dry cough"
    Redaction.objects.create(dialogue=dialogue, field="self_report", start=0, end=6, source="coordinator",
                             created_by=coordinator)  # "I have"
    Redaction.objects.create(dialogue=dialogue, field="turn", turn=0, start=0, end=5, source="coordinator",
                             created_by=coordinator, revoked_at=timezone.now(), revoked_by=coordinator)
    response = client_for(physician).get(f"/api/assignments/{assignment.pk}/")
    assert response.status_code == 200
    assert SECRET_MODEL not in response.content.decode() and "internal" not in response.content.decode()
    shown = response.json()["dialogue"]
    assert set(shown) == {"blind_id", "language", "self_report", "turns"}  # no external or database id
    assert shown["turns"][1]["text"].startswith("A [REDACTED], doctor")
    assert shown["turns"][0]["text"] == "Hello, what brings you in today?"  # revoked redaction not applied
    assert shown["self_report"].startswith("[REDACTED] had a cough")
    listed = client_for(physician).get("/api/assignments/").json()["results"]
    assert all("source_model" not in row["dialogue"] and "meta" not in row["dialogue"] for row in listed)

    staff = client_for(coordinator).get("/api/dialogues/", {"corpus": campaign.corpus_id}).json()
    row = next(r for r in staff["results"] if r["id"] == dialogue.pk)
    assert row["source_model"] == SECRET_MODEL and "[REDACTED]" in row["turns"][1]["text"]
    assert "dry cough" not in json.dumps(row)


def test_posting_a_label_saves_it_and_writes_history(campaign, physician):
    assignment = own(campaign, physician)
    api = client_for(physician)
    url = f"/api/assignments/{assignment.pk}/labels/"
    response = api.post(url, {"item": "1.1", "value": 1, "comment": "asked about onset"}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["item_code"] == "1.1" and response.json()["value"] == 1
    label = Label.objects.get(assignment=assignment, item__code="1.1")
    assert label.value == 1 and label.comment == "asked about onset" and label.rater == physician
    response = api.post(url, {"item": label.item_id, "value": 0, "client_seq": 2}, format="json")
    assert response.status_code == 200 and response.json()["value"] == 0
    history = list(LabelChange.objects.filter(label=label).order_by("id").values_list("old_value", "new_value"))
    assert history == [(None, 1), (1, 0)]
    assert all(c.changed_by == physician for c in LabelChange.objects.filter(label=label))
    response = api.post(url, {"item": "4", "value": 3}, format="json")
    assert response.status_code == 200 and response.json()["item_code"] == "4"
    listed = api.get(url).json()
    assert {(row["item_code"], row["value"]) for row in listed} == {("1.1", 0), ("4", 3)}
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.IN_PROGRESS


def test_invalid_label_requests_are_400_with_a_message(campaign, physician):
    url = f"/api/assignments/{own(campaign, physician).pk}/labels/"
    api = client_for(physician)
    response = api.post(url, {"item": "1.1", "value": 5}, format="json")
    assert response.status_code == 400 and response.json()["detail"] == "Item 1.1 takes 0, 1; got 5."
    response = api.post(url, {"item": "4", "value": 0}, format="json")
    assert response.status_code == 400 and "Item 4 takes 1, 2, 3" in response.json()["detail"]
    response = api.post(url, {"item": "9.9", "value": 1}, format="json")
    assert response.status_code == 400 and "9.9" in response.json()["detail"]
    response = api.post(url, {"item": "1.1", "value": "yes"}, format="json")
    assert response.status_code == 400 and response.json()["detail"].startswith("value:")
    response = api.post(url, {"value": 1}, format="json")
    assert response.status_code == 400 and "item" in response.json()["detail"]
    # in the request's language, as the API's other messages
    zh = {"HTTP_ACCEPT_LANGUAGE": "zh-CN,zh;q=0.9"}
    response = api.post(url, {"item": "1.1", "value": 5}, format="json", **zh)
    assert response.status_code == 400 and response.json()["detail"] == "条目 1.1 的取值为 0, 1；收到的是 5。"
    response = api.post(url, {"item": "9.9", "value": 1}, format="json", **zh)
    assert response.json()["detail"] == "条目 '9.9' 不是此评分任务量表的评分条目。"
    response = api.post(url, "{not json", content_type="application/json")
    assert response.status_code == 400 and response.json()["detail"]
    assert not Label.objects.exists()


def test_label_on_a_submitted_assignment_is_409(campaign, physician):
    assignment = own(campaign, physician)
    answer_all(assignment, physician)
    api = client_for(physician)
    response = api.post(f"/api/assignments/{assignment.pk}/submit/", {"comment": "clear dialogue"}, format="json")
    assert response.status_code == 200 and response.json()["status"] == "submitted"
    response = api.post(f"/api/assignments/{assignment.pk}/labels/", {"item": "1.1", "value": 0}, format="json")
    assert response.status_code == 409 and "can no longer change" in response.json()["detail"]
    response = api.post(f"/api/assignments/{assignment.pk}/submit/", {}, format="json")
    assert response.status_code == 409 and response.json()["detail"]
    assert Label.objects.get(assignment=assignment, item__code="1.1").value == 1


def test_submit_with_missing_items_lists_them(campaign, physician):
    assignment = own(campaign, physician)
    answer_all(assignment, physician, skip_codes=("1.2", "4"))
    response = client_for(physician).post(f"/api/assignments/{assignment.pk}/submit/", {}, format="json")
    assert response.status_code == 400
    body = response.json()
    assert body["missing"] == ["1.2", "4"]
    assert "missing: 1.2, 4" in body["detail"]
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.IN_PROGRESS


def test_skip_and_flag(campaign, physician):
    first, second = Assignment.objects.filter(campaign=campaign, rater=physician).order_by("position")[:2]
    api = client_for(physician)
    response = api.post(f"/api/assignments/{first.pk}/skip/", {"reason": "  "}, format="json")
    assert response.status_code == 400 and "why" in response.json()["detail"]
    response = api.post(f"/api/assignments/{first.pk}/skip/", {"reason": "not a medical dialogue"}, format="json")
    assert response.status_code == 200 and response.json()["status"] == "skipped"
    response = api.post(f"/api/assignments/{second.pk}/flag/", {"note": "turn 2 is cut off"}, format="json")
    assert response.status_code == 200 and response.json()["flagged"] is True
    assert response.json()["flag_note"] == "turn 2 is cut off"


def test_coordinator_cannot_label_for_a_rater(campaign, coordinator, physician):
    assignment = own(campaign, physician)
    api = client_for(coordinator)
    assert api.get(f"/api/assignments/{assignment.pk}/").status_code == 200
    response = api.post(f"/api/assignments/{assignment.pk}/labels/", {"item": "1.1", "value": 1}, format="json")
    assert response.status_code == 403 and "not assigned to you" in response.json()["detail"]
    assert not Label.objects.exists()


def test_coordinator_creates_campaign_adds_raters_and_assigns(corpus, version, coordinator, physician,
                                                              other_physician, analyst, admin_user):
    api = client_for(coordinator)
    response = api.post("/api/campaigns/", {"name": "Trial via API", "corpus": corpus.pk,
                                            "scale_version": version.pk, "overlap": 1, "phase": "trial",
                                            "instructions": "Rate carefully."}, format="json")
    assert response.status_code == 201, response.json()
    created = response.json()
    assert created["status"] == "open" and created["scale"] == "llm-mini-cex" and created["phase"] == "trial"
    campaign = Campaign.objects.get(pk=created["id"])
    assert campaign.created_by == coordinator and campaign.overlap == 1

    url = f"/api/campaigns/{campaign.pk}/raters/"
    response = api.post(url, {"user": "dr_p", "team": "A", "capacity": 2}, format="json")
    assert response.status_code == 201 and response.json()["rater"] == "dr_p"
    response = api.post(url, {"user": other_physician.pk, "team": "B", "available_until": "2999-01-01"},
                        format="json")
    assert response.status_code == 201 and response.json()["team"] == "B"
    response = api.post(url, {"user": "ana"}, format="json")
    assert response.status_code == 400 and "not a physician" in response.json()["detail"]
    response = api.post(url, {"user": "nobody"}, format="json")
    assert response.status_code == 400 and "nobody" in response.json()["detail"]
    assert {r["rater"] for r in api.get(url).json()} == {"dr_p", "dr_q"}

    response = api.post(f"/api/campaigns/{campaign.pk}/assign/")
    assert response.status_code == 200
    assert response.json() == {"created": 3, "short": 0, "missing": 0, "complete": True}
    # 3 dialogues over 2 raters: loads 2 and 1 (which rater gets 2 is a seeded tie-break); capacity 2 holds
    mine = Assignment.objects.filter(campaign=campaign, rater=physician).count()
    theirs = Assignment.objects.filter(campaign=campaign, rater=other_physician).count()
    assert sorted([mine, theirs]) == [1, 2] and mine <= 2
    progress = {row["rater"]: row for row in api.get(f"/api/campaigns/{campaign.pk}/progress/").json()}
    assert progress["dr_p"]["total"] == mine and progress["dr_q"]["total"] == theirs
    assert progress["dr_p"]["team"] == "A"
    assert api.post(f"/api/campaigns/{campaign.pk}/assign/").json()["created"] == 0

    assert client_for(admin_user).get(f"/api/campaigns/{campaign.pk}/").json()["name"] == "Trial via API"
    assert client_for(admin_user).get("/api/assignments/", {"campaign": campaign.pk}).json()["count"] == 3


def test_campaign_creation_refusals(corpus, version, coordinator, physician, analyst):
    payload = {"name": "X", "corpus": corpus.pk, "scale_version": version.pk, "overlap": 2}
    for user in (physician, analyst):
        response = client_for(user).post("/api/campaigns/", payload, format="json")
        assert response.status_code == 403 and response.json()["detail"]
    api = client_for(coordinator)
    response = api.post("/api/campaigns/", {**payload, "overlap": 0}, format="json")
    assert response.status_code == 400 and "overlap" in response.json()["detail"]
    draft = ScaleVersion.objects.create(scale=version.scale, number=99)
    response = api.post("/api/campaigns/", {**payload, "scale_version": draft.pk}, format="json")
    assert response.status_code == 400 and "not published" in response.json()["detail"]
    assert api.post("/api/campaigns/", payload, format="json").status_code == 201
    response = api.post("/api/campaigns/", payload, format="json")
    assert response.status_code == 400 and "name" in response.json()["detail"]
    response = client_for(analyst).post(f"/api/campaigns/{Campaign.objects.get().pk}/assign/")
    assert response.status_code == 403


def test_analyst_sees_pseudonyms_not_usernames(campaign, physician, other_physician, analyst, coordinator):
    for user in (physician, other_physician):
        assignment = own(campaign, user)
        answer_all(assignment, user)
        label_service.submit(assignment, user)
    pseudonyms = {pseudonym(active_project_id(), u) for u in (physician, other_physician)}
    api = client_for(analyst)
    response = api.get("/api/labels/", {"campaign": campaign.pk, "limit": 1000})
    assert response.status_code == 200
    rows = response.json()["results"]
    assert rows and {row["rater"] for row in rows} == pseudonyms
    assert {row["assignment_status"] for row in rows} == {"submitted"}
    progress = api.get(f"/api/campaigns/{campaign.pk}/progress/").json()
    assert {row["rater"] for row in progress} == pseudonyms
    raters = api.get(f"/api/campaigns/{campaign.pk}/raters/").json()
    assert {row["rater"] for row in raters} == pseudonyms
    for url in [f"/api/labels/?campaign={campaign.pk}&limit=1000", f"/api/campaigns/{campaign.pk}/progress/",
                f"/api/campaigns/{campaign.pk}/raters/"]:
        content = api.get(url).content.decode()
        assert "dr_p" not in content and "dr_q" not in content
    by_item = api.get("/api/labels/", {"campaign": campaign.pk, "item": "4"}).json()
    assert by_item["count"] == 2 and {row["item_code"] for row in by_item["results"]} == {"4"}
    dialogue = own(campaign, physician).dialogue_id
    assert all(r["dialogue"] == dialogue for r in api.get("/api/labels/", {"dialogue": dialogue}).json()["results"])

    staff = client_for(coordinator).get("/api/labels/", {"campaign": campaign.pk, "limit": 1000}).json()["results"]
    assert {row["rater"] for row in staff} == {"dr_p", "dr_q"}


def test_corpora_and_dialogues_for_readers(corpus, analyst, coordinator):
    for user in (analyst, coordinator):
        api = client_for(user)
        listed = api.get("/api/corpora/").json()["results"]
        assert [(c["name"], c["dialogue_count"]) for c in listed] == [("API corpus", 3)]
        dialogues = api.get(f"/api/corpora/{corpus.pk}/dialogues/").json()
        assert dialogues["count"] == 3 and [d["external_id"] for d in dialogues["results"]] == ["d1", "d2", "d3"]
        assert api.get("/api/dialogues/", {"corpus": corpus.pk, "split": "train"}).json()["count"] == 0
        one = api.get(f"/api/dialogues/{dialogues['results'][0]['id']}/").json()
        assert one["meta"]["temperature"] == 0.7 and one["turns"][0]["role"] == "doctor"
    assert client_for(coordinator).get("/api/corpora/999999/dialogues/").status_code == 404


@pytest.mark.django_db
def test_unauthenticated_requests_are_refused():
    api = APIClient()
    for method, url in [("get", "/api/corpora/"), ("get", "/api/dialogues/"), ("get", "/api/campaigns/"),
                        ("post", "/api/campaigns/"), ("get", "/api/assignments/"), ("get", "/api/labels/"),
                        ("get", "/api/assignments/1/"), ("post", "/api/assignments/1/labels/"),
                        ("post", "/api/campaigns/1/assign/")]:
        response = getattr(api, method)(url)
        assert response.status_code in (401, 403), url
        assert response.json()["detail"]


def test_bad_query_parameters_and_ids_are_4xx_json(campaign, coordinator, physician):
    api = client_for(coordinator)
    for url in ["/api/assignments/?campaign=abc", "/api/dialogues/?corpus=1.5", "/api/labels/?dialogue=x",
                "/api/campaigns/?corpus=99999999999999999999999", "/api/assignments/?campaign=-1"]:
        response = api.get(url)
        assert response.status_code == 400, url
        assert response.json()["detail"]
    for url in ["/api/assignments/abc/", "/api/assignments/99999999999999999999999/", "/api/campaigns/0/",
                "/api/labels/123456/"]:
        response = api.get(url)
        assert response.status_code == 404, url
        assert response.json()["detail"]
    response = client_for(physician).get("/api/assignments/99999999999999999999999/")
    assert response.status_code == 404


def test_out_of_range_numbers_are_400_not_500(campaign, corpus, version, coordinator, physician):
    api = client_for(coordinator)
    base = {"name": "Edge", "corpus": corpus.pk, "scale_version": version.pk}
    for extra in ({"seed": 2**64}, {"overlap": "many"}, {"corpus": 2**70}, {"deadline": "soon"},
                  {"filter_split": "holdout"}, {"phase": "final"}):
        response = api.post("/api/campaigns/", {**base, **extra}, format="json")
        assert response.status_code == 400, extra
        assert response.json()["detail"]
    url = f"/api/campaigns/{campaign.pk}/raters/"
    for payload in ({"user": 2**70}, {"user": True}, {"user": "dr_p", "capacity": -1}, {"user": ""}):
        response = api.post(url, payload, format="json")
        assert response.status_code == 400, payload
        assert response.json()["detail"]
    labels_url = f"/api/assignments/{own(campaign, physician).pk}/labels/"
    for payload in ({"item": "1.1", "value": 10**30}, {"item": 2**70, "value": 1},
                    {"item": "1.1", "value": 1, "client_seq": -5}, {"item": ["1.1"], "value": 1}):
        response = client_for(physician).post(labels_url, payload, format="json")
        assert response.status_code == 400, payload
        assert response.json()["detail"]
