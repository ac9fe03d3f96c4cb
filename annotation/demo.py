"""Demo data for ``make run``: one user per role and a demo corpus written for the demo."""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import transaction

from annotation.roles import ADMIN, ANALYST, COORDINATOR, PHYSICIAN, assign_role

DEMO_CORPUS = "Demo corpus (synthetic)"
DEMO_CAMPAIGN = "Demo campaign (synthetic)"
DEMO_FILE = Path(__file__).parent / "demo_data" / "dialogues.jsonl"
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
    from annotation.campaigns import add_rater, assign, create_campaign
    from annotation.importers import import_dialogues
    from annotation.models import Campaign, Corpus, Dialogue, ScaleVersion

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
    present = set(Dialogue.objects.filter(corpus=corpus).values_list("external_id", flat=True))
    lines = DEMO_FILE.read_text(encoding="utf-8").splitlines()
    import json

    missing = [line for line in lines if line.strip() and json.loads(line)["id"] not in present]
    counts = import_dialogues(corpus, missing) if missing else {"created": 0}
    campaigns_created = 0
    if not Campaign.objects.filter(corpus=corpus, name=DEMO_CAMPAIGN).exists():
        coordinator = User.objects.get(username="coordinator")
        campaign = create_campaign(
            name=DEMO_CAMPAIGN, corpus=corpus, scale_version=ScaleVersion.objects.get(scale__slug="llm-mini-cex",
                                                                                      number=1),
            overlap=1, user=coordinator,
            instructions="Demo only: synthetic dialogues. Rate each item of the LLM-specific Mini-CEX; every click "
                         "is saved at once.")
        add_rater(campaign, User.objects.get(username="physician"), added_by=coordinator)
        assign(campaign, user=coordinator)
        campaigns_created = 1
    return {"users_created": users_created, "dialogues_created": counts["created"],
            "campaigns_created": campaigns_created}


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
