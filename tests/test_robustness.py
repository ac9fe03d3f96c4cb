"""Bad input and failures get a clear 4xx/503 (JSON for the API, a page for the UI, a line-numbered CLI error),
never a 500 or a traceback; analysts see pseudonyms on every page; raters see opaque per-campaign
dialogue ids."""

from __future__ import annotations

import contextlib
import json
import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import OperationalError
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from annotation import campaigns, labels
from annotation.models import Assignment, Corpus, Dialogue, Redaction
from core.jobs import services as jobs
from core.jobs.models import Job
from projects.pseudonyms import pseudonym
from projects.scoping import active_project_id
from tests.factories import answer_all, campaign_with, corpus_with, rating_items

NUL = "\x00"


def dialogue_line(ext_id: str = "d1", **extra) -> str:
    record = {"id": ext_id, "self_report": "I have had a cough for three days.", "model": "m", "language": "en",
              "turns": [{"role": "patient", "text": "A cough."}, {"role": "doctor", "text": "Any fever?"}]}
    record.update(extra)
    return json.dumps(record)


@pytest.fixture
def raters(make_user):
    return [make_user(f"doc{i}", "physician") for i in range(3)]


@pytest.fixture
def campaign(raters):
    return campaign_with(raters, n=4, overlap=3, name="Robust")


def api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


# --------------------------------------------------------------------------------------------------------------
# Item 7: dialogue import (CLI and web) on every database
# --------------------------------------------------------------------------------------------------------------
BAD_LINES = [
    (dialogue_line("a" * 201), 'line 1: "id" is 201 characters long; at most 200 are allowed'),
    (dialogue_line("d2", model="m" * 201), 'line 2: "model" is 201 characters long'),
    (dialogue_line("d3", language="e" * 17), 'line 3: "language" is 17 characters long; at most 16'),
    (dialogue_line("d4", self_report=f"cough{NUL}"), 'line 4: "self_report" contains a NUL character'),
    (dialogue_line("d5", turns=[{"role": "doctor", "text": f"h{NUL}i"}]), 'line 5: "turns[1].text" contains a NUL'),
    (dialogue_line("d6", meta={"k": f"v{NUL}"}), 'line 6: "meta.k" contains a NUL'),
    ('{"id": "d7", "self_report": "x", "turns": [{"role": "doctor", "text": "\\ud800"}]}',
     'line 7: "turns[1].text" contains an unpaired surrogate'),
    ('{"id": "d8", "self_report": "x", "meta": {"t": NaN}, "turns": [{"role": "doctor", "text": "hi"}]}',
     'line 8: "meta.t" is NaN'),
    ("[" * 50_000 + "]" * 50_000, "line 9: the JSON is nested too deeply"),
    (dialogue_line(f"d{NUL}"), 'line 10: "id" contains a NUL'),
]


def test_cli_import_reports_overlong_fields_and_nul_characters_with_line_numbers(db, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(line for line, _ in BAD_LINES) + "\n", encoding="utf-8")
    err = StringIO()
    with pytest.raises(CommandError, match="nothing was written"):
        call_command("import_dialogues", str(path), "--corpus", "Robust", stdout=StringIO(), stderr=err)
    printed = err.getvalue()
    for _, expected in BAD_LINES:
        assert expected in printed, expected
    assert "Traceback" not in printed
    assert not Dialogue.objects.exists() and not Corpus.objects.filter(name="Robust").exists()
    with pytest.raises(CommandError, match="at most 200 characters"):
        call_command("import_dialogues", str(path), "--corpus", "c" * 201, stdout=StringIO(), stderr=StringIO())


def test_web_import_shows_the_same_errors_on_the_page(client, coordinator):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client.force_login(coordinator)
    upload = SimpleUploadedFile("bad.jsonl", "\n".join(line for line, _ in BAD_LINES).encode())
    response = client.post(reverse("corpus-upload"), {"corpus_name": "Robust web", "file": upload})
    assert response.status_code == 200
    html = response.content.decode()
    assert "line 1: &quot;id&quot; is 201 characters long" in html
    assert "line 5: &quot;turns[1].text&quot; contains a NUL character" in html
    assert not Dialogue.objects.exists()


def test_label_import_refuses_nul_with_its_line(db, raters):
    from annotation.importers import import_dialogues
    from annotation.label_import import import_labels

    corpus = Corpus.objects.create(name="lab")
    import_dialogues(corpus, [dialogue_line("d1")])
    from annotation.importers import ImportRejected

    with pytest.raises(ImportRejected) as refused:
        import_labels(corpus, ["dialogue_id,rater,item,value,comment", f"d1,ext1,1.1,1,bad{NUL}comment"],
                      file_name="l.csv")
    assert "line 2: contains a NUL character" in str(refused.value)


# --------------------------------------------------------------------------------------------------------------
# Item 7: the API
# --------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("url", [
    "/api/dialogues/?split={v}", "/api/dialogues/?language={v}", "/api/dialogues/?model={v}",
    "/api/dialogues/?privacy_status={v}", "/api/campaigns/?status={v}", "/api/campaigns/?phase={v}",
    "/api/scale-versions/?scale={v}", "/api/labels/?item={v}", "/api/assignments/?status={v}",
    "/api/corpora/{corpus}/dialogues/?model={v}",
])
def test_nul_in_api_filters_is_a_400_with_a_message(coordinator, campaign, url):
    response = api(coordinator).get(url.format(v="a%00b", corpus=campaign.corpus_id))
    assert response.status_code == 400
    assert "NUL" in response.json()["detail"]


def test_huge_limit_and_offset_are_not_errors(coordinator, campaign):
    client = api(coordinator)
    response = client.get("/api/dialogues/?limit=99999999999999999999")
    assert response.status_code == 200 and response.json()["count"] == 4
    assert client.get("/api/dialogues/?offset=99999999999999999999").json()["results"] == []
    assert client.get("/api/labels/?limit=99999999999999999999&offset=99999999999999999999").status_code == 200


def test_api_rating_endpoints_refuse_huge_seq_and_nul_text(raters, campaign):
    client = api(raters[0])
    assignment = Assignment.objects.filter(rater=raters[0]).first()
    base = f"/api/assignments/{assignment.pk}"
    cases = [("labels/", {"item": "1.1", "value": 1, "client_seq": 2**70}),
             ("labels/", {"item": "1.1", "value": 1, "comment": f"a{NUL}b"}),
             ("labels/", {"item": f"1.1{NUL}", "value": 1}),
             ("skip/", {"reason": f"a{NUL}b"}), ("flag/", {"note": f"a{NUL}b"}), ("submit/", {"comment": NUL})]
    for path, body in cases:
        response = client.post(f"{base}/{path}", body, format="json")
        assert response.status_code == 400, (path, body, response.content)
        assert response.json()["detail"]
    assert not assignment.labels.exists()


def test_api_errors_are_json_500_and_a_database_outage_is_a_503(coordinator, campaign, monkeypatch):
    from annotation import api as annotation_api

    client = APIClient(raise_request_exception=False)
    client.force_authenticate(coordinator)

    def broken(self, request, *args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(annotation_api.CorpusViewSet, "list", broken)
    response = client.get("/api/corpora/")
    assert response.status_code == 500 and response["Content-Type"] == "application/json"
    assert response.json()["detail"]

    def outage(self, request, *args, **kwargs):
        raise OperationalError("the database system is shutting down")

    monkeypatch.setattr(annotation_api.CorpusViewSet, "list", outage)
    response = client.get("/api/corpora/")
    assert response.status_code == 503 and response["Retry-After"].isdigit()
    assert "try again" in response.json()["detail"]


def test_pages_answer_503_with_retry_after_during_a_database_outage(client, coordinator, raters, campaign,
                                                                     monkeypatch, caplog):
    from annotation import views_campaigns, views_rating

    def outage(*args, **kwargs):
        raise OperationalError("connection refused")

    client.force_login(coordinator)
    monkeypatch.setattr(views_campaigns.campaign_service, "rater_progress", outage)
    response = client.get(reverse("campaign-detail", args=[campaign.pk]))
    assert response.status_code == 503 and response["Retry-After"].isdigit()
    assert "try again" in response.content.decode()
    # The rating page's saves get JSON, which its retry queue understands.
    rater = Client()
    rater.force_login(raters[0])
    assignment = Assignment.objects.filter(rater=raters[0]).first()
    monkeypatch.setattr(views_rating.labels, "save_label", outage)
    response = rater.post(reverse("rate-label", args=[assignment.pk]), {"item": 1, "value": 1, "seq": 1},
                          HTTP_ACCEPT="application/json")
    assert response.status_code == 503 and response.json()["detail"]
    warnings = [r for r in caplog.records if "database unavailable" in r.getMessage()]
    assert warnings and all(r.exc_info is None for r in warnings)  # one line each, no traceback


# --------------------------------------------------------------------------------------------------------------
# Item 7: pages
# --------------------------------------------------------------------------------------------------------------
def test_nul_in_query_or_form_fields_of_pages_is_a_400(client, coordinator, campaign):
    client.force_login(coordinator)
    assert client.get(reverse("campaign-list") + "?q=a%00").status_code == 400
    response = client.post(reverse("campaign-dialogue-action", args=[campaign.pk, campaign.dialogues()[0].pk]),
                           {"action": "return", "note": f"x{NUL}"})
    assert response.status_code == 400 and "NUL" in response.content.decode()


@pytest.mark.parametrize("query", ["sample=random&size=abc", "sample=random&seed=abc",
                                   "sample=random&seed=99999999999999999999999"])
def test_non_numeric_page_parameters_are_a_400_with_a_message(client, coordinator, campaign, query):
    client.force_login(coordinator)
    response = client.get(reverse("campaign-detail", args=[campaign.pk]) + "?" + query)
    assert response.status_code == 400
    assert "must be" in response.content.decode()


def test_non_numeric_campaign_on_judge_pages_is_a_400(client, analyst, campaign, monkeypatch):
    from annotation.models import ScaleVersion
    from scoring.judges import runs as judging
    from scoring.judges.models import JudgeConfig

    monkeypatch.setenv("LLM_KEY_ROBUST", "sk-test")
    config = JudgeConfig.objects.create(name="robust", base_url="http://127.0.0.1:9/v1", api_key_env="LLM_KEY_ROBUST",
                                        model="m", prompt_set=judging.default_prompt_set(
                                            ScaleVersion.objects.get(number=1)))
    run = judging.create_run(config, campaign.corpus, item_codes=["1.1"])
    client.force_login(analyst)
    for url in (reverse("judge-run-report", args=[run.pk]), reverse("judge-run-compare", args=[run.pk, run.pk])):
        for value in ("abc", "99999999999999999999999"):
            response = client.get(url, {"campaign": value})
            assert response.status_code == 400 and "campaign" in response.content.decode(), (url, value)


def test_non_numeric_ids_in_forms_are_a_400(client, coordinator, campaign):
    client.force_login(coordinator)
    assignment = Assignment.objects.filter(campaign=campaign).first()
    response = client.post(reverse("assignment-reassign", args=[assignment.pk]), {"to_user": "abc"})
    assert response.status_code == 400 and "whole number" in response.content.decode()
    response = client.post(reverse("campaign-dialogue-action", args=[campaign.pk, assignment.dialogue_id]),
                           {"action": "adjudicate", "item": "1.1", "value": "1"})
    assert response.status_code == 400


def test_rating_endpoints_refuse_huge_seq_and_nul_text(client, raters, campaign):
    client.force_login(raters[0])
    assignment = Assignment.objects.filter(rater=raters[0]).first()
    item = rating_items(campaign)[0]
    for data in ({"item": item.pk, "value": 1, "seq": 2**70}, {"item": 2**70, "value": 1, "seq": 1},
                 {"item": item.pk, "value": 1, "seq": 1, "comment": f"a{NUL}"}):
        response = client.post(reverse("rate-label", args=[assignment.pk]), data, HTTP_ACCEPT="application/json")
        assert response.status_code == 400 and response.json()["detail"], data
    response = client.post(reverse("rate-label", args=[assignment.pk]),
                           json.dumps({"item": item.pk, "value": 1, "seq": 1, "comment": f"a{NUL}"}),
                           content_type="application/json")
    assert response.status_code == 400
    for name, field in (("rate-skip", "reason"), ("rate-flag", "note"), ("rate-comment", "comment")):
        response = client.post(reverse(name, args=[assignment.pk]), json.dumps({field: f"x{NUL}y"}),
                               content_type="application/json")
        assert response.status_code == 400 and "NUL" in response.json()["detail"], name
    assert not assignment.labels.exists()
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.ASSIGNED and not assignment.flagged


def test_panelist_profile_field_over_its_length_is_a_400(client, instrument, coordinator):
    from delphi import services
    from tests.test_delphi import make_study

    study = make_study(coordinator, n_panel=1)
    r1 = study.rounds.get()
    services.open_round(r1, coordinator)
    part = r1.participations.get()
    token = services.make_token(part.panelist)
    url = reverse("delphi:panel-profile", args=[token, part.pk])
    response = client.post(url, {"gender": "x" * 41})
    assert response.status_code == 400 and "at most 40 characters" in response.content.decode()
    response = client.post(url, {"professional_title": "chief"})
    assert response.status_code == 200


# --------------------------------------------------------------------------------------------------------------
# Item 7: reports with mathtext in model names; failed report jobs show their error
# --------------------------------------------------------------------------------------------------------------
def run_pending():
    """What the workers do once the changes stopped: every queued job runs (a debounced one's quiet time taken as
    over)."""
    from datetime import timedelta

    from django.utils import timezone

    for job in Job.objects.filter(status=Job.Status.QUEUED):
        if "not_before" in job.params:
            past = (timezone.now() - timedelta(seconds=1)).isoformat()
            Job.objects.filter(pk=job.pk).update(params={**job.params, "not_before": past})
        with contextlib.suppress(Exception):  # a failing job records its error and re-raises (for Celery)
            jobs.execute(job.pk)


def test_model_names_with_mathtext_do_not_break_report_plots(client, analyst, make_user):
    from scoring.reports.figures import current_report_job

    raters = [make_user(f"m{i}", "physician") for i in range(3)]
    model = r"gpt $\notacommand{x}$"
    corpus = corpus_with(4, name="mathtext", source_model=model)
    campaign = campaigns.create_campaign(name="Math", corpus=corpus, scale_version=rating_items_version(),
                                         overlap=3)
    for user in raters:
        campaigns.add_rater(campaign, user)
    campaigns.assign(campaign)
    for assignment in Assignment.objects.filter(campaign=campaign).select_related("rater"):
        answer_all(assignment, assignment.rater)
        labels.submit(assignment, assignment.rater)
    client.force_login(analyst)
    client.get(reverse("campaign-report", args=[campaign.pk]))
    run_pending()
    job = current_report_job(campaign, analyst, start=False)  # the analyst's report, queued when labels came in
    assert job.status == Job.Status.SUCCEEDED, job.error
    assert "<svg" in client.get(reverse("campaign-report", args=[campaign.pk])).content.decode()


def rating_items_version():
    from tests.factories import mini_cex

    return mini_cex()


def test_a_failed_report_job_shows_its_error_instead_of_waiting_forever(client, analyst, campaign, monkeypatch):
    from scoring.reports import agreement

    def fail(*args, **kwargs):
        raise ValueError("the statistics could not be computed")

    monkeypatch.setattr(agreement, "compute", fail)
    client.force_login(analyst)
    url = reverse("campaign-report", args=[campaign.pk])
    client.get(url)
    run_pending()
    html = client.get(url).content.decode()
    assert "the statistics could not be computed" in html and "report-progress" not in html
    assert Job.objects.filter(kind="campaign_report").count() == 1  # reloading does not queue it again
    client.get(url)
    assert Job.objects.filter(kind="campaign_report").count() == 1
    assert client.post(url).status_code == 302  # "Try again"
    assert Job.objects.filter(kind="campaign_report", status=Job.Status.QUEUED).count() == 1


# --------------------------------------------------------------------------------------------------------------
# Item 4: analysts see pseudonyms on every page unless the coordinator allowed names
# --------------------------------------------------------------------------------------------------------------
def test_analyst_pages_show_pseudonyms_unless_names_are_allowed(client, analyst, coordinator, raters, campaign):

    first = Assignment.objects.filter(rater=raters[0]).first()
    labels.flag(first, raters[0], "odd dialogue")
    labels.skip(Assignment.objects.filter(rater=raters[1]).first(), raters[1], "I know the patient")
    Redaction.objects.create(dialogue=first.dialogue, field="turn", turn=0, start=0, end=4, source="annotator",
                             created_by=raters[0])
    client.force_login(analyst)
    pages = [reverse("campaign-detail", args=[campaign.pk]), reverse("dialogue-detail", args=[first.dialogue_id])]
    for url in pages:
        html = client.get(url).content.decode()
        assert not re.search(r"\bdoc[0-2]\b", html), url
    pseudonyms = {pseudonym(active_project_id(), u) for u in raters}
    detail = client.get(pages[0]).content.decode()
    assert all(p in detail for p in pseudonyms)
    assert pseudonym(active_project_id(), raters[0]) in client.get(pages[1]).content.decode()
    api_rows = api(analyst).get(f"/api/campaigns/{campaign.pk}/raters/").json()
    assert {row["rater"] for row in api_rows} == pseudonyms  # the same pseudonyms as the API

    campaign.allow_names = True
    campaign.save(update_fields=["allow_names"])
    assert "doc0" in client.get(pages[0]).content.decode()
    assert {row["rater"] for row in api(analyst).get(f"/api/campaigns/{campaign.pk}/raters/").json()} == {
        "doc0", "doc1", "doc2"}
    client.force_login(coordinator)
    campaign.allow_names = False
    campaign.save(update_fields=["allow_names"])
    assert "doc0" in client.get(pages[0]).content.decode()


def test_trial_report_shows_pseudonyms_to_analysts(client, analyst, coordinator, make_user):

    raters = [make_user(f"t{i}", "physician") for i in range(2)]
    campaign = campaign_with(raters, n=2, overlap=2, phase="trial", name="Trial")
    item = rating_items(campaign)[0]
    for dialogue in campaign.dialogues():
        labels.set_gold(campaign, dialogue, item, 1, coordinator)
    for assignment in Assignment.objects.filter(campaign=campaign).select_related("rater"):
        answer_all(assignment, assignment.rater)
        labels.submit(assignment, assignment.rater)
    url = reverse("campaign-trial-report", args=[campaign.pk])
    client.force_login(analyst)
    html = client.get(url).content.decode()
    assert "t0" not in re.sub(r"<[^>]+>", " ", html).split() and "t1" not in re.sub(r"<[^>]+>", " ", html).split()
    assert all(pseudonym(active_project_id(), u) in html for u in raters)
    client.force_login(coordinator)
    assert ">t0<" in client.get(url).content.decode()


# --------------------------------------------------------------------------------------------------------------
# Item 5: raters see an opaque per-campaign id, never the external id
# --------------------------------------------------------------------------------------------------------------
def test_raters_see_an_opaque_per_campaign_id_and_coordinators_the_external_id(client, raters, coordinator,
                                                                               campaign):
    assignment = Assignment.objects.filter(rater=raters[0]).select_related("dialogue").first()
    dialogue = assignment.dialogue
    shown = api(raters[0]).get(f"/api/assignments/{assignment.pk}/").json()["dialogue"]
    assert set(shown) == {"blind_id", "language", "self_report", "turns"}
    assert re.fullmatch(r"D-[A-Z2-7]{8}", shown["blind_id"])
    listed = api(raters[0]).get("/api/assignments/").content.decode()
    assert dialogue.external_id not in listed and f'"id": {dialogue.pk},' not in listed
    staff = api(coordinator).get(f"/api/assignments/{assignment.pk}/").json()["dialogue"]
    assert staff["external_id"] == dialogue.external_id and staff["blind_id"] == shown["blind_id"]
    # Every rater of the campaign sees the same id; another campaign on the dialogue gives another.
    other = Assignment.objects.filter(campaign=campaign, dialogue=dialogue).exclude(rater=raters[0]).first()
    assert api(other.rater).get(f"/api/assignments/{other.pk}/").json()["dialogue"]["blind_id"] == shown["blind_id"]
    assert campaigns.blind_id(campaign.pk + 1, dialogue.pk) != shown["blind_id"]
    # The rating page shows it (and not the external id); the coordinator's review page shows both.
    client.force_login(raters[0])
    page = client.get(reverse("rate", args=[assignment.pk])).content.decode()
    assert shown["blind_id"] in page and dialogue.external_id not in page
    client.force_login(coordinator)
    review = client.get(reverse("campaign-dialogue", args=[campaign.pk, dialogue.pk])).content.decode()
    assert shown["blind_id"] in review and dialogue.external_id in review


def test_generated_dialogue_ids_do_not_reveal_the_generation_order(db, monkeypatch):
    from scoring.generation import services as generation
    from scoring.generation.models import CaseSet, GeneratedDialogue
    from tests.test_generation import SELF, case_set

    monkeypatch.setenv("LLM_KEY_GEN_TEST", "sk-test")
    cs: CaseSet = case_set(SELF, {**SELF, "id": "s2"})
    job = generation.create_job(case_set=cs, corpus_name="generated", doctor_models=["doc-a", "doc-b"],
                                patient_model="patient-sim", temperatures=[0.2, 0.8],
                                doctor_base_url="http://127.0.0.1:9/v1", doctor_api_key_env="LLM_KEY_GEN_TEST",
                                patient_base_url="http://127.0.0.1:9/v1", patient_api_key_env="LLM_KEY_GEN_TEST",
                                max_turns=4)
    made = list(GeneratedDialogue.objects.filter(job=job).select_related("case").order_by("pk"))
    ids = [generation.external_id(gd) for gd in made]
    assert len(set(ids)) == len(made) == 8
    for gd, ext in zip(made, ids, strict=True):
        assert re.fullmatch(rf"gen{job.pk}-[0-9a-f]{{10}}-{gd.case.external_id}", ext)
        assert generation.external_id(gd) == ext  # stable: a retried finalize finds the same dialogue
        assert f"-{gd.pk}-" not in ext  # the sequential id (case x model x temperature order) is not in it
