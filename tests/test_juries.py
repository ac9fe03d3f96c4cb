"""Juries of judges and judge selection.

One world, built once per module and rolled back: 600 dialogues whose item 1.1 three physicians label (each wrong on
10 % at random, so they agree well: kappa about 0.64); three live judges each wrong on exactly 20 % of the dialogues
at random and independently (A, B, C, with prices); three identical judges (D1-D3: one model asked three times);
one imported judge without prices (G). A second corpus has 30 judges of pure noise.
"""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta
from decimal import Decimal

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from django.utils import timezone

from annotation.label_import import import_labels
from annotation.models import Campaign
from core.stats import juries as jury_stats
from projects.scoping import in_project
from scoring.judges import juries, sources
from scoring.judges.estimates import model_estimates
from scoring.judges.models import JudgeConfig, JudgeResult, JudgeRun, Jury
from scoring.judges.report import REPLACE, VerdictSettings, compare_modes, judge_vs_physicians
from scoring.judges.runs import config_snapshot, default_prompt_set
from scoring.judges.selection import judge_selection, split_dialogues
from scoring.reports import exports
from tests.conftest import module_world
from tests.factories import corpus_with, default_project, mini_cex
from tests.test_report_pages import run_pending

N = 600
RESAMPLES = 400
LENIENT = VerdictSettings(margin=0.15)  # the coordinator's margin: a panel within 0.15 kappa of a physician


def _physicians_csv(corpus, truth: np.ndarray, rng, flip: float = 0.10) -> list[bytes]:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["dialogue_id", "rater", "item", "value"])
    for r in range(3):
        wrong = rng.random(truth.size) < flip
        for i, value in enumerate(np.where(wrong, 1 - truth, truth)):
            writer.writerow([f"d{i:03d}", f"jury_phys_{r}", "1.1", int(value)])
    return io.BytesIO(out.getvalue().encode()).readlines()


def _run(corpus, name: str, answers: np.ndarray, *, imported: bool = False, spent: str = "0.30",
         minutes: int = 10) -> JudgeRun:
    item = mini_cex().items.get(code="1.1")
    if imported:
        run = JudgeRun.objects.create(config=None, source=JudgeRun.Source.IMPORTED, scale_version=mini_cex(),
                                      corpus=corpus, source_file=f"{name}.csv", snapshot={"name": name, "model": name},
                                      status=JudgeRun.Status.SUCCEEDED)
    else:
        config = JudgeConfig.objects.create(name=name, model=f"{name}-model", prompt_set=default_prompt_set(mini_cex()),
                                            price_input_per_1k=Decimal("0.001"), price_output_per_1k=Decimal("0.002"))
        start = timezone.now() - timedelta(hours=1)
        run = JudgeRun.objects.create(config=config, corpus=corpus, snapshot=config_snapshot(config),
                                      status=JudgeRun.Status.SUCCEEDED, spent_cost=Decimal(spent),
                                      started_at=start, finished_at=start + timedelta(minutes=minutes))
    dialogues = list(corpus.dialogues.order_by("external_id"))
    JudgeResult.objects.bulk_create([
        JudgeResult(run=run, dialogue=d, item=item, status=JudgeResult.Status.DONE, value=int(v))
        for d, v in zip(dialogues, answers, strict=True)])
    return run


def _wrong_on(rng, truth: np.ndarray, share: float) -> np.ndarray:
    wrong = np.zeros(truth.size, bool)
    wrong[rng.choice(truth.size, int(round(share * truth.size)), replace=False)] = True
    return np.where(wrong, 1 - truth, truth)


def build_world() -> dict:
    rng = np.random.default_rng(37)
    corpus = corpus_with(N, name="jury-corpus")
    truth = rng.integers(0, 2, N)
    import_labels(corpus, _physicians_csv(corpus, truth, rng), file_name="phys.csv", campaign_name="Jury physicians",
                  random_sample=True)  # declared a random sample: PPI++ estimates are available
    campaign = Campaign.objects.get(name="Jury physicians")
    members = [_run(corpus, f"judge-{k}", _wrong_on(rng, truth, 0.20)) for k in "ABC"]
    copy = _wrong_on(rng, truth, 0.20)
    same = [_run(corpus, f"same-{k}", copy, spent="0.10") for k in (1, 2, 3)]
    unpriced = _run(corpus, "imported-G", _wrong_on(rng, truth, 0.20), imported=True)
    panel = juries.create_jury("panel", corpus, members, rule="majority")
    echo = juries.create_jury("echo", corpus, same, rule="majority")

    noise_corpus = corpus_with(120, name="noise-corpus")
    noise_truth = rng.integers(0, 2, 120)
    import_labels(noise_corpus, _physicians_csv(noise_corpus, noise_truth, rng, flip=0.05), file_name="np.csv",
                  campaign_name="Noise physicians")
    noise_campaign = Campaign.objects.get(name="Noise physicians")
    for k in range(30):
        _run(noise_corpus, f"noise-{k}", rng.integers(0, 2, 120), imported=True)
    return {"corpus": corpus, "campaign": campaign, "members": members, "same": same, "unpriced": unpriced,
            "panel": panel, "echo": echo, "noise_campaign": noise_campaign}


@pytest.fixture(scope="module")
def shared(django_db_setup, django_db_blocker):
    def build():
        with in_project(default_project()):
            world = build_world()
            world["reports"] = {
                key: judge_vs_physicians(source, world["campaign"], verdict=LENIENT, n_resamples=RESAMPLES,
                                         seed=5)
                for key, source in (("A", world["members"][0]), ("B", world["members"][1]),
                                    ("C", world["members"][2]), ("panel", world["panel"]),
                                    ("same", world["same"][0]), ("echo", world["echo"]))}
        return world

    yield from module_world(django_db_blocker, build)


@pytest.fixture
def world(shared, db):
    return shared


def _item(report: dict) -> dict:
    (entry,) = report["items"]
    return entry


def _kappa(report: dict) -> float:
    return _item(report)["vs_physicians"]["kappa"]["value"]


# --- the combination rules (pure) -----------------------------------------------------------------------------------

def test_majority_median_and_mean_with_declared_ties():
    x = np.array([[1, 0, 1, np.nan, 1], [1, 1, 0, np.nan, np.nan], [0, 1, np.nan, np.nan, np.nan]])
    assert jury_stats.combine(x, "majority", grid=[0, 1]).tolist()[:3] == [1, 1, 0]  # tie (1 vs 0) -> lower
    assert np.isnan(jury_stats.combine(x, "majority", grid=[0, 1])[3])  # nobody answered
    assert jury_stats.combine(x, "majority", grid=[0, 1])[4] == 1  # one answer is the jury's
    assert jury_stats.combine(x, "majority", grid=[0, 1], tie="higher")[2] == 1
    assert np.isnan(jury_stats.combine(x, "majority", grid=[0, 1], tie="unscored")[2])
    levels = np.array([[1, 3, 2], [2, 3, 3]], dtype=float)  # two jurors: medians 1.5, 3, 2.5
    assert jury_stats.combine(levels, "median", grid=[1, 2, 3]).tolist() == [1, 3, 2]  # half-way: lower
    assert jury_stats.combine(levels, "median", grid=[1, 2, 3], tie="higher").tolist() == [2, 3, 3]
    assert np.isnan(jury_stats.combine(levels, "median", grid=[1, 2, 3], tie="unscored")).tolist() == [
        True, False, True]
    assert jury_stats.combine(levels, "mean", grid=[1, 2, 3], round_to_grid_=False).tolist() == [1.5, 3.0, 2.5]
    three = np.array([[1, 3, 2], [2, 3, 3], [3, 1, 3]], dtype=float)
    assert jury_stats.combine(three, "mean", grid=[1, 2, 3]).tolist() == [2, 2, 3]  # 2, 2.33, 2.67
    with pytest.raises(ValueError, match="rule must be one of"):
        jury_stats.combine(levels, "vote")


def test_jurors_agreement_on_random_constant_and_near_constant_jurors():
    rng = np.random.default_rng(1)
    random_jurors = jury_stats.jurors_agreement(rng.integers(0, 2, (3, 400)).astype(float))
    assert abs(random_jurors["alpha"]) < 0.1 and not random_jurors["identical"]
    constant = jury_stats.jurors_agreement(np.ones((3, 50)))
    assert constant["alpha"] is None and constant["identical"] and "no variation" in constant["warnings"][0]
    near = np.ones((3, 100))
    near[0, 3] = 0  # one juror differs once on a near-constant item
    near_constant = jury_stats.jurors_agreement(near)
    assert not near_constant["identical"] and near_constant["unanimous_share"] == pytest.approx(0.99)
    assert near_constant["alpha"] is not None and near_constant["alpha"] < 0.1  # alpha is low at extreme prevalence


# --- the tests ----------------------------------------------------------------------------------------------

def test_a_majority_jury_of_independent_judges_agrees_better_and_earns_replace(world):
    reports = world["reports"]
    panel = _kappa(reports["panel"])
    for key in "ABC":
        assert panel > _kappa(reports[key]) + 0.05, (key, _kappa(reports[key]), panel)
        assert _item(reports[key])["decision"]["verdict"] != REPLACE
        # the paper's Table 5 accuracy against the physician majority too
        assert (_item(reports["panel"])["vs_majority"]["accuracy"]["value"]
                > _item(reports[key])["vs_majority"]["accuracy"]["value"])
    assert _item(reports["panel"])["decision"]["verdict"] == REPLACE
    provenance = reports["panel"]["run"]["provenance"]
    assert [m["id"] for m in provenance["members"]] == [r.pk for r in world["members"]]
    assert provenance["rule"] == "majority" and "majority vote" in provenance["rule_text"]
    assert reports["panel"]["run"]["is_jury"] and reports["panel"]["run"]["mode"] == "jury"
    json.dumps(reports["panel"], allow_nan=False)


def test_three_identical_judges_are_one_judge(world):
    reports = world["reports"]
    assert _kappa(reports["echo"]) == pytest.approx(_kappa(reports["same"]))
    assert _item(reports["echo"])["decision"]["verdict"] == _item(reports["same"])["decision"]["verdict"]
    agreement = juries.jurors_agreement(world["echo"])
    assert agreement["identical"] and "effectively one judge" in agreement["text"]
    assert agreement["items"][0]["alpha"] == pytest.approx(1.0)
    independent = juries.jurors_agreement(world["panel"])
    assert not independent["identical"] and 0.3 < independent["items"][0]["alpha"] < 0.8


def test_costs_add_up_and_unknown_stays_unknown(world):
    assert sources.cost(world["panel"])["cost"] == pytest.approx(0.90)
    assert sources.seconds(world["panel"]) == pytest.approx(1800)  # three runs of ten minutes
    mixed = juries.create_jury("with imported", world["corpus"], [world["members"][0], world["unpriced"]],
                               rule="majority")
    cost = sources.cost(mixed)
    assert cost["cost"] is None and "unknown" in cost["why"] and "imported" in cost["why"]
    assert sources.seconds(mixed) is None
    selection = judge_selection(world["campaign"], verdict=LENIENT, n_resamples=100, juries=[mixed])
    by_key = {c["key"]: c for c in selection["candidates"]}
    assert by_key[f"jury:{mixed.pk}"]["cost_per_1000"] is None
    assert by_key[f"run:{world['members'][0].pk}"]["cost_per_1000"] == pytest.approx(0.5)  # 0.30 per 600 dialogues
    assert by_key[f"run:{world['unpriced'].pk}"]["cost_per_1000"] is None


def test_pure_noise_candidates_are_never_confirmed(world):
    campaign = world["noise_campaign"]
    constant = _run(campaign.corpus, "always-yes", np.ones(120, dtype=int), imported=True)  # a constant rater too
    for verdict in (VerdictSettings(), VerdictSettings(margin=1.0)):  # the lenient margin lets luck be chosen
        selection = judge_selection(campaign, verdict=verdict, n_resamples=200, seed=3)
        assert selection["n_candidates"] == 31  # over six runs: no jury is tried unless named
        assert "31 candidate(s) were tried" in selection["optimism"]
        (item,) = selection["items"]
        assert next(r for r in item["candidates"] if r["key"] == f"run:{constant.pk}")["outcome"] != "replace"
        assert selection["summary"]["n_confirmed"] == 0
        assert all(not (e["choice"] or {}).get("confirmed") for e in selection["items"])
        assert "keep the physicians" in selection["summary"]["text"].lower()


def test_selection_names_the_cheapest_candidate_that_may_replace_and_confirms_it(world):
    selection = judge_selection(world["campaign"], verdict=LENIENT, n_resamples=RESAMPLES, seed=11)
    assert selection["split"]["n_held_out"] == 180 and selection["split"]["seed"] == 11
    (item,) = selection["items"]
    assert item["choice"]["key"] == f"jury:{world['panel'].pk}"
    assert item["choice"]["selection"]["outcome"] == "replace"
    assert item["choice"]["held_out"]["n_dialogues"] == 180 and item["choice"]["confirmed"] is True
    assert "panel" in selection["summary"]["text"] and "per 1,000 dialogues" in selection["summary"]["text"]
    assert selection["summary"]["cost_per_1000"] == pytest.approx(1.5)  # 0.90 for 600 dialogues
    rows = {row["key"]: row for row in item["candidates"]}
    assert rows[f"run:{world['members'][0].pk}"]["outcome"] != "replace"
    assert rows[f"run:{world['members'][0].pk}"]["unscored_share"] == 0
    json.dumps(selection, allow_nan=False)


def test_the_held_out_split_is_declared_and_reproducible():
    ids = list(range(100, 200))
    first, held = split_dialogues(ids, 0.3, 7)
    assert len(held) == 30 and sorted(first + held) == ids and not set(first) & set(held)
    assert split_dialogues(ids, 0.3, 7) == (first, held) and split_dialogues(ids, 0.3, 8) != (first, held)


def test_jury_errors_are_clear(world):
    a, b = (JudgeRun.objects.get(pk=run.pk) for run in world["members"][:2])  # the shared objects stay as they are
    unpriced = JudgeRun.objects.get(pk=world["unpriced"].pk)
    with pytest.raises(juries.JuryError, match="at least 2 runs"):
        juries.create_jury("x", world["corpus"], [a], rule="majority")
    with pytest.raises(juries.JuryError, match="appears twice"):
        juries.create_jury("x", world["corpus"], [a, a], rule="majority")
    JudgeRun.objects.filter(pk=b.pk).update(status=JudgeRun.Status.RUNNING)
    b.refresh_from_db()
    with pytest.raises(juries.JuryError, match=f"run #{b.pk} is running"):
        juries.create_jury("x", world["corpus"], [a, b], rule="majority")
    noise_run = JudgeRun.objects.filter(corpus__name="noise-corpus").first()
    with pytest.raises(juries.JuryError, match="must have judged corpus"):
        juries.create_jury("x", world["corpus"], [a, noise_run], rule="majority")
    other = mini_cex().scale.versions.create(number=99, status="draft")
    JudgeRun.objects.filter(pk=unpriced.pk).update(scale_version=other)
    unpriced.refresh_from_db()
    with pytest.raises(juries.JuryError, match="different instruments"):
        juries.create_jury("x", world["corpus"], [a, unpriced], rule="majority")
    with pytest.raises(juries.JuryError, match="exists already"):
        juries.create_jury("panel", world["corpus"], [a, world["members"][2]], rule="majority")


def test_jury_errors_read_in_the_language_of_the_page(world):
    from django.utils import translation

    a = JudgeRun.objects.get(pk=world["members"][0].pk)
    with translation.override("zh-hans"):
        refusals = []
        for runs, name in (([a], "x"), ([a, a], "x"), ([a, world["members"][2]], "panel")):
            with pytest.raises(juries.JuryError) as refused:
                juries.create_jury(name, world["corpus"], runs, rule="majority")
            refusals.append(str(refused.value))
    assert refusals == ["评审团至少需要 2 次运行；实际为 1 次。", "有一次运行出现了两次：每次运行只能给出一次。",
                        "此项目中已有名为 'panel' 的评审团。"]


# --- the jury through every surface -----------------------------------------------------------------------------------

def test_the_jury_in_model_estimates_ppi_and_run_comparison(world):
    estimates = model_estimates(world["panel"], world["campaign"])
    assert estimates["available"], estimates["reason"]
    scopes = [scope for model in estimates["models"] for scope in model["scopes"].values()]
    # the jury's combined scores are the judge's side of PPI++, paired with the physicians' on every dialogue
    assert scopes and all(scope["judge"]["value"] is not None and scope["ppi"]["n"] > 0 for scope in scopes)
    assert world["reports"]["panel"]["model_estimates"]["available"]
    json.dumps(estimates, allow_nan=False)
    comparison = compare_modes(world["panel"], world["members"][0], world["campaign"])
    (entry,) = comparison["items"]
    assert entry["run_a"]["accuracy"] > entry["run_b"]["accuracy"]
    assert comparison["run_a"]["is_jury"] and comparison["run_a"]["provenance"]["rule"] == "majority"


def test_the_jury_in_the_label_exports(world):
    rows = [r for r in exports.label_rows(world["corpus"]) if r["judge_run"] == f"jury:{world['panel'].pk}"]
    assert len(rows) == N and rows[0]["rater"] == f"panel (jury {world['panel'].pk})"
    assert rows[0]["rater_kind"] == "judge" and {r["value"] for r in rows} <= {0, 1}
    Jury.objects.get(pk=world["echo"].pk).soft_delete(None, "a test")
    assert not any(r["judge_run"] == f"jury:{world['echo'].pk}" for r in exports.label_rows(world["corpus"]))


def test_the_jury_pages_api_and_report_job(world, client, coordinator):
    panel = world["panel"]
    client.force_login(coordinator)
    page = client.get(reverse("judge-list")).content.decode()
    assert page.count('data-testid="juries"') == 1 and "panel" in page and 'data-testid="jury-form"' in page
    assert "<section" not in page[page.index("<title>"):page.index("</title>")]
    detail = client.get(reverse("jury-detail", args=[panel.pk])).content.decode()
    assert "Agreement among the jurors" in detail and "0.9000 USD" in detail
    echo = client.get(reverse("jury-detail", args=[world["echo"].pk])).content.decode()
    assert 'data-testid="identical-jurors"' in echo
    url = reverse("jury-report", args=[panel.pk])
    query = {"campaign": world["campaign"].pk, "margin": 0.15}
    assert 'data-testid="judge-report-progress"' in client.get(url, query).content.decode()
    run_pending("judge_report")
    html = client.get(url, query).content.decode()
    assert 'data-testid="judge-verdicts"' in html and 'data-testid="jury-provenance"' in html
    download = client.get(reverse("jury-report-download", args=[panel.pk, "json"]), query)
    assert download.status_code == 200 and json.loads(download.content)["run"]["provenance"]["rule"] == "majority"
    api = client.get(reverse("api-jury-report", args=[panel.pk]), query)
    assert api.status_code == 200 and api.json()["items"][0]["decision"]["verdict"] == REPLACE
    scores = client.get(reverse("api-jury-scores", args=[panel.pk]))
    assert scores.status_code == 200 and scores.json()["run"]["is_jury"]
    compare = client.get(reverse("jury-compare", args=[panel.pk, world["members"][0].pk]),
                         {"campaign": world["campaign"].pk})
    assert compare.status_code == 200 and "Jury panel" in compare.content.decode()


def test_the_selection_is_a_workers_job_with_stored_audited_settings(world, client, coordinator, analyst,
                                                                     monkeypatch):
    """The page opens at once with the stored table ("computing" before the first one), a settings change is stored
    and audited and recomputes, new labels make it "updating", and a seed in the query string changes nothing."""
    from core.jobs.models import Job
    from projects.models import AuditEvent
    from scoring.judges import selection_figures
    from scoring.judges.models import SelectionSettings

    monkeypatch.setattr(selection_figures, "RESAMPLES", 100)
    campaign = world["campaign"]
    url = reverse("judge-selection") + f"?campaign={campaign.pk}"
    client.force_login(analyst)
    first = client.get(url + "&seed=7&held_out=0.5").content.decode()  # query settings are not read
    assert 'data-testid="figures-computing"' in first and 'data-testid="selection-summary"' not in first
    (job,) = Job.objects.filter(kind="judge_selection", params__campaign=campaign.pk)
    assert job.params["names"] is False and "seed" not in job.params
    client.get(url + "&seed=8")
    assert Job.objects.filter(kind="judge_selection").count() == 1  # the same job: nothing more to compute
    run_pending(Job.Kind.JUDGE_SELECTION)
    html = client.get(url).content.decode()
    assert 'data-testid="selection-summary"' in html and 'data-testid="figures-updating"' not in html
    assert "seed 20240501" in html and "share 0.3" in html
    assert Job.objects.filter(kind="judge_selection").count() == 1

    client.force_login(coordinator)
    data = {"settings": "1", "floor": "0.4", "min_dialogues": "30", "margin": "0.15", "ci": "percentile",
            "held_out_share": "0.25", "seed": "11", "reason": "the protocol's seed"}
    bad = client.post(url, {**data, "held_out_share": "2"})
    assert bad.status_code == 400 and "held-out share" in bad.content.decode()
    assert not SelectionSettings.objects.filter(campaign=campaign).exists()
    assert client.post(url, data).status_code == 302
    stored = SelectionSettings.objects.get(campaign=campaign)
    assert (stored.seed, stored.held_out_share, stored.verdict["margin"]) == (11, 0.25, 0.15)
    event = AuditEvent.objects.get(action="selection_settings", target_id=str(campaign.pk))
    assert event.actor == coordinator and event.reason == "the protocol's seed"
    assert event.data["before"] is None and event.data["after"]["seed"] == 11
    assert 'data-testid="figures-computing"' in client.get(url).content.decode()  # with names: a table of its own
    client.force_login(analyst)
    updating = client.get(url).content.decode()  # the table of the old settings, while the new one is computed
    assert 'data-testid="figures-updating"' in updating and 'data-testid="selection-summary"' in updating
    assert "seed 20240501" in updating
    run_pending(Job.Kind.JUDGE_SELECTION)
    html = client.get(url).content.decode()
    assert "seed 11" in html and "share 0.25" in html and 'data-testid="figures-updating"' not in html
    client.force_login(coordinator)
    assert client.post(url, data).status_code == 302  # the same settings again: no new audit entry
    assert AuditEvent.objects.filter(action="selection_settings").count() == 1

    # new physician labels: the selections computed before are queued again (debounced) and shown "updating"
    selection_figures.refresh(campaign=campaign)
    assert Job.objects.filter(kind="judge_selection", status="queued").count() == 2  # coordinator's and analyst's
    Job.objects.filter(kind="judge_selection", status="queued").delete()
    from annotation.models import Label

    label = Label.objects.filter(campaign=campaign).first()
    Label.objects.filter(pk=label.pk).update(updated_at=timezone.now() + timedelta(seconds=5))
    assert 'data-testid="figures-updating"' in client.get(url).content.decode()
    run_pending(Job.Kind.JUDGE_SELECTION)
    result = selection_figures.selection_figures(campaign, coordinator, start=False)
    assert result.fresh and result.report["split"]["seed"] == 11

    # a campaign with no finished run on its corpus: the page says so (stored until the inputs change)
    lonely_corpus = corpus_with(12, name="lonely-corpus")
    import_labels(lonely_corpus, _physicians_csv(lonely_corpus, np.zeros(12, int), np.random.default_rng(2)),
                  file_name="lonely.csv", campaign_name="Lonely physicians")
    lonely = Campaign.objects.get(name="Lonely physicians")
    lonely_url = reverse("judge-selection") + f"?campaign={lonely.pk}"
    client.get(lonely_url)
    run_pending(Job.Kind.JUDGE_SELECTION)
    page = client.get(lonely_url).content.decode()
    assert 'data-testid="selection-error"' in page and "No finished judge run" in page
    client.get(lonely_url)
    assert Job.objects.filter(kind="judge_selection", params__campaign=lonely.pk).count() == 1


def test_the_jury_form_on_the_judges_page(world, client, coordinator, analyst):
    a, b, c = world["members"]
    data = {"name": "web panel", "corpus": world["corpus"].pk, "runs": [a.pk, b.pk], "rule": "median",
            "tie_rule": "lower", "round_to_grid": "on"}
    client.force_login(analyst)
    assert client.post(reverse("jury-new"), data).status_code == 403
    client.force_login(coordinator)
    response = client.post(reverse("jury-new"), data)
    jury = Jury.objects.get(name="web panel")
    assert response.status_code == 302 and response["Location"] == reverse("jury-detail", args=[jury.pk])
    assert [r.pk for r in jury.member_runs()] == [a.pk, b.pk] and jury.created_by == coordinator
    refused = client.post(reverse("jury-new"), {**data, "name": "solo", "runs": [a.pk]})
    assert refused.status_code == 400 and "at least 2 runs" in refused.content.decode()
    assert client.post(reverse("jury-delete", args=[jury.pk]), {"reason": ""}).status_code == 302
    assert Jury.objects.alive().filter(pk=jury.pk).exists()  # a reason is required
    client.post(reverse("jury-delete", args=[jury.pk]), {"reason": "made by mistake"})
    assert not Jury.objects.alive().filter(pk=jury.pk).exists() and Jury.objects.filter(pk=jury.pk).exists()


def test_the_commands(world, tmp_path, monkeypatch):
    a, b, c = world["members"]
    out = io.StringIO()
    call_command("make_jury", corpus="jury-corpus", name="cli panel", runs=f"{a.pk},{b.pk},{c.pk}", rule="majority",
                 stdout=out)
    assert "Jury #" in out.getvalue() and "Krippendorff's alpha among the jurors" in out.getvalue()
    for runs, message in ((f"{a.pk}", "at least 2 runs"), ("x,1", "not an id"), ("999999,1", "No judge run")):
        with pytest.raises(CommandError, match=message):
            call_command("make_jury", corpus="jury-corpus", name="bad", runs=runs, rule="majority")
    with pytest.raises(CommandError, match="No corpus"):
        call_command("make_jury", corpus="nope", name="bad", runs=f"{a.pk},{b.pk}", rule="majority")
    report = io.StringIO()
    call_command("judge_report", corpus="jury-corpus", judge="cli panel", margin=0.15, stdout=report)
    data = json.loads(report.getvalue())
    assert data["run"]["provenance"]["rule"] == "majority" and data["items"][0]["decision"]["verdict"] == REPLACE
    by_id = io.StringIO()
    call_command("judge_report", corpus="jury-corpus", judge=f"jury:{world['panel'].pk}", format="csv",
                 stdout=by_id)
    assert by_id.getvalue().startswith("section,scope,statistic")
    for fmt, check in (("json", lambda text: json.loads(text)["kind"] == "judge_selection"),
                       ("csv", lambda text: text.startswith("item,candidate,kind")),
                       ("html", lambda text: "Judge selection" in text and "selection optimism" in text)):
        target = tmp_path / f"selection.{fmt}"
        call_command("judge_selection", corpus="jury-corpus", campaign="Jury physicians", format=fmt,
                     resamples=100, margin=0.15, out=str(target), stderr=io.StringIO())
        assert check(target.read_text()), fmt
    # without options it reads the stored table when current (else computes and stores it for the page)
    from core.jobs.models import Job
    from scoring.judges import selection_figures

    monkeypatch.setattr(selection_figures, "RESAMPLES", 100)
    stored_out = io.StringIO()
    call_command("judge_selection", corpus="jury-corpus", campaign="Jury physicians", stdout=stored_out,
                 stderr=io.StringIO())
    (job,) = Job.objects.filter(kind="judge_selection", status="succeeded")
    assert json.loads(stored_out.getvalue())["split"]["n_resamples"] == 100
    again = io.StringIO()
    call_command("judge_selection", corpus="jury-corpus", campaign="Jury physicians", stdout=again,
                 stderr=io.StringIO())
    assert json.loads(again.getvalue()) == json.loads(stored_out.getvalue())  # (PostgreSQL orders a JSON's keys)
    assert Job.objects.filter(kind="judge_selection").count() == 1
    with pytest.raises(CommandError, match="No jury named"):
        call_command("judge_selection", corpus="jury-corpus", campaign="Jury physicians", juries="nope")
    with pytest.raises(CommandError, match="held-out share"):
        call_command("judge_selection", corpus="jury-corpus", campaign="Jury physicians", held_out=1.5)
