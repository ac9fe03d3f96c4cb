"""An active sample for a campaign, end to end: a judge run with an uncertainty per answer, the coordinator's draw
(probabilities, rule and seed recorded and audited, reproducible), physicians label the drawn dialogues, and the
model estimates give the active estimate beside the physicians' (weighted) and PPI++'s (refused: not a uniform
sample), on the page's partial and in the JSON the API and ``judge_report`` give."""

from __future__ import annotations

import json

import numpy as np
import pytest
from django.template.loader import render_to_string

from annotation import labels, sampling
from annotation.campaigns import CampaignError, add_rater, assign, create_campaign
from annotation.models import Assignment, RandomSample
from core.stats import active
from projects.models import AuditEvent
from projects.scoping import in_project
from scoring.judges import active_samples, estimates
from scoring.judges.models import JudgeConfig, JudgeResult, JudgeRun
from scoring.judges.runs import config_snapshot, default_prompt_set
from tests.conftest import module_world
from tests.factories import corpus_with, default_project, mini_cex

N_DIALOGUES, BUDGET, SEED = 120, 40, 20261206


def truth(index: int) -> int:
    """The physicians' answer on every binary item of dialogue ``index``."""
    return int(index % 5 != 0)


def build():
    from django.contrib.auth import get_user_model

    from projects.roles import assign_role

    corpus = corpus_with(N_DIALOGUES, name="active-corpus")
    config = JudgeConfig.objects.create(name="unsure-judge", model="judge-model",
                                        prompt_set=default_prompt_set(mini_cex()))
    run = JudgeRun.objects.create(config=config, corpus=corpus, snapshot=config_snapshot(config),
                                  status=JudgeRun.Status.SUCCEEDED)
    items = [i for i in mini_cex().rating_items() if i.response_type == "binary"][:3]
    rows = []
    for dialogue in corpus.dialogues.order_by("external_id"):
        index = int(dialogue.external_id[1:])
        unsure = index % 3 == 0  # the judge is unsure on a third, and wrong on some of those
        for item in items:
            value = 1 - truth(index) if unsure and index % 2 else truth(index)
            rows.append(JudgeResult(run=run, dialogue=dialogue, item=item, status=JudgeResult.Status.DONE,
                                    value=value, uncertainty=0.6 if unsure else 0.05))
    JudgeResult.objects.bulk_create(rows)
    campaign = create_campaign(name="Active", corpus=corpus, scale_version=mini_cex(), overlap=1)
    user = get_user_model().objects.create_user(username="phys-active", password=None)
    assign_role(user, "physician")
    add_rater(campaign, user)
    sample = active_samples.draw_for_campaign(campaign, run, budget=BUDGET, seed=SEED, user=user)
    assign(campaign)
    rating = list(mini_cex().rating_items())
    skipped = None
    for assignment in Assignment.objects.filter(campaign=campaign).select_related("dialogue").order_by("pk"):
        index = int(assignment.dialogue.external_id[1:])
        if skipped is None:  # one drawn dialogue left unfinished
            skipped = assignment
            continue
        labels.save_answers(assignment, {i.pk: truth(index) if i.response_type == "binary" else 2 for i in rating},
                            user)
        labels.submit(assignment, user)
    return campaign, run, sample, items


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    def make():
        with in_project(default_project()):
            campaign, run, sample, items = build()
            return campaign, run, sample, items, estimates.model_estimates(run, campaign)

    yield from module_world(django_db_blocker, make)


def test_the_draw_records_probabilities_rule_and_seed(world, db):
    campaign, run, sample, _, _ = world
    assert sample.kind == RandomSample.Kind.ACTIVE and sample.seed == SEED
    pi = {int(k): v for k, v in sample.probabilities.items()}
    assert len(pi) == N_DIALOGUES and sum(pi.values()) == pytest.approx(BUDGET)
    assert sample.rule["uniform_share"] == active.UNIFORM_SHARE and sample.rule["run_id"] == run.pk
    # unsure dialogues get the higher probability, and the draw is reproducible from the stored figures
    by_index = {int(d.external_id[1:]): pi[d.pk] for d in campaign.corpus.dialogues.all()}
    assert min(by_index[i] for i in by_index if i % 3 == 0) > max(by_index[i] for i in by_index if i % 3)
    assert sampling.reproduce(sample) == sample.dialogues
    assert set(Assignment.objects.filter(campaign=campaign).values_list("dialogue_id", flat=True)) == set(
        sample.dialogues)
    event = AuditEvent.objects.filter(action="campaign.active_sample").get()
    assert event.data["seed"] == SEED and event.data["probabilities"] == sample.probabilities
    assert "active sample" in sampling.describe(sample) and f"seed {SEED}" in sampling.describe(sample)
    with pytest.raises(CampaignError, match="already has its random sample"):
        active_samples.draw_for_campaign(campaign, run, budget=BUDGET, seed=1)


def test_the_active_estimate_beside_the_others(world, db):
    campaign, run, sample, items, me = world
    json.dumps(me, allow_nan=False)
    assert me["active"] is True and me["available"] is True and me["sample"]["kind"] == "active"
    model = me["models"][0]
    figures = model["scopes"]["all"]
    assert figures["ppi"]["value"] is None and "active sample" in figures["ppi"]["reason"]
    est = figures["active"]
    assert est["available"] and est["ci_low"] < est["value"] < est["ci_high"]
    assert est["expected_n"] is not None and est["n"] >= 2
    assert figures["physicians"].get("weighted") is True
    # the same figure straight from the arrays
    scores = estimates.load_scores(run, campaign)
    in_model = scores.models == model["model"]
    judged = in_model & np.isfinite(scores.judge["all"])
    labelled = (judged & np.isfinite(scores.physicians["all"]) & scores.in_sample)[judged]
    direct = active.active_mean(np.where(labelled, scores.physicians["all"][judged], np.nan),
                                scores.judge["all"][judged], scores.pi[judged], labelled)
    assert est["value"] == pytest.approx(direct["value"], rel=1e-12)
    # the unfinished drawn dialogue is named, as for PPI++
    warnings = [w for m in me["models"] for w in m["scopes"]["all"]["active"]["warnings"]]
    assert any("no finished physician label" in w for w in warnings)
    diff = me["differences"][0]
    assert "active" in diff and diff["ppi"]["value"] is None
    assert me["ranking"]["text"].startswith("Active scores") or "No Active ranking" in me["ranking"]["text"]


def test_the_page_shows_the_active_column(world, db):
    *_, me = world
    html = render_to_string("scoring/partials/judge_model_estimates.html", {"me": me, "report": {"words": {}}})
    assert 'data-testid="active-note"' in html and 'data-testid="active-estimate"' in html
    assert "Active says" in html


def test_a_uniform_campaign_offers_no_active_estimate(world, db):
    campaign, run, *_ = world
    scores = estimates.load_scores(run, campaign)
    scores.pi, scores.sample = None, None
    me = estimates.model_estimates(run, campaign, scores=scores)
    figure = me["models"][0]["scopes"]["all"]["active"]
    assert me["active"] is False and figure["value"] is None and "active rule" in figure["reason"]


def test_refusals(world, db):
    campaign, run, *_ = world
    other = create_campaign(name="Active 2", corpus=campaign.corpus, scale_version=mini_cex(), overlap=1)
    with pytest.raises(CampaignError, match="budget"):
        active_samples.draw_for_campaign(other, run, budget=N_DIALOGUES + 1)
    JudgeResult.objects.filter(run=run).update(uncertainty=None)
    with pytest.raises(CampaignError, match="no uncertainty"):
        active_samples.draw_for_campaign(other, run, budget=BUDGET)


def test_the_coordinator_draws_it_in_the_browser(world, db, client):
    """The campaign page links to the form; a POST draws the sample and goes back to the campaign."""
    from django.contrib.auth import get_user_model

    from projects.roles import assign_role

    campaign, run, *_ = world
    coordinator = get_user_model().objects.create_user(username="coord-active", password=None)
    assign_role(coordinator, "coordinator")
    client.force_login(coordinator)
    other = create_campaign(name="Active 3", corpus=campaign.corpus, scale_version=mini_cex(), overlap=1)
    page = client.get(f"/campaigns/{other.pk}/")
    assert page.status_code == 200 and b'data-testid="active-sample-link"' in page.content
    form = client.get(f"/judges/campaigns/{other.pk}/active-sample/")
    assert form.status_code == 200 and f'value="{run.pk}"'.encode() in form.content
    bad = client.post(f"/judges/campaigns/{other.pk}/active-sample/", {"run": run.pk, "budget": 0,
                                                                        "uniform_share": 0.55})
    assert bad.status_code == 200 and b"role=\"alert\"" in bad.content
    done = client.post(f"/judges/campaigns/{other.pk}/active-sample/", {"run": run.pk, "budget": 30,
                                                                         "uniform_share": 0.55, "seed": 5})
    assert done.status_code == 302
    sample = sampling.sample_of(other)
    assert sample.kind == RandomSample.Kind.ACTIVE and sample.seed == 5 and sample.rule["budget"] == 30.0
    assert AuditEvent.objects.filter(action="campaign.active_sample", actor=coordinator).exists()


def test_the_archive_keeps_it_and_verify_study_recomputes_it(world, db, tmp_path):
    """The archive holds the probabilities and the rule; ``verify_study`` reloads them and recomputes the active
    estimate (and every other figure) equal."""
    from studies.archive import open_archive
    from studies.export import export_study
    from studies.verify import verify_study

    campaign, *_ = world
    path = tmp_path / "active.zip"
    with in_project(default_project()):
        export_study(default_project(), path)
    rows = [row for _, row in open_archive(path).rows("data/random_samples.csv")]
    assert rows[0]["kind"] == "active" and len(json.loads(rows[0]["probabilities"])) == N_DIALOGUES
    checks = verify_study(path)
    active_figures = [c for c in checks if "/active/value" in c.figure]
    assert active_figures and [c for c in checks if not c.equal] == []


def test_the_planner_gives_labels_and_hours_saved(world, db):
    from scoring.judges.planner import planner

    campaign, run, *_ = world
    out = planner(corpus=campaign.corpus, version=campaign.scale_version, target=campaign, run_id=run.pk,
                  pilot_id=campaign.pk, half_width=5.0)
    assert out["ready"] and out["active"]["models"]
    row = out["active"]["models"][0]
    assert row["uniform"] is None or row["active"] is None or row["saved"] == row["uniform"] - row["active"]
    assert row["text"].startswith(row["model"])
    html = render_to_string("scoring/partials/judge_planner.html", out)
    assert 'data-testid="planner-active"' in html


def _old_english(row: dict, half_width: float, minutes: float | None) -> str:
    """The planner's active row as it was written before it was stored as a sentence (dialogue words)."""
    model, h = row["model"], f"+/-{half_width:g}"
    if row["uniform"] is None or row["active"] is None:
        which = "uniform" if row["uniform"] is None else "active"
        return (f"{model}: {h} is not reachable with the {row['n_total']} dialogues in scope ({which} sample)."
                if row["n_pilot"] >= 3 else f"{model}: {row['warnings'][0]}")
    text = (f"{model}: {h} needs {row['uniform']} physician-labelled dialogue(s) drawn uniformly, or {row['active']} "
            "drawn by the active rule")
    return text + (f" ({row['saved']} fewer: {row['hours_saved']:.1f} physician hours at {minutes:.1f} minutes per "
                   "dialogue)." if row["hours_saved"] is not None else
                   f" ({row['saved']} fewer; no time per dialogue recorded yet).")


def test_the_planner_says_its_active_rows_in_the_page_language_and_their_english_as_before(world, db):
    from django.utils import translation

    from scoring.judges.planner import planner

    campaign, run, *_ = world
    kwargs = {"corpus": campaign.corpus, "version": campaign.scale_version, "target": campaign, "run_id": run.pk,
              "pilot_id": campaign.pk}
    # reachable, and not reachable with the dialogues in scope
    for half_width, said in ((20.0, "按主动抽样规则抽取"), (5.0, "无法达到")):
        out = planner(**kwargs, half_width=half_width)
        for row in out["active"]["models"]:
            assert row["text"] == _old_english(row, half_width, out["active"]["minutes"])
        with translation.override("zh-hans"):
            html = render_to_string("scoring/partials/judge_planner.html", out)
        rows = html.split('data-testid="planner-active"')[1].split("</ul>")[0]
        assert said in rows and "drawn" not in rows and "reachable" not in rows and "pilot" not in rows
    JudgeResult.objects.filter(run=run).update(uncertainty=None)
    out = planner(**kwargs, half_width=5.0)
    assert out["active"]["reason"].startswith("The judge run recorded no uncertainty on these dialogues")
    with translation.override("zh-hans"):
        html = render_to_string("scoring/partials/judge_planner.html", out)
        with pytest.raises(CampaignError) as budget:
            active_samples.draw_for_campaign(campaign, run, budget=N_DIALOGUES + 1)
    assert "该评审模型运行未记录这些对话的不确定度" in html.split('data-testid="planner-active-reason"')[1]
    assert str(budget.value) == f"预算必须大于 0 且不超过范围内的对话数（{N_DIALOGUES}）。"
    JudgeRun.objects.filter(pk=run.pk).update(status=JudgeRun.Status.FAILED)
    with translation.override("zh-hans"):
        html = render_to_string("scoring/partials/judge_planner.html", planner(**kwargs, half_width=5.0))
    assert "规划器需要预试验：在此语料库和量表版本上已完成的评审模型运行。" in html


def test_a_stored_plan_with_nothing_to_plan_says_why_in_the_page_language():
    from unittest import mock

    from django.utils import translation

    from scoring.judges.planner import plan_figures

    class NoScores:
        scopes: list = []

    with mock.patch("scoring.judges.estimates.load_scores", return_value=NoScores()):
        stored = plan_figures(None, None, {})
    assert stored["reason"] == "The judge run scored none of the scale's rated items: nothing to plan."
    with translation.override("zh-hans"):
        html = render_to_string("scoring/partials/judge_planner.html", {"stored": stored, **stored})
    assert "该评审模型运行未对量表的任何评分条目评分：无可规划。" in html
    english = render_to_string("scoring/partials/judge_planner.html", {"stored": stored, **stored})
    assert "The judge run scored none of the scale&#x27;s rated items: nothing to plan." in english
