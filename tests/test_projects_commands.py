"""Every management command that touches project data works in one named project: ``--project NAME``,
or the only project; on an instance with several it stops and names them. Nothing lands in a project by default."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command, get_commands, load_command_class
from django.core.management.base import CommandError

from projects import scoping
from projects.services import ProjectCommand

# Commands that are not about one project's data, and why.
NOT_PER_PROJECT = {
    "project": "creates projects and manages their members",
    "load_demo": "the demo's own project, created when missing",
    "load_delphi_demo": "the demo's own project",
    "load_generation_demo": "the demo's own project (or --project)",
    "load_preference_demo": "the demo's own project (or --project)",
    "load_study_demo": "the demo's own project (or --project)",
    "catalogues": "the translation catalogues of the source code, no data",
}

# The smallest valid arguments of each per-project command (what it needs before it looks at the project).
ARGS = {
    "export_instrument": ["llm-mini-cex"],
    "import_dialogues": ["/nonexistent.jsonl", "--corpus", "c"],
    "import_instrument": ["/nonexistent.json"],
    "import_labels": ["/nonexistent.csv", "--corpus", "c"],
    "agreement": ["--corpus", "c"],
    "export_labels": ["--corpus", "c", "--out", "/nonexistent.csv"],
    "generate_dialogues": ["--cases", "/nonexistent.jsonl", "--doctor-model", "m", "--patient-model", "m"],
    "judge_report": ["--corpus", "c", "--judge", "j"],
    "run_judge": ["--corpus", "c", "--model", "m"],
    "make_jury": ["--corpus", "c", "--name", "n", "--runs", "1,2", "--rule", "majority"],
    "judge_selection": ["--corpus", "c", "--campaign", "c"],
}


def _ours() -> dict[str, str]:
    return {name: app for name, app in get_commands().items() if app in ("projects", "annotation", "scoring",
                                                                         "delphi")}


def test_every_command_is_per_project_or_says_why_not():
    per_project = {name for name, app in _ours().items() if isinstance(load_command_class(app, name), ProjectCommand)}
    assert per_project | set(NOT_PER_PROJECT) == set(_ours())
    assert per_project == set(ARGS)


@pytest.fixture
def two_projects(db):
    from projects.services import create_project

    with scoping.scopes_disabled():
        return create_project("Commands A"), create_project("Commands B")


@pytest.mark.parametrize("name", sorted(ARGS))
def test_a_command_without_project_on_an_instance_with_several_stops_and_names_them(two_projects, name):
    scoping.restore(None)  # as `manage.py` starts: no scope
    with pytest.raises(CommandError) as refused:
        call_command(name, *ARGS[name], stdout=io.StringIO(), stderr=io.StringIO())
    message = str(refused.value)
    assert "several projects" in message and "'Commands A'" in message and "'Commands B'" in message
    assert "--project" in message


@pytest.mark.parametrize("name", sorted(ARGS))
def test_an_unknown_project_is_refused_with_the_choices(two_projects, name):
    scoping.restore(None)
    with pytest.raises(CommandError, match="No project named 'Nope'.*'Commands A'"):
        call_command(name, *ARGS[name], "--project", "Nope", stdout=io.StringIO(), stderr=io.StringIO())


def test_a_command_writes_only_into_its_project(two_projects, tmp_path):
    from annotation.models import Corpus

    alpha, bravo = two_projects
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps({"id": "x1", "self_report": "Cough.", "turns": [
        {"role": "doctor", "text": "Hello."}, {"role": "patient", "text": "A cough."}]}) + "\n")
    scoping.restore(None)
    call_command("import_dialogues", str(path), "--corpus", "shared name", "--project",
                 "Commands B", stdout=io.StringIO())
    with scoping.in_project(alpha):
        assert not Corpus.objects.filter(name="shared name").exists()
    with scoping.in_project(bravo):
        corpus = Corpus.objects.get(name="shared name")
        assert corpus.dialogues.count() == 1
