"""Text no database can store (lone surrogates, NUL, NaN) is refused with a 400 or a
line-numbered error at every way in, never a 500 or a traceback; generation case templates take plain slots only
and expand within bounds."""

import json
import logging
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse
from rest_framework.authtoken.models import Token

from annotation.models import Assignment, Label, Scale
from core.site import storable
from scoring.generation import cases
from scoring.generation.models import CaseSet, PatientCase
from scoring.preference import services as preference
from scoring.preference.models import PreferenceAnswer, PreferenceTask
from tests.factories import campaign_with, rating_items
from tests.test_preference import answers_jsonl, open_with

LONE = "a\ud800b"  # json.dumps writes it as the escape "a\\ud800b", valid JSON but not storable text


def post_json(client, url, data, **extra):
    return client.post(url, json.dumps(data), content_type="application/json", **extra)


def refused(response) -> str:
    assert response.status_code == 400, (response.status_code, response.content[:300])
    detail = response.json()["detail"]
    assert "surrogate" in detail or "NUL" in detail or "NaN" in detail or "UTF-8" in detail, detail
    return detail


@pytest.fixture
def rater_campaign(make_user):
    rater = make_user("lone-rater", "physician")
    campaign = campaign_with([rater], n=1, overlap=1, name="Lone")
    return rater, campaign, Assignment.objects.get(campaign=campaign, rater=rater)


@pytest.fixture
def no_server_errors(caplog):
    caplog.set_level(logging.WARNING)
    yield
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == [], [r.getMessage() for r in errors]


def test_rating_page_label_comment_and_flag_saves_refuse_lone_surrogates(client, rater_campaign, no_server_errors):
    rater, _, assignment = rater_campaign
    item = rating_items(assignment.campaign)[0]
    client.force_login(rater)
    detail = refused(post_json(client, reverse("rate-label", args=[assignment.pk]),
                               {"item": item.pk, "value": 1, "comment": LONE, "seq": 1}))
    assert '"comment"' in detail
    refused(post_json(client, reverse("rate-flag", args=[assignment.pk]), {"note": LONE}))
    refused(post_json(client, reverse("rate-comment", args=[assignment.pk]), {"comment": LONE}))
    refused(post_json(client, reverse("rate-skip", args=[assignment.pk]), {"reason": "\u0000"}))
    # Raw UTF-8 of a surrogate (which json.loads would take with "surrogatepass") and NaN are refused too.
    raw = b'{"item": %d, "value": 1, "comment": "\xed\xa0\x80", "seq": 2}' % item.pk
    refused(client.post(reverse("rate-label", args=[assignment.pk]), raw, content_type="application/json"))
    refused(client.post(reverse("rate-label", args=[assignment.pk]),
                        f'{{"item": {item.pk}, "value": NaN, "seq": 3}}', content_type="application/json"))
    # A number too long to convert is an error message, not a 500.
    response = client.post(reverse("rate-label", args=[assignment.pk]), '{"item": 1' + "0" * 5000 + "}",
                           content_type="application/json")
    assert response.status_code == 400
    assert not Label.objects.exists() and not Assignment.objects.get(pk=assignment.pk).flagged
    # Paired surrogates (an emoji written as two escapes) are ordinary text.
    response = post_json(client, reverse("rate-label", args=[assignment.pk]),
                         {"item": item.pk, "value": 1, "comment": "ok \ud83d\ude00", "seq": 4})
    assert response.status_code == 200 and Label.objects.get().comment == "ok \U0001F600"


def test_the_api_refuses_lone_surrogates_on_labels_flags_and_campaign_raters(client, rater_campaign, coordinator,
                                                                            no_server_errors):
    rater, campaign, assignment = rater_campaign
    auth = {"HTTP_AUTHORIZATION": f"Token {Token.objects.create(user=rater).key}"}
    refused(post_json(client, f"/api/assignments/{assignment.pk}/labels/",
                      {"item": "1.1", "value": 1, "comment": LONE}, **auth))
    refused(post_json(client, f"/api/assignments/{assignment.pk}/flag/", {"note": LONE}, **auth))
    staff = {"HTTP_AUTHORIZATION": f"Token {Token.objects.create(user=coordinator).key}"}
    refused(post_json(client, f"/api/campaigns/{campaign.pk}/raters/", {"user": LONE}, **staff))
    refused(post_json(client, f"/api/campaigns/{campaign.pk}/raters/", {"user": rater.username, "team": LONE},
                      **staff))
    detail = refused(post_json(client, f"/api/campaigns/{campaign.pk}/raters/", {"user": rater.username,
                                                                                  LONE: 1}, **staff))
    assert "key" in detail
    assert not Label.objects.exists()


def test_compare_saves_and_the_preference_api_refuse_lone_surrogates(client, make_user, coordinator,
                                                                   no_server_errors):
    answer_study = preference.create_study(name="Lone answers", kind="answer", criteria="response", overlap=2,
                                           seed=3, user=coordinator)
    preference.import_answers(answer_study, answers_jsonl(), coordinator)
    raters = [make_user(f"pref{i}", "physician") for i in range(3)]
    open_with(answer_study, raters, coordinator)
    task = PreferenceTask.objects.filter(study=answer_study, rater=raters[0]).first()
    criterion = answer_study.criteria.first()
    client.force_login(raters[0])
    refused(post_json(client, reverse("compare-answer", args=[task.pk]),
                      {"criterion": criterion.pk, "choice": "A", "comment": LONE, "seq": 1}))
    refused(post_json(client, f"/api/preference-tasks/{task.pk}/answer/",
                      {"criterion": criterion.pk, "choice": "A", "comment": LONE}))
    assert not PreferenceAnswer.objects.exclude(comment="").exists()


def test_a_generation_case_upload_with_a_lone_surrogate_is_refused_with_its_line(client, coordinator,
                                                                                 no_server_errors):
    lines = [json.dumps({"id": "c1", "self_report": "I cough."}), json.dumps({"id": "c2", "self_report": LONE}),
             json.dumps({"id": "c3", "template": "I am {age}.", "slots": {"age": [LONE]}})]
    client.force_login(coordinator)
    response = client.post(reverse("generation-case-import"), {
        "case_set": "lone", "description": "",
        "file": SimpleUploadedFile("cases.jsonl", "\n".join(lines).encode(), content_type="application/jsonl")})
    page = response.content.decode()
    assert response.status_code == 200 and "line 2" in page and "line 3" in page and "surrogate" in page
    assert not PatientCase.objects.exists() and not CaseSet.objects.filter(name="lone").exists()


def test_import_instrument_names_the_json_path_of_a_lone_surrogate(tmp_path, db):
    spec = {"name": "Lone", "slug": "lone", "dimensions": [{"code": "A", "name": "All"}],
            "items": [{"code": "x", "dimension": "A", "text": LONE, "response": {"type": "binary"}}]}
    path = tmp_path / "lone.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    err = StringIO()
    with pytest.raises(CommandError, match="Import refused: 1 error"):
        call_command("import_instrument", str(path), stdout=StringIO(), stderr=err)
    assert "$.items[0].text: contains an unpaired surrogate" in err.getvalue()
    path.write_text('{"name": "N", "slug": "n", "x": NaN}', encoding="utf-8")
    with pytest.raises(CommandError):
        call_command("import_instrument", str(path), stdout=StringIO(), stderr=(err := StringIO()))
    assert "$.x: is NaN" in err.getvalue()
    assert not Scale.objects.filter(slug__in=["lone", "n"]).exists()


def test_generate_dialogues_refuses_a_case_file_with_a_lone_surrogate_by_line(tmp_path, db, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps({"id": "c1", "self_report": "I cough."}) + "\n"
                    + json.dumps({"id": "c2", "self_report": "Fever", "meta": {"note": LONE}}) + "\n",
                    encoding="utf-8")
    with pytest.raises(CommandError) as raised:
        call_command("generate_dialogues", "--cases", str(path), "--doctor-model", "d", "--patient-model", "p",
                     stdout=StringIO(), stderr=StringIO())
    assert 'line 2: "meta.note" contains an unpaired surrogate' in str(raised.value)
    assert not PatientCase.objects.exists()


def test_storable_finds_the_first_unstorable_part_with_its_path():
    assert storable.json_problem({"a": [1, {"b": "ok"}, {"c": LONE}]}) == '"a[3].c" ' + storable.SURROGATE
    assert storable.find({"a": ["\x00"]}) == (("a", 0), storable.NUL)
    assert storable.json_problem({LONE: 1}).startswith("the value has a key that")
    assert storable.json_problem({"x": float("-inf")}) == '"x" is Infinity, which cannot be stored'
    assert storable.json_problem({"ok": "text \U0001F600", "n": 1.5}) is None
    assert not storable.might_be_unstorable('{"plain": "text", "n": 1}')
    assert storable.might_be_unstorable('{"a": "\\uD800"}') and storable.might_be_unstorable('{"a": NaN}')


# ------------------------------------------------------------------------------------------- templates (item 13)

@pytest.mark.parametrize("template", ["I am {a:d}.", "I am {a!z}.", "I am {a:%Y}.", "I am {a:>5000000}.",
                                      "I am {a!r}.", "I am {a.real}.", "I am {a[0]}.", "I am {}.", "I am {0}."])
def test_templates_take_plain_slots_only(template):
    line = json.dumps({"id": "t", "template": template, "slots": {"a": [1, 2]}})
    produced, errors = cases.parse_cases([line])
    assert produced == [] and len(errors) == 1 and errors[0].line == 1
    assert "plain slot" in errors[0].message or "not used" in errors[0].message


def test_plain_slots_and_escaped_braces_still_expand():
    line = json.dumps({"id": "t", "template": "{{note}} I am {age}, {age} years; {sex}.",
                       "slots": {"age": [30, 40], "sex": ["a man", "a woman"]}})
    produced, errors = cases.parse_cases([line])
    assert errors == [] and len(produced) == 4
    assert produced[0]["self_report"] == "{note} I am 30, 30 years; a man."
    assert cases.fill("{x:}", {"x": 5}) == "5"  # an empty format spec is a plain slot


def test_each_case_and_each_import_are_bounded(monkeypatch):
    long = "x" * 4000
    line = json.dumps({"id": "big", "template": "{a}" * 6, "slots": {"a": ["short", long]}})
    produced, errors = cases.parse_cases([line])
    assert produced == [] and errors[0].line == 1
    assert f"{6 * 4000:,} characters long" in errors[0].message and f"{cases.MAX_CASE_CHARS:,}" in errors[0].message
    monkeypatch.setattr(cases, "MAX_IMPORT_CHARS", 1000)
    lines = [json.dumps({"id": f"t{n}", "template": "{a} {b}", "slots": {"a": ["y" * 90] * 1, "b": list(range(3))}})
             for n in range(4)]
    produced, errors = cases.parse_cases(lines)
    assert [e.line for e in errors] == [4] and "split the file" in errors[0].message
    assert len(produced) == 9  # lines 1-3 fit (3 x 3 cases of 92 characters)
