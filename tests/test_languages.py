"""The pages' languages: the catalogues (complete, compiled, in step with the sources), which language a person sees
(account, browser, instance; a Delphi panellist's link), the pseudo-locale crawl of the converted pages
(tests/pseudo_locale.py), numbers alike in every language, and exports that do not depend on it."""

from __future__ import annotations

import io
import json
import re
import zipfile

import pytest
from django.conf import settings
from django.urls import reverse
from django.utils import translation
from django.utils.text import Truncator
from django.utils.translation import to_locale

from projects import catalogues
from tests import pseudo_locale
from tests.pseudo_locale import PAGES, Page
from tests.two_projects import shared_world

world = pytest.fixture(scope="module")(shared_world)

LANGUAGE_COOKIE = settings.LANGUAGE_COOKIE_NAME
PLACEHOLDER = re.compile(r"%(?:\([a-z_]+\))?[sd]")


@pytest.fixture(autouse=True)
def _english_after():
    """A request leaves its language active in the thread (as Django's LocaleMiddleware does): reset it."""
    yield
    translation.activate(settings.LANGUAGE_CODE)


# --- the catalogues ------------------------------------------------------------------------------------------------
def _po(path):
    import polib

    return polib.pofile(str(path))


def test_every_language_but_english_has_catalogues_for_the_site_and_the_scripts():
    assert catalogues.languages() == ["zh-hans"]
    for code in catalogues.languages():
        folder = catalogues.root() / "locale" / to_locale(code) / "LC_MESSAGES"
        assert (folder / "django.po").exists() and (folder / "djangojs.po").exists()


@pytest.mark.parametrize("path", catalogues.po_files(), ids=lambda p: str(p.relative_to(catalogues.root())))
def test_catalogue_is_complete_without_fuzzy_entries_and_keeps_the_placeholders(path):
    po = _po(path)
    assert not po.metadata_is_fuzzy
    assert po.metadata["Plural-Forms"]
    assert [e.msgid for e in po.untranslated_entries()] == []
    assert [e.msgid for e in po.fuzzy_entries()] == []
    for entry in po.translated_entries():
        sources = [entry.msgid, entry.msgid_plural] if entry.msgid_plural else [entry.msgid]
        translations = list(entry.msgstr_plural.values()) if entry.msgid_plural else [entry.msgstr]
        wanted = sorted(set(PLACEHOLDER.findall(sources[-1])))
        for text in translations:
            assert sorted(set(PLACEHOLDER.findall(text))) == wanted, (entry.msgid, text)


@pytest.mark.parametrize("path", catalogues.po_files(), ids=lambda p: str(p.relative_to(catalogues.root())))
def test_committed_mo_file_is_what_the_po_file_compiles_to(path):
    assert path.with_suffix(".mo").read_bytes() == _po(path).to_binary(), "run: manage.py catalogues --compile-only"


@pytest.mark.skipif(not catalogues.has_gettext(), reason="extraction needs GNU gettext (xgettext, msgmerge)")
def test_makemessages_would_add_or_drop_nothing():
    assert catalogues.out_of_date() == {}, "run: manage.py catalogues"


# --- which language a person sees ----------------------------------------------------------------------------------
def _lang(response) -> str:
    return re.search(rb'<html lang="([^"]+)"', response.content).group(1).decode()


def test_without_accept_language_the_instance_default(client, db):
    response = client.get(reverse("login"))
    assert _lang(response) == "en" and response["Content-Language"] == "en"
    assert "Accept-Language" in response["Vary"]
    assert "Log in" in response.content.decode()


def test_a_browser_asking_for_chinese_gets_chinese(client, db):
    response = client.get(reverse("login"), headers={"accept-language": "zh-CN,zh;q=0.9,en;q=0.8"})
    assert _lang(response) == "zh-hans" and response["Content-Language"] == "zh-hans"
    assert "登录" in response.content.decode()


def test_the_instance_default_comes_from_language_code(client, db, settings):
    settings.LANGUAGE_CODE = "zh-hans"
    assert _lang(client.get(reverse("login"))) == "zh-hans"
    # a browser's own choice still wins over the instance's
    assert _lang(client.get(reverse("login"), headers={"accept-language": "en-US,en;q=0.9"})) == "en"


def test_language_code_setting_is_read_from_the_environment_and_checked(monkeypatch):
    from config.errors import ConfigError
    from config.settings import _language_code

    monkeypatch.setenv("LANGUAGE_CODE", "zh-Hans")
    assert _language_code() == "zh-hans"
    monkeypatch.setenv("LANGUAGE_CODE", "")
    assert _language_code() == "en"
    monkeypatch.setenv("LANGUAGE_CODE", "fr")
    with pytest.raises(ConfigError, match="LANGUAGE_CODE='fr' is not one of this instance's languages: en, zh-hans"):
        _language_code()


def test_the_login_page_switch_keeps_the_choice_in_the_browser(client, db):
    login = "http://testserver" + reverse("login")
    response = client.post(reverse("language-switch"), {"language": "zh-hans"}, headers={"referer": login})
    assert response.status_code == 302 and response["Location"] == login
    assert client.cookies[LANGUAGE_COOKIE].value == "zh-hans"
    page = client.get(reverse("login"), headers={"accept-language": "en"})
    assert _lang(page) == "zh-hans"
    assert 'option value="zh-hans" lang="zh-hans" translate="no" selected' in page.content.decode()


def test_the_account_menu_choice_is_stored_with_the_account_and_wins(client, world, db):
    from projects.models import AccountSettings

    user = world.alpha.physicians[1]
    client.force_login(user)
    english = {"accept-language": "en-US,en;q=0.9"}
    assert _lang(client.get(reverse("project-list"), headers=english)) == "en"
    response = client.post(reverse("language-switch"), {"language": "zh-hans", "next": reverse("project-list")},
                           headers=english)
    assert response["Location"] == reverse("project-list")
    assert AccountSettings.objects.get(user=user).language == "zh-hans"
    page = client.get(reverse("project-list"), headers=english)
    assert _lang(page) == "zh-hans" and "您的角色" in page.content.decode()
    assert 'data-testid="language-menu"' in page.content.decode()
    # another browser, another session: the account's choice, whatever the browser asks for
    other = type(client)()
    other.force_login(user)
    assert _lang(other.get(reverse("project-list"), headers=english)) == "zh-hans"
    # back to the browser's language
    back = client.post(reverse("language-switch"), {"language": ""}, headers={**english, "referer": "https://evil.example/"})
    assert back["Location"] == reverse("home")  # never to another site
    assert AccountSettings.objects.get(user=user).language == ""
    assert _lang(client.get(reverse("project-list"), headers=english)) == "en"


def test_an_unknown_language_is_refused_and_changes_nothing(client, world, db):
    from projects.models import AccountSettings

    client.force_login(world.alpha.analyst)
    response = client.post(reverse("language-switch"), {"language": "xx-nope"})
    assert response.status_code == 400 and b"No such language" in response.content
    assert not AccountSettings.objects.filter(user=world.alpha.analyst).exists()
    assert client.get(reverse("language-switch")).status_code == 405


def test_the_javascript_catalogue_follows_the_page_language(client, db):
    chinese = json.dumps("服务器未能完成该请求。")  # the catalogue is JSON in the script (non-ASCII escaped)
    zh = client.get(reverse("javascript-catalog") + "?l=zh-hans", headers={"accept-language": "zh-CN"})
    assert zh.status_code == 200 and chinese[1:-1] in zh.content.decode()
    assert "private" in zh["Cache-Control"] and "max-age=3600" in zh["Cache-Control"]
    # the page's language in the query wins over the browser's (a panel link's page is in the panellist's language)
    by_query = client.get(reverse("javascript-catalog") + "?l=zh-hans", headers={"accept-language": "en-US"})
    assert chinese[1:-1] in by_query.content.decode()
    en = client.get(reverse("javascript-catalog") + "?l=en")
    assert chinese[1:-1] not in en.content.decode() and en.status_code == 200
    page = client.get(reverse("login"))
    assert f'src="{reverse("javascript-catalog")}?l=en"' in page.content.decode()


def test_a_panel_link_opens_in_the_language_the_coordinator_set(client, world, db):
    from delphi import services
    from projects.models import AuditEvent

    panelist = world.alpha.objects["panelist"]
    link = reverse("delphi:panel-home", args=[services.make_token(panelist)])
    english = {"accept-language": "en-US,en;q=0.9"}
    assert client.get(link, headers=english)["Content-Language"] == "en"
    coordinator = type(client)()
    coordinator.force_login(world.alpha.coordinator)
    url = reverse("delphi:panelist-action", args=[panelist.pk, "language"])
    assert coordinator.post(url, {"language": "zh-hans"}).status_code == 302
    panelist.refresh_from_db()
    assert panelist.language == "zh-hans"
    assert AuditEvent.unscoped.filter(action="delphi.panel.language", target_id=str(panelist.pk)).exists()
    response = client.get(link, headers=english)
    assert response["Content-Language"] == "zh-hans" and _lang(response) == "zh-hans"
    # unknown codes change nothing
    coordinator.post(url, {"language": "tlh"})
    panelist.refresh_from_db()
    assert panelist.language == "zh-hans"
    coordinator.post(url, {"language": ""})
    panelist.refresh_from_db()
    assert panelist.language == ""


def test_a_panellist_is_invited_in_the_language_set_for_them_whatever_the_coordinator_reads(world, db, settings):
    from django.core import mail

    from delphi import services

    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    participation = world.alpha.objects["participation"]
    panelist = participation.panelist
    mail.outbox = []
    with translation.override("en"):  # the coordinator's request
        services.set_language(panelist, world.alpha.coordinator, "zh-hans")
        assert services.send_invitation(participation)
        assert translation.get_language() == "en"
        services.set_language(panelist, world.alpha.coordinator, "en")
        assert services.send_invitation(participation)
    chinese, english = mail.outbox
    assert chinese.subject.endswith("：第 1 轮") and "尊敬的" in chinese.body and "您的个人链接" in chinese.body
    assert english.subject.endswith(": Round 1") and "you are invited to round 1" in english.body
    assert "http://testserver/delphi/p/" in chinese.body


# --- exports do not depend on the language ------------------------------------------------------------------------
def _content(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def _comparable(body: bytes, fmt: str):
    """XLSX and DOCX: every part of the file but its creation time (docProps/core.xml)."""
    if fmt != "xlsx":
        return body
    with zipfile.ZipFile(io.BytesIO(body)) as book:
        return {name: book.read(name) for name in book.namelist() if name != "docProps/core.xml"}


@pytest.mark.parametrize("name, kwargs, fmt", [
    ("campaign-export", {"fmt": "csv"}, "csv"), ("campaign-export", {"fmt": "json"}, "json"),
    ("campaign-export", {"fmt": "xlsx"}, "xlsx"), ("delphi:study-export", {"what": "responses", "fmt": "xlsx"}, "xlsx"),
    # the Delphi workbooks that name rounds, decisions, kinds and the rule: written in English in every language
    ("delphi:study-export", {"what": "reporting", "fmt": "xlsx"}, "xlsx"),
    ("delphi:round-export", {"fmt": "xlsx"}, "xlsx"), ("delphi:round-export", {"fmt": "csv"}, "csv"),
])
def test_an_export_is_byte_identical_whatever_the_language(client, world, db, name, kwargs, fmt):
    client.force_login(world.alpha.coordinator)
    kind = {"campaign-export": "campaign", "delphi:round-export": "round"}.get(name, "delphi_study")
    pk = world.alpha.pk(kind)
    url = reverse(name, kwargs={"pk": pk, **kwargs})
    bodies = []
    for language in ("en", "zh-hans"):
        response = client.get(url, headers={"accept-language": language})
        assert response.status_code == 200, (language, response.status_code)
        bodies.append(_comparable(_content(response), fmt))
    assert bodies[0] == bodies[1]


@pytest.mark.parametrize("what", ["methods.md", "tripod-llm.md", "methods.docx"])
def test_the_study_archive_documents_are_byte_identical_whatever_the_language(client, world, db, what):
    """The archive's methods and checklist (the same files as in the zip) are English in every language."""
    from core.jobs.models import Job
    from projects import scoping
    from tests.test_figures import run_due

    client.force_login(world.alpha.analyst)
    url = reverse("study-archive-document", args=[what])
    for _ in range(3):  # being prepared: the reports the methods page reads, then its own figures, a worker's
        if client.get(url).status_code != 202:
            break
        with scoping.in_project(world.alpha.project):
            run_due(Job.Kind.CAMPAIGN_REPORT)
            run_due(Job.Kind.STUDY_METHODS)
    bodies = []
    for language in ("en", "zh-hans"):
        response = client.get(url, headers={"accept-language": language})
        assert response.status_code == 200 and response["Content-Language"] == language
        bodies.append(_comparable(response.content, "xlsx" if what.endswith("docx") else "md"))
    assert bodies[0] == bodies[1]


def test_a_job_run_during_a_chinese_request_writes_english(db, world):
    """Stored figures and archives do not take the language of the request that ran their job (the embedded
    mode runs jobs in the request's thread)."""
    from core.jobs import services as jobs
    from core.jobs.models import Job

    seen = {}

    def handler(job):
        seen["language"] = translation.get_language()
        return {}

    kind = Job.Kind.WORKER_CHECK
    before = jobs.HANDLERS.get(kind)
    jobs.HANDLERS[kind] = handler
    try:
        job = Job.objects.create(kind=kind, project=None)
        with translation.override("zh-hans"):
            jobs.execute(job.pk)
    finally:
        if before is not None:
            jobs.HANDLERS[kind] = before
    assert seen["language"] == "en"


# --- the pseudo-locale crawl ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def pseudo_locale_dir(tmp_path_factory):
    return pseudo_locale.write_catalogue([*pseudo_locale.django_catalogues(), *catalogues.po_files()],
                                         tmp_path_factory.mktemp("pseudo"),
                                         to_locale(pseudo_locale.CODE))


@pytest.fixture
def in_pseudo_locale(settings, pseudo_locale_dir):
    settings.LANGUAGES = [*settings.LANGUAGES, (pseudo_locale.CODE, "Pseudo")]
    settings.LOCALE_PATHS = [pseudo_locale_dir, *settings.LOCALE_PATHS]
    return pseudo_locale.CODE


@pytest.fixture(scope="module")
def data(world, django_db_blocker) -> list[str]:
    """Every text of the database (and its truncations as the pages show them): what may stand outside the
    markers."""
    from django.apps import apps
    from django.db import models

    from annotation import instruments
    from projects.scoping import scopes_disabled

    values: set[str] = set()

    def walk(value):
        if isinstance(value, str):
            values.add(value)
        elif isinstance(value, dict):
            for item in [*value.keys(), *value.values()]:
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    with django_db_blocker.unblock(), scopes_disabled():
        # every member's pseudonym in Alpha (a report page gives one to a rater it names for the first time)
        from projects.models import Membership
        from projects.pseudonyms import pseudonyms

        pseudonyms(world.alpha.project, Membership.objects.filter(project=world.alpha.project)
                   .values_list("user_id", flat=True))
        for model in apps.get_models():
            fields = [f.attname for f in model._meta.concrete_fields
                      if isinstance(f, models.CharField | models.TextField | models.JSONField)]
            if fields and model._meta.app_label in {"auth", "projects", "core", "annotation", "scoring", "delphi"}:
                for row in model._base_manager.values_list(*fields):
                    for value in row:
                        walk(value)
        # the visible parts of redacted dialogues (the placeholder between them is the page's word)
        from annotation.dialogues import view_model
        from annotation.models import Dialogue, Redaction

        for dialogue in Dialogue._base_manager.filter(pk__in=Redaction._base_manager.values("dialogue_id")):
            shown = view_model(dialogue)
            for piece in [*shown["self_report"], *(p for turn in shown["turns"] for p in turn["segments"])]:
                if not piece["redacted"]:
                    values.add(piece["text"].strip())
        # the ready instruments' names and sources (their files, not the database)
        for ready in instruments.shipped_available():
            values.update([ready["name"], ready["source"]])
        # the default judge prompt sets (one per published instrument), made when the New judge page is opened
        from annotation.models import ScaleVersion
        from scoring.judges import prompts

        values.update(prompts.default_prompt_set_name(version) for version in
                      ScaleVersion.objects.filter(status="published").select_related("scale"))
    for value in list(values):
        for length in (80, 110, 120, 140, 160):
            values.add(Truncator(value).chars(length))
    return sorted((v for v in values if v.strip()), key=len, reverse=True)


def _url(world, page: Page) -> str:
    if page.path:
        return page.path
    side = world.alpha
    args = []
    for spec in page.args:
        if spec == "panel_token":
            from delphi.services import make_token

            args.append(make_token(side.objects["panelist"]))
            continue
        if spec.startswith("="):
            args.append(spec[1:])
            continue
        kind, _, attribute = spec.partition(".")
        obj = {"project": side.project, "member": side.physicians[0]}.get(kind) or side.objects[kind]
        args.append(getattr(obj, attribute or "pk"))
    return reverse(page.name, args=args) + page.query.format(**{kind: obj.pk for kind, obj in side.objects.items()})


def _delphi_figures_fresh(world):
    """The Delphi round's statistics computed now: its pages then show them, not the figures banners of
    ``templates/scoring/partials/`` (shared with the report and judge pages, checked with those)."""
    from core.jobs import figures
    from core.jobs.models import Job
    from projects.scoping import scopes_disabled

    rnd = world.alpha.objects["round"]
    with scopes_disabled():
        figures.compute_now(Job.Kind.DELPHI_ROUND, {"round": rnd.pk}, project=rnd.study.project_id)


def _get(client, world, page: Page, language: str):
    if page.name.startswith("delphi:"):
        _delphi_figures_fresh(world)
    if page.role != "anonymous":
        client.force_login(world.alpha.user(page.role))
    client.cookies[LANGUAGE_COOKIE] = language
    response = client.get(_url(world, page))
    assert response.status_code == page.status, (page.id, response.status_code)
    return response.content.decode()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.id)
def test_page_in_the_pseudo_locale_shows_no_text_outside_the_markers_but_data(client, world, db, data,
                                                                              in_pseudo_locale, page):
    body = _get(client, world, page, in_pseudo_locale)
    assert f'<html lang="{in_pseudo_locale}">' in body
    assert pseudo_locale.OPEN in body  # the catalogue is in use
    problems = pseudo_locale.untranslated(body, data)
    assert not problems, "text outside gettext:\n" + "\n".join(problems)


@pytest.mark.parametrize("role", ["analyst", "coordinator"])
def test_a_computed_agreement_report_in_the_pseudo_locale(client, world, db, data, in_pseudo_locale, role):
    """The report page with its figures (the registry's world has the report still being computed): every word of
    the page's own is translated; what the computation wrote in English is marked so."""
    from core.jobs import services as jobs
    from core.jobs.models import Job

    campaign = world.alpha.objects["campaign"]
    client.force_login(world.alpha.user(role))
    url = reverse("campaign-report", args=[campaign.pk])
    client.get(url)  # asks for the report with the page's options
    for job in Job.unscoped.filter(kind=Job.Kind.CAMPAIGN_REPORT, params__campaign=campaign.pk,
                                  status=Job.Status.QUEUED):
        # as a worker once the labels stopped changing (a debounced job's quiet time taken as over)
        Job.unscoped.filter(pk=job.pk).update(params={k: v for k, v in job.params.items() if k != "not_before"})
        jobs.execute(job.pk)
    client.cookies[LANGUAGE_COOKIE] = in_pseudo_locale
    body = client.get(url).content.decode()
    failed = list(Job.unscoped.filter(kind=Job.Kind.CAMPAIGN_REPORT, params__campaign=campaign.pk)
                  .values_list("status", "error"))
    assert 'id="agreement"' in body and 'id="methods"' in body, failed  # the figures, not the progress bar
    # the plots are drawn in the page's language too (the worker draws them in each of the site's languages)
    assert "<svg" in body and pseudo_locale.OPEN + "Binary-item totals per" in body
    problems = pseudo_locale.untranslated(body, data)
    assert not problems, "text outside gettext:\n" + "\n".join(problems)
    client.cookies[LANGUAGE_COOKIE] = "zh-hans"
    chinese = client.get(url).content.decode()
    assert "一致性报告" in chinese and 'data-testid="methods-language"' in chinese


def _computed(client, url: str, kind) -> None:
    """The page's figures computed now, as a worker would (the registry's world has them still being computed)."""
    from core.jobs import services as jobs
    from core.jobs.models import Job

    before = Job.unscoped.order_by("-pk").values_list("pk", flat=True).first() or 0
    client.get(url)  # asks for the figures with the page's options
    for job in Job.unscoped.filter(kind=kind, status=Job.Status.QUEUED, pk__gt=before):
        Job.unscoped.filter(pk=job.pk).update(params={k: v for k, v in job.params.items() if k != "not_before"})
        jobs.execute(job.pk)


def _sentence_parts(body: str) -> list[str]:
    """The parts of a judge report or selection page that show the sentences its computation stored: the summary
    with the verdict rule and the model differences, the verdicts, the model estimates (without their methods,
    checked with every methods text), the selection's candidates with a jury's rule and an unknown cost, and its
    choices."""
    parts = re.findall(r'<section class="card" data-testid="(?:judge|selection)-summary".*?</section>'
                       r'|<table class="stats verdicts".*?</table>'
                       r'|<section class="card" id="model-estimates".*?</section>'
                       r'|<table class="stats wraps" data-testid="selection-candidates">.*?</table>'
                       r'|<section class="card" data-testid="selection-item".*?</p>', body, re.S)
    return [re.sub(r'<details><summary>[^<]*</summary><p>[^<]*</p></details>\s*</section>$', "</section>", p)
            for p in parts]


@pytest.mark.parametrize("name", ["judge-run-report", "judge-selection"])
def test_a_computed_judge_report_and_selection_in_the_pseudo_locale(client, world, db, data, in_pseudo_locale, name):
    """The judge report's verdicts with their reasons, its ranking sentence, and the selection's summary and choices:
    the sentences the computation stored are said in the page's language, not marked English."""
    from core.jobs.models import Job

    campaign = world.alpha.objects["campaign"]
    client.force_login(world.alpha.user("analyst"))
    if name == "judge-run-report":
        url = reverse(name, args=[world.alpha.objects["judge_run"].pk]) + f"?campaign={campaign.pk}"
        kind, shown = Job.Kind.JUDGE_REPORT, 'data-testid="judge-summary"'
    else:
        url = reverse(name) + f"?campaign={campaign.pk}"
        kind, shown = Job.Kind.JUDGE_SELECTION, 'data-testid="selection-summary"'
    _computed(client, url, kind)
    client.cookies[LANGUAGE_COOKIE] = in_pseudo_locale
    body = client.get(url).content.decode()
    assert shown in body, list(Job.unscoped.filter(kind=kind).values_list("status", "error"))
    parts = _sentence_parts(body)
    assert parts and any("reasons" in p or "selection-summary" in p for p in parts)
    if name == "judge-run-report":
        assert any('data-testid="model-estimates"' in p and 'data-testid="lambda-note"' in p for p in parts)
        assert any('data-testid="summary-model-differences"' in p for p in parts)
    else:
        assert any('data-testid="selection-candidates"' in p and "jury" in p for p in parts)
    problems = pseudo_locale.untranslated("<html><body>" + "\n".join(parts) + "</body></html>", data)
    assert not problems, "text outside gettext:\n" + "\n".join(problems)
    # no sentence marked English but the statistics modules' own warnings (checked with those)
    assert 'lang="en"' not in re.sub(r'<p class="muted" role="note".*?</p>|<span class="undefined"[^>]*>', "",
                                     "".join(parts))
    client.cookies[LANGUAGE_COOKIE] = "zh-hans"
    chinese = "\n".join(_sentence_parts(client.get(url).content.decode()))
    english_sentences = ("item(s) have both a judge", "candidate(s) were tried", "the judge orders the",
                         "No better than a constant answer", "Non-inferiority not shown", "Per item, in this order",
                         "PPI++ scores over", "No PPI++ estimate", "No PPI++ ranking", "percentage points",
                         "the weight PPI++ gives", "labelled dialogue(s) alone", "more physician-labelled",
                         "scores higher", "no difference shown", "had no prices", "imported without prices",
                         "of the members' answers", "majority vote of the members", "All binary items")
    assert not [s for s in english_sentences if s in chinese]


@pytest.mark.parametrize("query", ["", "?target={campaign}"])
def test_the_sample_planner_in_the_pseudo_locale(client, world, db, data, in_pseudo_locale, query):
    """The planner (an htmx partial, not a page of the registry) without a corpus and for the campaign, its plan
    computed as a worker would: the reason, the rows and their warnings through gettext or stored sentences."""
    from core.jobs.models import Job

    client.force_login(world.alpha.user("coordinator"))
    url = reverse("judge-planner") + query.format(campaign=world.alpha.objects["campaign"].pk)
    _computed(client, url, Job.Kind.JUDGE_PLANNER)
    client.cookies[LANGUAGE_COOKIE] = in_pseudo_locale
    body = client.get(url).content.decode()
    assert 'data-testid="sample-planner"' in body and pseudo_locale.OPEN in body
    problems = pseudo_locale.untranslated(f"<html><body>{body}</body></html>", data)
    assert not problems, "text outside gettext:\n" + "\n".join(problems)


def test_the_check_finds_an_english_literal_and_a_broken_marker():
    page = "<html><head><title>Untitled · Mini-CEX Workbench</title></head><body><header><a>⟦Home⟧</a><a>Help</a>" \
           "</header><main><h1>⟦Projects⟧</h1><p>Alpha corpus ⟦Remove⟧ 12</p><p>Add a member</p>" \
           "<input type=submit value='Send'><p>⟦broken</p></main><footer>Mini-CEX Workbench · ⟦health⟧</footer>" \
           "<script>const word = 'Not checked';</script></body></html>"
    problems = pseudo_locale.untranslated(page, ["Alpha corpus"])
    # the whole page: the title, the top bar and the footer as well as the main part
    assert "Untitled ·" in problems and "Help" in problems
    assert "Add a member" in problems and "Send" in problems
    assert any(p.startswith("unbalanced markers") for p in problems)
    assert not any("Alpha corpus" in p or "Not checked" in p or "health" in p or p == "12" for p in problems
                   if not p.startswith("unbalanced"))


NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")


@pytest.mark.parametrize("page", [p for p in PAGES if p.status == 200], ids=lambda p: p.id)
def test_numbers_and_dates_are_written_alike_in_english_and_chinese(client, world, db, page):
    """The pages' numbers (counts, versions, dates, times) do not change with the language: templates format them
    themselves (``date:"Y-m-d"``, ``floatformat``), and the Chinese locale's separators are the English ones."""
    found = {}
    for language in ("en", "zh-hans"):
        text, _ = pseudo_locale.visible_text(_get(client, world, page, language))
        found[language] = sorted(NUMBER.findall(text))
    assert found["en"] == found["zh-hans"]


# --- which pages the pseudo-locale covers ----------------------------------------------------------------------------
def _matrix_pages(world, client) -> dict[str, set[str]]:
    """URL name -> the roles of Alpha the cross-project matrix (tests/test_projects_matrix.py: every page of Alpha's own
    objects and every list, as each role) gets a whole HTML page (200) from; htmx partials, downloads and the API's
    JSON are not pages."""
    from django.urls import resolve

    from projects.roles import has_role
    from tests import test_projects_matrix as matrix

    reached: dict[str, set[str]] = {}
    for role in matrix.ROLES:
        user = world.alpha.user(role)
        client.force_login(user)
        for name in matrix.SEEN:
            if name.startswith("api-"):
                continue
            url = matrix._own_url(world, name)
            # what a role is refused (projects.access.role_required) answers 403 without asking
            roles = getattr(resolve(url.split("?")[0]).func, "required_roles", None)
            if roles and not has_role(user, *roles, project=world.alpha.project):
                continue
            response = client.get(url)
            if (response.status_code == 200 and response.get("Content-Type", "").startswith("text/html")
                    and not response.streaming and b"<html" in response.content[:400]):
                reached.setdefault(name, set()).add(role)
    return reached


def test_every_page_the_matrix_reaches_is_checked_in_the_pseudo_locale(client, world, db):
    reached = _matrix_pages(world, client)
    registered = {(page.name, page.role) for page in PAGES}
    missing = sorted(f"{name} as {role}" for name, roles in reached.items() for role in roles
                     if (name, role) not in registered)
    assert not missing, ("pages outside the pseudo-locale registry (tests/pseudo_locale.py PAGES):\n"
                         + "\n".join(missing))


# --- the Django admin --------------------------------------------------------------------------------------------
@pytest.fixture
def superuser(db, django_user_model):
    return django_user_model.objects.create_superuser("i18n-admin", "admin@example.org", "x")


def _admin_pages(app_label: str, user) -> tuple[list[str], list[str]]:
    """The admin's pages of the app's registered models: each change list, add form (where the admin allows adding)
    and the change form of the first object it lists; and what has no object to open."""
    from django.contrib import admin
    from django.test import RequestFactory

    from projects.scoping import scopes_disabled

    request = RequestFactory().get("/")
    request.user = user
    urls, empty = [], []
    for model, model_admin in admin.site._registry.items():
        if model._meta.app_label != app_label:
            continue
        name = f"admin:{app_label}_{model._meta.model_name}"
        urls.append(reverse(f"{name}_changelist"))
        if model_admin.has_add_permission(request):
            urls.append(reverse(f"{name}_add"))
        with scopes_disabled():
            first = model._default_manager.order_by("pk").first()
        if first is None:
            empty.append(model._meta.label)
        else:
            urls.append(reverse(f"{name}_change", args=[first.pk]))
    return urls, empty


def _admin_objects_the_world_lacks(world, superuser) -> None:
    """One of each kind the admin lists that the world has none of (an API token, a rater profile, a campaign's
    random sample, LLM calls, engines, batches, budgets and spending, a generated dialogue's calls and turns, an
    imported prompt, a judge selection's settings, a preference verdict), their texts the world's."""
    import datetime

    from rest_framework.authtoken.models import Token

    from annotation.models import RandomSample, RaterProfile
    from projects.scoping import scopes_disabled
    from scoring.generation.models import GenerationCall, GenerationTurn
    from scoring.judges.models import ImportedPrompt, JudgeResult, SelectionSettings
    from scoring.llm.models import LLMBatch, LLMCall, LLMWorker, MonthlySpend, ProjectBudget
    from scoring.preference.models import PreferencePair, PreferenceVerdict

    side = world.alpha
    campaign, endpoint, generated = (side.objects[kind] for kind in ("campaign", "endpoint", "generated_dialogue"))
    with scopes_disabled():
        call = LLMCall.objects.create(project=side.project, key="0" * 64, endpoint=endpoint.base_url,
                                      model=generated.doctor_model, request={})
        GenerationCall.objects.create(job=generated.job, generated=generated, role="doctor", call=call)
        GenerationTurn.objects.create(generated=generated, index=0, role="doctor", text=generated.doctor_model)
        result = JudgeResult.objects.filter(run=side.objects["imported_run"]).order_by("pk").first()
        ImportedPrompt.objects.get_or_create(result=result, defaults={"text": generated.doctor_model})
        SelectionSettings.objects.get_or_create(project=side.project, campaign=campaign)
        LLMWorker.objects.create(owner="1", hostname="1", pid=1)
        LLMBatch.objects.create(kind="judge", job_id=1, base_url=endpoint.base_url, api_key_env=endpoint.api_key_env)
        ProjectBudget.objects.get_or_create(project=side.project)
        MonthlySpend.objects.create(project=side.project, month=datetime.date(2026, 1, 1), endpoint=endpoint.name)
        run = side.objects["preference_judge_run"]
        PreferenceVerdict.objects.create(run=run, pair=PreferencePair.objects.filter(study=run.study).first(),
                                         order=PreferenceVerdict.Order.FORWARD)
        dialogue = campaign.dialogues().order_by("pk").first()
        Token.objects.create(user=superuser)
        RaterProfile.objects.get_or_create(user=world.alpha.physicians[0])
        RandomSample.objects.get_or_create(campaign=campaign, defaults={
            "kind": RandomSample.Kind.DECLARED, "size": 1,
            "population": [[dialogue.pk, dialogue.source_model]], "dialogues": [dialogue.pk]})


@pytest.mark.parametrize("app_label", ["index", "auth", "authtoken", "projects", "core", "annotation", "scoring",
                                       "delphi"])
def test_the_admin_in_the_pseudo_locale_shows_no_text_outside_the_markers_but_data(client, world, db, data,
                                                                                  in_pseudo_locale, superuser,
                                                                                  app_label):
    """The admin's own words come from Django's catalogue (or ours, where Django's Chinese lacks them), our models'
    and fields' names, help texts and choices from ours: every registered model's change list, add form and the
    change form of an object of the world, as an instance administrator sees them."""
    from django.contrib.auth.hashers import identify_hasher
    from rest_framework.authtoken.models import Token

    from annotation.models import Language
    from scoring.llm.engine import HANDLERS

    _admin_objects_the_world_lacks(world, superuser)
    client.force_login(superuser)
    client.cookies[LANGUAGE_COOKIE] = in_pseudo_locale
    if app_label == "index":
        urls, empty = [reverse("admin:index"), reverse("admin:app_list", args=["annotation"])], []
    else:
        urls, empty = _admin_pages(app_label, superuser)
    assert urls
    passwords = type(superuser).objects.values_list("password", flat=True)
    # besides data: the languages of instruments, named in their own language (as a menu of languages shows them);
    # what Django writes alike in every language (the automatic primary key "ID", a boolean icon's alternative
    # text, JSON's null, true and false, the password hashes' summaries), API tokens, django-axes' name and the LLM
    # engines' kind codes (identifiers, as a worker's list of jobs writes them)
    allowed = ["i18n-admin", superuser.email, *data, *(label for _, label in Language.choices), "ID", "True", "False",
               "None", "null", "true", "false", "Axes", *Token.objects.values_list("key", flat=True), *HANDLERS,
               *(str(v) for password in passwords for v in identify_hasher(password).safe_summary(password).values())]
    problems = []
    for url in urls:
        response = client.get(url)
        if response.status_code != 200:
            problems.append(f"{url}: HTTP {response.status_code}")
            continue
        body = response.content.decode()
        assert f'<html lang="{in_pseudo_locale}"' in body, url
        problems += [f"{url}: {problem}" for problem in pseudo_locale.untranslated(body, allowed)]
    assert not problems, "text outside gettext:\n" + "\n".join(dict.fromkeys(problems))
    assert not empty, f"no object to open the change form of: {empty}"


def test_the_admin_index_names_our_models_in_chinese(client, db, superuser):
    client.force_login(superuser)
    body = client.get(reverse("admin:index"), headers={"accept-language": "zh-CN"}).content.decode()
    assert "站点管理" in body  # Django's own catalogue
    for model in ("评分任务", "语料库", "德尔菲研究", "评审模型运行"):
        assert model in body, model
    assert "模型名称" in body  # a hidden table header Django's Chinese catalogue lacks (ours gives it)
    panelist = client.get(reverse("admin:delphi_panelist_add"), headers={"accept-language": "zh-CN"}).content.decode()
    assert "工作年限" in panelist and "专家链接的页面和邮件所用的语言" in panelist  # a field's name and help text
    campaigns = client.get(reverse("admin:annotation_campaign_changelist"),
                           headers={"accept-language": "zh-CN"}).content.decode()
    assert "评分任务" in campaigns and "量表版本" in campaigns and "状态" in campaigns
