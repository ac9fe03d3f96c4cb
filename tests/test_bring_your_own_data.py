"""Bring your own data (issue 27): an existing judge's scores, repeated answers, half points, and reports that fit
the instrument, on synthetic data in the shape of a published HIVMedQA set (tests/hivmedqa_data.py)."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.importers import ImportRejected, import_dialogues
from annotation.instruments import install_shipped
from annotation.label_import import import_labels
from annotation.models import Campaign, Corpus, Dialogue, Label
from scoring.judges import report as judge_report
from scoring.judges.models import ImportedPrompt, JudgeResult, JudgeRun
from tests import hivmedqa_data as hiv

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
