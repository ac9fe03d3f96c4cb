"""Demo data for `make run`, and the dialogue importer it uses."""

import pytest
from django.contrib.auth import get_user_model

from annotation.demo import DEMO_CAMPAIGN, DEMO_USERS, demo_logins, load_demo
from annotation.importers import ImportRejected, import_dialogues, parse_dialogues
from annotation.models import Assignment, Corpus, Dialogue
from annotation.roles import roles_of


@pytest.mark.django_db
def test_demo_is_idempotent_and_complete():
    first = load_demo()
    second = load_demo()
    assert first["users_created"] == 4 and first["dialogues_created"] >= 12
    assert second == {"users_created": 0, "dialogues_created": 0, "campaigns_created": 0}
    assert first["campaigns_created"] == 1
    physician = get_user_model().objects.get(username="physician")
    assigned = Assignment.objects.filter(rater=physician, campaign__name=DEMO_CAMPAIGN)
    assert assigned.count() >= 10  # the demo physician can start rating at once
    corpus = Corpus.objects.get(is_demo=True)
    dialogues = Dialogue.objects.filter(corpus=corpus)
    assert dialogues.count() >= 12
    assert set(dialogues.values_list("language", flat=True)) == {"en", "zh"}
    assert all(d.meta.get("demo") for d in dialogues)
    assert max(len(d.turns) for d in dialogues) >= 40
    for role, username, _password, _name in DEMO_USERS:
        assert role in roles_of(get_user_model().objects.get(username=username))
    assert [login[0] for login in demo_logins()] == ["physician", "coordinator", "analyst", "admin"]


@pytest.mark.django_db
def test_load_demo_command_loads_every_apps_demo_in_one_process_and_skips_what_exists(instrument):
    from io import StringIO

    from django.apps import apps
    from django.core.management import call_command

    models = [apps.get_model("delphi", "DelphiStudy"), apps.get_model("scoring", "PreferenceStudy"),
              apps.get_model("scoring", "CaseSet"), Dialogue, Assignment]
    out = StringIO()
    call_command("load_demo", stdout=out)
    counts = [model.objects.count() for model in models]
    assert all(counts), counts
    assert "Demo Delphi study ready" in out.getvalue() and "physician / physician-demo" in out.getvalue()
    again = StringIO()
    call_command("load_demo", "--no-logins", stdout=again)
    assert [model.objects.count() for model in models] == counts
    assert "0 new users, 0 new dialogues" in again.getvalue() and "already" in again.getvalue()
    assert "physician-demo" not in again.getvalue()


@pytest.mark.django_db
def test_changed_demo_password_is_not_printed():
    load_demo()
    user = get_user_model().objects.get(username="admin")
    user.set_password("something-private-123")
    user.save()
    assert "admin" not in [login[1] for login in demo_logins()]


def test_parse_reports_every_bad_line_with_its_number():
    lines = [
        '{"id": "a", "self_report": "cough", "turns": [{"role": "doctor", "text": "Hello"}]}',
        '{"id": "b", "self_report": "x", "turns": [}',
        '{"id": "c", "turns": [{"role": "doctor", "text": "Hi"}]}',
        '{"id": "d", "self_report": "x", "turns": [{"role": "nurse", "text": "Hi"}]}',
        '{"id": "e", "self_report": "x", "turns": []}',
        "",
        '{"id": "a", "self_report": "again", "turns": [{"role": "patient", "text": "Hi"}]}',
    ]
    result = parse_dialogues(lines)
    assert [(e.line, e.message.split(" ")[0]) for e in result.errors] == [
        (2, "invalid"), (3, "missing"), (4, "turn"), (5, '"turns"'), (7, 'id')]
    assert [r["id"] for r in result.records] == ["a"]


@pytest.mark.django_db
def test_import_is_all_or_nothing():
    corpus = Corpus.objects.create(name="c")
    good = '{"id": "a", "self_report": "cough", "turns": [{"role": "doctor", "text": "Hello"}]}'
    bad = '{"id": "b", "self_report": "", "turns": [{"role": "doctor", "text": "Hello"}]}'
    with pytest.raises(ImportRejected) as rejected:
        import_dialogues(corpus, [good, bad])
    assert [e.line for e in rejected.value.errors] == [2]
    assert not Dialogue.objects.exists()
    assert import_dialogues(corpus, [good]) == {"created": 1, "updated": 0, "flagged": 0}
    with pytest.raises(ImportRejected, match="already in corpus"):
        import_dialogues(corpus, [good])
    updated = import_dialogues(corpus, [good.replace("cough", "fever")], update=True)
    assert updated == {"created": 0, "updated": 1, "flagged": 0}
    assert Dialogue.objects.get().self_report == "fever"
