"""Prediction-powered model scores in the judge report: random samples of a campaign's dialogues, the
three estimates per doctor model and score, model differences, the planner, and where they are shown.

Three doctor models of 30 dialogues each; two physicians label a stratified random sample (or, for the
hand-picked case, dialogues assigned without one); a judge run scores every dialogue. Labels and judge answers are
written directly from seeded functions, so the expected figures are computed here from the same arrays, with the
authors' package ppi_py.
"""

from __future__ import annotations

import io
from datetime import timedelta

import numpy as np
import pytest
from django.core.management import call_command
from django.utils import timezone

from annotation import sampling
from annotation.campaigns import CampaignError, add_rater, assign, create_campaign
from annotation.label_import import import_labels
from annotation.models import Assignment, Campaign, Corpus, Dialogue, Label, RandomSample
from core.jobs.models import Job
from projects.models import AuditEvent
from scoring.judges.estimates import NOT_VALIDATED, load_scores, model_estimates, plan
from scoring.judges.models import JudgeConfig, JudgeResult, JudgeRun
from scoring.judges.report import judge_vs_physicians
from scoring.judges.runs import config_snapshot, default_prompt_set
from tests.factories import mini_cex
from tests.lazy import lazy
from tests.test_report_pages import run_pending

ppi_py = lazy("ppi_py", skip_when_missing=True)

MODELS = ("model-A", "model-B", "model-C")
PER_MODEL = 30
QUALITY_SHIFT = {"model-A": 0.8, "model-B": 0.0, "model-C": -0.8}


def quality(index: int) -> float:
    """A dialogue's latent quality: its model's level plus a seeded spread."""
    model = MODELS[index % 3]
    return QUALITY_SHIFT[model] + float(np.random.default_rng(1000 + index).normal(0, 1))


def physician_value(index: int, rater: int, code: str) -> int:
    rng = np.random.default_rng(index * 101 + rater * 7 + sum(map(ord, code)))
    x = quality(index) + rng.normal(0, 0.7)
    if code == "4":
        return 1 if x < -0.5 else (2 if x < 0.6 else 3)
    return int(x > -0.2)


def judge_value(index: int, code: str, constant: bool = False) -> int:
    """A judge that is lenient (biased upwards) and noisy; or one that always says the same."""
    if constant:
        return 2 if code == "4" else 1
    rng = np.random.default_rng(index * 31 + sum(map(ord, code)) + 5)
    x = quality(index) + 0.9 + rng.normal(0, 0.8)
    if code == "4":
        return 1 if x < -0.5 else (2 if x < 0.6 else 3)
    return int(x > -0.2)


@pytest.fixture(autouse=True)
def _items(instrument):
    return instrument


def make_corpus(name: str = "ppi-corpus") -> Corpus:
    corpus = Corpus.objects.create(name=name)
    Dialogue.objects.bulk_create([
        Dialogue(corpus=corpus, external_id=f"d{i:03d}", self_report=f"Complaint {i}",
                 turns=[{"role": "doctor", "text": "Hello"}, {"role": "patient", "text": f"Case {i}"}],
                 source_model=MODELS[i % 3]) for i in range(PER_MODEL * 3)])
    return corpus


def index_of(dialogue_id: int) -> int:
    return int(Dialogue.objects.get(pk=dialogue_id).external_id[1:])


def label_campaign(campaign: Campaign) -> None:
    """Submit every assignment with labels from :func:`physician_value` (written directly, no rating page)."""
    items = list(campaign.scale_version.rating_items())
    raters = sorted(set(Assignment.objects.filter(campaign=campaign).values_list("rater_id", flat=True)))
    external = dict(Dialogue.objects.filter(corpus=campaign.corpus).values_list("pk", "external_id"))
    rows = []
    for a in Assignment.objects.filter(campaign=campaign):
        for item in items:
            rows.append(Label(assignment=a, campaign=campaign, dialogue_id=a.dialogue_id, rater_id=a.rater_id,
                              item=item, value=physician_value(int(external[a.dialogue_id][1:]),
                                                               raters.index(a.rater_id), item.code)))
    Label.objects.bulk_create(rows)
    Assignment.objects.filter(campaign=campaign).update(status=Assignment.Status.SUBMITTED)


def make_campaign(corpus: Corpus, physicians, *, name: str = "sampled", sample_size: int | None = 30,
                  stratified: bool = True, seed: int = 2028) -> Campaign:
    campaign = create_campaign(name=name, corpus=corpus, scale_version=mini_cex(), overlap=len(physicians))
    if sample_size:
        sampling.draw_sample(campaign, size=sample_size, stratified=stratified, seed=seed)
    for user in physicians:
        add_rater(campaign, user)
    assign(campaign)
    label_campaign(campaign)
    return campaign


def random_judge(index: int, code: str) -> int:
    """A judge answering at random, unrelated to the dialogue."""
    rng = np.random.default_rng(7919 * index + sum(map(ord, code)))
    return int(rng.integers(1, 4)) if code == "4" else int(rng.integers(0, 2))


def make_run(corpus: Corpus, *, constant: bool = False, name: str = "lenient judge", answer=None) -> JudgeRun:
    config = JudgeConfig.objects.create(name=name, model="judge-model", mode=JudgeConfig.Mode.PER_ITEM,
                                        prompt_set=default_prompt_set(mini_cex()))
    run = JudgeRun.objects.create(config=config, corpus=corpus, snapshot=config_snapshot(config),
                                  status=JudgeRun.Status.SUCCEEDED)
    items = list(mini_cex().rating_items())
    JudgeResult.objects.bulk_create([
        JudgeResult(run=run, dialogue=d, item=item, status=JudgeResult.Status.DONE,
                    value=(answer or (lambda i, c: judge_value(i, c, constant)))(int(d.external_id[1:]), item.code))
        for d in corpus.dialogues.all() for item in items])
    return run


@pytest.fixture
def physicians(make_user):
    return [make_user("dr_one", "physician"), make_user("dr_two", "physician")]


# ---------------------------------------------------------------------------------------------------------------
# random samples
# ---------------------------------------------------------------------------------------------------------------
def test_random_sample_is_recorded_reproduced_and_assigned_alone(physicians, coordinator):
    corpus = make_corpus()
    campaign = create_campaign(name="c", corpus=corpus, scale_version=mini_cex(), overlap=2)
    sample = sampling.draw_sample(campaign, size=31, stratified=True, seed=99, user=coordinator)
    assert sample.kind == RandomSample.Kind.DRAWN and sample.seed == 99 and sample.size == 31
    assert sampling.reproduce(sample) == sample.dialogues
    again = sampling.draw([(pk, m) for pk, m in corpus.dialogues.values_list("pk", "source_model")], 31, 99, True)
    assert again[0] == sample.dialogues
    assert sorted(s["sample"] for s in sample.strata.values()) == [10, 10, 11]
    assert sampling.draw(sample.population, 31, 100, True)[0] != sample.dialogues  # another seed, another sample
    assert AuditEvent.objects.filter(action="campaign.random_sample", data__seed=99).exists()
    assert set(campaign.dialogues().values_list("pk", flat=True)) == set(sample.dialogues)
    for user in physicians:
        add_rater(campaign, user)
    assign(campaign)
    assigned = set(Assignment.objects.filter(campaign=campaign).values_list("dialogue_id", flat=True))
    assert assigned == set(sample.dialogues)
    with pytest.raises(CampaignError, match="drawn once"):
        sampling.draw_sample(campaign, size=5)
    other = create_campaign(name="hand-picked", corpus=corpus, scale_version=mini_cex(), overlap=1)
    add_rater(other, physicians[0])
    assign(other)
    with pytest.raises(CampaignError, match="before assigning"):
        sampling.draw_sample(other, size=5)
    fresh = create_campaign(name="fresh", corpus=corpus, scale_version=mini_cex(), overlap=1)
    with pytest.raises(CampaignError, match="between 1 and 90"):
        sampling.draw_sample(fresh, size=91)
    unstratified = sampling.draw_sample(fresh, size=12)
    assert unstratified.seed is not None and len(unstratified.dialogues) == 12
    assert sampling.reproduce(unstratified) == unstratified.dialogues


def test_equal_allocation_with_a_small_stratum():
    assert sampling.allocate({"a": 3, "b": 50, "c": 50}, 30) == {"a": 3, "b": 13, "c": 14}
    assert sampling.allocate({"a": 10, "b": 10}, 20) == {"a": 10, "b": 10}
    with pytest.raises(ValueError):
        sampling.allocate({"a": 1}, 2)


def test_import_labels_random_sample_is_declared(physicians, coordinator, tmp_path):
    corpus = make_corpus()
    chosen = [f"d{i:03d}" for i in range(0, 90, 3)] + [f"d{i:03d}" for i in range(1, 90, 3)][:15] + \
        [f"d{i:03d}" for i in range(2, 90, 3)][:15]
    lines = ["dialogue_id,rater,item,value"]
    for ext in chosen:
        for rater in ("ext-1", "ext-2"):
            for item in mini_cex().rating_items():
                lines.append(f"{ext},{rater},{item.code},{physician_value(int(ext[1:]), int(rater[-1]), item.code)}")
    path = tmp_path / "labels.csv"
    path.write_text("\n".join(lines) + "\n")
    out = io.StringIO()
    call_command("import_labels", str(path), "--corpus", corpus.name, "--random-sample", stdout=out)
    assert "random sample" in out.getvalue()
    campaign = Campaign.objects.get(name=f"Imported labels: labels.csv on {corpus.name}")
    sample = campaign.random_sample
    assert sample.kind == RandomSample.Kind.DECLARED and sample.size == 60 and len(sample.population) == 90
    assert "labels.csv" in sample.note
    report = model_estimates(make_run(corpus), campaign)
    assert report["available"] and report["models"][0]["scopes"]["all"]["ppi"]["available"]
    # an import without the declaration: no PPI estimate, and the reason
    plain = import_labels(corpus, lines, file_name="plain.csv", campaign_name="plain import")
    assert plain["random_sample"] is False
    undeclared = model_estimates(JudgeRun.objects.get(corpus=corpus), Campaign.objects.get(name="plain import"))
    assert not undeclared["available"] and "assigned by hand" in undeclared["reason"]


# ---------------------------------------------------------------------------------------------------------------
# the three estimates
# ---------------------------------------------------------------------------------------------------------------
def expected_arrays(campaign: Campaign, run: JudgeRun, model: str, code: str):
    """Item ``code``'s physicians' mean and judge's score per dialogue of ``model``, from the seeded functions."""
    sample = set(campaign.random_sample.dialogues)
    raters = sorted(set(Assignment.objects.filter(campaign=campaign).values_list("rater_id", flat=True)))
    y, yhat, yhat_unlabelled = [], [], []
    for d in Dialogue.objects.filter(corpus=campaign.corpus, source_model=model).order_by("pk"):
        i = int(d.external_id[1:])
        if d.pk in sample:
            y.append(np.mean([physician_value(i, r, code) for r in range(len(raters))]))
            yhat.append(judge_value(i, code))
        else:
            yhat_unlabelled.append(judge_value(i, code))
    return np.array(y), np.array(yhat, dtype=float), np.array(yhat_unlabelled, dtype=float)


def test_three_estimates_for_a_random_sample(physicians):
    corpus = make_corpus()
    campaign = make_campaign(corpus, physicians)
    run = make_run(corpus)
    report = judge_vs_physicians(run, campaign, n_resamples=50)
    block = report["model_estimates"]
    assert block["available"] and block["reason"] is None
    assert [s["key"] for s in block["scopes"]] == ["1", "2", "3", "all", "4"]
    assert block["sample"]["size"] == 30 and block["sample"]["labelled"] == 30
    for entry in block["models"]:
        assert entry["n_dialogues"] == 30 and entry["n_sampled"] == 10
        for key, figures in entry["scopes"].items():
            for source in ("physicians", "judge", "ppi"):
                assert {"value", "ci_low", "ci_high", "n"} <= set(figures[source]), (key, source)
            assert figures["judge"]["note"] == NOT_VALIDATED and figures["judge"]["n"] == 30
            assert figures["physicians"]["n"] == 10 and figures["ppi"]["n"] == 10
            assert figures["ppi"]["n_unlabeled"] == 20
            assert figures["ppi"]["ci_low"] < figures["ppi"]["value"] < figures["ppi"]["ci_high"]
    # item 4 of model-A: the same arrays through ppi_py
    y, yhat, yhat_unlabelled = expected_arrays(campaign, run, "model-A", "4")
    figures = block["models"][0]["scopes"]["4"]
    low, high = ppi_py.ppi_mean_ci(y, yhat, yhat_unlabelled, alpha=0.05)
    assert figures["ppi"]["value"] == pytest.approx(float(ppi_py.ppi_mean_pointestimate(y, yhat, yhat_unlabelled)[0]))
    assert (figures["ppi"]["ci_low"], figures["ppi"]["ci_high"]) == pytest.approx((float(low[0]), float(high[0])))
    # the physicians' own interval: ppi_py's classical interval with the sample SD (ddof 1) instead of ddof 0
    classical = ppi_py.classical_mean_ci(y, alpha=0.05)
    widen = np.sqrt(len(y) / (len(y) - 1))
    centre, half = float(np.mean(y)), (float(classical[1]) - float(classical[0])) / 2
    assert (figures["physicians"]["ci_low"], figures["physicians"]["ci_high"]) == pytest.approx(
        (centre - widen * half, centre + widen * half))
    assert figures["judge"]["value"] == pytest.approx(np.concatenate([yhat, yhat_unlabelled]).mean())
    assert figures["judge"]["value"] > figures["ppi"]["value"]  # the lenient judge's bias, corrected
    assert "worth" in figures["ppi"]["worth"] or "add nothing" in figures["ppi"]["worth"]
    # differences of every pair, and the ranking built on them
    pairs = [(d["a"], d["b"]) for d in block["differences"] if d["scope"] == "all"]
    assert pairs == [("model-A", "model-B"), ("model-A", "model-C"), ("model-B", "model-C")]
    a_c = next(d for d in block["differences"] if d["scope"] == "all" and d["b"] == "model-C" and d["a"] == "model-A")
    a, c = block["models"][0]["scopes"]["all"]["ppi"], block["models"][2]["scopes"]["all"]["ppi"]
    assert a_c["ppi"]["value"] == pytest.approx(a["value"] - c["value"])
    assert a_c["ppi"]["se"] == pytest.approx(np.hypot(a["se"], c["se"]))
    assert a_c["ppi"]["verdict"] == "model-A scores higher"
    assert block["ranking"]["order"][0] == "model-A" and "PPI++" in block["ranking"]["text"]
    assert report["summary"]["model_differences"] == block["ranking"]["text"]
    assert f"model-A above model-C by {a_c['ppi']['value']:.1f} percentage points [" in block["ranking"]["text"]
    assert "Science" in block["methods"] and "random sample" in block["methods"] and "mean over" in block["methods"]


def test_hand_picked_assignment_gets_no_ppi_estimate_and_a_reason(physicians):
    corpus = make_corpus()
    campaign = make_campaign(corpus, physicians, sample_size=None)
    block = model_estimates(make_run(corpus), campaign)
    assert not block["available"] and "assigned by hand" in block["reason"] and block["sample"] is None
    for entry in block["models"]:
        figures = entry["scopes"]["all"]
        assert figures["ppi"]["value"] is None and figures["ppi"]["ci_low"] is None
        assert "not drawn at random" in figures["ppi"]["reason"]
        assert figures["physicians"]["value"] is not None and figures["judge"]["value"] is not None
        assert "not drawn at random" in figures["physicians"]["warnings"][0]
    assert all(d["ppi"]["value"] is None and d["ppi"]["reason"] for d in block["differences"])
    assert block["ranking"]["text"].startswith("No PPI++ ranking")


def test_constant_judge_gives_the_physicians_estimate(physicians):
    corpus = make_corpus()
    campaign = make_campaign(corpus, physicians)
    block = model_estimates(make_run(corpus, constant=True), campaign)
    for entry in block["models"]:
        for figures in entry["scopes"].values():
            assert figures["ppi"]["lam"] == 0.0
            assert figures["ppi"]["value"] == pytest.approx(figures["physicians"]["value"])
            # PPI++ at lambda 0 is the classical interval with ppi_py's SD (ddof 0); the physicians' own takes the
            # sample SD (ddof 1): wider by sqrt(n / (n - 1))
            n, value = figures["physicians"]["n"], figures["physicians"]["value"]
            half = (value - figures["physicians"]["ci_low"]) * np.sqrt((n - 1) / n)
            assert figures["ppi"]["ci_low"] == pytest.approx(value - half)
            assert figures["judge"]["ci_low"] == figures["judge"]["ci_high"]  # constant: a zero-width interval
            assert any("same score" in w for w in figures["judge"]["warnings"])


def test_random_judge_adds_little_and_stays_valid(physicians):
    corpus = make_corpus()
    campaign = make_campaign(corpus, physicians)
    block = model_estimates(make_run(corpus, answer=random_judge, name="random judge"), campaign)
    for entry in block["models"]:
        for key, figures in entry["scopes"].items():
            ppi_fig, physicians_fig = figures["ppi"], figures["physicians"]
            width = ppi_fig["ci_high"] - ppi_fig["ci_low"]
            assert width > 0.8 * (physicians_fig["ci_high"] - physicians_fig["ci_low"]), (entry["model"], key)
            assert ppi_fig["gain"] < 0.5 * ppi_fig["n"], (entry["model"], key)
            assert ppi_fig["ci_low"] <= physicians_fig["value"] <= ppi_fig["ci_high"]


def test_near_constant_and_constant_criterion(physicians):
    """Physicians give item 4 the level 2 on every dialogue but one (near-constant), or on all (constant)."""
    corpus = make_corpus()
    campaign = make_campaign(corpus, physicians)
    run = make_run(corpus)
    item4 = Label.objects.filter(campaign=campaign, item__code="4")
    first = item4.order_by("dialogue_id").values_list("dialogue_id", flat=True).first()
    item4.update(value=2)
    item4.filter(dialogue_id=first).update(value=3)
    near = model_estimates(run, campaign)
    for entry in near["models"]:
        figures = entry["scopes"]["4"]
        if figures["ppi"].get("ci_note"):  # no variation on this model's dialogues: no limits, never [x, x]
            assert figures["ppi"]["ci_low"] is None and figures["ppi"]["ci_high"] is None
        else:
            assert figures["ppi"]["ci_low"] <= figures["ppi"]["value"] <= figures["ppi"]["ci_high"]
        assert 0.0 <= figures["ppi"]["lam"] <= 1.0
    item4.update(value=2)
    constant = model_estimates(run, campaign)
    for entry in constant["models"]:
        figures = entry["scopes"]["4"]
        # every score the same: the interval is not estimable and has no limits, as the judge's own scores give it
        assert figures["physicians"]["value"] == 2.0 and figures["physicians"]["ci_low"] is None
        assert figures["physicians"]["ci_high"] is None and figures["physicians"]["ci_note"]
        assert any("zero width" in w for w in figures["physicians"]["warnings"] + figures["ppi"]["warnings"])
        assert figures["ppi"]["effective_n"] is None and figures["ppi"]["worth"] is None


def test_planner_from_the_pilot(physicians):
    corpus = make_corpus()
    campaign = make_campaign(corpus, physicians)
    run = make_run(corpus)
    scores = load_scores(run, campaign)
    result = plan(scores, scope="all", half_width=5.0)["scopes"][0]
    assert result["half_width"] == 5.0 and len(result["models"]) == 3 and len(result["differences"]) == 3
    for row in result["models"]:
        assert row["n_pilot"] == 10 and row["physicians_only"] > 0
        assert "needs" in row["text"] and "physician-labelled dialogue(s) alone" in row["text"]
    default = plan(scores)["scopes"]
    assert [p["half_width"] for p in default] == [10.0, 10.0, 10.0, 10.0, 0.2]
    with pytest.raises(ValueError):
        plan(scores, scope="nope")


# ---------------------------------------------------------------------------------------------------------------
# pages and API
# ---------------------------------------------------------------------------------------------------------------
def test_campaign_page_draws_a_sample_and_shows_the_planner(client, coordinator, physicians):
    corpus = make_corpus()
    pilot = make_campaign(corpus, physicians, name="pilot")
    run = make_run(corpus)
    campaign = create_campaign(name="main", corpus=corpus, scale_version=mini_cex(), overlap=1)
    client.force_login(coordinator)
    page = client.get(f"/campaigns/{campaign.pk}/")
    assert b'data-testid="random-sample-form"' in page.content and b"judges/planner/?target=" in page.content
    response = client.post(f"/campaigns/{campaign.pk}/sample/", {"size": "45", "stratified": "on", "seed": "5"},
                           follow=True)
    assert b"Drew a random sample of 45 dialogues (seed 5)" in response.content
    assert campaign.random_sample.strata["model-A"] == {"population": 30, "sample": 15}
    assert b"anyone can draw it again from the seed" in client.get(f"/campaigns/{campaign.pk}/").content
    bad = client.post(f"/campaigns/{campaign.pk}/sample/", {"size": "x"}, follow=True)
    assert bad.status_code == 200 and b"Sample not drawn" in bad.content
    again = client.post(f"/campaigns/{campaign.pk}/sample/", {"size": "4"}, follow=True)
    assert b"drawn once" in again.content
    url = f"/judges/planner/?target={campaign.pk}&pilot={pilot.pk}&run={run.pk}&half_width=20"
    computing = client.get(url).content.decode()  # a worker computes the plan; the partial polls itself
    assert 'data-testid="planner-computing"' in computing and f'hx-get="{url.replace("&", "&amp;")}"' in computing
    client.get(url)
    assert Job.objects.filter(kind="judge_planner").count() == 1  # one job however often the partial polls
    run_pending()
    planner = client.get(url)
    assert planner.status_code == 200
    text = planner.content.decode()
    assert "physician-labelled dialogue(s) alone" in text and "with this judge" in text and "+/-20 points" in text
    assert "scoring 30 dialogue(s)" in text  # the judge scores every dialogue of the model in scope
    assert "hx-get" not in text.split('data-testid="sample-planner"')[1].split(">")[0]  # stored: no more polling
    client.get(url)
    assert Job.objects.filter(kind="judge_planner").count() == 1  # stored: read, not computed again
    for query, message in (("&half_width=-1", "positive"), ("&half_width=abc", "must be a number")):
        response = client.get(f"/judges/planner/?target={campaign.pk}{query}")
        assert response.status_code == 200 and message in response.content.decode()
    client.get(f"/judges/planner/?target={campaign.pk}&scope=zzz")
    run_pending()
    unknown = client.get(f"/judges/planner/?target={campaign.pk}&scope=zzz").content.decode()
    assert "Unknown score" in unknown
    # a new pilot label: the plan shown is the stored one, "updating" while the worker computes the new one
    Label.objects.filter(campaign=pilot).update(updated_at=timezone.now() + timedelta(seconds=5))
    updating = client.get(url).content.decode()
    assert 'data-testid="figures-updating"' in updating and "+/-20 points" in updating
    run_pending()
    assert 'data-testid="figures-updating"' not in client.get(url).content.decode()
    new = client.get("/campaigns/new/")
    assert b'hx-include="#id_corpus, #id_scale_version"' in new.content
    empty_url = f"/judges/planner/?corpus={corpus.pk}&scale_version={mini_cex().pk}"
    client.get(empty_url)
    run_pending()
    empty = client.get(empty_url).content.decode()
    assert "alone" in empty and "in scope: not reachable there even with the judge" in empty  # +/-10 on 30 each
    nothing = client.get("/judges/planner/?corpus=999999").content.decode()
    assert "Choose a corpus" in nothing


def test_new_campaign_with_a_random_sample(client, coordinator):
    corpus = make_corpus()
    client.force_login(coordinator)
    response = client.post("/campaigns/new/", {
        "name": "sampled at creation", "corpus": corpus.pk, "scale_version": mini_cex().pk, "phase": "formal",
        "overlap": 2, "sample_size": 12, "sample_stratified": "on", "sample_seed": 3}, follow=True)
    campaign = Campaign.objects.get(name="sampled at creation")
    assert b"(a random sample)" in response.content
    assert campaign.random_sample.seed == 3 and campaign.dialogues().count() == 12
    refused = client.post("/campaigns/new/", {
        "name": "too big", "corpus": corpus.pk, "scale_version": mini_cex().pk, "phase": "formal", "overlap": 2,
        "sample_size": 500})
    assert b"between 1 and 90" in refused.content and not Campaign.objects.filter(name="too big").exists()


def test_sample_api(client, coordinator, analyst, physicians):
    corpus = make_corpus()
    campaign = create_campaign(name="api", corpus=corpus, scale_version=mini_cex(), overlap=1)
    url = f"/api/campaigns/{campaign.pk}/sample/"
    client.force_login(analyst)
    assert client.get(url).status_code == 404
    assert client.post(url, {"size": 9}, content_type="application/json").status_code == 403
    client.force_login(coordinator)
    assert client.post(url, {"size": 0}, content_type="application/json").status_code == 400
    assert client.post(url, {"size": 91}, content_type="application/json").status_code == 400
    created = client.post(url, {"size": 9, "stratified": True, "seed": 11}, content_type="application/json")
    assert created.status_code == 201
    body = created.json()
    assert body["seed"] == 11 and body["population_size"] == 90 and body["reproduces"] is True
    assert body["strata"]["model-B"] == {"population": 30, "sample": 3} and len(body["dialogues"]) == 9
    assert client.post(url, {"size": 9}, content_type="application/json").status_code == 409
    client.force_login(analyst)
    assert client.get(url).json()["text"].startswith("A random sample of 9 of the 90 dialogues")


def test_sample_refusals_in_the_page_language_and_the_api_in_the_request_language(client, coordinator):
    from django.utils import translation

    campaign = create_campaign(name="zh-sample", corpus=make_corpus(), scale_version=mini_cex(), overlap=1)
    with translation.override("zh-hans"):
        with pytest.raises(CampaignError) as too_big:
            sampling.draw_sample(campaign, size=91)
        with pytest.raises(CampaignError) as seed:
            sampling.draw_sample(campaign, size=9, seed=-1)
    assert str(too_big.value) == "样本量必须介于 1 与 90（范围内的对话数）之间。"
    assert str(seed.value) == f"随机种子必须是 0 到 {sampling.MAX_SEED} 之间的整数。"
    with pytest.raises(CampaignError) as english:
        sampling.draw_sample(campaign, size=91)
    assert str(english.value) == "The sample size must be between 1 and 90 (the dialogues in scope)."
    sample = sampling.draw_sample(campaign, size=9, seed=1)
    with translation.override("zh-hans"), pytest.raises(CampaignError) as twice:
        sampling.draw_sample(campaign, size=9)
    assert str(twice.value) == f"此评分任务已有随机样本（9 个对话，{sample.created_at:%Y-%m-%d}）；样本只抽取一次。"
    client.force_login(coordinator)
    url = f"/api/campaigns/{campaign.pk}/sample/"
    zh = client.post(url, {"size": 9}, content_type="application/json", headers={"accept-language": "zh-CN"})
    en = client.post(url, {"size": 9}, content_type="application/json", headers={"accept-language": "en-US"})
    assert zh.status_code == en.status_code == 409
    assert zh.json()["detail"] == "此评分任务已有随机样本或评分分配；样本只在分配之前抽取一次。"
    assert en.json()["detail"] == ("This campaign already has a random sample or assignments; a sample is drawn once, "
                                   "before assigning.")


def test_report_page_json_and_api_show_the_three_estimates(client, analyst, physicians):
    corpus = make_corpus()
    campaign = make_campaign(corpus, physicians)
    run = make_run(corpus)
    client.force_login(analyst)
    client.get(f"/judges/runs/{run.pk}/report/?campaign={campaign.pk}")  # queues the report for a worker
    run_pending()
    page = client.get(f"/judges/runs/{run.pk}/report/?campaign={campaign.pk}")
    text = page.content.decode()
    assert page.status_code == 200
    assert 'data-testid="model-estimates-table"' in text and "not validated" in text
    assert "PPI++" in text and 'data-testid="report-planner"' in text and "dialogue(s) alone" in text
    assert 'data-testid="summary-model-differences"' in text
    download = client.get(f"/judges/runs/{run.pk}/report.json?campaign={campaign.pk}").json()
    figures = download["model_estimates"]["models"][1]["scopes"]["2"]
    assert set(figures) >= {"physicians", "judge", "ppi"}
    api = client.get(f"/api/judge-runs/{run.pk}/report/?campaign={campaign.pk}").json()
    assert api["model_estimates"]["models"][1]["scopes"]["2"]["ppi"]["value"] == figures["ppi"]["value"]
    html = client.get(f"/judges/runs/{run.pk}/report.html?campaign={campaign.pk}").content.decode()
    assert 'data-testid="model-estimates"' in html and "judges/planner/" not in html
