"""The words a report uses for what the instrument rates and who rates it: an instrument on doctor-patient
dialogues speaks of dialogues, doctor models and physicians (the Mini-CEX); one on answers to questions (HIVMedQA's
rubric) of answers, questions, models and raters -- physicians when every rater is a physician."""

from __future__ import annotations

DIALOGUE_WORDS = {"unit": "dialogue", "units": "dialogues", "case": "patient case", "cases": "patient cases",
                  "model": "doctor model", "models": "doctor models", "rater": "physician", "raters": "physicians"}
ANSWER_WORDS = {"unit": "answer", "units": "answers", "case": "question", "cases": "questions", "model": "model",
                "models": "models", "rater": "rater", "raters": "raters"}


def words_for(target: str, physicians: bool = False) -> dict[str, str]:
    """The report's words for an instrument rating ``target`` ("dialogue" or "answer"); ``physicians``: every rater
    is a physician (dialogue instruments always speak of physicians)."""
    words = dict(ANSWER_WORDS if target == "answer" else DIALOGUE_WORDS)
    if physicians:
        words.update(rater="physician", raters="physicians")
    return words


def raters_are_physicians(user_ids) -> bool:
    """Whether every one of these users is a physician in some project (external raters from imported labels are
    members of none)."""
    from django.contrib.auth import get_user_model

    from annotation.roles import PHYSICIAN

    ids = set(user_ids)
    if not ids:
        return False
    return get_user_model().objects.filter(pk__in=ids, memberships__role=PHYSICIAN).distinct().count() == len(ids)
