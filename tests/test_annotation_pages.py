"""Pages of the annotation workflow: rating endpoints, permissions and blinding, coordinator pages,
corpus upload and privacy review."""

import io
import json

import pytest
from django.urls import reverse

from annotation import labels
from annotation.campaigns import add_rater, assign, create_campaign
from annotation.models import Assignment, Campaign, Corpus, Dialogue, Label, Redaction
from projects.models import AuditEvent
from tests.factories import answer_all, campaign_with, mini_cex, rating_items


@pytest.fixture
def two_raters(make_user):
    return make_user("rater1", "physician"), make_user("rater2", "physician")


@pytest.fixture
def campaign(two_raters):
    return campaign_with(two_raters, n=2, overlap=2, name="Pages")


def own(campaign, user):
    return Assignment.objects.filter(campaign=campaign, rater=user).order_by("position").first()


def test_rating_page_shows_items_and_dialogue_but_no_model_or_other_labels(client, campaign, two_raters):
    r1, r2 = two_raters
    theirs = own(campaign, r2)
    labels.save_label(theirs, rating_items(campaign)[0].pk, 0, r2, comment="OTHER-RATER-COMMENT")
    mine = Assignment.objects.get(campaign=campaign, rater=r1, dialogue=theirs.dialogue)
    client.force_login(r1)
    html = client.get(reverse("rate", args=[mine.pk])).content.decode()
    assert html.count('<fieldset class="item"') == 24
    assert "turn-doctor" in html and "turn-patient" in html
    assert "model-A" not in html and "model-B" not in html
    assert "OTHER-RATER-COMMENT" not in html
    assert 'data-code="4"' in html and '4.3 <span lang="en">Excellent</span>' in html


def test_rater_cannot_open_or_write_someone_elses_assignment(client, campaign, two_raters):
    r1, r2 = two_raters
    theirs = own(campaign, r2)
    client.force_login(r1)
    assert client.get(reverse("rate", args=[theirs.pk])).status_code == 404
    response = client.post(reverse("rate-label", args=[theirs.pk]), {"item": rating_items(campaign)[0].pk, "value": 1})
    assert response.status_code == 404
    assert not Label.objects.exists()


def test_label_endpoint_saves_and_reports_errors_as_json(client, campaign, two_raters):
    r1, _ = two_raters
    mine = own(campaign, r1)
    item = rating_items(campaign)[0]
    client.force_login(r1)
    ok = client.post(reverse("rate-label", args=[mine.pk]), {"item": item.pk, "value": "1", "seq": "5"})
    assert ok.status_code == 200 and ok.json()["value"] == 1
    bad = client.post(reverse("rate-label", args=[mine.pk]), {"item": item.pk, "value": "7"})
    assert bad.status_code == 400 and "takes 0, 1" in bad.json()["detail"]
    garbage = client.post(reverse("rate-label", args=[mine.pk]), {"item": "x"})
    assert garbage.status_code == 400 and garbage.json()["detail"]
    as_json = client.post(reverse("rate-label", args=[mine.pk]), json.dumps({"item": item.pk, "value": 0, "seq": 6}),
                          content_type="application/json")
    assert as_json.json()["value"] == 0
    assert Label.objects.get().changes.count() == 2


def test_submit_skip_and_next(client, campaign, two_raters):
    r1, _ = two_raters
    first, second = Assignment.objects.filter(campaign=campaign, rater=r1).order_by("position")
    client.force_login(r1)
    missing = client.post(reverse("rate-submit", args=[first.pk]))
    assert missing.status_code == 400 and "missing" in missing.json()["detail"]
    answer_all(first, r1)
    done = client.post(reverse("rate-submit", args=[first.pk]))
    assert done.json()["next_url"] == reverse("rate", args=[second.pk])
    refused = client.post(reverse("rate-skip", args=[second.pk]), {"reason": ""})
    assert refused.status_code == 400
    skipped = client.post(reverse("rate-skip", args=[second.pk]), {"reason": "corrupted text"})
    assert skipped.json()["next_url"] == reverse("rate-next")
    assert "Nothing left to rate" in client.get(reverse("rate-next")).content.decode()


def test_annotator_redaction_is_applied_everywhere(client, campaign, two_raters, coordinator):
    r1, r2 = two_raters
    mine = own(campaign, r1)
    dialogue = mine.dialogue
    text = dialogue.turns[1]["text"]
    client.force_login(r1)
    response = client.post(reverse("rate-redact", args=[mine.pk]), {"field": "turn", "turn": 1, "start": 0, "end": 6})
    assert response.status_code == 200
    assert Redaction.objects.get().source == "annotator"
    other = Assignment.objects.get(campaign=campaign, rater=r2, dialogue=dialogue)
    client.force_login(r2)
    html = client.get(reverse("rate", args=[other.pk])).content.decode()
    assert "[REDACTED]" in html and text[:6] + text[6:] not in html
    client.force_login(coordinator)
    html = client.get(reverse("dialogue-detail", args=[dialogue.pk])).content.decode()
    assert "[REDACTED]" in html
    bad = client.force_login(r1) or client.post(reverse("rate-redact", args=[mine.pk]),
                                                {"field": "turn", "turn": 99, "start": 0, "end": 3})
    assert bad.status_code == 400


@pytest.mark.parametrize("name", ["campaign-list", "campaign-new", "corpus-upload"])
def test_physician_cannot_open_coordinator_pages(client, two_raters, name):
    client.force_login(two_raters[0])
    assert client.get(reverse(name)).status_code == 403


def test_physician_cannot_open_review_or_history(client, campaign, two_raters):
    r1, _ = two_raters
    mine = own(campaign, r1)
    client.force_login(r1)
    assert client.get(reverse("campaign-dialogue", args=[campaign.pk, mine.dialogue_id])).status_code == 403
    assert client.get(reverse("label-history", args=[mine.pk])).status_code == 403


def test_coordinator_runs_a_campaign_through_the_pages(client, coordinator, make_user):
    raters = [make_user(f"doc{i}", "physician") for i in range(3)]
    corpus = Corpus.objects.create(name="Pages corpus")
    for i in range(4):
        Dialogue.objects.create(corpus=corpus, external_id=f"x{i}", self_report="s", source_model="m",
                                turns=[{"role": "doctor", "text": "hello"}, {"role": "patient", "text": "hi"}])
    client.force_login(coordinator)
    response = client.post(reverse("campaign-new"), {
        "name": "Formal 1", "corpus": corpus.pk, "scale_version": mini_cex().pk, "phase": "formal", "overlap": 3,
        "instructions": "Rate every item."})
    campaign = Campaign.objects.get(name="Formal 1")
    assert response.url == reverse("campaign-detail", args=[campaign.pk])
    client.post(reverse("campaign-add-raters", args=[campaign.pk]), {"users": [u.pk for u in raters], "team": "T"})
    client.post(reverse("campaign-assign", args=[campaign.pk]))
    assert Assignment.objects.filter(campaign=campaign).count() == 12
    page = client.get(reverse("campaign-detail", args=[campaign.pk])).content.decode()
    assert 'data-testid="rater-progress"' in page and "doc0" in page and "3 / 3" in page
    assignment = Assignment.objects.filter(campaign=campaign, rater=raters[0]).first()
    answer_all(assignment, raters[0])
    labels.submit(assignment, raters[0])
    review = client.get(reverse("campaign-dialogue", args=[campaign.pk, assignment.dialogue_id])).content.decode()
    assert 'data-testid="answers"' in review
    item = rating_items(campaign)[0]
    client.post(reverse("campaign-dialogue-action", args=[campaign.pk, assignment.dialogue_id]),
                {"action": "adjudicate", "item": item.pk, "value": 0, "reason": "guidance 1.1"})
    client.post(reverse("campaign-dialogue-action", args=[campaign.pk, assignment.dialogue_id]),
                {"action": "return", "assignment": assignment.pk, "note": "check 1.1"})
    assignment.refresh_from_db()
    assert assignment.status == "returned" and assignment.return_note == "check 1.1"
    history = client.get(reverse("label-history", args=[assignment.pk])).content.decode()
    assert "assignment.return" in history and history.count("<tr>") >= 25
    sample = client.get(reverse("campaign-detail", args=[campaign.pk]), {"sample": "disagreement", "size": 2})
    assert 'data-testid="audit-sample"' not in sample.content.decode()  # nothing submitted any more
    open_one = Assignment.objects.filter(campaign=campaign, rater=raters[1], status="assigned").first()
    extra = make_user("doc9", "physician")
    add_rater(campaign, extra)
    client.post(reverse("assignment-reassign", args=[open_one.pk]), {"to_user": extra.pk, "reason": "leave"})
    assert Assignment.objects.filter(campaign=campaign, rater=extra, dialogue=open_one.dialogue).exists()


def test_upload_reports_every_bad_line_and_imports_nothing(client, coordinator):
    client.force_login(coordinator)
    good = json.dumps({"id": "a", "self_report": "cough", "turns": [{"role": "doctor", "text": "Hello"}]})
    bad_role = json.dumps({"id": "b", "self_report": "x", "turns": [{"role": "nurse", "text": "Hello"}]})
    content = "\n".join([good, "{not json", bad_role]).encode()
    upload = io.BytesIO(content)
    upload.name = "bad.jsonl"
    html = client.post(reverse("corpus-upload"), {"corpus_name": "Uploaded", "file": upload}).content.decode()
    assert "Nothing was imported" in html and "line 2:" in html and "line 3:" in html
    assert not Corpus.objects.filter(name="Uploaded").exists()
    upload = io.BytesIO(good.encode())
    upload.name = "good.jsonl"
    response = client.post(reverse("corpus-upload"), {"corpus_name": "Uploaded", "file": upload})
    corpus = Corpus.objects.get(name="Uploaded")
    assert response.url == reverse("corpus-detail", args=[corpus.pk]) and corpus.dialogues.count() == 1
    assert AuditEvent.objects.filter(action="corpus.import_dialogues").exists()


def test_privacy_flags_are_reviewed(client, coordinator):
    client.force_login(coordinator)
    lines = [
        json.dumps({"id": "p1", "self_report": "Headache.", "turns": [
            {"role": "doctor", "text": "Hello, who am I speaking to?"},
            {"role": "patient", "text": "My name is John Smith and I have a headache."}]}),
        json.dumps({"id": "p2", "self_report": "Cough.", "turns": [
            {"role": "patient", "text": "我电话是138-0000-0000，咳嗽三天了。"}]}),
        json.dumps({"id": "p3", "self_report": "Back pain.", "turns": [{"role": "patient", "text": "My back hurts."}]}),
    ]
    upload = io.BytesIO("\n".join(lines).encode())
    upload.name = "p.jsonl"
    client.post(reverse("corpus-upload"), {"corpus_name": "Private", "file": upload})
    corpus = Corpus.objects.get(name="Private")
    statuses = dict(corpus.dialogues.values_list("external_id", "privacy_status"))
    assert statuses == {"p1": "flagged", "p2": "flagged", "p3": "clear"}
    page = client.get(reverse("privacy-review", args=[corpus.pk])).content.decode()
    assert "<mark>John Smith</mark>" in page and "138-0000-0000" in page
    p1, p2 = corpus.dialogues.get(external_id="p1"), corpus.dialogues.get(external_id="p2")
    client.post(reverse("privacy-review", args=[corpus.pk]), {"dialogue": p1.pk, "action": "redact"})
    client.post(reverse("privacy-review", args=[corpus.pk]), {"dialogue": p2.pk, "action": "exclude"})
    p1.refresh_from_db()
    assert p1.privacy_status == "redacted"
    html = client.get(reverse("dialogue-detail", args=[p1.pk])).content.decode()
    assert "John Smith" not in html and "[REDACTED]" in html
    campaign = create_campaign(name="priv", corpus=corpus, scale_version=mini_cex(), overlap=1)
    assert "p2" not in campaign.dialogues().values_list("external_id", flat=True)


def test_physician_home_lists_own_progress(client, campaign, two_raters):
    r1, _ = two_raters
    client.force_login(r1)
    html = client.get(reverse("home")).content.decode()
    assert "Pages" in html and "0 / 2" in html and reverse("rate-next") in html


def test_assign_from_page_reports_shortfall(client, coordinator, make_user):
    campaign = campaign_with([make_user("solo", "physician")], n=2, overlap=2, name="short")
    client.force_login(coordinator)
    response = client.post(reverse("campaign-assign", args=[campaign.pk]), follow=True)
    assert "still lack raters" in response.content.decode()
    assert assign(campaign).created == 0


def test_coordinator_undoes_a_redaction_and_history_is_kept(client, campaign, two_raters, coordinator):
    r1, _ = two_raters
    mine = own(campaign, r1)
    client.force_login(r1)
    client.post(reverse("rate-redact", args=[mine.pk]), {"field": "self_report", "start": 0, "end": 9})
    redaction = Redaction.objects.get()
    client.force_login(coordinator)
    page = client.get(reverse("dialogue-detail", args=[mine.dialogue_id])).content.decode()
    assert "[REDACTED]" in page and "Annotator while rating" in page
    assert client.post(reverse("redaction-revoke", args=[redaction.pk]), {"reason": ""}).status_code == 302
    redaction.refresh_from_db()
    assert redaction.revoked_at is None
    client.post(reverse("redaction-revoke", args=[redaction.pk]), {"reason": "not personal data"})
    redaction.refresh_from_db()
    assert redaction.revoked_at and redaction.revoked_by == coordinator
    page = client.get(reverse("dialogue-detail", args=[mine.dialogue_id])).content.decode()
    assert "Complaint" in page and "undone by coord" in page
    assert AuditEvent.objects.filter(action="dialogue.unredact", reason="not personal data").exists()
