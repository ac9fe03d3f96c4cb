"""Bring your own data: an existing judge's scores, repeated answers, half points, and reports that fit
the instrument, on synthetic data in the shape of a published HIVMedQA set (tests/hivmedqa_data.py)."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pandas as pd
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.importers import ImportRejected, import_dialogues
from annotation.instruments import install_shipped
from annotation.label_import import import_labels
from annotation.models import Campaign, Corpus, Dialogue, Item, Label
from scoring.judges import report as judge_report
from scoring.judges.models import ImportedPrompt, JudgeResult, JudgeRun
from scoring.reports import agreement as reports
from tests import hivmedqa_data as hiv
from tests.test_report_pages import run_pending

pytestmark = pytest.mark.django_db


@pytest.fixture
def hivmedqa(db):
    return install_shipped("hivmedqa-medgpt")[0]


@pytest.fixture
def corpus(hivmedqa):
    corpus = Corpus.objects.create(name="HIVMedQA answers")
    counts = import_dialogues(corpus, hiv.answers_jsonl())
    assert counts["created"] == len(hiv.MODELS) * hiv.QUESTIONS * hiv.REPLICATES
    return corpus


@pytest.fixture
def scores():
    return hiv.judge_scores()


def lines(text: str) -> list[bytes]:
    return io.BytesIO(text.encode()).readlines()


@pytest.fixture
def judge_run(corpus, hivmedqa, scores):
    counts = import_labels(corpus, lines(hiv.judge_csv(scores)), file_name="hivmedqa_judge.csv",
                           scale_version=hivmedqa)
    assert counts["labels"] == 0 and len(counts["judge_runs"]) == 1
    return JudgeRun.objects.get(pk=counts["judge_runs"][0]["id"])


@pytest.fixture
def campaign(corpus, hivmedqa, scores):
    rows = hiv.physician_scores(scores)
    import_labels(corpus, lines(hiv.physicians_csv(rows)), file_name="physicians.csv", scale_version=hivmedqa,
                  campaign_name="Physicians")
    return Campaign.objects.get(name="Physicians")


# ---------------------------------------------------------------------------------------------------------------
# the fixtures import unchanged
# ---------------------------------------------------------------------------------------------------------------
def test_answers_carry_their_case_and_replicate(corpus):
    answer = Dialogue.objects.get(corpus=corpus, external_id=hiv.answer_id("model-b", 7, 3))
    assert answer.case == "q07" and answer.replicate == 3 and answer.source_model == "model-b"


def test_judge_scores_import_unchanged_with_half_points_and_provenance(judge_run, scores, corpus):
    import hashlib

    text = hiv.judge_csv(scores)
    assert judge_run.is_imported and judge_run.config is None and judge_run.status == "succeeded"
    assert judge_run.source_file == "hivmedqa_judge.csv"
    assert judge_run.source_sha256 == hashlib.sha256(text.encode()).hexdigest()
    assert judge_run.snapshot["model"] == hiv.JUDGE_MODEL and judge_run.name == hiv.JUDGE
    stored = {(d, c): v for d, c, v in JudgeResult.objects.filter(run=judge_run).values_list(
        "dialogue__external_id", "item__code", "value")}
    assert len(stored) == len(scores) * len(hiv.CRITERIA)
    assert all(stored[(a, c)] == scores[a][c] for a in scores for c in hiv.CRITERIA)
    halves = [v for v in stored.values() if v % 1]
    assert halves and all(v == 4.5 for v in halves)  # 4.5 kept exactly, not rounded
    assert isinstance(stored[next(k for k, v in stored.items() if v == 4)], int)  # whole scores read back as int
    result = JudgeResult.objects.filter(run=judge_run).first()
    assert result.rationale.startswith("Here is my evaluation.\n```json")  # the raw response, verbatim
    assert ImportedPrompt.objects.filter(result__run=judge_run).count() == len(stored)


def test_values_left_to_the_raw_response_are_read_with_the_instruments_keys(corpus, hivmedqa, scores):
    counts = import_labels(corpus, lines(hiv.judge_csv(scores, with_values=False)), file_name="raw.csv",
                           scale_version=hivmedqa)
    run = JudgeRun.objects.get(pk=counts["judge_runs"][0]["id"])
    stored = {(d, c): v for d, c, v in JudgeResult.objects.filter(run=run).values_list(
        "dialogue__external_id", "item__code", "value")}
    assert all(stored[(a, c)] == scores[a][c] for a in scores for c in hiv.CRITERIA)


def test_judge_import_errors_are_grouped_and_nothing_is_written(corpus, hivmedqa, scores, tmp_path, capsys):
    text = hiv.judge_csv(scores).replace(",bias,5,judge,", ",bias,6,judge,")
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(CommandError, match="nothing was written"):
        call_command("import_labels", str(path), "--corpus", corpus.name, "--scale", "hivmedqa-medgpt")
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 1, errors  # one line per distinct problem, not one per line
    assert errors[0].startswith(f"{text.count(',bias,6,judge,'):,} lines (")
    assert 'item bias takes a number from 0 to 5 in steps of 0.5; got "6"' in errors[0]
    assert not JudgeRun.objects.exists() and not Label.objects.exists()


def test_the_same_file_is_not_imported_twice(judge_run, corpus, hivmedqa, scores):
    with pytest.raises(ImportRejected) as refused:
        import_labels(corpus, lines(hiv.judge_csv(scores)), file_name="again.csv", scale_version=hivmedqa)
    assert f"imported already: run #{judge_run.pk}" in refused.value.grouped()[0]
    assert JudgeRun.objects.count() == 1


def test_an_imported_run_is_never_sent_to_an_endpoint(judge_run):
    from scoring.judges import runs

    for action in (lambda: runs.start(judge_run), lambda: runs.retry_failed(judge_run),
                   lambda: runs.set_status(judge_run, JudgeRun.Status.PAUSED)):
        with pytest.raises(runs.RunError, match="never sent to an endpoint"):
            action()
    judge_run.refresh_from_db()
    assert judge_run.status == "succeeded" and judge_run.requests_sent == 0


# ---------------------------------------------------------------------------------------------------------------
# replicates: means and SDs equal pandas on the same numbers
# ---------------------------------------------------------------------------------------------------------------
def pandas_table2(frame: pd.DataFrame) -> pd.DataFrame:
    """The independent computation: per model and criterion, mean over questions (each the mean over its
    replicates) and the SD of the per-replicate means."""
    rows = []
    for (model, code), block in frame.groupby(["model", "criterion"]):
        per_case = block.groupby("case")["value"].mean()
        per_replicate = block.groupby("replicate")["value"].mean()
        rows.append({"model": model, "criterion": code, "mean": per_case.mean(), "sd": per_replicate.std(ddof=1),
                     "replicates": per_replicate})
    return pd.DataFrame(rows).set_index(["model", "criterion"])


def test_judge_scores_give_the_papers_table_2_as_pandas_does(judge_run, scores):
    frame = pd.DataFrame([{"model": a.split("-q")[0], "case": a.split("-")[2], "replicate": int(a[-1]),
                           "criterion": c, "value": v} for a, values in scores.items() for c, v in values.items()])
    expected = pandas_table2(frame)
    result = judge_report.judge_scores(judge_run)
    table = result["replicates"]
    assert table["n_cases"] == hiv.QUESTIONS and table["n_replicates"] == hiv.REPLICATES
    for entry in table["models"]:
        for code in hiv.CRITERIA:
            got, want = entry["criteria"][code], expected.loc[(entry["model"], code)]
            assert got["mean"] == pytest.approx(want["mean"], abs=1e-12)
            if want["sd"] > 0:
                assert got["sd"] == pytest.approx(want["sd"], abs=1e-12)
                from scipy.stats import t

                half = t.ppf(0.975, hiv.REPLICATES - 1) * want["sd"] / np.sqrt(hiv.REPLICATES)
                assert got["ci_low"] == pytest.approx(want["replicates"].mean() - half)
            else:
                assert got["ci_low"] is None and got["ci_note"] == "not estimable (no variation)"
    # the judge's plain means by model agree with pandas too
    by_model = frame.groupby(["model", "criterion"])["value"].mean()
    for entry in result["models"]:
        for code in hiv.CRITERIA:
            assert entry["criteria"][code]["mean"] == pytest.approx(by_model[(entry["model"], code)])


# ---------------------------------------------------------------------------------------------------------------
# an imported judge everywhere a run is: judge vs physicians, judge_report, the API, exports, the run comparison
# ---------------------------------------------------------------------------------------------------------------
def test_an_imported_judge_appears_in_the_judge_vs_physicians_report(judge_run, campaign):
    report = judge_report.judge_vs_physicians(judge_run, campaign, n_resamples=200)
    assert report["run"]["source"] == "imported"
    assert report["run"]["provenance"]["file"] == "hivmedqa_judge.csv"
    assert report["run"]["provenance"]["model"] == hiv.JUDGE_MODEL
    assert report["counts"]["dialogues_compared"] == len(hiv.MODELS) * hiv.QUESTIONS  # replicate 1 rated
    items = {item["code"]: item for item in report["items"]}
    assert set(items) == set(hiv.CRITERIA)
    for code in ("comprehension", "reasoning", "knowledge", "harm"):
        assert items[code]["decision"]["coefficient"] == "weighted_kappa"
        # external raters (not physicians of the project): the verdicts speak of raters
        assert items[code]["decision"]["verdict"] in judge_report.outcome_labels(report["words"]).values()
        assert items[code]["decision"]["outcome"] in judge_report.OUTCOME_KEYS.values()
    # the judge scored all five replicates, the physicians the first: Table 2 for both, side by side
    assert report["replicates"]["judge"]["n_replicates"] == hiv.REPLICATES
    physicians = report["replicates"]["physicians"]
    assert physicians["n_replicates"] == 1  # one replicate rated: means over cases, no SD over replicates
    first = physicians["models"][0]["criteria"]["comprehension"]
    assert first["sd"] is None and "at least two replicates" in first["warnings"][0]
    json.dumps(report, allow_nan=False)


def test_a_near_constant_criterion_uses_ac2_and_is_not_unreliable(judge_run, campaign):
    report = judge_report.judge_vs_physicians(judge_run, campaign, n_resamples=200)
    bias = next(item for item in report["items"] if item["code"] == "bias")
    agreement = bias["physicians_agreement"]
    assert agreement["prevalence"] >= 0.95 and agreement["most_frequent_answer"] == 5
    assert agreement["coefficient"] == "gwet_ac2" and agreement["value"] > 0.9
    assert agreement["exact"]["value"] > 0.95 and agreement["within_one"]["value"] > 0.99
    assert bias["decision"]["verdict"] != judge_report.UNRELIABLE
    # its weighted kappa is what the issue saw (low although physicians agree): kept beside, not the verdict's
    assert bias["ceiling"]["weighted_kappa"]["value"] < agreement["value"]
    for fig in walk_figures(report):  # nowhere an interval [x, x]
        assert fig["ci_low"] is None or fig["ci_high"] is None or fig["ci_high"] > fig["ci_low"] or fig.get(
            "ci_note"), fig["path"]


def walk_figures(node, path="$"):
    if isinstance(node, dict):
        if "ci_low" in node and "ci_high" in node:
            yield {**node, "path": path}
        for key, value in node.items():
            yield from walk_figures(value, f"{path}.{key}")
    elif isinstance(node, list):
        for n, value in enumerate(node):
            yield from walk_figures(value, f"{path}[{n}]")


def test_judge_report_command_gives_the_apis_json_csv_and_html(judge_run, campaign, corpus, tmp_path,
                                                              client, make_user):
    out = tmp_path / "report.json"
    call_command("judge_report", "--corpus", corpus.name, "--judge", hiv.JUDGE, "--out", str(out))
    from_cli = json.loads(out.read_text())
    client.force_login(make_user("ana", "analyst"))
    api_url = f"/api/judge-runs/{judge_run.pk}/report/?campaign={campaign.pk}"
    assert client.get(api_url).status_code == 202  # the report is computed by a worker, then kept
    run_pending("judge_report")
    from_api = client.get(api_url).json()
    assert from_cli == from_api  # the same JSON as the API (same defaults, same seed)
    scores_api = client.get(f"/api/judge-runs/{judge_run.pk}/scores/").json()
    assert scores_api["run"]["provenance"]["sha256"] == judge_run.source_sha256
    assert scores_api["replicates"]["n_replicates"] == hiv.REPLICATES
    by_id = io.StringIO()
    call_command("judge_report", "--corpus", corpus.name, "--campaign", "Physicians", "--judge", str(judge_run.pk),
                 "--format", "csv", stdout=by_id)
    rows = list(csv.reader(io.StringIO(by_id.getvalue())))
    assert rows[0][:4] == ["section", "scope", "statistic", "value"]
    assert any(r[0] == "verdict" and r[1] == "bias" and "Gwet's AC2" in r[2] for r in rows)
    assert any(r[0] == "replicates (judge)" and "SD over replicates" in r[2] for r in rows)
    html = tmp_path / "report.html"
    call_command("judge_report", "--corpus", corpus.name, "--judge", f"{hiv.JUDGE} (run {judge_run.pk})",
                 "--format", "html", "--out", str(html))
    page = html.read_text()
    assert "<html" in page and hiv.JUDGE in page and "seeds/" not in page
    assert 'data-testid="judge-near-constant"' in page and 'data-testid="judge-replicates"' in page
    assert "not estimable (no variation)" not in page or "[CI not estimable (no variation)]" in page
    with pytest.raises(CommandError, match="No judge run named"):
        call_command("judge_report", "--corpus", corpus.name, "--judge", "nobody")


def test_an_imported_run_is_in_the_label_exports_and_the_run_comparison(judge_run, campaign, corpus, hivmedqa,
                                                                        scores):
    from scoring.reports.exports import label_rows

    rows = [row for row in label_rows(corpus) if row["rater_kind"] == "judge"]
    assert len(rows) == len(scores) * len(hiv.CRITERIA)
    assert {row["rater"] for row in rows} == {f"{hiv.JUDGE} (run {judge_run.pk})"}
    assert {row["value"] for row in rows} >= {4.5, 5}
    # a second imported judge beside the first: the comparison takes any two runs of one scale version
    other = {a: {c: (5 if c == "bias" else 3) for c in hiv.CRITERIA} for a in scores}
    counts = import_labels(corpus, lines(hiv.judge_csv(other).replace(hiv.JUDGE, "Constant judge")),
                           file_name="constant.csv", scale_version=hivmedqa)
    second = JudgeRun.objects.get(pk=counts["judge_runs"][0]["id"])
    from scoring.judges.views import mode_partners

    assert second in mode_partners(judge_run)
    comparison = judge_report.compare_modes(judge_run, second, campaign)
    assert {item["code"] for item in comparison["items"]} == set(hiv.CRITERIA)


# ---------------------------------------------------------------------------------------------------------------
# verbatim judge responses replayed through a run of the app are all scored
# ---------------------------------------------------------------------------------------------------------------
def test_verbatim_hivmedqa_responses_replayed_through_a_run_are_all_scored(corpus, hivmedqa, scores, monkeypatch):
    import re

    from scoring.judges import prompts
    from scoring.judges import runs as judging
    from scoring.judges.models import JudgeConfig
    from scoring.llm import limiter
    from tests.fake_openai import FakeOpenAI
    from tests.test_judge import start

    pattern = re.compile(r"(model-[abc]) answer (\d) to question (\d+)\.")
    served = []

    def replay(body: dict) -> str:
        user = body["messages"][-1]["content"]
        model, replicate, question = pattern.search(user).groups()
        answer = hiv.answer_id(model, int(question), int(replicate))
        served.append(answer)
        return hiv.judge_response(scores[answer], len(served))

    monkeypatch.setenv("LLM_KEY_MINICEX_TEST", "sk-test")
    with FakeOpenAI(responder=replay) as server:
        config = JudgeConfig.objects.create(
            name="HIVMedQA replay", base_url=server.base_url, api_key_env="LLM_KEY_MINICEX_TEST", model="replay",
            mode=JudgeConfig.Mode.PER_DIALOGUE, structured_output=False,
            prompt_set=prompts.default_prompt_set(hivmedqa), timeout_seconds=5, max_attempts=2)
        limiter.reset(f"judge-{config.pk}")
        run = start(config, corpus)
        judging.drain(run)  # as the CLI without workers: batches of concurrent requests
    run.refresh_from_db()
    results = JudgeResult.objects.filter(run=run)
    assert len(served) == len(scores) and results.count() == len(scores) * len(hiv.CRITERIA)
    assert not results.exclude(status="done").exists(), list(results.exclude(status="done").values_list(
        "error", flat=True)[:3])  # 0 of 2,250 unscored
    stored = {(d, c): v for d, c, v in results.values_list("dialogue__external_id", "item__code", "value")}
    assert all(stored[(a, c)] == scores[a][c] for a in scores for c in hiv.CRITERIA)
    assert results.first().rationale.startswith("The answer matches the reference")  # the judge's "reason"
    assert run.status == "succeeded"


# ---------------------------------------------------------------------------------------------------------------
# the new headline figures with a random rater, a constant rater and a near-constant item
# ---------------------------------------------------------------------------------------------------------------
HALF_POINTS = [x / 2 for x in range(11)]
# Gwet's four raters on 12 subjects (Gwet 2014, Handbook of Inter-Rater Reliability; irrCAC's raw_4raters data) and
# the values irrCAC 0.4.4 (irrCAC.raw.CAC(..., categories=[1, 2, 3, 4, 5]).gwet()) gives for them: AC1 0.7754440681
# (the package's own doctest prints 0.77544), AC2 with quadratic weights 0.9140007236. The two other references are
# irrCAC 0.4.4 on the data below (it pins scipy 1.12 and pandas 1.5, too old to install beside this project).
GWET_4RATERS = [[1, 1, None, 1], [2, 2, 3, 2], [3, 3, 3, 3], [3, 3, 3, 3], [2, 2, 2, 2], [1, 2, 3, 4], [4, 4, 4, 4],
                [1, 1, 2, 1], [2, 2, 2, 2], [None, 5, 5, 5], [None, None, 1, 1], [None, None, 3, None]]


def counts(ratings, categories):
    from core import stats

    values = np.array([[np.nan if v is None else v for v in row] for row in ratings], dtype=float)
    codes, _ = stats.encode_labels(values, categories=categories)
    return stats.count_table(codes, len(categories))


def near_constant_ratings() -> list[list[float]]:
    values = [[5.0, 5.0, 5.0] for _ in range(60)]
    values[3][1] = 4.5
    values[17][0] = 4.0
    values[40][2] = 4.5
    values[41] = [4.0, 4.0, 4.0]
    return values


def test_ac2_matches_irrcac_on_published_and_near_constant_data():
    from core import stats

    table = counts(GWET_4RATERS, [1, 2, 3, 4, 5])
    assert stats.gwet_ac2_counts(table, [1, 2, 3, 4, 5]) == pytest.approx(0.9140007236, abs=1e-9)
    assert stats.gwet_ac2_counts(table, [1, 2, 3, 4, 5], "identity") == pytest.approx(0.7754440681, abs=1e-9)
    assert stats.gwet_ac2_counts(table, [1, 2, 3, 4, 5], "identity") == pytest.approx(stats.gwet_ac1_counts(table))
    near = counts(near_constant_ratings(), HALF_POINTS)
    assert stats.gwet_ac2_counts(near, HALF_POINTS) == pytest.approx(0.9992929272, abs=1e-9)
    rng = np.random.default_rng(7)
    x = rng.integers(0, 6, size=(40, 4)).astype(float)
    x[rng.random((40, 4)) < 0.2] = np.nan
    assert stats.gwet_ac2_counts(counts(x.tolist(), list(range(6))), list(range(6))) == pytest.approx(
        0.0246628417, abs=1e-9)
    # two raters: the pairwise kernel from confusion tables equals the multi-rater one on their two columns
    pair = np.array(near_constant_ratings())[:, :2]
    codes = np.searchsorted(HALF_POINTS, pair).T
    tables = stats.pairwise_tables(codes[:1], codes[1:], len(HALF_POINTS))
    assert stats.ac2_from_tables(tables, HALF_POINTS)[0] == pytest.approx(
        stats.gwet_ac2_counts(counts(pair.tolist(), HALF_POINTS), HALF_POINTS))


def test_ac2_and_within_one_with_random_and_constant_raters():
    from core import stats

    rng = np.random.default_rng(3)
    points = list(range(6))
    random = rng.integers(0, 6, size=(4000, 2))
    table = counts(random.tolist(), points)
    assert abs(stats.gwet_ac2_counts(table, points)) < 0.05  # random raters: chance-level agreement
    within = stats.weighted_agreement_counts(table, stats.agreement_weights(points, "within_one"))
    assert within == pytest.approx(16 / 36, abs=0.02)  # uniform on 0-5: 6 exact + 10 adjacent of 36 pairs
    constant = counts([[3, 3]] * 50, points)
    assert stats.gwet_ac2_counts(constant, points) == pytest.approx(1.0)  # unanimous raters agree (AC1's limit)
    assert stats.cohen_kappa_codes(np.full(50, 3), np.full(50, 3), 6, "quadratic") != stats.cohen_kappa_codes(
        np.full(50, 3), np.full(50, 3), 6, "quadratic")  # NaN: kappa is undefined there
    # A constant mid-scale rater beside a random one: AC2's agreement weights reward closeness to the middle, so AC2
    # stays high (about 0.70 here), while weighted kappa is 0. That is why AC2 only measures the physicians' own
    # agreement and the verdict tests a judge against a constant answer with weighted kappa.
    other = rng.integers(0, 6, 400)
    one_constant = counts(np.column_stack([np.full(400, 3), other]).tolist(), points)
    assert stats.gwet_ac2_counts(one_constant, points) > 0.5
    assert stats.cohen_kappa_codes(np.full(400, 3), other, 6, "quadratic") == pytest.approx(0, abs=1e-12)


def test_bootstrap_intervals_without_variation_are_not_estimable():
    from core import stats

    summary = stats.bootstrap_summary(1.0, np.ones(500), seed=1, n_resamples=500)
    assert summary["ci_low"] is None and summary["ci_high"] is None
    assert summary["ci_note"] == "not estimable (no variation)"
    mostly = stats.bootstrap_summary(-0.5, np.r_[np.full(990, -0.5), np.full(10, 0.5)], seed=1, n_resamples=1000)
    assert mostly["ci_low"] is None and mostly["ci_note"] == "not estimable (no variation)"  # never [-0.5, -0.5]
    varied = stats.bootstrap_summary(0.2, np.linspace(0, 0.4, 500), seed=1, n_resamples=500)
    assert varied["ci_low"] < 0.2 < varied["ci_high"] and "ci_note" not in varied
    from scoring.templatetags.report_tags import ci, fig

    assert ci(summary) == "[CI not estimable (no variation)]"
    assert "not estimable (no variation)" in fig({"value": 1.0, **summary})


def test_replicate_sd_with_random_and_constant_scores():
    from core import stats

    rng = np.random.default_rng(5)
    frame = pd.DataFrame([{"case": f"q{q}", "replicate": r, "value": float(rng.integers(0, 6))}
                          for q in range(30) for r in range(1, 6)])
    summary = stats.replicate_summary(frame)
    per_replicate = frame.groupby("replicate")["value"].mean()
    assert summary["sd"] == pytest.approx(per_replicate.std(ddof=1)) and summary["sd"] > 0
    assert summary["mean"] == pytest.approx(frame.groupby("case")["value"].mean().mean())
    assert summary["ci_low"] < summary["mean"] < summary["ci_high"]
    constant = stats.replicate_summary(frame.assign(value=5.0))
    assert constant["sd"] == 0 and constant["ci_low"] is None and constant["ci_note"] == "not estimable (no variation)"
    single = stats.replicate_summary(frame[frame["replicate"] == 1])
    assert single["sd"] is None and single["mean"] == pytest.approx(frame[frame["replicate"] == 1]["value"].mean())


def near_constant_item(judge_kind: str, n: int = 150, seed: int = 4) -> judge_report.ItemData:
    """Three physicians score 98% of answers 5 (on the half-point grid) and agree nearly always; the judge follows
    them ('good'), answers 5 always ('constant') or at random ('random')."""
    rng = np.random.default_rng(seed)
    truth = np.where(rng.random(n) < 0.98, 10, rng.choice([8, 9], n))  # grid index 10 = 5.0, 9 = 4.5, 8 = 4.0
    humans = np.where(rng.random((3, n)) < 0.995, truth[None, :], 9)
    judge = {"good": truth.copy(), "constant": np.full(n, 10), "random": rng.integers(0, 11, n)}[judge_kind]
    return judge_report.ItemData(code="bias", text="Bias", dimension="", dimension_name="", response_type="scale",
                                 values=HALF_POINTS, judge=judge, humans=humans)


@pytest.mark.parametrize("judge_kind", ["good", "constant", "random"])
def test_a_near_constant_item_is_judged_with_ac2_whatever_the_judge(judge_kind):
    from core import stats

    item = near_constant_item(judge_kind)
    n = item.humans.shape[1]
    freq = stats.bootstrap_freq(stats.bootstrap_indices(n, 400, 2), n)
    entry = judge_report.item_report(item, judge_report.ReportContext(freq=freq, seed=2, n_resamples=400,
                                                                      rater_names=["A", "B", "C"]))
    json.dumps(entry, allow_nan=False)
    agreement = entry["physicians_agreement"]
    assert agreement["coefficient"] == "gwet_ac2" and agreement["value"] > 0.95
    assert entry["decision"]["verdict"] != judge_report.UNRELIABLE
    if judge_kind == "good":  # as close to the physicians as they are to each other, by AC2
        assert entry["decision"]["checks"]["non_inferior"], entry["decision"]["reasons"]
        assert entry["vs_physicians"]["gwet_ac2"]["value"] > 0.95
    else:  # a constant or random judge never replaces the physicians
        assert entry["decision"]["verdict"] == judge_report.KEEP, entry["decision"]["reasons"]
        assert not entry["decision"]["checks"]["beats_constant"]
    for figure in walk_figures(entry):
        assert figure["ci_low"] is None or figure["ci_high"] > figure["ci_low"] or figure.get("ci_note"), \
            figure["path"]


# ---------------------------------------------------------------------------------------------------------------
# the agreement report on the answers: replicates, the near-constant criterion, the words of the instrument
# ---------------------------------------------------------------------------------------------------------------
def test_the_agreement_report_fits_a_rubric_on_repeated_answers(corpus, hivmedqa, scores):
    rows = hiv.physician_scores(scores, replicates=(1, 2, 3))
    import_labels(corpus, lines(hiv.physicians_csv(rows)), file_name="physicians.csv", scale_version=hivmedqa,
                  campaign_name="Physicians")
    study = reports.load_study([Campaign.objects.get(name="Physicians")])
    report = reports.compute(study, n_resamples=200, plots=True)
    json.dumps(report, allow_nan=False)
    assert report["words"]["units"] == "answers" and report["words"]["model"] == "model"
    assert report["words"]["raters"] == "raters"  # external raters from a file, not physicians' accounts
    plots = report["plots"]["en"]
    assert report["has_binary"] is False and "rater_heatmap" not in plots
    assert "model_scores" not in plots and "criterion_means" in plots  # no all-zero totals plot
    assert set(report["methods"]) >= {"agreement", "models", "ordered", "ci"}
    assert not set(report["methods"]) & {"icc", "reliability", "rater_matrix"}
    assert "binary" not in " ".join(str(v) for k, v in report["methods"].items() if k != "software").lower()
    bias = next(item for item in report["items"] if item["code"] == "bias")
    assert bias["extreme_prevalence"] and bias["headline"] == "gwet_ac2" and bias["gwet_ac2"]["value"] > 0.9
    assert bias["within_one"]["value"] > 0.99
    # physicians' labels on three replicates: Table 2 from the physicians, as pandas computes it
    frame = pd.DataFrame([{"model": a.split("-q")[0], "case": a.split("-")[2], "replicate": int(a[-1]),
                           "rater": p, "criterion": c, "value": v} for a, p, c, v in rows])
    per_text = frame.groupby(["model", "case", "replicate", "criterion"])["value"].mean().reset_index()
    expected = pandas_table2(per_text)
    table = report["replicates"]
    assert table["n_replicates"] == 3 and table["n_cases"] == hiv.QUESTIONS
    for entry in table["models"]:
        for code in hiv.CRITERIA:
            got, want = entry["criteria"][code], expected.loc[(entry["model"], code)]
            assert got["mean"] == pytest.approx(want["mean"]) and got["sd"] == pytest.approx(want["sd"])
    assert not any("different replicates" in w for w in report["warnings"])


def test_labels_of_one_case_from_different_replicates_are_flagged(corpus, hivmedqa, scores):
    rows = [(a, p, c, v) for a, p, c, v in hiv.physician_scores(scores, replicates=(1, 2))
            if (p == "dr_ahn") == a.endswith("-r1")]  # dr_ahn rated replicate 1, the others replicate 2
    import_labels(corpus, lines(hiv.physicians_csv(rows)), file_name="split.csv", scale_version=hivmedqa,
                  campaign_name="Split")
    report = reports.compute(reports.load_study([Campaign.objects.get(name="Split")]), n_resamples=50, plots=False)
    warning = next(w for w in report["warnings"] if "different replicates" in w)
    assert f"Labels of {hiv.QUESTIONS} case(s)" in warning and "only on the same text" in warning


# ---------------------------------------------------------------------------------------------------------------
# scale steps and judge keys in instrument files and the browser builder
# ---------------------------------------------------------------------------------------------------------------
def step_instrument(step, **response):
    return {"name": "Half points", "slug": "half-points", "language": "en", "target": "answer",
            "dimensions": [{"code": "A", "name": "All"}],
            "items": [{"code": "c", "dimension": "A", "text": "Correct",
                       "response": {"type": "scale", "min": 0, "max": 5, "step": step, **response}}],
            "judge_keys": {"Question 1": "c"}}


def test_a_scale_step_is_checked_stored_exported_and_copied(db):
    from annotation import instruments, scales

    version, _ = instruments.import_instrument(step_instrument(0.5, anchors={"4.5": "nearly complete"}))
    item = version.items.get(code="c")
    assert item.allowed_values() == HALF_POINTS and item.has_step and item.anchor_label(4.5) == "nearly complete"
    assert version.judge_keys == {"Question 1": "c"}
    exported = instruments.export_instrument(version)
    assert exported["items"][0]["response"]["step"] == 0.5 and exported["judge_keys"] == {"Question 1": "c"}
    assert instruments.import_instrument(exported)[1] is False  # the same content: nothing new
    copy = scales.new_version(version, None, "next").items.get(code="c")
    assert copy.allowed_values() == HALF_POINTS
    for step, message in ((0.3, "must divide the range 0-5 into whole steps"), (0, "must be a positive number"),
                          (0.0625, "at most 3 decimals"), (0.2, "at most 21 points"), ("half", "must be a number")):
        data = step_instrument(step)
        data["slug"] = "other"
        with pytest.raises(instruments.InstrumentError, match=message):
            instruments.import_instrument(data)
    bad_anchor = step_instrument(0.5, anchors={"4.25": "x"})
    bad_anchor["slug"] = "anchors"
    with pytest.raises(instruments.InstrumentError, match=r"is not a point of the scale \(0-5 in steps of 0.5\)"):
        instruments.import_instrument(bad_anchor)
    keys = step_instrument(0.5)
    keys.update(slug="keys", judge_keys={"question-1": "c", "QUESTION 1": "c", "q2": "nope"})
    with pytest.raises(instruments.InstrumentError) as refused:
        instruments.import_instrument(keys)
    assert any("is the same key as" in e for e in refused.value.errors)
    assert any("must name a rated item's code" in e for e in refused.value.errors)


def test_the_browser_builder_takes_a_step(client, make_user):
    client.force_login(make_user("coord", "coordinator"))
    client.post("/scales/new/", {"name_en": "Halves", "slug": "halves", "language": "en", "target": "answer"})
    client.post("/scales/halves/v1/dimensions/", {"code": "1", "name_en": "Content"})
    refused = client.post("/scales/halves/v1/items/", {"dimension": "1", "code": "1.1", "text_en": "Accurate",
                                                        "response": "scale", "scale_min": "0", "scale_max": "5",
                                                        "scale_step": "0.3"})
    assert refused.status_code == 400 and b"must divide the range 0-5 into whole steps" in refused.content
    ok = client.post("/scales/halves/v1/items/", {"dimension": "1", "code": "1.1", "text_en": "Accurate",
                                                   "response": "scale", "scale_min": "0", "scale_max": "5",
                                                   "scale_step": "0.5"})
    assert ok.status_code == 302
    assert Item.objects.get(code="1.1", version__scale__slug="halves").allowed_values() == HALF_POINTS
    assert "0–5, in steps of 0.5" in client.get("/scales/halves/v1/").content.decode()
