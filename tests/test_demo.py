"""Demo data for `make run`, and the dialogue importer it uses."""

import pytest
from django.contrib.auth import get_user_model

from annotation.demo import DEMO_CAMPAIGN, DEMO_USERS, demo_logins, load_demo
from annotation.importers import ImportRejected, import_dialogues, parse_dialogues
from annotation.models import Assignment, Corpus, Dialogue
from tests.demo_world import load_full_demo


@pytest.mark.django_db
@pytest.mark.usefixtures("demo_scope")
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
    from projects.access import projects_of
    from projects.roles import roles_in
    from projects.services import demo_project

    demo = demo_project()
    assert corpus.project == demo and assigned.first().campaign.project == demo
    for role, username, _password, _name in DEMO_USERS:
        user = get_user_model().objects.get(username=username)
        assert role in roles_in(user, demo)  # members of the demo project with their role (admin: instance-wide)
        assert role == "admin" or list(projects_of(user)) == [demo]
    assert [login[0] for login in demo_logins()] == ["physician", "coordinator", "analyst", "admin"]


@pytest.mark.django_db
@pytest.mark.usefixtures("demo_scope")
def test_load_demo_command_loads_every_apps_demo_in_one_process_and_skips_what_exists(instrument, monkeypatch):
    from io import StringIO

    from django.apps import apps
    from django.core.management import call_command

    from projects import scoping
    from projects.services import demo_project
    from scoring.judges import report
    from scoring.reports import agreement
    from studies.figures import methods_view

    models = [apps.get_model("delphi", "DelphiStudy"), apps.get_model("scoring", "PreferenceStudy"),
              apps.get_model("scoring", "CaseSet"), Dialogue, Assignment]
    out = StringIO()
    call_command("load_demo", stdout=out)
    counts = [model.objects.count() for model in models]
    assert all(counts), counts
    assert "Demo Delphi study ready" in out.getvalue() and "physician / physician-demo" in out.getvalue()

    # The reports without names, which the methods page and the study archive read, were stored by the loader:
    # the demo's methods page computes none on its first view (it took 1.1 s in bench_pages before).
    def computed_on_view(*args, **kwargs):
        raise AssertionError("a report computed on the methods page's first view")

    monkeypatch.setattr(agreement, "compute", computed_on_view)
    monkeypatch.setattr(report, "judge_vs_physicians", computed_on_view)
    with scoping.scopes_disabled():
        project = demo_project()
    with scoping.in_project(project):
        view = methods_view(project)
    assert {entry["kind"] for entry in view["reports"]} == {"agreement", "judge"}
    assert not [entry["figure"] for entry in view["reports"] if entry.get("missing")]
    monkeypatch.undo()
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


@pytest.mark.django_db
@pytest.mark.usefixtures("demo_scope")
def test_the_demo_holds_a_finished_study_with_plausible_disagreement_and_loads_once(instrument):
    """`make run`'s load: a finished campaign (4 physicians, a random sample of the corpus, submitted), its
    agreement report already computed, two synthetic judge runs, an unblinded preference study and a closed Delphi
    round 2; a second load (for real) adds nothing."""
    import numpy as np
    from django.core.management import call_command

    from annotation.demo import DEMO_FINISHED
    from annotation.models import Campaign, Label
    from core.jobs.models import Job
    from delphi.demo import TITLE
    from delphi.models import Response, Round
    from scoring.judges.demo import demo_runs
    from scoring.judges.models import JudgeResult
    from scoring.preference.demo import FINISHED_STUDY
    from scoring.preference.models import PreferenceAnswer, PreferenceStudy, PreferenceTask

    load_full_demo()  # what `load_demo --no-logins` makes (tests/test_demo_world.py), loaded once per test process
    campaign = Campaign.objects.get(name=DEMO_FINISHED)
    assignments = Assignment.objects.filter(campaign=campaign)
    assert assignments.count() == 4 * campaign.dialogues().count()
    assert set(assignments.values_list("status", flat=True)) == {Assignment.Status.SUBMITTED}
    assert Label.objects.filter(campaign=campaign, value__isnull=True).count() == 0
    # The report is computed by the load (the first visit shows it) and its agreement is moderate, not 0 or 1.
    job = Job.objects.get(kind=Job.Kind.CAMPAIGN_REPORT, params__campaign=campaign.pk, status="succeeded",
                          params__names=True)  # names allowed: one for both demo users
    # and the one without names, which the methods page and the study archive read
    assert Job.objects.filter(kind=Job.Kind.CAMPAIGN_REPORT, params__campaign=campaign.pk, status="succeeded",
                              params__names=False).count() == 1
    report = job.result
    assert report["n_raters"] == 4 and report["n_labels"] == Label.objects.filter(campaign=campaign).count()
    kappas = [item["fleiss_kappa"]["value"] for item in report["items"] if item["fleiss_kappa"]["value"] is not None]
    assert 0.1 < np.mean(kappas) < 0.6, np.mean(kappas)
    iccs = [d["ICC2"]["icc"] for d in report["icc"]["dimensions"].values()]
    assert all(0.3 < icc < 0.95 for icc in iccs), iccs
    assert report["plots"]
    # The judges agree with the physicians' majority at a plausible rate; per item more often than per dialogue.
    _, runs = demo_runs()
    assert [run.snapshot["mode"] for run in runs] == ["per-item", "per-dialogue"]
    # so is the per-item run's judge report that the home page links (names allowed: one for both demo users)
    judged = Job.objects.get(kind=Job.Kind.JUDGE_REPORT, params__run=runs[0].pk, status="succeeded",
                             params__names=True)
    assert Job.objects.filter(kind=Job.Kind.JUDGE_REPORT, params__run=runs[0].pk, status="succeeded",
                              params__names=False).count() == 1
    assert judged.params["campaign"] == campaign.pk and len(judged.result["items"]) == 24
    majority = {}
    for (dialogue, item), values in _values_by_unit(campaign).items():
        top = np.bincount(values).argmax()
        if (np.bincount(values) == np.bincount(values).max()).sum() == 1:
            majority[(dialogue, item)] = top
    rates = []
    for run in runs:
        results = JudgeResult.objects.filter(run=run)
        assert set(results.values_list("status", flat=True)) == {JudgeResult.Status.DONE}
        hits = [majority[(r.dialogue_id, r.item_id)] == r.value for r in results
                if (r.dialogue_id, r.item_id) in majority]
        rates.append(np.mean(hits))
    assert 0.6 < rates[1] < rates[0] < 0.95, rates
    # The physicians rated a recorded random sample (16 of each model's 100 dialogues) of the corpus the judges
    # scored, so the judge report gives the three model estimates (PPI++ included) and the planner.
    from annotation.sampling import reproduce
    from scoring.judges.report import judge_vs_physicians

    sample = campaign.random_sample
    assert (sample.kind, sample.size, len(sample.population), sample.stratified) == ("drawn", 48, 300, True)
    assert reproduce(sample) == sample.dialogues == sorted(campaign.dialogues().values_list("pk", flat=True))
    estimates = judge_vs_physicians(runs[0], campaign, n_resamples=100)["model_estimates"]
    assert estimates["available"] and estimates["sample"]["labelled"] == 48
    for entry in estimates["models"]:
        overall = entry["scopes"]["all"]
        assert (overall["physicians"]["n"], overall["judge"]["n"], overall["ppi"]["n"]) == (16, 100, 16)
        assert overall["ppi"]["ci_high"] - overall["ppi"]["ci_low"] < (overall["physicians"]["ci_high"]
                                                                       - overall["physicians"]["ci_low"])
        assert overall["ppi"]["gain"] > 0 and "worth" in overall["ppi"]["worth"]
    assert all("physician-labelled dialogue(s) alone" in row["text"]
               for scope in estimates["planner"]["scopes"] for row in scope["models"])
    study = PreferenceStudy.objects.get(name=FINISHED_STUDY)
    assert study.status == PreferenceStudy.Status.UNBLINDED and study.locked_at and study.unblind_reason
    assert not PreferenceTask.objects.filter(study=study).exclude(status="submitted").exists()
    rounds = Round.objects.filter(study__title=TITLE).order_by("number")
    assert [r.status for r in rounds] == ["closed", "closed", "draft"]

    models = [Label, JudgeResult, Job, PreferenceAnswer, Response, Campaign, get_user_model()]
    counts = [model.objects.count() for model in models]
    call_command("load_demo", no_logins=True)
    assert [model.objects.count() for model in models] == counts


def _values_by_unit(campaign) -> dict[tuple[int, int], list[int]]:
    from annotation.models import Label

    units: dict[tuple[int, int], list[int]] = {}
    for dialogue, item, value in Label.objects.filter(campaign=campaign).values_list("dialogue_id", "item_id",
                                                                                      "value"):
        units.setdefault((dialogue, item), []).append(value)
    return units


@pytest.mark.django_db
def test_synthetic_labels_come_from_the_seed_and_disagree():
    from annotation.demo import synthetic_answers

    items = [("a", (0, 1)), ("b", (0, 1)), ("c", (1, 2, 3))]
    first, latent = synthetic_answers(20, items, 4, seed=1)
    assert synthetic_answers(20, items, 4, seed=1) == (first, latent)
    assert synthetic_answers(20, items, 4, seed=2)[0] != first
    unanimous = sum(len({first[(d, r, code)] for r in range(4)}) == 1 for d in range(20) for code, _ in items)
    assert 0 < unanimous < 60  # some units unanimous, some not
    assert {first[(d, r, "c")] for d in range(20) for r in range(4)} <= {1, 2, 3}


@pytest.mark.django_db
def test_start_here_shows_the_demo_results_until_there_is_real_data(client, instrument):
    from django.urls import reverse

    load_full_demo()  # the loader itself is tested above; here what the home page makes of it
    User = get_user_model()
    expected = {"physician": ["A dialogue you rated", "Rate a demo dialogue yourself"],
                "coordinator": ["Agreement report", "Progress of the finished", "judge vs physicians",
                                "Per-item vs per-dialogue", "Preference study result", "Delphi statistics, round 2",
                                "Import your own dialogues", "Create a campaign"],
                "analyst": ["Agreement report", "judge vs physicians", "Preference study result",
                            "Delphi statistics"]}
    for username, texts in expected.items():
        client.force_login(User.objects.get(username=username))
        html = client.get(reverse("home")).content.decode()
        assert 'data-testid="start-here"' in html, username
        for text in texts:
            assert text in html, (username, text)
    assert "Import your own dialogues" not in client.get(reverse("home")).content.decode()  # analyst
    from projects.services import create_project, demo_project

    # Start here is per project: real data in another project leaves the demo project's list alone.
    Corpus.objects.create(name="Ward 3 dialogues", is_demo=False, project=create_project("Ward 3"))
    client.force_login(User.objects.get(username="coordinator"))
    assert 'data-testid="start-here"' in client.get(reverse("home")).content.decode()
    Corpus.objects.create(name="Ward 3 dialogues", is_demo=False, project=demo_project())
    assert 'data-testid="start-here"' not in client.get(reverse("home")).content.decode()
    client.force_login(User.objects.get(username="physician"))  # no real assignment yet: still shown
    assert 'data-testid="start-here"' in client.get(reverse("home")).content.decode()


@pytest.mark.django_db
@pytest.mark.usefixtures("demo_scope")
def test_start_here_keeps_pointing_at_the_demo_runs_after_a_new_run_with_the_demo_judge(client, instrument,
                                                                                        fake_llm):
    """A coordinator tries the demo judge (it uses the built-in fake endpoint) on the demo corpus: the home page's
    links still open the demo study's own runs, and every one of them answers."""
    import re

    from django.urls import reverse

    from scoring.judges import runs as judging
    from scoring.judges.demo import JUDGES, demo_runs
    from scoring.judges.models import JudgeConfig
    from scoring.llm.models import LLMEndpoint

    load_full_demo()
    campaign, runs = demo_runs()
    endpoint = LLMEndpoint.objects.get(name="Built-in fake endpoint (synthetic answers)")
    assert endpoint.base_url.startswith("http://127.0.0.1:") and endpoint.base_url.endswith("/v1")
    config = JudgeConfig.objects.get(name=JUDGES[0][0])
    assert config.endpoint == endpoint
    LLMEndpoint.objects.filter(pk=endpoint.pk).update(base_url=fake_llm.base_url)
    config.refresh_from_db()
    config.save()  # follows the endpoint (as an administrator's change to it does)
    new = judging.create_run(config, Corpus.objects.get(name="Demo corpus (synthetic)"), item_codes=["1.1"])
    judging.start(new)
    judging.drain(new)
    new.refresh_from_db()
    assert new.status == "succeeded"
    assert demo_runs() == (campaign, runs)
    client.force_login(get_user_model().objects.get(username="coordinator"))
    html = client.get(reverse("home")).content.decode()
    section = html.split('data-testid="start-here"', 1)[1].split("</section>", 1)[0]
    links = re.findall(r'href="([^"]+)"', section)
    assert links
    for url in links:
        assert client.get(url.replace("&amp;", "&")).status_code == 200, url
    assert not [url for url in links if re.search(rf"/(runs|compare)/{new.pk}/", url)], links  # the new run's
