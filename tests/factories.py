"""Small builders for campaign tests (plain functions over the services, no factory library)."""

from __future__ import annotations

from annotation.campaigns import add_rater, assign, create_campaign
from annotation.models import Corpus, Dialogue, ScaleVersion


def make_account(username: str, role: str | None = None, project=None, *, password: str = "correct-horse-battery",
                 **extra):
    """An account, with ``role`` in ``project`` if given (the ``make_user`` fixture's builder, for module worlds)."""
    from django.contrib.auth import get_user_model

    from projects.roles import assign_role

    user = get_user_model().objects.create_user(username=username, password=password, **extra)
    if role:
        assign_role(user, role, project)
    return user


def mini_cex():
    return ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=1)


def corpus_with(n: int, name: str = "study", turns: int = 4, **fields) -> Corpus:
    corpus = Corpus.objects.create(name=name)
    Dialogue.objects.bulk_create([
        Dialogue(corpus=corpus, external_id=f"d{i:03d}", self_report=f"Complaint {i}",
                 turns=[{"role": "doctor" if t % 2 == 0 else "patient", "text": f"turn {t} of dialogue {i}"}
                        for t in range(turns)],
                 source_model=fields.get("source_model", "model-A" if i % 2 else "model-B"),
                 language=fields.get("language", "en"), split=fields.get("split", "test"))
        for i in range(n)
    ])
    return corpus


def campaign_with(raters, *, n: int = 6, overlap: int = 2, phase: str = "formal", name: str = "C1", **kwargs):
    corpus = corpus_with(n, name=f"corpus-{name}")
    campaign = create_campaign(name=name, corpus=corpus, scale_version=mini_cex(), overlap=overlap, phase=phase,
                               **kwargs)
    for user in raters:
        add_rater(campaign, user)
    assign(campaign)
    return campaign


def rating_items(campaign):
    return list(campaign.scale_version.rating_items().order_by("order"))


def answer_all(assignment, user, value: int = 1):
    """Every rating item answered (``value`` on binary items, 2 on the others) as one sheet."""
    from annotation.labels import save_answers

    save_answers(assignment, {item.pk: value if item.response_type == "binary" else 2
                              for item in rating_items(assignment.campaign)}, user)


def staffed_project(name: str, make_user, *, physicians: list[str], tag: str | None = None):
    """A new project with its coordinator (``coord_<tag>``), analyst (``ana_<tag>``) and the named physicians as
    members; returns (project, coordinator, analyst, physicians). ``tag`` defaults to the project's name in lower
    case."""
    from projects import services as projects
    project = projects.create_project(name)
    tag = tag or name.lower()
    coordinator, analyst = make_user(f"coord_{tag}"), make_user(f"ana_{tag}")
    doctors = [make_user(username) for username in physicians]
    for user, role in ((coordinator, "coordinator"), (analyst, "analyst"), *((d, "physician") for d in doctors)):
        projects.add_member(project, user, role)
    return project, coordinator, analyst, doctors


def default_project():
    """The "Default" project the tests work in (tests/conftest.py); transactional tests flush the migrations' rows,
    so it is made again when missing."""
    import importlib

    from django.apps import apps

    from projects.models import Project
    from projects.scoping import scopes_disabled

    with scopes_disabled():
        project = Project.objects.filter(name="Default").first()
        if project is None:  # made as the migration makes it, so the database equals a freshly migrated one
            importlib.import_module("projects.migrations.0003_squashed").create_default_project(apps, None)
            project = Project.objects.get(name="Default")
        return project
