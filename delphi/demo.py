"""Demo Delphi study: round 1 on the Mini-CEX v1 answered by 12 demo experts and closed by the focus group, round 2
answered (converging after the feedback) and closed, round 3 prepared, so a new user sees statistics, decisions,
feedback, the change between rounds and exports. Idempotent."""

from __future__ import annotations

import numpy as np
from django.contrib.auth import get_user_model
from django.db import transaction

from annotation.models import ScaleVersion
from delphi import services
from delphi.models import DelphiStudy, Panelist

TITLE = "Demo: LLM-specific Mini-CEX Delphi"
N_EXPERTS = 12


@transaction.atomic
def load_delphi_demo() -> DelphiStudy | None:
    """The demo study, in the demo project ("Demo (synthetic)")."""
    from projects.scoping import in_project
    from projects.services import demo_project

    project = demo_project()
    with in_project(project):
        return _load(project)


def _load(project) -> DelphiStudy | None:
    existing = DelphiStudy.objects.filter(title=TITLE, project=project).first()
    if existing is not None:
        _finish_round_2(existing)  # databases loaded before round 2 was part of the demo
        return existing
    version = ScaleVersion.objects.filter(scale__slug="llm-mini-cex", number=1).first()
    if version is None:
        return None
    user = get_user_model().objects.filter(username="coordinator").first()
    study = services.create_study(
        title=TITLE, user=user, version=version, project=project, site_url="http://127.0.0.1:8000",
        invitation="Demo invitation: please rate how important each item is for evaluating an LLM's consultation.",
        instructions="Rate each item's importance from 1 (not important) to 5 (very important). Comment or propose "
                     "a rewording where the item is unclear.", reminder_days=0)
    services.invite(study, user, text="\n".join(f"Demo expert {n} <expert{n:02d}@example.org>"
                                                for n in range(1, N_EXPERTS + 1)))
    rnd = study.rounds.get(number=1)
    services.open_round(rnd, user, notify=False)  # no e-mails to made-up experts
    rng = np.random.default_rng(42)
    items = services.round_items(rnd)
    means = {i.code: (3.0 if i.code in ("2.7", "3.5") else 4.3) for i in items}
    for k, part in enumerate(rnd.participations.order_by("panelist__pseudonym")):
        answers = {}
        for item in items:
            value = int(np.clip(np.round(means[item.code] + rng.normal(0, 0.7)), 1, 5))
            comment = ""
            if item.code == "1.1" and k < 2:
                comment = "Name the elements of the present illness (onset, character, timing)."
            if item.code == "2.7" and k == 3:
                comment = "Overlaps with 2.1; politeness is part of respect."
            answers[item.pk] = {"importance": value, "comment": comment}
        services.save_answers(part, answers)
        services.save_profile(part, _profile(k))
        services.complete(part)
    by_code = {i.code: i for i in items}
    for resp in by_code["1.1"].delphi_responses.exclude(comment=""):
        services.set_adoption(resp, "adopt", user)
    services.decide(rnd, user, item=by_code["1.1"], action="revise",
                    new_text_en="Enquire about the present illness around the patient's self-report",
                    reason="two experts asked for the elements of the present illness")
    services.decide(rnd, user, item=by_code["2.7"], action="merge", merge_into=by_code["2.1"],
                    new_text_en="Show respect, sensitivity and empathy; use polite words",
                    reason="politeness is part of respect (expert opinion adopted)")
    services.close_round(rnd, user, "Demo: round 1 closed by the focus group")
    _finish_round_2(study)
    return study


def _profile(k: int) -> dict:
    levels = ["high", "medium", "low"]
    return {"familiarity": 5 - (k % 4 == 3) * 3, "basis_practice": levels[k % 2],
            "basis_theory": levels[(k + 1) % 3], "basis_literature": "medium", "basis_intuition": levels[k % 3],
            "professional_title": "attending physician", "working_years": 8 + k}


def _finish_round_2(study: DelphiStudy) -> None:
    """Open round 2 (the panel that stayed), answer it with opinions that converge after round 1's feedback
    (smaller spread around the same means), and close it. Nothing happens once round 2 is closed."""
    rnd = study.rounds.filter(number=2).first()
    if rnd is None or rnd.status == rnd.Status.CLOSED:
        return
    user = get_user_model().objects.filter(username="coordinator").first()
    if rnd.status == rnd.Status.DRAFT:
        services.open_round(rnd, user, notify=False)
    rng = np.random.default_rng(43)
    items = services.round_items(rnd)
    # Each expert keeps the profile of round 1 (same index among all panelists).
    index = {pk: k for k, pk in enumerate(Panelist.objects.filter(study=study).order_by("pseudonym")
                                          .values_list("pk", flat=True))}
    for part in rnd.participations.order_by("panelist__pseudonym"):
        k = index[part.panelist_id]
        if part.completed_at is not None:
            continue
        services.save_answers(part, {item.pk: {"importance": int(np.clip(np.round(
            (2.6 if item.code == "3.5" else 4.4) + rng.normal(0, 0.45)), 1, 5))} for item in items})
        services.save_profile(part, _profile(k))
        services.complete(part)
    services.close_round(rnd, user, "Demo: round 2 closed by the focus group")
