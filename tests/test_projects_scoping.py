"""Projects isolated by construction (issue 33): every model of project data is scoped, the ways around the scope
are few and listed, new rows never land in a project by default, and shared library scales show their drafts only
to the project that drafted them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.apps import apps
from django.db import models as dj_models

from projects import scoping
from projects.models import ProjectScoped

ROOT = Path(__file__).resolve().parent.parent

# Models that are not project data, and why.
NOT_PROJECT_DATA = {
    "projects.Project": "the projects themselves",
    "projects.Membership": "the access-control table, read by projects.roles with an explicit project",
    "projects.Invitation": "an access-control record like a membership, found by its link's token before its holder "
                           "is a member",
    "projects.AccountSettings": "a person's own settings (the language of their pages), the same in every project",
    "annotation.RaterProfile": "an account's instance-wide facts (external rater)",
    "scoring.LLMWorker": "a worker process's heartbeat",
    "scoring.LLMBatch": "a provider batch, reached through its job by the engine",
    "scoring.LLMEndpoint": "an administrator's endpoint, granted to projects",
}

# Where the scope is crossed on purpose (file -> why); tests/test_projects_scoping.py lists every such place.
UNSCOPED_ALLOWED = {
    "annotation/apps.py": "the worker check counts what the database holds, instance-wide",
    "annotation/labels.py": "the label save runs without a project scope: it checks rater and membership in its own "
                            "locking query",
    "annotation/instruments.py": "scale slugs are instance-wide: is a slug taken (yes/no only)",
    "annotation/models.py": "a scale is in the library when any project published a version of it",
    "annotation/scales.py": "the rating sheet of a version, cached per process for the label save; a scale's next "
                            "version number, unique across the projects that draft it",
    "delphi/services.py": "a panelist's signed link is their credential, whichever project its bearer is in; the "
                          "reminders' reconciler looks at the open rounds of every project, each read in its own",
    "delphi/tasks.py": "a reminder task finds its round by id, then runs in the round's project",
    "projects/access.py": "a missing object's own project, to offer its members the switch; the Django admin",
    "projects/models.py": "the audit trail is written from every project",
    "projects/pseudonyms.py": "pseudonyms are looked up by an explicit project",
    "scoring/judges/runs.py": "the cost estimate reads the cache by key, as the engine (the key holds the project)",
    "core/jobs/figures.py": "the jobs held for the demo loader, by id, sent to the workers when it ends",
    "core/jobs/services.py": "background jobs by id (send, run, heartbeat, reconcile); the worker check",
    "core/jobs/views.py": "the instance-wide worker check, administrators only",
    "scoring/llm/batch.py": "provider batches: the engine's bookkeeping by job id",
    "scoring/llm/budget.py": "a project's monthly counters and budget, by an explicit project id (the engine's "
                             "charges, the judges page)",
    "scoring/llm/engine.py": "the engine's bookkeeping by job and unit id; the cache by key (which holds the project)",
    "scoring/llm/recovery.py": "the reconciler looks at every project's running jobs",
    "scoring/llm/worker.py": "the engine's bookkeeping by job id",
    "scoring/reports/exports.py": "pseudonyms by an explicit project, as a column of the label export",
    "scoring/reports/fingerprint.py": "the labels' change mark by ids of campaigns read through the scoped managers "
                                      "(one index seek each, without the scope's join)",
}


def project_models():
    return [m for m in apps.get_models() if issubclass(m, ProjectScoped)]


def test_every_model_is_project_data_or_listed():
    app_models = [m for m in apps.get_models() if m._meta.app_label in ("projects", "core", "annotation", "scoring",
                                                                      "delphi")]
    unlisted = [m._meta.label for m in app_models
                if not issubclass(m, ProjectScoped) and m._meta.label not in NOT_PROJECT_DATA]
    assert unlisted == [], "a new model must be project data (ProjectScoped) or say why not here"
    assert len(project_models()) >= 45


@pytest.mark.django_db
@pytest.mark.parametrize("label", sorted(m._meta.label for m in apps.get_models() if issubclass(m, ProjectScoped)))
def test_a_query_without_a_project_raises(label):
    model = apps.get_model(label)
    scoping.restore(None)  # as a request, task or command starts: no scope
    try:
        for query in (lambda: list(model.objects.all()), lambda: model.objects.exists(),
                      lambda: model.objects.filter(pk=1).first(), lambda: model.objects.in_bulk([1]),
                      lambda: model.objects.update(pk=dj_models.F("pk"))):
            with pytest.raises(scoping.ScopeError):
                query()
    finally:
        scoping.restore(None)


def test_every_project_model_declares_a_path_that_reaches_a_project():
    from projects.models import Project

    for model in project_models():
        target = model
        for hop in model.project_path.split("__"):
            target = target._meta.get_field(hop).related_model
        assert target is Project, f"{model._meta.label}.project_path = {model.project_path!r}"


def test_the_unscoped_ways_are_only_where_listed():
    pattern = re.compile(r"\.unscoped\b|scopes_disabled\(|activate_unscoped\(")
    found = {}
    for package in ("projects", "core", "annotation", "scoring", "delphi", "config"):
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts or path.name == "scoping.py":
                continue
            if pattern.search(path.read_text(encoding="utf-8")):
                found[str(path.relative_to(ROOT))] = True
    assert sorted(found) == sorted(UNSCOPED_ALLOWED)


@pytest.mark.django_db
def test_a_new_row_without_a_project_is_refused_outside_a_scope():
    from annotation.models import Corpus

    scoping.restore(None)
    try:
        with scoping.scopes_disabled(), pytest.raises(scoping.NoProjectError, match="needs its project"):
            Corpus.objects.create(name="orphan")
    finally:
        scoping.restore(None)


@pytest.mark.django_db
def test_a_new_row_takes_the_scope_project_and_a_scope_of_none_sees_nothing():
    from annotation.models import Corpus
    from projects.services import create_project

    with scoping.scopes_disabled():
        alpha, bravo = create_project("Scope Alpha"), create_project("Scope Bravo")
    with scoping.in_project(alpha):
        corpus = Corpus.objects.create(name="mine")
    assert corpus.project_id == alpha.pk
    with scoping.in_project(bravo):
        assert not Corpus.objects.filter(pk=corpus.pk).exists()
    with scoping.in_project(None):  # a user without any project
        assert Corpus.objects.count() == 0
    with scoping.in_project([alpha, bravo]):  # a rater's queue across their projects
        assert Corpus.objects.filter(pk=corpus.pk).exists()


@pytest.mark.django_db
def test_drafts_of_a_shared_scale_are_seen_only_by_the_project_that_drafted_them(instrument):
    """Finding 1: a Delphi study in B drafts v2 of a scale A owns; A sees its published v1, never B's draft."""
    from annotation import scales
    from annotation.models import Item, Scale, ScaleVersion
    from projects.services import create_project

    with scoping.scopes_disabled():
        alpha, bravo = create_project("Owner A"), create_project("Drafter B")
        scale = Scale.objects.get(slug="llm-mini-cex")
        Scale.objects.filter(pk=scale.pk).update(project=alpha)
        v1 = scale.versions.get(number=1)
        ScaleVersion.objects.filter(pk=v1.pk).update(project=alpha)
    with scoping.in_project(bravo):
        draft = scales.new_version(ScaleVersion.objects.get(pk=v1.pk), None, "B's Delphi rewording")
        assert draft.project_id == bravo.pk
        assert Item.objects.filter(version=draft).exists()
    with scoping.in_project(alpha):
        assert list(Scale.objects.get(pk=scale.pk).versions.values_list("number", flat=True)) == [1]
        assert not Item.objects.filter(version_id=draft.pk).exists()
        assert not ScaleVersion.objects.filter(pk=draft.pk).exists()
    with scoping.in_project(bravo):
        assert sorted(ScaleVersion.objects.filter(scale=scale).values_list("number", flat=True)) == [1, 2]


@pytest.mark.django_db
def test_a_new_version_takes_the_next_number_over_every_projects_drafts(instrument):
    """Two projects draft the next version of one library scale (each its own Delphi study): the second draft gets
    the next free number instead of failing on the scale's unique (scale, number) (an IntegrityError once)."""
    from annotation import scales
    from annotation.models import Scale, ScaleVersion
    from projects.services import create_project

    with scoping.scopes_disabled():
        first, second = create_project("Drafts first"), create_project("Drafts second")
        v1 = ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=1)
    with scoping.in_project(first):
        assert scales.new_version(ScaleVersion.objects.get(pk=v1.pk), None, "first rewording").number == 2
    with scoping.in_project(second):
        draft = scales.new_version(ScaleVersion.objects.get(pk=v1.pk), None, "second rewording")
        assert draft.number == 3 and draft.project_id == second.pk
        assert scales.next_version_number(Scale.objects.get(slug="llm-mini-cex")) == 4
