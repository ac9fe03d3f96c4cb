"""A demo preference study for ``make run``: three synthetic doctor models' answers to four patient questions
(written for the demo by the developers, not real patients), compared by the demo physician."""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import transaction

from scoring.preference import services as preference
from scoring.preference.models import PreferenceStudy

DEMO_STUDY = "Demo: doctor models' answers (synthetic)"
DEMO_FILE = Path(__file__).parent / "demo_data" / "preference_answers.jsonl"


@transaction.atomic
def load_preference_demo() -> dict:
    """Create and open the demo study (idempotent). Needs the demo users of ``load_demo``. Its seed is drawn by
    the server like any study's: a seed written here would let anyone reading the source unblind the demo."""
    existing = PreferenceStudy.objects.filter(name=DEMO_STUDY).first()
    if existing is not None:
        return {"study": existing.pk, "created": False}
    User = get_user_model()
    coordinator = User.objects.filter(username="coordinator").first()
    physician = User.objects.filter(username="physician").first()
    study = preference.create_study(
        name=DEMO_STUDY, kind=PreferenceStudy.Kind.ANSWER, criteria="response", overlap=1,
        instructions="Read the question, then both answers. For each criterion choose A, tie or B "
                     "(keys a / t / b). Which model wrote an answer is hidden.", user=coordinator)
    preference.import_answers(study, DEMO_FILE.read_text(encoding="utf-8").splitlines(), coordinator)
    if physician is not None:
        preference.add_rater(study, physician, added_by=coordinator)
    result = preference.open_study(study, coordinator)
    return {"study": study.pk, "created": True, "tasks": result.created}
