"""Demo data for ``make run``: one user per role and a demo corpus written for the demo."""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import transaction

from projects.roles import ADMIN, ANALYST, COORDINATOR, PHYSICIAN, assign_role

DEMO_CORPUS = "Demo corpus (synthetic)"
DEMO_CAMPAIGN = "Demo campaign (synthetic)"
DEMO_FINISHED = "Demo finished study (synthetic)"
# The finished study rates a corpus of its own: the demo transcripts used again under study ids and three demo doctor
# models. The synthetic judges score all of it; the physicians rate a stratified random sample large enough for the
# judge verdicts (they need at least 30 dialogues judged and rated), so the judge report can combine both (PPI++).
DEMO_STUDY_CORPUS = "Demo study corpus (synthetic)"
STUDY_CORPUS_SIZE = 300
STUDY_DIALOGUES = 48  # the random sample the physicians rate
# Made-up raters of the finished demo campaign: no password (they cannot log in), labels drawn by a seeded model.
SYNTHETIC_PHYSICIANS = [("synthetic-physician-1", "Synthetic Physician A"),
                        ("synthetic-physician-2", "Synthetic Physician B"),
                        ("synthetic-physician-3", "Synthetic Physician C")]
FINISHED_SEED = 2024
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
    once. Everything lives in the demo project ("Demo (synthetic)"); the demo physician, coordinator and analyst
    are its members (the demo administrator is instance-wide). Idempotent: existing users, dialogues and the
    campaign (even if deleted since) are left alone."""
    from projects.scoping import in_project as working_in
    from projects.services import demo_project

    project = demo_project()
    with working_in(project):
        return _load_demo(project)


def _load_demo(project) -> dict[str, int]:
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
        assign_role(user, role, project)
    corpus, _ = Corpus.objects.get_or_create(
        name=DEMO_CORPUS, project=project,
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


def _import_missing(corpus, path: Path | list[str]) -> int:
    """Import the lines of ``path`` (or the given JSON lines) whose id is not in ``corpus`` yet; returns how many
    were created."""
    import json

    from annotation.importers import import_dialogues
    from annotation.models import Dialogue

    present = set(Dialogue.objects.filter(corpus=corpus).values_list("external_id", flat=True))
    lines = path if isinstance(path, list) else path.read_text(encoding="utf-8").splitlines()
    missing = [line for line in lines if line.strip() and json.loads(line)["id"] not in present]
    return import_dialogues(corpus, missing)["created"] if missing else 0


def study_lines() -> list[str]:
    """The finished study's dialogues as JSON lines: the demo transcripts (those without planted personal data, which
    the privacy filter would hold back) in turn, each under a study id and one of three demo doctor models
    (:data:`STUDY_CORPUS_SIZE` of them)."""
    import json

    sources = [json.loads(line) for line in DEMO_FILE.read_text(encoding="utf-8").splitlines() if line.strip()]
    sources = [d for d in sources if not d.get("meta", {}).get("privacy_test")]
    lines = []
    for i in range(STUDY_CORPUS_SIZE):
        source = sources[i % len(sources)]
        lines.append(json.dumps({**source, "id": f"demo-study-{i + 1:03d}", "model": f"demo-doctor-{'ABC'[i % 3]}",
                                 "meta": {**source.get("meta", {}), "transcript_of": source["id"]}},
                                ensure_ascii=False))
    return lines


def _demo_campaign(corpus, name: str, version, instructions: str) -> int:
    """The demo coordinator's campaign ``name`` on ``corpus``, assigned to the demo physician (1 if created)."""
    from annotation.campaigns import add_rater, assign, create_campaign
    from annotation.models import Campaign

    if Campaign.objects.filter(corpus=corpus, name=name, project=corpus.project_id).exists():
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
    from projects.scoping import in_project as working_in
    from projects.services import demo_project

    project = demo_project()
    with working_in(project):
        return _load_instrument_demo(project)


def _load_instrument_demo(project) -> dict[str, int]:
    from annotation.instruments import SHIPPED, install_shipped
    from annotation.models import Corpus

    installed = sum(install_shipped(slug)[1] for slug in SHIPPED)
    corpus, _ = Corpus.objects.get_or_create(
        name=DEMO_ANSWERS, project=project, defaults={"is_demo": True, "kind": Corpus.Kind.ANSWER, "description": (
            "Questions, model answers and reference answers written for this demo by the developers (in the style "
            "of HIVMedQA). Not clinical advice, not study data.")})
    created = _import_missing(corpus, DEMO_ANSWER_FILE)
    campaigns_created = _demo_campaign(
        corpus, DEMO_ANSWER_CAMPAIGN, install_shipped("hivmedqa-medgpt")[0],
        "Demo only: synthetic answers. Score each answer from 0 to 5 on the five criteria of HIVMedQA's rubric, "
        "comparing it with the reference answer.")
    return {"instruments_installed": installed, "answers_created": created, "campaigns_created": campaigns_created}


def synthetic_answers(n_dialogues: int, items: list[tuple[str, tuple[int, ...]]], raters: int, seed: int
                      ) -> tuple[dict[tuple[int, int, str], int], dict[tuple[int, str], float]]:
    """Seeded labels with realistic disagreement: each dialogue has a latent quality, each item a difficulty and a
    clarity, each rater a leniency; a rater answers from the logistic of their sum plus noise. Returns
    {(dialogue index, rater index, code): value} and the latent probability per (dialogue index, code), which the
    synthetic judges of the scoring demo draw from too."""
    import numpy as np

    rng = np.random.default_rng(seed)
    quality = rng.normal(0.0, 1.3, n_dialogues)
    # Binary items differ in difficulty; an ordinal item (the overall rating) follows the dialogue's quality.
    difficulty = {code: rng.normal(-0.9, 0.8) if len(allowed) == 2 else 0.0 for code, allowed in items}
    # How clearly an item's answer follows the dialogue's quality: some items are answered consistently, others
    # barely (physicians agree on them no better than "slight" to "fair"), as in a real scale under revision.
    clarity = {code: rng.uniform(0.8, 3.5) if len(allowed) == 2 else 1.0 for code, allowed in items}
    leniency = rng.normal(0.0, 0.45, raters)
    answers: dict[tuple[int, int, str], int] = {}
    latent: dict[tuple[int, str], float] = {}
    for d in range(n_dialogues):
        for code, allowed in items:
            base = clarity[code] * quality[d] - difficulty[code]
            latent[(d, code)] = float(1 / (1 + np.exp(-base)))
            for r in range(raters):
                if len(allowed) == 2:
                    p = 1 / (1 + np.exp(-(base + leniency[r] + rng.normal(0.0, 0.9))))
                    answers[(d, r, code)] = int(rng.random() < p)
                else:  # ordinal: levels cut at equal steps of the (noisy) logit around 0
                    x = base + leniency[r] + rng.normal(0.0, 0.6)
                    cuts = np.linspace(-0.7, 0.7, len(allowed) - 1)
                    answers[(d, r, code)] = allowed[int(np.searchsorted(cuts, x))]
    return answers, latent


@transaction.atomic
def load_finished_demo() -> dict[str, int]:
    """A finished campaign on the demo study corpus: the demo physician and three synthetic physicians rated a
    stratified random sample of its dialogues (drawn with seed :data:`FINISHED_SEED` and recorded; each rater's
    sheet saved with the rating page's checks and history by ``labels.save_answers``, then submitted), so reports
    have content at first login. Idempotent: an existing campaign of that name is left alone."""
    from projects.scoping import in_project as working_in
    from projects.services import demo_project

    project = demo_project()
    with working_in(project):
        return _load_finished_demo(project)


def _load_finished_demo(project) -> dict[str, int]:
    from annotation.campaigns import add_rater, assign, create_campaign
    from annotation.labels import rating_items, save_answers, submit
    from annotation.models import Assignment, Campaign, Corpus, ScaleVersion
    from annotation.sampling import draw_sample
    from annotation.signals import labels_changes_batched

    if Campaign.objects.filter(name=DEMO_FINISHED, project=project).exists():
        return {"campaigns_created": 0, "labels_created": 0}
    corpus, _ = Corpus.objects.get_or_create(name=DEMO_STUDY_CORPUS, project=project, defaults={
        "is_demo": True, "description": (
        "The finished demo study's dialogues: the demo transcripts again under study ids and three demo doctor "
        "models. Not real patients, not study data.")})
    _import_missing(corpus, study_lines())
    User = get_user_model()
    raters = [User.objects.get(username="physician")]
    for username, full_name in SYNTHETIC_PHYSICIANS:
        first, _, last = full_name.rpartition(" ")
        user, created = User.objects.get_or_create(username=username, defaults={
            "first_name": first, "last_name": last, "email": f"{username}@example.org"})
        if created:
            user.set_unusable_password()
            user.save(update_fields=["password"])
        assign_role(user, PHYSICIAN, project)
        raters.append(user)
    coordinator = User.objects.get(username="coordinator")
    version = ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=1)
    campaign = create_campaign(
        name=DEMO_FINISHED, corpus=corpus, scale_version=version, overlap=len(raters), user=coordinator,
        allow_names=True,  # made-up raters: one report serves coordinators and analysts
        instructions="Demo only: a finished campaign on a random sample of the corpus (16 dialogues of each doctor "
                     "model, drawn with a recorded seed). The demo physician's and three synthetic physicians' "
                     "labels were drawn from a seeded model (per-dialogue quality, per-rater leniency, noise); they "
                     "are not anyone's judgement.")
    # The synthetic judges (scoring.judges.demo) score the whole corpus; physicians rate a random sample of it.
    draw_sample(campaign, size=STUDY_DIALOGUES, stratified=True, seed=FINISHED_SEED, user=coordinator)
    for user in raters:
        add_rater(campaign, user, added_by=coordinator)
    assign(campaign, user=coordinator)
    items = sorted(rating_items(version.pk).items(), key=lambda kv: kv[1][0])
    # One seeded model for the whole corpus (indexed in external-id order), so that the sampled dialogues the
    # physicians rate and the others the judges score come from the same population.
    dialogue_ids = list(corpus.dialogues.order_by("external_id").values_list("pk", flat=True))
    answers, _ = synthetic_answers(len(dialogue_ids), [(code, allowed) for _, (code, allowed) in items],
                                   len(raters), FINISHED_SEED)
    index = {pk: i for i, pk in enumerate(dialogue_ids)}
    rater_index = {user.pk: i for i, user in enumerate(raters)}
    by_id = {user.pk: user for user in raters}
    n = 0
    with labels_changes_batched():  # the reports follow once, not after each of the 192 submissions
        for assignment in Assignment.objects.filter(campaign=campaign).order_by("pk"):
            user = by_id[assignment.rater_id]
            sheet = {item_id: answers[(index[assignment.dialogue_id], rater_index[user.pk], code)]
                     for item_id, (code, allowed) in items if allowed}
            n += save_answers(assignment, sheet, user)
            submit(assignment, user)
    campaign.status = Campaign.Status.CLOSED
    campaign.save(update_fields=["status"])
    return {"campaigns_created": 1, "labels_created": n}


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


def has_real_data(user, held: set[str], project=None) -> bool:
    """True once the user works with data that is not the demo's: staff once a corpus that is not a demo corpus
    exists in the project (any project when none is given), physicians once they have an assignment on one."""
    from annotation.models import Assignment, Corpus

    corpora = Corpus.objects.alive().filter(is_demo=False)  # the scoped manager: the request's project
    if held - {PHYSICIAN} and corpora.exists():
        return True
    return Assignment.objects.filter(rater=user, campaign__corpus__is_demo=False).exists()


def start_here(user, held: set[str], project=None) -> list[dict[str, str]]:
    """The "start here" list of a user's home page, per project: in the demo project, links to the finished demo
    study's results for the user's roles; elsewhere, a way into the demo project when there is one; then the
    first real steps. Empty once the user has real data in the project (:func:`has_real_data`). Other apps add
    their demo links through a ``start_here(user, held, project)`` method of their AppConfig (annotation imports
    neither), asked only in the demo project."""
    from django.apps import apps
    from django.urls import reverse
    from django.utils.translation import gettext as _

    from annotation.models import Assignment, Campaign

    if not held or has_real_data(user, held, project):
        return []
    links: list[dict[str, str]] = []
    in_demo = project is not None and project.is_demo
    finished = Campaign.objects.alive().filter(name=DEMO_FINISHED, project=project).first() if in_demo else None
    if not in_demo:
        from projects.access import projects_of

        demo = projects_of(user).filter(is_demo=True).first()
        if demo is not None:
            links.append({"kind": "switch", "url": reverse("project-switch"), "project": demo.pk,
                          "text": _("Switch to the project “%(name)s”") % {"name": demo.name},
                          "note": _("the demo study: a finished campaign, reports, judges, a Delphi study")})
    if PHYSICIAN in held and in_demo:
        done = (Assignment.objects.filter(rater=user, campaign=finished, status=Assignment.Status.SUBMITTED)
                .order_by("position").first() if finished else None)
        if done is not None:
            links.append({"kind": "demo", "url": reverse("rate", args=[done.pk]),
                          "text": _("A dialogue you rated in the finished demo study"),
                          "note": _("your submitted answers, item by item")})
        links.append({"kind": "step", "url": reverse("rate-next"), "text": _("Rate a demo dialogue yourself"),
                      "note": _("every click is saved at once")})
    if finished is not None and held & {COORDINATOR, ANALYST}:
        links.append({"kind": "demo", "url": reverse("campaign-report", args=[finished.pk]),
                      "text": _("Agreement report of the finished demo study"),
                      "note": _("kappas, Gwet's AC1, Krippendorff's alpha, ICC, plots, Table 6 by model")})
    if finished is not None and COORDINATOR in held:
        links.append({"kind": "demo", "url": reverse("campaign-detail", args=[finished.pk]),
                      "text": _("Progress of the finished demo campaign"),
                      "note": _("per rater and per dialogue")})
    for config in apps.get_app_configs():
        if in_demo and config.name != "annotation" and hasattr(config, "start_here"):
            links.extend(config.start_here(user, held, project))
    if COORDINATOR in held:
        links.append({"kind": "step", "url": reverse("corpus-upload"), "text": _("Import your own dialogues"),
                      "note": _("JSON Lines; the first real step")})
        links.append({"kind": "step", "url": reverse("campaign-new"), "text": _("Create a campaign"),
                      "note": _("send a corpus to physicians on one scale version")})
    return links
