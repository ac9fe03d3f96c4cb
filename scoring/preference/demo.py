"""A demo preference study for ``make run``: three synthetic doctor models' answers to four patient questions
(written for the demo by the developers, not real patients), compared by the demo physician. The studies live in
the demo project ("Demo (synthetic)")."""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import transaction

from projects.roles import PHYSICIAN, assign_role
from projects.services import demo_project, in_demo_project
from scoring.preference import services as preference
from scoring.preference.models import PreferenceStudy

DEMO_STUDY = "Demo: doctor models' answers (synthetic)"
DEMO_FILE = Path(__file__).parent / "demo_data" / "preference_answers.jsonl"


@in_demo_project
@transaction.atomic
def load_preference_demo(project=None) -> dict:
    """Create and open the demo study (idempotent). Needs the demo users of ``load_demo``. Its seed is drawn by
    the server like any study's: a seed written here would let anyone reading the source unblind the demo."""
    project = project or demo_project()
    existing = PreferenceStudy.objects.filter(name=DEMO_STUDY).first()
    if existing is not None:
        return {"study": existing.pk, "created": False}
    User = get_user_model()
    coordinator = User.objects.filter(username="coordinator").first()
    physician = User.objects.filter(username="physician").first()
    study = preference.create_study(
        name=DEMO_STUDY, kind=PreferenceStudy.Kind.ANSWER, criteria="response", overlap=1,
        instructions="Read the question, then both answers. For each criterion choose A, tie or B "
                     "(keys a / t / b). Which model wrote an answer is hidden.", user=coordinator,
        project=project)
    preference.import_answers(study, DEMO_FILE.read_text(encoding="utf-8").splitlines(), coordinator)
    if physician is not None:
        assign_role(physician, PHYSICIAN, project)  # the demo physician rates in the demo project (idempotent)
        preference.add_rater(study, physician, added_by=coordinator)
    result = preference.open_study(study, coordinator)
    return {"study": study.pk, "created": True, "tasks": result.created}


FINISHED_STUDY = "Demo: doctor models' answers, finished (synthetic)"
# How good each synthetic doctor model's answers are on the logit scale (Beta's answers read like a chatbot's).
SOURCE_QUALITY = {"DemoDoc-Alpha": 0.6, "DemoDoc-Gamma": 0.2, "DemoDoc-Beta": -0.4}


def _choice(rng, diff: float) -> str:
    """A synthetic rater's verdict on A vs B given the quality difference A - B: a tie when the noisy difference
    is small, else the side it favours."""
    seen = diff + rng.normal(0.0, 1.0)
    return "tie" if abs(seen) < 0.35 else ("A" if seen > 0 else "B")


@in_demo_project
@transaction.atomic
def load_finished_preference_demo(rater_usernames: list[str], seed: int = 7, project=None) -> dict:
    """A finished study on the same answers: three synthetic physicians answered every comparison (seeded
    choices through the same services as the comparison page), then the coordinator locked and unblinded it.
    Idempotent."""
    import numpy as np

    project = project or demo_project()
    existing = PreferenceStudy.objects.filter(name=FINISHED_STUDY).first()
    if existing is not None:
        return {"study": existing.pk, "created": False}
    User = get_user_model()
    coordinator = User.objects.filter(username="coordinator").first()
    raters = list(User.objects.filter(username__in=rater_usernames).order_by("username"))
    study = preference.create_study(
        name=FINISHED_STUDY, kind=PreferenceStudy.Kind.ANSWER, criteria="response", overlap=len(raters),
        instructions="Demo only: a finished study. The answers were drawn from a seeded model, not given by "
                     "anyone.", user=coordinator, project=project)
    preference.import_answers(study, DEMO_FILE.read_text(encoding="utf-8").splitlines(), coordinator)
    for rater in raters:
        assign_role(rater, PHYSICIAN, project)  # synthetic physicians of the demo project (idempotent)
        preference.add_rater(study, rater, added_by=coordinator)
    preference.open_study(study, coordinator)
    rng = np.random.default_rng(seed)
    criteria = list(study.criteria.all())
    tasks = study.tasks.select_related("pair__first__source", "pair__second__source", "rater").order_by("pk")
    for task in tasks:
        a, b = preference.sides(task)
        diff = SOURCE_QUALITY.get(a.source.label, 0.0) - SOURCE_QUALITY.get(b.source.label, 0.0)
        for criterion in criteria:
            preference.save_answer(task, criterion.pk, _choice(rng, diff), task.rater)
        preference.submit_task(task, task.rater)
    preference.lock(study, coordinator, "Demo: every comparison answered")
    preference.unblind(study, coordinator, "Demo: answers final, results shown to the study team")
    return {"study": study.pk, "created": True}
