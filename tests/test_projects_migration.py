"""The upgrade to projects: an instance with today's data - role groups, a corpus, a campaign with
assignments and labels, a judge and its run, a preference study, a Delphi study, an endpoint, audit events, report
jobs - migrates into one project, "Default", and behaves as before.

The database is emptied and built along the history (the squashed migrations set aside) up to the state before
projects (annotation 0007, scoring 0011, delphi 0001) with Django's MigrationExecutor, filled through the historical
models, then migrated forward to the latest state. Transactional (the migrations change the schema), so it runs on
SQLite and PostgreSQL alike; the schema is always brought back to the latest state, even when the test fails.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder

from projects.squashing import SQUASHED, missing_tables

BEFORE = [("annotation", "0007_score_grid_replicates_judge_keys"), ("scoring", "0011_judge_report_job"),
          ("delphi", "0001_initial")]
PASSWORD = "correct-horse-battery"


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def _history_to(targets):
    """An empty database (every table dropped), then the history (the squashed migrations set aside: see
    projects.squashing) up to ``targets``, as an instance that stopped there was built. Forward from nothing rather than
    back from today's schema: to go back, Django renders every state of the history first (the whole test took 39 s
    that way, 17 s this way, on SQLite)."""
    with connection.schema_editor(atomic=False) as editor:
        for table in connection.introspection.table_names(include_views=False):
            editor.execute(editor.sql_delete_table % {"table": editor.quote_name(table)})
    executor = MigrationExecutor(connection)
    executor.loader = MigrationLoader(connection, replace_migrations=False)
    executor.migrate(targets)
    recorded = MigrationRecorder(connection).applied_migrations()
    assert not set(SQUASHED) & set(recorded) and (targets[0] in recorded)
    return executor.loader.project_state(targets).apps


def _latest():
    """Every app's last migration, as ``migrate`` runs them: ``projects`` too, whose migrations after the squash
    (account settings) were unapplied on the way back."""
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


def _legacy_data(apps) -> SimpleNamespace:
    """Today's data, written with the models as they were before projects."""
    from django.contrib.auth.hashers import make_password
    from django.utils import timezone

    from annotation.scales import load_instrument, read_instrument

    def model(label):
        app, name = label.split(".")
        return apps.get_model(app, name)

    Group, User = model("auth.Group"), model("auth.User")
    groups = {name: Group.objects.get_or_create(name=name)[0]
              for name in ("physician", "coordinator", "analyst", "admin")}
    users = {}
    for username, role, extra in (("doc1", "physician", {}), ("doc2", "physician", {}),
                                  ("coord", "coordinator", {}), ("ana", "analyst", {}),
                                  ("both", "coordinator", {}),
                                  ("root", "admin", {"is_superuser": True, "is_staff": True})):
        user = User.objects.create(username=username, password=make_password(PASSWORD), **extra)
        user.groups.add(groups[role])
        users[username] = user
    users["both"].groups.add(groups["analyst"])  # two roles: a member with both

    scales = SimpleNamespace(**{name: model(f"annotation.{name}")
                                for name in ("Scale", "ScaleVersion", "Dimension", "Item")})
    load_instrument(read_instrument(), scales, publish=True)
    version = scales.ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=1)
    items = list(scales.Item.objects.filter(version=version, parent__isnull=True).order_by("order"))
    corpus = model("annotation.Corpus").objects.create(name="Legacy corpus")
    Dialogue = model("annotation.Dialogue")
    dialogues = [Dialogue.objects.create(corpus=corpus, external_id=f"legacy-{i}", self_report=f"Complaint {i}",
                                         turns=[{"role": "patient", "text": "Cough."},
                                                {"role": "doctor", "text": "Since when?"}])
                 for i in range(2)]
    campaign = model("annotation.Campaign").objects.create(name="Legacy campaign", corpus=corpus,
                                                           scale_version=version, overlap=2,
                                                           created_by=users["coord"])
    assignments = []
    for doc in (users["doc1"], users["doc2"]):
        model("annotation.CampaignRater").objects.create(campaign=campaign, user=doc)
        for dialogue in dialogues:
            assignments.append(model("annotation.Assignment").objects.create(campaign=campaign, dialogue=dialogue,
                                                                             rater=doc))
    first = assignments[0]
    label = model("annotation.Label").objects.create(assignment=first, campaign=campaign, dialogue=first.dialogue,
                                                     rater=first.rater, item=items[0], value=1)
    prompt_set = model("scoring.PromptSet").objects.create(name="Legacy prompts", version=1, scale_version=version,
                                                           system_prompt="s", dialogue_template="{turns}",
                                                           per_dialogue_instruction="p")
    config = model("scoring.JudgeConfig").objects.create(name="Legacy judge", model="legacy-model",
                                                         prompt_set=prompt_set)
    run = model("scoring.JudgeRun").objects.create(config=config, corpus=corpus, snapshot={"name": "Legacy judge"},
                                                   status="succeeded")
    endpoint = model("scoring.LLMEndpoint").objects.create(name="Legacy endpoint", base_url="http://127.0.0.1:9/v1")
    study = model("scoring.PreferenceStudy").objects.create(name="Legacy preference", kind="answer")
    Job = model("scoring.Job")
    report_job = Job.objects.create(kind="campaign_report", params={"campaign": campaign.pk})
    check_job = Job.objects.create(kind="worker_check")
    delphi = model("delphi.DelphiStudy").objects.create(title="Legacy Delphi", scale=version.scale,
                                                        base_version=version, created_by=users["coord"])
    ContentType = model("contenttypes.ContentType")
    campaign_type = ContentType.objects.get_or_create(app_label="annotation", model="campaign")[0]
    AuditEvent = model("annotation.AuditEvent")
    events = [AuditEvent.objects.create(actor=users["coord"], action="campaign.create", target_type=campaign_type,
                                        target_id=str(campaign.pk), target_repr="Legacy campaign",
                                        at=timezone.now()),
              AuditEvent.objects.create(actor=users["root"], action="login", at=timezone.now())]
    return SimpleNamespace(users={k: v.pk for k, v in users.items()}, corpus=corpus.pk, campaign=campaign.pk,
                           assignments=[a.pk for a in assignments], label=label.pk, prompt_set=prompt_set.pk,
                           config=config.pk, run=run.pk, endpoint=endpoint.pk, study=study.pk, delphi=delphi.pk,
                           report_job=report_job.pk, check_job=check_job.pk, events=[e.pk for e in events],
                           version=version.pk, scale=version.scale_id)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("across_projects")
def test_an_instance_with_todays_data_upgrades_into_default_and_behaves_as_before(client):
    try:
        old_apps = _history_to(BEFORE)
        assert "project" not in {f.name for f in old_apps.get_model("annotation", "Campaign")._meta.get_fields()}
        before = _legacy_data(old_apps)
        _migrate(_latest())  # the rest of the history, as an upgrade runs it
    finally:
        _migrate(_latest())  # whatever happened, the next tests get today's schema
    assert not missing_tables(connection)  # every app's tables, those of migrations made after the squash too
    _check_default(before)
    _check_behaviour(client, before)


def _check_default(before) -> None:
    from django.contrib.auth import get_user_model

    from annotation.models import Campaign, Corpus, Scale, ScaleVersion
    from core.jobs.models import Job
    from delphi.models import DelphiStudy
    from projects.models import AuditEvent, Membership, Project
    from projects.roles import is_admin, roles_in
    from scoring.judges.models import JudgeConfig, JudgeRun, PromptSet
    from scoring.llm.models import LLMEndpoint
    from scoring.preference.models import PreferenceStudy

    assert list(Project.objects.values_list("name", flat=True)) == ["Default"]
    default = Project.objects.get(name="Default")
    for model, pk in ((Corpus, before.corpus), (Campaign, before.campaign), (Scale, before.scale),
                      (ScaleVersion, before.version), (PromptSet, before.prompt_set), (JudgeConfig, before.config),
                      (JudgeRun, before.run), (PreferenceStudy, before.study), (DelphiStudy, before.delphi),
                      (Job, before.report_job)):
        assert model.objects.get(pk=pk).project_id == default.pk, model.__name__
    assert Job.objects.get(pk=before.check_job).project_id is None  # the worker check stays instance-wide
    assert list(LLMEndpoint.objects.get(pk=before.endpoint).projects.all()) == [default]
    assert set(AuditEvent.objects.filter(pk__in=before.events).values_list("project_id", flat=True)) == {default.pk}

    users = {u.username: u for u in get_user_model().objects.all()}
    expected = {"doc1": {"physician"}, "doc2": {"physician"}, "coord": {"coordinator"}, "ana": {"analyst"},
                "both": {"coordinator", "analyst"}}
    for username, roles in expected.items():
        assert set(Membership.objects.filter(user=users[username], project=default)
                   .values_list("role", flat=True)) == roles, username
        assert roles_in(users[username], default) == roles, username
    assert not Membership.objects.filter(user=users["root"]).exists()  # administrators are instance-wide
    assert is_admin(users["root"])
    assert Membership.objects.count() == 6


def _check_behaviour(client, before) -> None:
    """Each role opens what it opened before, with the same rows."""
    from django.contrib.auth import get_user_model

    from annotation.models import Campaign, Corpus

    users = {u.username: u for u in get_user_model().objects.all()}
    campaign = Campaign.objects.get(pk=before.campaign)
    assert Corpus.objects.get(name="Legacy corpus").pk == before.corpus

    client.force_login(users["coord"])
    assert "Legacy campaign" in client.get("/campaigns/").content.decode()
    assert "Legacy corpus" in client.get("/corpora/").content.decode()
    assert client.get(f"/campaigns/{campaign.pk}/").status_code == 200
    assert "Legacy judge" in client.get("/judges/").content.decode()
    assert "Legacy preference" in client.get("/preference/").content.decode()
    assert "Legacy Delphi" in client.get("/delphi/").content.decode()
    api = client.get("/api/campaigns/").json()
    assert [row["name"] for row in api["results"]] == ["Legacy campaign"]
    assert client.get("/api/campaigns/", HTTP_X_PROJECT="Default").status_code == 200
    client.logout()

    client.force_login(users["ana"])
    assert client.get(f"/campaigns/{campaign.pk}/report/").status_code == 200
    assert client.get(f"/campaigns/{campaign.pk}/labels.csv").status_code == 200
    assert client.get("/campaigns/new/").status_code == 403
    client.logout()

    client.force_login(users["doc1"])
    mine = [pk for pk in before.assignments if campaign.assignments.get(pk=pk).rater_id == users["doc1"].pk]
    assert client.get(f"/rate/{mine[0]}/").status_code == 200
    start = client.get("/rate/")
    assert start.status_code == 302 and "/rate/" in start["Location"]
    api = client.get("/api/assignments/").json()
    assert sorted(row["id"] for row in api["results"]) == sorted(mine)
    assert client.get("/campaigns/").status_code == 403
    client.logout()

    client.force_login(users["root"])
    assert "Legacy campaign" in client.get("/campaigns/").content.decode()
    assert client.get("/admin/").status_code == 200
