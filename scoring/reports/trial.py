"""Trial-phase report: each rater and team scored against the coordinator's gold labels (Shi et al., LLM-Mini-CEX,
sec. 4.4: trial annotation selects the annotation team)."""

from __future__ import annotations

from collections import defaultdict

from django.contrib.auth import get_user_model

from annotation.campaigns import rater_names
from annotation.models import Assignment, Campaign, GoldLabel, Label
from core import stats
from scoring.reports import sentences


def _score(pairs: list[tuple[int, int]]) -> dict:
    """Accuracy and Cohen's kappa of (rater, gold) pairs."""
    if not pairs:
        return {"n": 0, "accuracy": None, "kappa": None, "warnings": [sentences.NO_GOLD_ANSWERS]}
    rater = [p[0] for p in pairs]
    gold = [p[1] for p in pairs]
    kappa = stats.cohen_kappa_detail(rater, gold)
    return {"n": len(pairs), "accuracy": sum(a == b for a, b in pairs) / len(pairs),
            "kappa": kappa["value"], "warnings": kappa["warnings"]}


def trial_report(campaign: Campaign, *, names: bool = False) -> dict:
    """Per rater and per team: per-item and overall accuracy and kappa against gold (submitted work only).

    The overall kappa pools the binary items only (one 0/1 category set); the ordinal item 4 is reported
    per item. Raters appear under their stable pseudonyms; ``names=True`` gives usernames (check
    ``scoring.reports.figures.names_allowed`` first).
    """
    gold = {(g.dialogue_id, g.item_id): g.value
            for g in GoldLabel.objects.filter(campaign=campaign).select_related("item")}
    items = {}
    for g in GoldLabel.objects.filter(campaign=campaign).select_related("item").order_by("item__order"):
        items[g.item_id] = g.item
    teams = {r.user_id: (r.team or "—") for r in campaign.raters.all()}
    per_rater: dict[int, dict[int, list]] = defaultdict(lambda: defaultdict(list))
    rows = (Label.objects.filter(campaign=campaign, assignment__status=Assignment.Status.SUBMITTED,
                                 value__isnull=False)
            .values_list("rater_id", "dialogue_id", "item_id", "value"))
    for rater_id, dialogue_id, item_id, value in rows:
        key = (dialogue_id, item_id)
        if key in gold:
            per_rater[rater_id][item_id].append((value, gold[key]))
    users = get_user_model().objects.filter(pk__in=list(per_rater))
    shown = ({u.pk: u.username for u in users} if names
             else rater_names(users, viewer=None, project=campaign.project_id))  # nobody as viewer: pseudonyms

    def summarise(by_item: dict[int, list]) -> dict:
        binary = [p for item_id, pairs in by_item.items() if items[item_id].response_type == "binary" for p in pairs]
        everything = [p for pairs in by_item.values() for p in pairs]
        overall = _score(binary)
        overall["accuracy"] = _score(everything)["accuracy"]
        overall["n"] = len(everything)
        return {"items": {items[i].code: _score(by_item.get(i, [])) for i in items}, "overall": overall}

    raters = []
    team_pairs: dict[str, dict[int, list]] = defaultdict(lambda: defaultdict(list))
    for rater_id, by_item in sorted(per_rater.items(), key=lambda kv: shown[kv[0]]):
        raters.append({"rater": shown[rater_id], "team": teams.get(rater_id, "—"), **summarise(by_item)})
        for item_id, pairs in by_item.items():
            team_pairs[teams.get(rater_id, "—")][item_id].extend(pairs)
    teams_out = [{"team": team, **summarise(by_item)} for team, by_item in sorted(team_pairs.items())]
    teams_out.sort(key=lambda t: -(t["overall"]["accuracy"] or 0))
    return {"gold_dialogues": len({d for d, _ in gold}), "gold_items": [it.code for it in items.values()],
            "raters": raters, "teams": teams_out}
