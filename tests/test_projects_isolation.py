"""What a review of project isolation found, each as a regression test, on the two-project world
(tests/two_projects.py):

1. a project that owns a library scale never sees, edits, publishes or copies another project's draft of it;
2. roles are read in the object's project (users with different roles in two projects, in both orders);
3. no enumeration of accounts through the raters API or reassignment;
4. bad input answers 400 at the door, never 500 (deep JSON, non-finite and over-long numbers);
5. the LLM cache and cost estimates are per project; pseudonyms are per project and random; /system/'s details are
   for administrators; project names cannot be mistaken for one another.
"""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client
from django.urls import reverse

from projects import scoping
from tests.two_projects import MISSING_ID, shared_world

world = pytest.fixture(scope="module")(shared_world)
ROLES = ("coordinator", "analyst", "physician")


def _login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _normal(text: str, *values) -> str:
    text = re.sub(r'nonce="[^"]*"|csrfmiddlewaretoken" value="[^"]*"|csrf-token" content="[^"]*"', "", text)
    for value in values:
        text = text.replace(str(value), "<x>")
    return text


# --- 1. drafts of a shared scale belong to the project that drafted them ------------------------------------------

def _draft_urls(world, version_number: int, item_pk: int, level_pk: int) -> list[tuple[str, str]]:
    slug = world.alpha.objects["library_scale"].slug
    scale_urls = [reverse(name, args=[slug, version_number]) for name in (
        "scale-version", "scale-publish", "scale-new-version", "scale-add-dimension", "scale-add-item")]
    urls = [*scale_urls, reverse("item-edit", args=[item_pk]), reverse("item-remove", args=[item_pk]),
            reverse("item-edit", args=[level_pk]), f"/api/scale-versions/{item_pk}/"]
    return [(method, url) for url in urls for method in ("GET", "POST")]


@pytest.mark.parametrize("role", ROLES)
def test_the_owner_of_a_library_scale_never_reaches_another_projects_draft(world, db, role):
    """Finding 1: Bravo drafted v2 of Alpha's library scale. To each of Alpha's users every page and action of that
    draft (its version, its item, its level) answers exactly as a version or item that does not exist."""
    bravo = world.bravo.objects
    draft, item, level = bravo["library_draft"], bravo["library_draft_item"], bravo["library_draft_level"]
    client = _login(world.alpha.user(role))
    real = _draft_urls(world, draft.number, item.pk, level.pk)
    real[-2:] = [(m, f"/api/scale-versions/{draft.pk}/") for m in ("GET", "POST")]
    missing = _draft_urls(world, 99, MISSING_ID, MISSING_ID)
    missing[-2:] = [(m, f"/api/scale-versions/{MISSING_ID}/") for m in ("GET", "POST")]
    for (method, url), (_, gone_url) in zip(real, missing, strict=True):
        send = client.get if method == "GET" else client.post
        a, b = send(url), send(gone_url)
        assert a.status_code == b.status_code, f"{role} {method} {url}: {a.status_code} vs missing {b.status_code}"
        assert a.status_code in (403, 404, 405), f"{role} {method} {url}: {a.status_code}"
        assert "Bravo" not in a.content.decode(), f"{role} {method} {url} shows Bravo's draft"
    scale_page = client.get(reverse("scale-detail", args=[world.alpha.objects["library_scale"].slug]))
    assert scale_page.status_code == 200 and "Bravo" not in scale_page.content.decode()
    api = client.get(f"/api/scales/{world.alpha.objects['library_scale'].slug}/").json()
    assert [v["number"] for v in api["versions"]] == [1]


def test_the_draft_stays_unpublished_and_uncopied_after_the_owners_attempts(world, db):
    from annotation.models import ScaleVersion

    client = _login(world.alpha.coordinator)
    draft = world.bravo.objects["library_draft"]
    slug = world.alpha.objects["library_scale"].slug
    client.post(reverse("scale-publish", args=[slug, draft.number]))
    client.post(reverse("scale-new-version", args=[slug, draft.number]), {"note": "copy it"})
    client.post(reverse("item-edit", args=[world.bravo.objects["library_draft_item"].pk]),
                {"text_en": "Alpha overwrote it"})
    with scoping.scopes_disabled():
        draft.refresh_from_db()
        assert draft.status == ScaleVersion.Status.DRAFT
        assert list(ScaleVersion.objects.filter(scale__slug=slug).values_list("number", flat=True)
                    .order_by("number")) == [1, 2]
        assert world.bravo.objects["library_draft_item"].__class__.objects.get(
            pk=world.bravo.objects["library_draft_item"].pk).text_en == "Bravo draft wording"


def test_the_drafting_project_edits_its_draft(world, db):
    """The positive control: Bravo's coordinator sees and edits the draft of Alpha's scale that Bravo made."""
    client = _login(world.bravo.coordinator)
    item = world.bravo.objects["library_draft_item"]
    page = client.get(reverse("scale-version", args=[world.alpha.objects["library_scale"].slug, 2]))
    assert page.status_code == 200 and "Bravo draft wording" in page.content.decode()
    assert client.get(reverse("item-edit", args=[item.pk])).status_code == 200


def test_an_audit_entry_never_names_a_non_member(world, db):
    from projects.models import AuditEvent, NotAMemberError

    with pytest.raises(NotAMemberError):
        AuditEvent.record(world.alpha.coordinator, "scale_version.publish", world.bravo.objects["library_draft"])
    with scoping.scopes_disabled():
        actors = {(e.actor_id, e.project_id) for e in AuditEvent.objects.exclude(actor=None).exclude(project=None)}
    from projects.models import Membership

    for actor, project in actors:
        assert actor == world.admin.pk or Membership.objects.filter(user=actor, project=project).exists()


# --- 2. roles are read in the object's project --------------------------------------------------------------------

def _assignments(client, project: str) -> list[dict]:
    return client.get("/api/assignments/", HTTP_X_PROJECT=project).json()["results"]


@pytest.mark.parametrize("order", ["coordinator here, physician there", "physician here, coordinator there"])
def test_roles_are_read_in_each_rows_project(world, db, order):
    """Finding 2: working in the project where they coordinate, a user sees the assignments they rate elsewhere as
    their rater does: no external id, no database id, and nothing of a dialogue that project excluded."""
    from annotation.models import Dialogue, PrivacyStatus

    if order.startswith("coordinator"):
        user, here, there = world.dual, world.alpha, world.bravo
    else:
        user, here, there = world.dual2, world.bravo, world.alpha
    client = _login(user)
    with scoping.in_project(there.project):
        mine = list(there.objects["campaign"].assignments.filter(rater=user).order_by("pk"))
        excluded = mine[-1].dialogue
        Dialogue.objects.filter(pk=excluded.pk).update(privacy_status=PrivacyStatus.EXCLUDED)
    try:
        rows = _assignments(client, here.name)
        theirs = [r for r in rows if r["campaign"]["id"] == there.pk("campaign")]
        assert theirs, "the user's own assignments elsewhere are listed (their rating queue)"
        assert all("external_id" not in r["dialogue"] and "id" not in r["dialogue"] for r in theirs)
        assert excluded.external_id not in json.dumps(rows) and all(r["id"] != mine[-1].pk for r in theirs)
        own = [r for r in rows if r["campaign"]["id"] == here.pk("campaign")]
        assert own and all("external_id" in r["dialogue"] for r in own)  # a coordinator here sees the ids
        detail = client.get(f"/api/assignments/{mine[0].pk}/", HTTP_X_PROJECT=here.name)
        assert detail.status_code == 200 and "external_id" not in detail.json()["dialogue"]
    finally:
        with scoping.in_project(there.project):
            Dialogue.objects.filter(pk=excluded.pk).update(privacy_status=PrivacyStatus.CLEAR)


# --- 3. no enumeration ----------------------------------------------------------------------------------------

def test_the_raters_api_names_only_members(world, db):
    """Finding 3: any id or name that is not a member of the campaign's project answers like a missing one."""
    client = _login(world.alpha.coordinator)
    url = f"/api/campaigns/{world.alpha.pk('campaign')}/raters/"
    answers = {}
    for label, ref in (("missing", MISSING_ID), ("admin", world.admin.pk),
                       ("other project", world.bravo.coordinator.pk), ("other name", world.bravo.coordinator.username),
                       ("missing name", "nobody-here"), ("huge", "9" * 5000)):
        response = client.post(url, data=json.dumps({"user": ref}), content_type="application/json")
        assert response.status_code == 400, (label, response.status_code)
        answers[label] = _normal(response.json()["detail"], str(ref)[:40])  # long references are cut
    assert len(set(answers.values())) == 1, answers
    said = json.dumps(list(answers.values()))
    assert "admin" not in said and "bravo" not in said.lower()


def test_reassigning_to_a_non_member_answers_as_missing(world, db):
    client = _login(world.alpha.coordinator)
    url = reverse("assignment-reassign", args=[world.alpha.pk("assignment")])
    other = client.post(url, {"to_user": world.bravo.physicians[0].pk, "reason": "x"})
    gone = client.post(url, {"to_user": MISSING_ID, "reason": "x"})
    admin = client.post(url, {"to_user": world.admin.pk, "reason": "x"})
    assert other.status_code == gone.status_code == admin.status_code == 404


# --- 4. bad input at the door ----------------------------------------------------------------------------------

DEEP = "[" * 100_000 + "]" * 100_000


def test_deep_json_to_the_token_endpoint_without_logging_in_is_a_400():
    client = Client()
    response = client.post("/api/auth/token/", data=DEEP, content_type="application/json")
    assert response.status_code == 400 and "nests deeper" in response.json()["detail"]


@pytest.mark.parametrize("body", [DEEP, '{"name": 1e400}', '{"name": NaN}', '{"overlap": ' + "9" * 5000 + "}",
                                  "not json"])
def test_bad_json_to_the_api_is_a_400(world, db, body):
    client = _login(world.alpha.coordinator)
    for url in ("/api/campaigns/", f"/api/assignments/{world.alpha.pk('assignment')}/labels/"):
        response = client.post(url, data=body, content_type="application/json")
        assert response.status_code == 400, (url, body[:20], response.status_code)
        assert response.json()["detail"]


@pytest.mark.parametrize("field", ["seq", "item", "value"])
def test_non_finite_numbers_in_a_rating_click_are_a_400(world, db, field):
    doctor = world.alpha.physicians[1]
    with scoping.in_project(world.alpha.project):
        assignment = world.alpha.objects["campaign"].assignments.filter(rater=doctor).first()
    client = _login(doctor)
    body = {"item": world.alpha.pk("rating_item"), "value": 1, "seq": 1}
    raw = json.dumps(body).replace(f'"{field}": {body[field]}', f'"{field}": 1e400')
    response = client.post(reverse("rate-label", args=[assignment.pk]), data=raw, content_type="application/json")
    assert response.status_code == 400, response.content
    redaction = client.post(reverse("rate-redact", args=[assignment.pk]),
                            data='{"field": "turn", "turn": 0, "start": 1e400, "end": 2}',
                            content_type="application/json")
    assert redaction.status_code == 400


def test_non_finite_numbers_in_a_comparison_are_a_400(world, db):
    task = world.alpha.objects["preference_task"]
    with scoping.in_project(world.alpha.project):
        other = task.study.tasks.exclude(pk=task.pk).filter(rater=world.alpha.physicians[0]).first() or task
    client = _login(other.rater)
    response = client.post(reverse("compare-answer", args=[other.pk]),
                           data='{"criterion": 1e400, "choice": "A", "seq": 1}', content_type="application/json")
    assert response.status_code == 400


# --- 5. cache, pseudonyms, /system/, names ------------------------------------------------------------------------

def test_the_llm_cache_key_is_the_projects_own_unless_shared(settings):
    from scoring.llm.gateway import request_key

    payload = {"model": "m", "messages": [{"role": "user", "content": "same text"}]}
    a, b = request_key("http://x/v1", payload, project=1), request_key("http://x/v1", payload, project=2)
    assert a != b and len(a) == len(b) == 64
    assert request_key("http://x/v1", payload, project=1) == a  # stable
    settings.LLM_CACHE_SHARED = True
    assert request_key("http://x/v1", payload, project=1) == request_key("http://x/v1", payload, project=2)


def _judged_corpus_and_judge(project, server):
    """In ``project``: the same three dialogues and the same judge (same endpoint, model and prompts) as any other
    project calling this."""
    from annotation.models import Corpus, Dialogue, ScaleVersion
    from scoring.judges import runs as judging
    from scoring.judges.models import JudgeConfig
    from scoring.llm import limiter

    with scoping.in_project(project):
        corpus = Corpus.objects.create(name="same texts")
        for i in range(3):
            Dialogue.objects.create(corpus=corpus, external_id=f"s{i}", self_report=f"Cough for {i + 2} days.",
                                    turns=[{"role": "doctor", "text": "Hello, what brings you in?"},
                                           {"role": "patient", "text": f"A cough for {i + 2} days."}])
        version = ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=1)
        config = JudgeConfig.objects.create(name="same judge", base_url=server.base_url,
                                            api_key_env="LLM_KEY_MINICEX_TEST", model="fake-judge",
                                            prompt_set=judging.default_prompt_set(version), timeout_seconds=2,
                                            price_input_per_1k="0.5", price_output_per_1k="1.5")
        limiter.reset(f"judge-{config.pk}")
    return corpus, config


def _judge(project, corpus, config) -> tuple[dict, list[str]]:
    from scoring.judges import runs as judging

    with scoping.in_project(project):
        estimate = judging.estimate(config, corpus, item_codes=["1.1", "2.1"])
        run = judging.create_run(config, corpus, item_codes=["1.1", "2.1"])
        judging.start(run)
        return estimate, judging.drain(run)


@pytest.mark.parametrize("shared", [False, True])
def test_the_llm_cache_is_per_project_unless_an_administrator_shares_it(db, instrument, fake_llm, monkeypatch,
                                                                      settings, shared):
    """Finding 5: Bravo's run of the very requests Alpha paid for is not answered from Alpha's cache, and Alpha's
    calls count neither as "already answered" nor in Bravo's token estimate; LLM_CACHE_SHARED=1 shares the cache."""
    from projects.services import create_project
    from scoring.llm.models import LLMCall

    monkeypatch.setenv("LLM_KEY_MINICEX_TEST", "sk-test")
    settings.LLM_CACHE_SHARED = shared
    with scoping.scopes_disabled():
        alpha, bravo = create_project("Cache Alpha"), create_project("Cache Bravo")
    first, states = _judge(alpha, *_judged_corpus_and_judge(alpha, fake_llm))
    assert first["cached"] == 0 and set(states) == {"done"} and len(fake_llm.chat_requests) == 6
    fake_llm.reset()
    corpus, config = _judged_corpus_and_judge(bravo, fake_llm)
    estimate, states = _judge(bravo, corpus, config)
    if shared:
        assert estimate["cached"] == 6 and set(states) == {"cached"} and len(fake_llm.chat_requests) == 0
    else:
        assert estimate["cached"] == 0 and set(states) == {"done"} and len(fake_llm.chat_requests) == 6
        assert estimate["completion_basis"] != "past answers"  # Alpha's answers do not inform Bravo's estimate
        with scoping.scopes_disabled():
            assert set(LLMCall.objects.values_list("project", flat=True)) == {alpha.pk, bravo.pk}


def test_pseudonyms_are_random_per_project_and_stable(world, db):
    from projects.pseudonyms import pseudonym

    user = world.dual
    a1, b1 = pseudonym(world.alpha.project, user), pseudonym(world.bravo.project, user)
    assert a1 == pseudonym(world.alpha.project, user) and b1 == pseudonym(world.bravo.project, user)
    assert a1 != b1
    codes = [pseudonym(world.alpha.project, u) for u in (world.alpha.physicians + [world.alpha.analyst])]
    assert all(re.fullmatch(r"R-[2-9A-HJKMNP-TV-Z]{5}", c) for c in codes + [a1, b1])
    assert not any(re.fullmatch(r"R\d{4}", c) for c in codes)


def test_system_details_are_for_administrators(world, db):
    from django.conf import settings

    database = str(settings.DATABASES["default"]["NAME"]).rsplit("/", 1)[-1]
    coordinator = _login(world.alpha.coordinator).get(reverse("system")).content.decode()
    admin = _login(world.admin).get(reverse("system")).content.decode()
    assert database in admin
    assert database not in coordinator and "shown to administrators" in coordinator


@pytest.mark.parametrize("name", ["alpha", "ALPHA", "\uff21lpha", "\u0410lpha", "Al\u200bpha", "Alpha\u2060",
                                  "  Alpha  "])
def test_project_names_that_cannot_be_told_apart_are_refused(world, db, name):
    from projects.services import ProjectError, create_project

    with pytest.raises(ProjectError) as refused:
        create_project(name)
    assert "exists already" in str(refused.value) or "invisible" in str(refused.value)


def test_the_project_form_refuses_a_look_alike_name(world, db):
    client = _login(world.admin)
    response = client.post(reverse("project-list"), {"name": "\u0412ravo", "description": ""})  # Cyrillic В
    assert response.status_code == 400 and "cannot be told apart" in response.content.decode()


def _archive_tables(path) -> dict[str, bytes]:
    import zipfile

    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist() if name.startswith("data/")}


def test_a_study_export_reads_its_project_whatever_scope_it_is_called_in(world, db, tmp_path):
    """The archive's queries rely on the project scope the export enters itself: called with the scope off, in both
    projects' scope or in its own, Alpha's archive holds the same tables, and none of Bravo's rows."""
    from annotation.models import Dialogue, PrivacyStatus
    from studies.export import SCHEMAS, export_counts, export_study

    alpha = world.alpha.project
    with scoping.in_project(alpha):
        Dialogue.objects.filter(privacy_status=PrivacyStatus.FLAGGED).update(privacy_status=PrivacyStatus.ACCEPTED)
    tables, counts = [], []
    for n, scope in enumerate((scoping.scopes_disabled, lambda: scoping.in_project([alpha, world.bravo.project]),
                               lambda: scoping.in_project(alpha))):
        with scope():
            export_study(alpha, tmp_path / f"{n}.zip")
            counts.append(export_counts(alpha, SCHEMAS))
        tables.append(_archive_tables(tmp_path / f"{n}.zip"))
    assert tables[0] == tables[1] == tables[2]
    assert counts[0] == counts[1] == counts[2]
    assert int(counts[0]["data/labels.csv"]) > 0
    text = b"\n".join(tables[0].values()).decode("utf-8")
    assert "alpha" in text.lower() and not world.bravo.leaks(text)
