"""Projects isolated by construction: every model of project data is scoped, the ways around the scope
are few and listed, new rows never land in a project by default, and shared library scales show their drafts only
to the project that drafted them."""

from __future__ import annotations

import ast
from collections import Counter
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

# Where the scope is crossed on purpose, use by use: (file, the function or method it is in) -> (how many uses that
# function has, why). A use is ``X.unscoped``, ``getattr(X, "unscoped")``, ``scopes_disabled()`` or
# ``activate_unscoped()``. A new crossing, or one more in a listed function, fails the test until it is listed here.
ENGINE = "the engine's bookkeeping of its jobs and request units by id (a worker runs in no project)"
ENGINE_CACHE = "the LLM cache read by key, which holds the project (or leaves it out when the administrator shares it)"
JOBS = "background jobs by id: a worker runs in no project"
LABEL_SAVE = ("the label save runs without a project scope: it checks the rater's assignment and membership in its "
              "own locking query")
BUDGET = "a project's monthly counters and budget, by an explicit project id (the engine's charges, the judges page)"
RECOVERY = "the reconciler looks at every project's running jobs"
PSEUDONYMS = "pseudonyms are looked up by an explicit project id"
UNSCOPED_ALLOWED: dict[tuple[str, str], tuple[int, str]] = {
    ("annotation/apps.py", "AnnotationConfig.ready"): (2, "the worker check counts what the database holds, "
                                                           "instance-wide"),
    ("annotation/queue.py", "WorkQueue.start"): (1, LABEL_SAVE),
    ("annotation/instruments.py", "slug_taken"): (1, "scale slugs are instance-wide: is a slug taken (yes/no only)"),
    ("annotation/labels.py", "answers_of"): (1, LABEL_SAVE),
    ("annotation/labels.py", "save_answers"): (6, LABEL_SAVE),
    ("annotation/models.py", "Scale.visible_q"): (1, "a scale is in the library when any project published a version "
                                                     "of it"),
    ("annotation/scales.py", "next_version_number"): (1, "a scale's next version number, unique across the projects "
                                                         "that draft it"),
    ("annotation/scales.py", "rating_sheet"): (2, "the rating sheet of a version, cached per process for the label "
                                                  "save"),
    ("delphi/services.py", "reconcile_reminders"): (1, "the reminders' reconciler looks at the open rounds of every "
                                                       "project, each read in its own"),
    ("delphi/services.py", "resolve_token"): (1, "a panelist's signed link is their credential, whichever project its "
                                                 "bearer is in"),
    ("delphi/tasks.py", "remind_open_rounds"): (1, "the reminder task looks at the open rounds of every project"),
    ("delphi/tasks.py", "send_round_reminders"): (1, "a reminder task finds its round by id, then runs in the round's "
                                                     "project"),
    ("projects/access.py", "ProjectMiddleware.process_view"): (1, "the Django admin works across projects"),
    ("projects/access.py", "get_in_project_or_404"): (1, "a missing object's own project, to offer its members the "
                                                         "switch"),
    ("projects/models.py", "AuditEvent.record"): (1, "the audit trail is written from every project"),
    ("projects/pseudonyms.py", "_create"): (2, PSEUDONYMS),
    ("projects/pseudonyms.py", "pseudonyms"): (1, PSEUDONYMS),
    ("core/jobs/figures.py", "release"): (2, "the jobs held for the demo loader, by id, sent to the workers when "
                                                "it ends"),
    ("core/jobs/services.py", "_beat"): (1, JOBS),
    ("core/jobs/services.py", "execute"): (1, JOBS),
    ("core/jobs/services.py", "reconcile"): (5, "the reconciler looks at every project's queued and running jobs"),
    ("core/jobs/services.py", "send"): (1, JOBS),
    ("core/jobs/services.py", "set_progress"): (1, JOBS),
    ("core/jobs/views.py", "job_status"): (1, "the instance-wide worker check, administrators only"),
    ("core/jobs/views.py", "system_status"): (1, "the instance-wide worker checks, administrators only"),
    ("scoring/judges/runs.py", "estimate"): (1, ENGINE_CACHE),
    ("scoring/llm/batch.py", "_give_up"): (1, ENGINE),
    ("scoring/llm/batch.py", "_submit"): (2, ENGINE),
    ("scoring/llm/batch.py", "cancel_open"): (1, ENGINE),
    ("scoring/llm/batch.py", "poll"): (1, ENGINE),
    ("scoring/llm/budget.py", "charge"): (4, BUDGET),
    ("scoring/llm/budget.py", "give_back"): (1, BUDGET),
    ("scoring/llm/budget.py", "summary"): (2, BUDGET),
    ("scoring/llm/engine.py", "Handler._announce_finished"): (1, ENGINE),
    ("scoring/llm/engine.py", "Handler.fail_job"): (1, ENGINE),
    ("scoring/llm/engine.py", "Handler.load"): (1, ENGINE),
    ("scoring/llm/engine.py", "Handler.maybe_finish"): (1, ENGINE),
    ("scoring/llm/engine.py", "Handler.open_units"): (1, ENGINE),
    ("scoring/llm/engine.py", "Handler.pause_job"): (1, ENGINE),
    ("scoring/llm/engine.py", "_bulk_update"): (2, ENGINE),
    ("scoring/llm/engine.py", "_recover_entries"): (1, ENGINE),
    ("scoring/llm/engine.py", "_store_calls"): (3, ENGINE_CACHE),
    ("scoring/llm/engine.py", "cached_calls"): (1, ENGINE_CACHE),
    ("scoring/llm/engine.py", "charge"): (3, ENGINE),
    ("scoring/llm/engine.py", "claim"): (2, ENGINE),
    ("scoring/llm/engine.py", "end_state"): (1, ENGINE),
    ("scoring/llm/engine.py", "fail_requests"): (1, ENGINE),
    ("scoring/llm/engine.py", "grow_limit"): (1, ENGINE),
    ("scoring/llm/engine.py", "note_activity"): (1, ENGINE),
    ("scoring/llm/engine.py", "pause_or_cancel"): (1, ENGINE),
    ("scoring/llm/engine.py", "process"): (1, ENGINE),
    ("scoring/llm/engine.py", "record_spend"): (1, ENGINE),
    ("scoring/llm/engine.py", "refund"): (2, ENGINE),
    ("scoring/llm/engine.py", "release"): (1, ENGINE),
    ("scoring/llm/engine.py", "reopened"): (1, ENGINE),
    ("scoring/llm/engine.py", "resume"): (1, ENGINE),
    ("scoring/llm/engine.py", "retry_in"): (1, ENGINE),
    ("scoring/llm/engine.py", "run_until_idle"): (1, ENGINE),
    ("scoring/llm/engine.py", "send_wake"): (1, ENGINE),
    ("scoring/llm/engine.py", "set_caps"): (1, ENGINE),
    ("scoring/llm/engine.py", "spend"): (1, ENGINE),
    ("scoring/llm/engine.py", "store"): (1, ENGINE),
    ("scoring/llm/engine.py", "top_causes"): (1, ENGINE),
    ("scoring/llm/recovery.py", "backlog"): (2, RECOVERY),
    ("scoring/llm/recovery.py", "reconcile"): (4, RECOVERY),
    ("scoring/llm/recovery.py", "stalled_jobs"): (1, RECOVERY),
    ("scoring/llm/worker.py", "Engine._discover"): (1, ENGINE),
    ("scoring/llm/worker.py", "Engine._drain_and_release"): (1, ENGINE),
    ("scoring/llm/worker.py", "Engine._refresh"): (1, ENGINE),
    ("scoring/llm/worker.py", "Engine._store_loop"): (1, ENGINE),
    ("scoring/llm/worker.py", "Engine._take_wakes"): (2, ENGINE),
    ("scoring/reports/exports.py", "_pseudonym_of_rater"): (1, "pseudonyms by an explicit project, as a column of the "
                                                               "label export"),
    ("scoring/reports/fingerprint.py", "last_of"): (1, "the labels' change mark by ids of campaigns read through the "
                                                       "scoped managers (one index seek each, without the scope's "
                                                       "join)"),
    ("scoring/reports/fingerprint.py", "study_fingerprint"): (1, "the same, for the count of assignments"),
}
# What the scan leaves out: tests/ (and bench/, which is no package) set up worlds of several projects; migrations
# use the historical models, which have no scoped managers; projects/scoping.py is the scope itself.
UNSCOPED_CALLS = {"scopes_disabled", "activate_unscoped"}


def app_packages() -> list[Path]:
    """Every package of the app (a folder of the repository with an ``__init__.py``), tests excepted."""
    return sorted(p.parent for p in ROOT.glob("*/__init__.py") if p.parent.name != "tests")


def _crosses_the_scope(node: ast.AST) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr == "unscoped"
    if isinstance(node, ast.Call):
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        if name in UNSCOPED_CALLS:
            return True
        return (name == "getattr" and len(node.args) > 1 and isinstance(node.args[1], ast.Constant)
                and node.args[1].value == "unscoped")
    return False


def unscoped_uses(tree: ast.AST) -> Counter:
    """Uses that cross the scope, counted per enclosing function or method ("Class.method", "<module>")."""
    found: Counter = Counter()

    def visit(node: ast.AST, where: tuple[str, ...]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                visit(child, (*where, child.name))
                continue
            if _crosses_the_scope(child):
                found[".".join(where) or "<module>"] += 1
            visit(child, where)

    visit(tree, ())
    return found


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
    """Every package is scanned (studies too, and any package added later); each use is listed with its count."""
    found: dict[tuple[str, str], int] = {}
    for package in app_packages():
        for path in sorted(package.rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
            if "migrations" in path.parts or name == "projects/scoping.py":
                continue
            for where, count in unscoped_uses(ast.parse(path.read_text(encoding="utf-8"))).items():
                found[(name, where)] = count
    assert {"projects", "annotation", "scoring", "delphi", "config", "studies"} <= {p.name for p in app_packages()}
    listed = {site: count for site, (count, _why) in UNSCOPED_ALLOWED.items()}
    unlisted = {site: n for site, n in found.items() if listed.get(site) != n}
    gone = {site: n for site, n in listed.items() if site not in found}
    assert not unlisted, f"crossings of the project scope not listed (or with another count): {unlisted}"
    assert not gone, f"listed crossings that are no longer in the code: {gone}"


def test_the_scan_finds_every_way_around_the_scope():
    code = """
x = Label.unscoped.filter(pk=1)
class A:
    def f(self):
        with scoping.scopes_disabled():
            getattr(model, "unscoped").all()
        activate_unscoped()
"""
    assert unscoped_uses(ast.parse(code)) == Counter({"<module>": 1, "A.f": 3})


def test_views_fetch_objects_through_the_project_scope_only():
    """``get_in_project_or_404`` is the one way a view fetches an object by id (its 404 is the same for another
    project's object as for a missing one); Django's plain ``get_object_or_404`` is used nowhere."""
    users = [path.relative_to(ROOT).as_posix() for package in app_packages() for path in package.rglob("*.py")
             if "get_object_or_404" in path.read_text(encoding="utf-8")]
    assert users == []


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
