"""Judge verdicts that hold up: the four outcomes on synthetic raters, the paper's rule beside them, the
model ranking, and the settings a coordinator changes per report (page, downloads, API)."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from django.urls import reverse

from core import stats
from scoring.judges import report as judge_report
from scoring.judges.report import KEEP, NOT_ENOUGH, REPLACE, UNRELIABLE, ItemData, ReportContext, VerdictSettings

N_RESAMPLES = 1000


def context(n: int, raters: int = 3, method: str = "percentile", **verdict) -> ReportContext:
    freq = stats.bootstrap_freq(stats.bootstrap_indices(n, N_RESAMPLES, 11), n)
    return ReportContext(freq=freq, seed=11, n_resamples=N_RESAMPLES, rater_names=[f"R{i}" for i in range(raters)],
                         verdict=VerdictSettings(ci_method=method, **verdict),
                         jack=stats.jackknife_freq(n) if method == "bca" else None)


def binary_item(code: str, judge, humans, dimension: str = "1") -> ItemData:
    return ItemData(code=code, text="", dimension=dimension, dimension_name=f"Dimension {dimension}",
                    response_type="binary", values=[0, 1], judge=np.asarray(judge), humans=np.asarray(humans))


def agreeing_physicians(rng, truth: np.ndarray, raters: int = 3, flip: float = 0.03) -> np.ndarray:
    return np.stack([np.where(rng.random(truth.size) < flip, 1 - truth, truth) for _ in range(raters)])


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_random_physicians_make_every_item_unreliable(method):
    rng = np.random.default_rng(1)
    n = 40
    settings = context(n, method=method)
    for k in range(24):
        if k == 23:  # item 4: three levels
            item = ItemData(code="4", text="", dimension="4", dimension_name="", response_type="ordinal",
                            values=[1, 2, 3], judge=rng.integers(0, 3, n), humans=rng.integers(0, 3, (3, n)))
        else:
            item = binary_item(f"i{k}", rng.integers(0, 2, n), rng.integers(0, 2, (3, n)))
        entry = judge_report.item_report(item, settings)
        decision = entry["decision"]
        assert decision["verdict"] == UNRELIABLE, (k, entry["physicians_agreement"])
        # levels items (item 4) are measured with quadratic weighted kappa, binary items with Cohen's kappa
        assert entry["physicians_agreement"]["coefficient"] == ("weighted_kappa" if k == 23 else "kappa")
        assert "below the floor 0.40" in decision["reasons"][0] and "Delphi" in decision["reasons"][0]
        assert decision["checks"]["beats_constant"] is None  # no judge verdict at all
        json.dumps(entry, allow_nan=False)


def test_constant_judge_on_a_prevalent_item_is_kept_and_the_papers_rule_flagged():
    rng = np.random.default_rng(2)
    n = 60
    truth = np.array([1] * 54 + [0] * 6)
    rng.shuffle(truth)
    humans = agreeing_physicians(rng, truth)
    assert 0.85 < (humans == 1).mean() < 0.95
    entry = judge_report.item_report(binary_item("2.1", np.ones(n, dtype=int), humans), context(n))
    agreement = entry["physicians_agreement"]
    assert agreement["coefficient"] == "gwet_ac1" and agreement["value"] > 0.8  # extreme prevalence: AC1
    assert "Feinstein" in agreement["why"]
    decision = entry["decision"]
    assert decision["verdict"] == KEEP and decision["checks"]["reliable"] is True
    assert decision["reasons"][0].startswith("No better than a constant answer")
    assert "does not exclude 0" in decision["reasons"][0] and "majority-class rate" in decision["reasons"][0]
    paper = entry["paper_rule"]
    assert paper["met"] and paper["constant_would_meet"] and "constant answer" in paper["flag"]
    assert entry["vs_majority"]["accuracy"]["value"] == pytest.approx(entry["vs_majority"]["majority_class_rate"])


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_judge_copying_a_physician_on_a_reliable_item_can_replace(method):
    rng = np.random.default_rng(3)
    n = 100
    truth = rng.integers(0, 2, n)
    humans = agreeing_physicians(rng, truth, flip=0.05)
    entry = judge_report.item_report(binary_item("1.1", humans[0], humans), context(n, method=method))
    decision = entry["decision"]
    assert decision["verdict"] == REPLACE and decision["replace"] is True, decision
    assert decision["checks"] == {"enough_data": True, "reliable": True, "beats_constant": True,
                                  "non_inferior": True}
    assert any(r.startswith("Non-inferior to a physician") for r in decision["reasons"])
    difference = entry["difference"]
    assert difference["ci_low"] > -0.10 and difference["coefficient"] == "kappa"
    # judge vs each physician minus physician vs physician, on the same resamples
    assert difference["value"] == pytest.approx(entry["vs_physicians"]["kappa"]["value"]
                                                - entry["ceiling"]["kappa"]["value"])


def test_a_judge_worse_than_the_physicians_is_kept():
    rng = np.random.default_rng(4)
    n = 100
    truth = rng.integers(0, 2, n)
    humans = agreeing_physicians(rng, truth, flip=0.03)
    noisy = np.where(rng.random(n) < 0.25, 1 - truth, truth)  # beats a constant answer, far below a physician
    entry = judge_report.item_report(binary_item("1.2", noisy, humans), context(n))
    decision = entry["decision"]
    assert decision["verdict"] == KEEP and decision["checks"]["beats_constant"] is True
    assert decision["checks"]["non_inferior"] is False
    assert "less than they agree with each other" in decision["reasons"][0]
    # a wider margin lets the same judge through: the setting matters
    lenient = judge_report.item_report(binary_item("1.2", noisy, humans), context(n, margin=0.6))
    assert lenient["decision"]["verdict"] == REPLACE


def test_fourteen_dialogues_are_not_enough():
    rng = np.random.default_rng(5)
    n = 14
    truth = rng.integers(0, 2, n)
    humans = agreeing_physicians(rng, truth)
    entry = judge_report.item_report(binary_item("1.1", humans[0], humans), context(n))
    assert entry["decision"]["verdict"] == NOT_ENOUGH
    assert "Only 14 dialogue(s)" in entry["decision"]["reasons"][0]
    assert judge_report.item_report(binary_item("1.1", humans[0], humans),
                                    context(n, min_dialogues=10))["decision"]["verdict"] != NOT_ENOUGH


def test_settings_are_checked():
    for bad in ({"floor": 2}, {"min_dialogues": 1}, {"margin": -0.1}, {"ci_method": "normal"}):
        with pytest.raises(ValueError):
            VerdictSettings(**bad)


# ---------------------------------------------------------------------------------------------------------------
# model ranking
# ---------------------------------------------------------------------------------------------------------------
def test_kendall_tau_kernel_matches_scipy():
    from scipy.stats import kendalltau

    rng = np.random.default_rng(6)
    x = rng.integers(0, 4, (50, 5)).astype(float)
    y = rng.integers(0, 4, (50, 5)).astype(float)
    ours = judge_report.kendall_tau_b(x, y)
    for b in range(50):
        expected = kendalltau(x[b], y[b]).statistic
        assert (np.isnan(ours[b]) and np.isnan(expected)) or ours[b] == pytest.approx(expected)


def ranking_items(rng, judge_quality: dict[str, float], n_per_model: int = 30):
    """Three doctor models whose dialogues meet each item with probability 0.3 / 0.6 / 0.9 (physicians see it);
    the judge's per-model rate comes from ``judge_quality``."""
    models = ["model-A", "model-B", "model-C"]
    rates = {"model-A": 0.3, "model-B": 0.6, "model-C": 0.9}
    dialogue_model = {}
    labels = []
    for m in models:
        for _ in range(n_per_model):
            dialogue_model[len(dialogue_model)] = m
            labels.append(m)
    labels = np.asarray(labels)
    items = []
    for k in range(4):
        truth = (rng.random(labels.size) < np.vectorize(rates.get)(labels)).astype(int)
        humans = agreeing_physicians(rng, truth)
        judge = (rng.random(labels.size) < np.vectorize(judge_quality.get)(labels)).astype(int)
        items.append(binary_item(f"{1 + k // 2}.{k % 2 + 1}", judge, humans, dimension=str(1 + k // 2)))
    return items, list(dialogue_model), dialogue_model


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_judge_in_the_physicians_order_gives_tau_one(method):
    rng = np.random.default_rng(7)
    items, dialogue_ids, dialogue_model = ranking_items(rng, {"model-A": 0.1, "model-B": 0.5, "model-C": 0.95})
    ranking = judge_report.model_ranking(items, dialogue_ids, dialogue_model, context(len(dialogue_ids),
                                                                                      method=method))
    assert ranking["n_models"] == 3 and ranking["models"] == ["model-A", "model-B", "model-C"]
    scopes = {s["scope"]: s for s in ranking["scopes"]}
    assert set(scopes) == {"1", "2", "all"}
    overall = scopes["all"]
    assert overall["tau"]["value"] == pytest.approx(1.0) and overall["same_order"]
    assert overall["physicians"] == sorted(overall["physicians"]) and overall["judge"] == sorted(overall["judge"])
    # the judge's order holds in every resample: the interval is not estimable, never [1.00, 1.00]
    assert overall["tau"]["ci_low"] is None and overall["tau"]["ci_note"] == "not estimable (no variation)"
    summary = judge_report._summary([], ranking)
    assert "exactly as the physicians do" in summary["ranking"]


def test_judge_reversing_the_order_gives_tau_minus_one_and_a_constant_judge_is_undefined():
    rng = np.random.default_rng(8)
    items, ids, models = ranking_items(rng, {"model-A": 0.95, "model-B": 0.5, "model-C": 0.1})
    reversed_ = {s["scope"]: s for s in judge_report.model_ranking(items, ids, models, context(len(ids)))["scopes"]}
    assert reversed_["all"]["tau"]["value"] == pytest.approx(-1.0) and not reversed_["all"]["same_order"]
    items, ids, models = ranking_items(rng, {"model-A": 1.0, "model-B": 1.0, "model-C": 1.0})
    constant = {s["scope"]: s for s in judge_report.model_ranking(items, ids, models, context(len(ids)))["scopes"]}
    assert constant["all"]["tau"]["value"] is None and "ties" in constant["all"]["tau"]["warnings"][0]


def test_one_model_has_no_ranking():
    rng = np.random.default_rng(9)
    truth = rng.integers(0, 2, 40)
    items = [binary_item("1.1", truth, agreeing_physicians(rng, truth))]
    ranking = judge_report.model_ranking(items, list(range(40)), {i: "only" for i in range(40)}, context(40))
    assert ranking["scopes"] == [] and "at least two doctor models" in ranking["warnings"][0]


# ---------------------------------------------------------------------------------------------------------------
# pages, downloads and API on the demo corpus (14 dialogues): "not enough data" everywhere
# ---------------------------------------------------------------------------------------------------------------
@pytest.fixture
def demo_judged(db, make_user, demo_scope):
    """The demo corpus rated at random by three physicians and judged at random (the issue's new-user trial)."""
    from annotation import labels
    from annotation.campaigns import add_rater, assign, create_campaign
    from annotation.demo import DEMO_CORPUS, load_demo
    from annotation.models import Assignment, Corpus
    from projects.scoping import in_project as working_in
    from projects.services import add_member, demo_project
    from scoring.judges.models import JudgeConfig, JudgeResult, JudgeRun
    from scoring.judges.runs import config_snapshot, default_prompt_set
    from tests.factories import mini_cex, rating_items

    load_demo()
    corpus = Corpus.objects.get(name=DEMO_CORPUS, project=demo_project())
    with working_in(corpus.project):  # the campaign, its raters and the judge in the demo corpus's project
        campaign = create_campaign(name="Random physicians", corpus=corpus, scale_version=mini_cex(), overlap=3)
        raters = [make_user(f"rnd{i}") for i in range(3)]
        for user in raters:
            add_member(corpus.project, user, "physician")
            add_rater(campaign, user)
        assign(campaign)
        rng = random.Random(19)
        items = rating_items(campaign)
        for assignment in Assignment.objects.filter(campaign=campaign).select_related("rater"):
            for item in items:
                labels.save_label(assignment, item.pk, rng.choice(item.allowed_values()), assignment.rater)
            labels.submit(assignment, assignment.rater)
        config = JudgeConfig.objects.create(name="random judge", model="random",
                                            prompt_set=default_prompt_set(mini_cex()))
        run = JudgeRun.objects.create(config=config, corpus=corpus, snapshot=config_snapshot(config),
                                      status=JudgeRun.Status.SUCCEEDED)
        JudgeResult.objects.bulk_create([
            JudgeResult(run=run, dialogue=d, item=item, status=JudgeResult.Status.DONE,
                        value=rng.choice(item.allowed_values()))
            for d in corpus.dialogues.all() for item in items])
        return campaign, run


def test_demo_report_page_downloads_and_api(client, coordinator, physician, demo_judged):
    from rest_framework.test import APIClient

    from projects.services import add_member
    from tests.test_report_pages import run_pending

    campaign, run = demo_judged
    n_dialogues = campaign.corpus.dialogues.count()
    assert n_dialogues < 30
    add_member(campaign.project, coordinator, "coordinator")
    add_member(campaign.project, physician, "physician")
    client.force_login(coordinator)
    client.post(reverse("project-switch"), {"project": campaign.project.pk})
    url = reverse("judge-run-report", args=[run.pk])
    pending = client.get(url, {"campaign": campaign.pk}).content.decode()
    assert 'data-testid="judge-report-progress"' in pending and 'data-testid="verdict-settings"' in pending
    run_pending("judge_report")
    html = client.get(url, {"campaign": campaign.pk}).content.decode()
    assert 'data-testid="judge-summary"' in html and 'data-testid="verdict-settings"' in html
    assert html.index('data-testid="judge-summary"') < html.index('data-testid="verdict-settings"')
    assert "<strong>24</strong> item(s): <span class=\"badge\">not enough data</span>" in html
    assert html.count('data-outcome="not_enough"') == 24
    assert "accuracy &gt;= 80%, Shi et al., LLM-Mini-CEX, sec. 4.5" in html and "Walker" in html
    assert "minimum 30 dialogues" in html and "seeds/0" not in html
    # the coordinator lowers the minimum: the random physicians now make every item unreliable
    lowered = {"campaign": campaign.pk, "min_dialogues": 5, "floor": "0.4", "margin": "0.1", "ci": "bca"}
    client.get(url, lowered)
    run_pending("judge_report")
    html = client.get(url, lowered).content.decode()
    assert html.count('data-outcome="not_enough"') == 0
    assert html.count('data-outcome="unreliable"') + html.count('data-outcome="keep"') == 24
    assert "minimum 5 dialogues" in html and "BCa" in html
    bad = client.get(url, {"campaign": campaign.pk, "floor": "2"}).content.decode()
    assert "Fix the settings" in bad and 'role="alert"' in bad
    # downloads carry the settings (the stored report of those settings; 202, being prepared, while it is computed)
    download = reverse("judge-run-report-download", args=[run.pk, "json"])
    assert client.get(download, {"campaign": campaign.pk, "min_dialogues": 7}).status_code == 202
    data = json.loads(client.get(download, {**lowered}).content)
    assert data["settings"]["min_dialogues"] == 5 and data["summary"]["n_not_enough"] == 0
    standalone = client.get(reverse("judge-run-report-download", args=[run.pk, "html"]), {"campaign": campaign.pk})
    body = standalone.content.decode()
    assert "attachment" in standalone["Content-Disposition"] and "<style>" in body and "not enough data" in body
    assert client.get(download, {"campaign": campaign.pk, "margin": "x"}).status_code == 400
    # API: the same cached figures (202 while a report is computed), 400 with a message on bad settings,
    # physicians refused
    api = APIClient()
    api.force_authenticate(coordinator)
    api.credentials(HTTP_X_PROJECT=campaign.project.name)
    answer = api.get(f"/api/judge-runs/{run.pk}/report/", {"campaign": campaign.pk})
    assert answer.status_code == 200 and answer.json()["summary"]["counts"]["not_enough"] == 24
    assert answer.json()["items"][0]["decision"]["verdict"] == NOT_ENOUGH
    pending = api.get(f"/api/judge-runs/{run.pk}/report/", {"campaign": campaign.pk, "margin": "0.2"})
    assert pending.status_code == 202 and pending.json()["status"] == "queued"
    run_pending("judge_report")
    ready = api.get(f"/api/judge-runs/{run.pk}/report/", {"campaign": campaign.pk, "margin": "0.2"})
    assert ready.status_code == 200 and ready.json()["settings"]["margin"] == 0.2
    refused = api.get(f"/api/judge-runs/{run.pk}/report/", {"campaign": campaign.pk, "ci": "normal"})
    assert refused.status_code == 400 and "ci" in refused.json()["detail"]
    assert api.get(f"/api/judge-runs/{run.pk}/report/").status_code == 400
    api.force_authenticate(physician)
    assert api.get(f"/api/judge-runs/{run.pk}/report/", {"campaign": campaign.pk}).status_code == 403
