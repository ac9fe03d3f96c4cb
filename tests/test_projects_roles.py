"""Roles per project: a user who is a coordinator in one project and a physician in another holds each
role in its project only (pages and API, through the navigation's switch, ``?project=`` and ``X-Project``);
``manage.py project`` manages projects and members; the commands that create or read project data work in the
project ``--project`` names (default: the only project; with several the command stops and names them)."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from annotation.labels import submit
from annotation.models import Campaign, Corpus, Dialogue, Label
from projects import services as projects
from projects.models import Membership, Project
from projects.scoping import in_project
from tests.factories import answer_all, campaign_with, default_project
from tests.two_projects import shared_world

pytestmark = pytest.mark.usefixtures("across_projects")
DEFAULT_PROJECT = "Default"  # the project the migrations make for the library scales (and the tests work in)

# built once for the dual-role tests (the class), gone before the command tests build their own projects
world = pytest.fixture(scope="class")(shared_world)


def _switch(client, project) -> None:
    response = client.post(reverse("project-switch"), {"project": project.pk})
    assert response.status_code == 302, response.status_code


# ---------------------------------------------------------------------------------------------------------------
# the dual-role user: coordinator in Alpha, physician in Bravo
# ---------------------------------------------------------------------------------------------------------------

class TestDualRole:
    """dual: coordinator in Alpha, physician in Bravo (tests/two_projects.py)."""

    def test_dual_user_is_coordinator_in_alpha_only(self, world, db, client):
        alpha, bravo = world.alpha, world.bravo
        client.force_login(world.dual)
        _switch(client, alpha.project)
        page = client.get("/campaigns/")
        assert page.status_code == 200
        # (the navigation's switch names Bravo: dual is a member of both)
        assert "Alpha campaign" in page.content.decode() and "Bravo campaign" not in page.content.decode()
        assert client.get(f"/campaigns/{alpha.pk('campaign')}/").status_code == 200
        assert client.get("/campaigns/new/").status_code == 200
        assert client.get(f"/campaigns/{alpha.pk('campaign')}/report/").status_code == 200
        assert client.get(f"/projects/{alpha.project.pk}/").status_code == 200
        # the coordinator's pages and actions on Bravo's objects: as missing ones
        assert client.get(f"/campaigns/{bravo.pk('campaign')}/").status_code == 404
        assert client.post(f"/campaigns/{bravo.pk('campaign')}/assign/").status_code == 404
        # and in Bravo, where they are a physician, no coordinator page at all
        _switch(client, bravo.project)
        assert client.get("/campaigns/").status_code == 403
        assert client.get("/campaigns/new/").status_code == 403
        assert client.get(f"/campaigns/{bravo.pk('campaign')}/").status_code in (403, 404)
        assert client.post(f"/campaigns/{bravo.pk('campaign')}/assign/").status_code in (403, 404)
        assert client.get("/judges/").status_code == 403
        # the members page of Bravo reads, but they manage no member there
        assert client.post(f"/projects/{bravo.project.pk}/", {"username": "alpha_doc1", "role": "physician"}
                           ).status_code == 403
        assert not Membership.objects.filter(project=bravo.project, user=alpha.physicians[0]).exists()
        assert projects.may_manage_members(world.dual, alpha.project)
        assert not projects.may_manage_members(world.dual, bravo.project)


    def test_dual_user_is_physician_in_bravo_only(self, world, db, client):
        alpha, bravo = world.alpha, world.bravo
        mine = bravo.objects["extra_assignment"]
        assert mine.rater_id == world.dual.pk
        client.force_login(world.dual)
        _switch(client, bravo.project)
        assert client.get(f"/rate/{mine.pk}/").status_code == 200
        # in Alpha they rate nothing: no assignment, and Alpha's physicians' pages are not theirs
        _switch(client, alpha.project)
        assert not alpha.objects["campaign"].assignments.filter(rater=world.dual).exists()
        assert client.get(f"/rate/{alpha.pk('assignment')}/").status_code == 404
        # the rating queue spans the projects where they are a physician: "Start rating" leads to Bravo's dialogue
        start = client.get(reverse("rate-next"))
        assert start.status_code == 302 and start["Location"].rstrip("/").endswith(f"/rate/{mine.pk}"), \
            start.get("Location")
        assert client.get(start["Location"]).status_code == 200


    def test_dual_user_roles_in_the_api_follow_x_project(self, world, db, client):
        alpha, bravo = world.alpha, world.bravo
        client.force_login(world.dual)
        in_alpha = client.get("/api/campaigns/", HTTP_X_PROJECT="Alpha")
        assert in_alpha.status_code == 200
        assert {row["name"] for row in in_alpha.json()["results"]} == {"Alpha campaign"}
        created = client.post("/api/campaigns/", data=json.dumps(
            {"name": "Alpha second", "corpus": alpha.pk("corpus"),
             "scale_version": alpha.objects["campaign"].scale_version_id, "overlap": 1}),
            content_type="application/json", HTTP_X_PROJECT="Alpha")
        assert created.status_code == 201, created.content
        assert Campaign.objects.get(name="Alpha second").project_id == alpha.project.pk
        # in Bravo the same user is a physician: no campaign management, their own assignment only
        refused = client.post("/api/campaigns/", data=json.dumps(
            {"name": "Bravo second", "corpus": bravo.pk("corpus"),
             "scale_version": bravo.objects["campaign"].scale_version_id, "overlap": 1}),
            content_type="application/json", HTTP_X_PROJECT="Bravo")
        assert refused.status_code == 403
        assert not Campaign.objects.filter(name="Bravo second").exists()
        assert client.post(f"/api/campaigns/{bravo.pk('campaign')}/assign/", HTTP_X_PROJECT="Bravo").status_code \
            == 403
        assignments = client.get("/api/assignments/", {"project": "Bravo"})
        assert assignments.status_code == 200
        rows = assignments.json()["results"]
        assert rows and {row["id"] for row in rows} == set(
            bravo.objects["campaign"].assignments.filter(rater=world.dual).values_list("pk", flat=True))
        assert client.get(f"/api/assignments/{bravo.pk('extra_assignment')}/", HTTP_X_PROJECT="Bravo").status_code \
            == 200
        # Alpha's objects named in Bravo: answered as missing ones (a physician has no campaign API there)
        other = client.get(f"/api/campaigns/{alpha.pk('campaign')}/", HTTP_X_PROJECT="Bravo")
        gone = client.get("/api/campaigns/987654/", HTTP_X_PROJECT="Bravo")
        assert (other.status_code, other.json()) == (gone.status_code, gone.json())
        assert client.get(f"/api/assignments/{alpha.pk('assignment')}/", HTTP_X_PROJECT="Bravo").status_code == 404


    def test_member_of_one_project_is_refused_the_other_by_name_and_id(self, world, db, client):
        client.force_login(world.alpha.coordinator)
        for value in ("Bravo", str(world.bravo.project.pk)):
            assert client.get("/api/campaigns/", HTTP_X_PROJECT=value).status_code == 404
            assert client.get("/api/corpora/", {"project": value}).status_code == 404
        assert client.get(f"/projects/{world.bravo.project.pk}/").status_code == 404
        listing = client.get("/projects/").content.decode()
        assert "Alpha" in listing and "Bravo" not in listing


# ---------------------------------------------------------------------------------------------------------------
# manage.py project
# ---------------------------------------------------------------------------------------------------------------

def run(*args, **options) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO(), **options)
    return out.getvalue()


def test_project_command_creates_adds_removes_and_lists(db, instrument):
    user = get_user_model().objects.create_user("carol", password="x-long-password-1")
    assert "Created project Cardiology" in run("project", "create", "Cardiology")
    cardiology = Project.objects.get(name="Cardiology")
    run("project", "add", "Cardiology", "carol", "coordinator")
    run("project", "add", "Cardiology", "carol", "physician")
    assert set(Membership.objects.filter(project=cardiology, user=user).values_list("role", flat=True)) == {
        "coordinator", "physician"}
    assert "already" in run("project", "add", "Cardiology", "carol", "physician")
    listing = run("project", "list")
    assert "Cardiology" in listing and DEFAULT_PROJECT in listing
    members = run("project", "list", "Cardiology")
    assert "carol" in members
    run("project", "remove", "Cardiology", "carol", "physician")
    assert set(Membership.objects.filter(project=cardiology, user=user).values_list("role", flat=True)) == {
        "coordinator"}
    run("project", "remove", "Cardiology", "carol")
    assert not Membership.objects.filter(project=cardiology, user=user).exists()
    assert "carol" not in run("project", "list", "Cardiology")


@pytest.mark.parametrize("args,message", [
    (("add", "Nowhere", "carol", "physician"), "No project named 'Nowhere'"),
    (("add", "Cardiology", "nobody", "physician"), "No user 'nobody'"),
    (("add", "Cardiology", "carol", "surgeon"), "Unknown project role 'surgeon'"),
    (("add", "Cardiology", "carol", "admin"), "administrators are instance-wide"),
    (("create", "Cardiology"), "exists already"),
    (("create", "  "), "needs a name"),
    (("remove", "Cardiology", "carol"), "holds no such role"),
    (("remove", "Nowhere", "carol"), "No project named 'Nowhere'"),
    (("list", "Nowhere"), "No project named 'Nowhere'"),
])
def test_project_command_errors(db, instrument, args, message):
    get_user_model().objects.create_user("carol", password="x-long-password-1")
    projects.create_project("Cardiology")
    before = (Project.objects.count(), Membership.objects.count())
    with pytest.raises(CommandError, match=message):
        run("project", *args)
    assert (Project.objects.count(), Membership.objects.count()) == before


# ---------------------------------------------------------------------------------------------------------------
# --project on the commands that create or read project data
# ---------------------------------------------------------------------------------------------------------------

@pytest.fixture
def twins(db, instrument, make_user):
    """Projects Alpha and Bravo, each with a corpus "corpus-C1" and a campaign "C1" of the same names, rated by
    the project's own physicians (alpha_r0, alpha_r1 / bravo_r0, bravo_r1)."""
    made = {}
    for name in ("Alpha", "Bravo"):
        project = projects.create_project(name)
        raters = [make_user(f"{name.lower()}_r{i}") for i in range(2)]
        for user in raters:
            projects.add_member(project, user, "physician")
        with in_project(project):
            campaign = campaign_with(raters, n=4, overlap=2, name="C1")
            for assignment in campaign.assignments.select_related("rater"):
                answer_all(assignment, assignment.rater, value=1 if name == "Alpha" else 0)
                submit(assignment, assignment.rater)
        made[name] = campaign
    return made


def _dialogues_file(tmp_path, prefix: str) -> str:
    path = tmp_path / f"{prefix}.jsonl"
    path.write_text("".join(json.dumps({"id": f"{prefix}-{i}", "self_report": "Cough.",
                                        "turns": [{"role": "patient", "text": "Cough."},
                                                  {"role": "doctor", "text": "Since when?"}]}) + "\n"
                            for i in range(3)), encoding="utf-8")
    return str(path)


def test_import_dialogues_lands_in_the_named_project(twins, tmp_path):
    run("import_dialogues", _dialogues_file(tmp_path, "new"), "--corpus", "corpus-C1", "--project", "Bravo",
        "--update")
    bravo = Corpus.objects.get(name="corpus-C1", project__name="Bravo")
    alpha = Corpus.objects.get(name="corpus-C1", project__name="Alpha")
    assert bravo.dialogues.filter(external_id__startswith="new-").count() == 3
    assert not alpha.dialogues.filter(external_id__startswith="new-").exists()
    run("import_dialogues", _dialogues_file(tmp_path, "fresh"), "--corpus", "Fresh", "--project", "Alpha")
    assert Corpus.objects.get(name="Fresh").project.name == "Alpha"


def test_import_labels_reads_the_corpus_of_the_named_project(twins, tmp_path):
    path = tmp_path / "labels.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["dialogue_id", "rater", "item", "value"])
        writer.writerows([["d000", "outside_rater", "1.1", "1"], ["d001", "outside_rater", "1.1", "0"]])
    run("import_labels", str(path), "--corpus", "corpus-C1", "--campaign", "Imported", "--project", "Bravo")
    imported = Campaign.objects.get(name="Imported")
    assert imported.project.name == "Bravo"
    assert imported.corpus == twins["Bravo"].corpus
    assert Label.objects.filter(campaign=imported).count() == 2
    assert not Campaign.objects.filter(name="Imported", project__name="Alpha").exists()


def test_agreement_and_export_labels_read_the_named_project(twins, tmp_path):
    bravo_report = json.loads(run("agreement", "--corpus", "corpus-C1", "--project", "Bravo", "--resamples", "20",
                                  "--names"))
    alpha_report = json.loads(run("agreement", "--corpus", "corpus-C1", "--project", "Alpha", "--resamples", "20",
                                  "--names"))
    assert "bravo_r0" in json.dumps(bravo_report) and "alpha_r0" not in json.dumps(bravo_report)
    assert "alpha_r0" in json.dumps(alpha_report) and "bravo_r0" not in json.dumps(alpha_report)
    out = tmp_path / "alpha.csv"
    run("export_labels", "--corpus", "corpus-C1", "--project", "Alpha", "--out", str(out))
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert len(rows) == Label.objects.filter(campaign=twins["Alpha"]).count()
    assert {row["value"] for row in rows if row["item"] == "1.1"} == {"1"}  # Bravo's physicians answered 0


def test_run_judge_works_in_the_named_project(twins, fake_llm, monkeypatch):
    from scoring.judges import runs as judging
    from scoring.judges.models import JudgeConfig, JudgeRun

    monkeypatch.setenv("LLM_KEY_MINICEX_TEST", "sk-test")
    run("run_judge", corpus="corpus-C1", model="fake-judge", base_url=fake_llm.base_url,
        api_key_env="LLM_KEY_MINICEX_TEST", items="1.1", config="Judge C1", project="Bravo")
    judge_run = JudgeRun.objects.get()
    assert judge_run.project.name == "Bravo" and judge_run.corpus == twins["Bravo"].corpus
    assert JudgeConfig.objects.get(name="Judge C1").project.name == "Bravo"
    judging.drain(judge_run)  # the tiny run, synchronously (no worker), against the fake endpoint
    judge_run.refresh_from_db()
    assert judge_run.status == JudgeRun.Status.SUCCEEDED
    assert judge_run.results.filter(dialogue__corpus=twins["Alpha"].corpus).count() == 0
    assert judge_run.results.filter(status="done").count() == 4  # four dialogues, one item
    assert len(fake_llm.chat_requests) == 4


@pytest.mark.parametrize("command,args", [
    ("import_dialogues", ["--corpus", "x"]),
    ("agreement", ["--corpus", "corpus-C1"]),
    ("export_labels", ["--corpus", "corpus-C1", "--out", "-"]),
    ("run_judge", ["--corpus", "corpus-C1", "--model", "m", "--dry-run"]),
])
def test_an_unknown_project_is_refused(twins, tmp_path, command, args):
    if command == "import_dialogues":
        args = [_dialogues_file(tmp_path, "x"), *args]
    with pytest.raises(CommandError, match="No project named 'Nowhere'"):
        run(command, *args, "--project", "Nowhere")


def test_without_project_on_an_instance_with_several_the_commands_stop(twins, tmp_path, make_user):
    """Several projects: no --project is refused, naming the projects; nothing is imported anywhere."""
    with pytest.raises(CommandError, match="several projects.*--project NAME"):
        run("agreement", "--corpus", "corpus-C1")
    with pytest.raises(CommandError, match="several projects"):
        run("import_dialogues", _dialogues_file(tmp_path, "plain"), "--corpus", "Plain")
    assert not Corpus.objects.filter(name="Plain").exists()


def test_without_project_the_only_project_is_used(db, instrument, tmp_path, make_user):
    """One project (an upgraded instance): everything works in it, as before projects."""
    with in_project(default_project()):  # the tests' own project
        assert list(Project.objects.values_list("name", flat=True)) == [DEFAULT_PROJECT]
        raters = [make_user(f"r{i}", "physician") for i in range(2)]
        campaign = campaign_with(raters, n=2, overlap=2, name="Solo")
        for assignment in campaign.assignments.select_related("rater"):
            answer_all(assignment, assignment.rater)
            submit(assignment, assignment.rater)
        run("import_dialogues", _dialogues_file(tmp_path, "solo"), "--corpus", "corpus-Solo", "--update")
        assert Dialogue.objects.filter(corpus=campaign.corpus, external_id__startswith="solo-").count() == 3
        report = json.loads(run("agreement", "--corpus", "corpus-Solo", "--resamples", "20"))
        assert [c["name"] for c in report["campaigns"]] == ["Solo"] and report["n_labels"] > 0
        assert campaign.project.name == DEFAULT_PROJECT
