"""Demo data for ``make run``: one user per role and a demo corpus written for the demo."""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import transaction

from annotation.roles import ADMIN, ANALYST, COORDINATOR, PHYSICIAN, assign_role

DEMO_CORPUS = "Demo corpus (synthetic)"
DEMO_CAMPAIGN = "Demo campaign (synthetic)"
DEMO_FILE = Path(__file__).parent / "demo_data" / "dialogues.jsonl"
DEMO_ANSWERS = "Demo answers (synthetic)"
DEMO_ANSWER_CAMPAIGN = "Demo HIVMedQA rubric (synthetic)"
DEMO_ANSWER_FILE = Path(__file__).parent / "demo_data" / "answers.jsonl"
# Local demo only: these are printed at start-up. Never load demo data on a public server.
DEMO_USERS = [
    (PHYSICIAN, "physician", "physician-demo", "Dr Demo Physician"),
    (COORDINATOR, "coordinator", "coordinator-demo", "Demo Coordinator"),
    (ANALYST, "analyst", "analyst-demo", "Demo Analyst"),
    (ADMIN, "admin", "admin-demo", "Demo Admin"),
]


@transaction.atomic
def load_demo() -> dict[str, int]:
    """Create the demo users, corpus and a campaign on it for the demo physician, so that a new user can rate at
    once. Idempotent: existing users, dialogues and the campaign (even if deleted since) are left alone."""
    from annotation.models import Corpus, ScaleVersion

    User = get_user_model()
    users_created = 0
    for role, username, password, full_name in DEMO_USERS:
        first, _, last = full_name.rpartition(" ")
        user, created = User.objects.get_or_create(
            username=username, defaults={"first_name": first, "last_name": last, "email": f"{username}@example.org"}
        )
        if created:
            user.set_password(password)
            if role == ADMIN:
                user.is_superuser = True
            user.save()
            _PASSWORD_CHECKS[(user.password, password)] = True
            users_created += 1
        assign_role(user, role)
    corpus, _ = Corpus.objects.get_or_create(
        name=DEMO_CORPUS,
        defaults={
            "is_demo": True,
            "description": "Dialogues written for this demo by the developers. Not real patients, not study data.",
        },
    )
    created = _import_missing(corpus, DEMO_FILE)
    campaigns_created = _demo_campaign(
        corpus, DEMO_CAMPAIGN, ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=1),
        "Demo only: synthetic dialogues. Rate each item of the LLM-specific Mini-CEX; every click is saved at once.")
    return {"users_created": users_created, "dialogues_created": created, "campaigns_created": campaigns_created}


def _import_missing(corpus, path: Path) -> int:
    """Import the lines of ``path`` whose id is not in ``corpus`` yet; returns how many were created."""
    import json

    from annotation.importers import import_dialogues
    from annotation.models import Dialogue

    present = set(Dialogue.objects.filter(corpus=corpus).values_list("external_id", flat=True))
    lines = path.read_text(encoding="utf-8").splitlines()
    missing = [line for line in lines if line.strip() and json.loads(line)["id"] not in present]
    return import_dialogues(corpus, missing)["created"] if missing else 0


def _demo_campaign(corpus, name: str, version, instructions: str) -> int:
    """The demo coordinator's campaign ``name`` on ``corpus``, assigned to the demo physician (1 if created)."""
    from annotation.campaigns import add_rater, assign, create_campaign
    from annotation.models import Campaign

    if Campaign.objects.filter(corpus=corpus, name=name).exists():
        return 0
    User = get_user_model()
    coordinator = User.objects.get(username="coordinator")
    campaign = create_campaign(name=name, corpus=corpus, scale_version=version, overlap=1, user=coordinator,
                               instructions=instructions)
    add_rater(campaign, User.objects.get(username="physician"), added_by=coordinator)
    assign(campaign, user=coordinator)
    return 1


@transaction.atomic
def load_instrument_demo() -> dict[str, int]:
    """Install the ready instruments (HIVMedQA's rubric, AgentClinic's ratings) and a small corpus of synthetic
    question-answer items rated on HIVMedQA's rubric by the demo physician. Run after :func:`load_demo`;
    idempotent like it."""
    from annotation.instruments import SHIPPED, install_shipped
    from annotation.models import Corpus

    installed = sum(install_shipped(slug)[1] for slug in SHIPPED)
    corpus, _ = Corpus.objects.get_or_create(
        name=DEMO_ANSWERS, defaults={"is_demo": True, "kind": Corpus.Kind.ANSWER, "description": (
            "Questions, model answers and reference answers written for this demo by the developers (in the style "
            "of HIVMedQA). Not clinical advice, not study data.")})
    created = _import_missing(corpus, DEMO_ANSWER_FILE)
    campaigns_created = _demo_campaign(
        corpus, DEMO_ANSWER_CAMPAIGN, install_shipped("hivmedqa-medgpt")[0],
        "Demo only: synthetic answers. Score each answer from 0 to 5 on the five criteria of HIVMedQA's rubric, "
        "comparing it with the reference answer.")
    return {"instruments_installed": installed, "answers_created": created, "campaigns_created": campaigns_created}


# (stored hash, demo password) -> whether they match. A check costs half a second (PBKDF2, by design), and make run
# asks twice in one process (after loading the demo and for the start-up banner).
_PASSWORD_CHECKS: dict[tuple[str, str], bool] = {}


def demo_logins() -> list[tuple[str, str, str]]:
    """(role, username, password) of demo users whose password is still the demo one."""
    User = get_user_model()
    logins = []
    for role, username, password, _ in DEMO_USERS:
        user = User.objects.filter(username=username, is_active=True).first()
        if user is None:
            continue
        key = (user.password, password)
        if key not in _PASSWORD_CHECKS:
            _PASSWORD_CHECKS[key] = user.check_password(password)
        if _PASSWORD_CHECKS[key]:
            logins.append((role, username, password))
    return logins
