"""The study archive's round trip: a HIVMedQA-shaped study (answers with their case and replicate, an
imported judge run with its provenance, a live run whose judge was renamed and given a new prompt set after it ran,
physicians' submitted labels on a random sample drawn with a seed) exported, verified, and imported into a new
project that gives back the same rows and the same figures; and an archive made in one mode (embedded SQLite, or
PostgreSQL) verified by ``manage.py verify_study`` in the other.

The study is built and exported once for the module, inside a transaction that is rolled back (as in
tests/test_studies.py); the tests work on the archive file. Run this file in both modes."""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests import hivmedqa_data as hiv

SAMPLE_SEED = 20261127
SAMPLE_SIZE = 36  # 12 answers of each model (stratified)
JUDGE_FILE = "hivmedqa_judge.csv"
IMPORTER = "importing-coordinator-jane"  # who imported the judge file: an account name that must not leave
CAMPAIGN = "Physicians"
LIVE_JUDGE, RENAMED = "App judge", "App judge (prompts v2)"
LIVE_SEED = 13
BASE_DIR = Path(__file__).resolve().parent.parent
POSTGRES = "postgres://postgres@127.0.0.1:5432"


def _physician_value(rng: np.random.Generator, judge: float, code: str) -> float:
    """A physician's score near the judge's (as tests/hivmedqa_data.py's physicians score): bias near constant."""
    if code == "bias":
        return judge if rng.random() < 0.99 else 4.0
    return float(np.clip(judge + rng.choice([-1.0, 0.0, 0.0, 0.0, 1.0]), 0, 5))


def _build_hivmedqa(path: Path) -> dict:
    """The HIVMedQA-shaped study in a project of its own, exported to ``path``. Returns what the archive must give
    back: the judge file's SHA-256, the sample's dialogues (external ids) and the scores."""
    from django.contrib.auth import get_user_model

    from annotation import labels
    from annotation.campaigns import add_rater, assign, create_campaign
    from annotation.importers import import_dialogues
    from annotation.instruments import install_shipped
    from annotation.label_import import import_labels
    from annotation.models import Assignment, Corpus
    from annotation.sampling import draw_sample
    from projects import scoping
    from projects.roles import assign_role
    from projects.services import create_project
    from studies.export import export_study

    with scoping.scopes_disabled():
        project = create_project("HIVMedQA study")
    scores = hiv.judge_scores()
    judge_text = hiv.judge_csv(scores)
    with scoping.in_project(project):
        version = install_shipped("hivmedqa-medgpt")[0]
        corpus = Corpus.objects.create(project=project, name="HIVMedQA answers")
        assert import_dialogues(corpus, hiv.answers_jsonl())["created"] == 450
        importer = get_user_model().objects.create_user(username=IMPORTER)
        assign_role(importer, "coordinator", project)
        counts = import_labels(corpus, io.BytesIO(judge_text.encode()).readlines(), file_name=JUDGE_FILE,
                               scale_version=version, user=importer)
        assert len(counts["judge_runs"]) == 1
        campaign = create_campaign(name=CAMPAIGN, corpus=corpus, scale_version=version, overlap=3)
        sample = draw_sample(campaign, size=SAMPLE_SIZE, stratified=True, seed=SAMPLE_SEED)
        for name in hiv.PHYSICIANS:
            user = get_user_model().objects.create_user(username=name, first_name="Real", last_name=name)
            assign_role(user, "physician", project)
            add_rater(campaign, user)
        assign(campaign)
        rng = np.random.default_rng(12)
        items = {i.code: i.pk for i in version.rating_items()}
        for assignment in (Assignment.objects.filter(campaign=campaign).select_related("dialogue", "rater")
                           .order_by("pk")):
            judged = scores[assignment.dialogue.external_id]
            for code in hiv.CRITERIA:
                labels.save_label(assignment, items[code], _physician_value(rng, judged[code], code),
                                  assignment.rater)
            labels.submit(assignment, assignment.rater)
        _live_run(project, version, corpus)
        sampled = sorted(corpus.dialogues.filter(pk__in=sample.dialogues).values_list("external_id", flat=True))
        summary = export_study(project, path)
    return {"summary": summary, "scores": scores, "judge_sha256": hashlib.sha256(judge_text.encode()).hexdigest(),
            "sampled": sampled, "strata": sample.strata}


def _live_run(project, version, corpus) -> None:
    """A finished run of the app's own judge (scores seeded, as the engine leaves them), after which its
    configuration is renamed and moved to a new version of its prompt set, as users do."""
    from django.utils import timezone

    from scoring.judges.models import JudgeConfig, JudgeResult, JudgeRun, Prompt, PromptSet
    from scoring.judges.prompts import default_prompt_set
    from scoring.llm.engine import config_snapshot

    first = default_prompt_set(version, project=project)
    config = JudgeConfig.objects.create(project=project, name=LIVE_JUDGE, model="gpt-4o-mini", mode="per-dialogue",
                                        prompt_set=first)
    now = timezone.now()
    run = JudgeRun.objects.create(project=project, config=config, corpus=corpus, snapshot=config_snapshot(config),
                                  status=JudgeRun.Status.SUCCEEDED, started_at=now, finished_at=now)
    scores = hiv.judge_scores(seed=LIVE_SEED)
    items = {i.code: i for i in version.rating_items()}
    JudgeResult.objects.bulk_create([
        JudgeResult(run=run, dialogue=d, item=items[code], status=JudgeResult.Status.DONE,
                    value=scores[d.external_id][code], attempts=1)
        for d in corpus.dialogues.order_by("pk") for code in hiv.CRITERIA])
    second = PromptSet.objects.create(project=project, name=first.name, version=2, scale_version=version,
                                      system_prompt=first.system_prompt + " Be brief.",
                                      dialogue_template=first.dialogue_template,
                                      per_dialogue_instruction=first.per_dialogue_instruction)
    Prompt.objects.bulk_create([Prompt(prompt_set=second, item=p.item, question=p.question)
                                for p in first.prompts.all()])
    config.name, config.prompt_set = RENAMED, second
    config.save()


@pytest.fixture(scope="module")
def hivmedqa_archive(django_db_setup, django_db_blocker, tmp_path_factory):
    """The study exported once for the module, rolled back after. Its tests ask for ``db`` too (see
    tests/test_studies.py's ``demo_archive``)."""
    from django.db import transaction

    path = tmp_path_factory.mktemp("roundtrip") / "hivmedqa.zip"
    with django_db_blocker.unblock(), transaction.atomic():
        facts = _build_hivmedqa(path)
        transaction.set_rollback(True)
    return path, facts


def _archived_figures(path: Path) -> dict[str, str]:
    from studies.archive import open_archive

    return {row["figure"]: row["value"] for _, row in open_archive(path).rows("figures/figures.csv")}


def _physicians_table2(path: Path) -> pd.DataFrame:
    """Table 2 from the physicians' labels as the archive holds them (data/labels.csv and data/dialogues.csv),
    independently: a text's score is the mean of its raters'; per model and criterion the mean over questions and
    the mean of each replicate."""
    from studies.archive import open_archive

    archive = open_archive(path)
    texts = {row["external_id"]: (row["source_model"], row["case"], int(row["replicate"]))
             for _, row in archive.rows("data/dialogues.csv")}
    frame = pd.DataFrame([{"model": texts[row["external_id"]][0], "case": texts[row["external_id"]][1],
                           "replicate": texts[row["external_id"]][2], "text": row["external_id"],
                           "criterion": row["item"], "value": float(row["value"])}
                          for _, row in archive.rows("data/labels.csv")])
    per_text = frame.groupby(["model", "case", "replicate", "text", "criterion"])["value"].mean().reset_index()
    rows = []
    for (model, code), block in per_text.groupby(["model", "criterion"]):
        rows.append({"model": model, "criterion": code, "mean": block.groupby("case")["value"].mean().mean(),
                     "replicate_means": block.groupby("replicate")["value"].mean().to_dict()})
    return pd.DataFrame(rows).set_index(["model", "criterion"])


def test_verify_study_recomputes_every_figure_of_the_hivmedqa_study(db, hivmedqa_archive):
    from scoring.judges.report import OUTCOME_KEYS
    from studies.figure_rows import printed
    from tests.test_studies import verify_through_command

    path, facts = hivmedqa_archive
    checks, output = verify_through_command(path)
    assert len(checks) == facts["summary"]["figures"] > 1000
    assert [c for c in checks if not c.equal] == []
    assert f"All {len(checks)} figures equal." in output
    by_name = {c.figure: c.archived for c in checks}
    agree = f"agreement {CAMPAIGN} [percentile, pearson]"
    judge = f"judge run-1 vs {CAMPAIGN} [floor 0.4, min 30, margin 0.1, percentile]"
    live = f"judge run-2 vs {CAMPAIGN} [floor 0.4, min 30, margin 0.1, percentile]"
    tables = {"run-1": "replicates run-1 [HIVMedQA Table 2]", "run-2": "replicates run-2 [HIVMedQA Table 2]"}
    assert {c.figure.split(" ")[0] for c in checks} == {"agreement", "judge", "replicates"}
    assert all(c.figure.startswith((agree, judge, live, *tables.values())) for c in checks)
    n_labels = SAMPLE_SIZE * len(hiv.PHYSICIANS) * len(hiv.CRITERIA)
    assert (by_name[f"{agree} n_dialogues"], by_name[f"{agree} n_raters"], by_name[f"{agree} n_labels"]) == (
        str(SAMPLE_SIZE), "3", str(n_labels))
    assert by_name[f"{judge} counts/dialogues_judged"] == "450"
    assert by_name[f"{judge} counts/units/total"] == "2250"
    assert by_name[f"{judge} counts/dialogues_compared"] == str(SAMPLE_SIZE)
    for code in hiv.CRITERIA:  # a verdict on every criterion, from enough answers to give one
        assert by_name[f"{judge} items/{code}/decision/outcome"] in set(OUTCOME_KEYS.values()) - {"not_enough"}
        assert float(by_name[f"{agree} items/{code}/gwet_ac2/value"]) > 0.5
    assert any("model_estimates" in n and "/ppi/" in n for n in by_name)  # estimates the random sample allows
    # Table 2: each judge's five replicates as pandas computes them from the judge's scores, in the judge report
    # and in the run's own table (HIVMedQA's Table 2, kept for every run with replicates, campaign or not) ...
    for tag, table, scores in ((judge, tables["run-1"], facts["scores"]),
                               (live, tables["run-2"], hiv.judge_scores(seed=LIVE_SEED))):
        judged = hiv.table2(scores)
        assert by_name[f"{tag} counts/dialogues_judged"] == "450"
        for prefix in (f"{tag} replicates/judge", table):
            assert by_name[f"{prefix} n_replicates" if prefix == table else f"{prefix}/n_replicates"] == \
                str(hiv.REPLICATES)
        assert by_name[f"{tag} replicates/judge/n_cases"] == by_name[f"{table} n_cases"] == str(hiv.QUESTIONS)
        for model in hiv.MODELS:
            for code in hiv.CRITERIA:
                want = judged.loc[(model, code)]
                for prefix in (f"{tag} replicates/judge/models/{model}/criteria/{code}",
                               f"{table} models/{model}/criteria/{code}"):
                    assert by_name[f"{prefix}/mean"] == printed(float(want["mean"]))
                    assert by_name[f"{prefix}/sd"] == printed(float(want["sd"]))
                    if f"{prefix}/ci_low" in by_name:  # none where every replicate has the same mean
                        assert by_name[f"{prefix}/ci_low"] == printed(float(want["ci_low"]))
                        assert by_name[f"{prefix}/ci_high"] == printed(float(want["ci_high"]))
                    else:
                        assert want["sd"] == 0
    # ... and the physicians' on the replicates the random sample drew, from the archive's own tables
    rated = _physicians_table2(path)
    for model in hiv.MODELS:
        for code in hiv.CRITERIA:
            want = rated.loc[(model, code)]
            for prefix in (f"{agree} replicates/models/{model}/criteria/{code}",
                           f"{judge} replicates/physicians/models/{model}/criteria/{code}"):
                assert by_name[f"{prefix}/mean"] == printed(float(want["mean"])), prefix
                assert by_name[f"{prefix}/n_replicates"] == str(len(want["replicate_means"]))
                for replicate, mean in want["replicate_means"].items():
                    assert by_name[f"{prefix}/replicate_means/{replicate}"] == printed(float(mean))


def test_who_imported_the_judge_file_leaves_as_a_pseudonym(db, hivmedqa_archive):
    import csv
    import zipfile

    path, _ = hivmedqa_archive
    with zipfile.ZipFile(path) as zf:
        leaking = [name for name in zf.namelist() if IMPORTER.encode() in zf.read(name)]
        runs = list(csv.DictReader(io.StringIO(zf.read("data/judge_runs.csv").decode("utf-8"))))
    assert leaking == []
    imported = next(r for r in runs if r["source"] == "imported")
    assert json.loads(imported["snapshot"])["imported_by"].startswith("R-")


def test_import_study_gives_back_the_rows_and_the_figures(db, hivmedqa_archive):
    from annotation.models import Campaign, Corpus, Dialogue, Label, RandomSample
    from annotation.sampling import reproduce
    from projects import scoping
    from projects.models import Project
    from scoring.judges.models import ImportedPrompt, JudgeResult, JudgeRun, PromptSet
    from scoring.judges.sources import scale_version_id
    from studies import figure_rows as study_figures
    from studies.archive import open_archive
    from studies.load import import_study

    path, facts = hivmedqa_archive
    loaded = import_study(path, "HIVMedQA reviewer copy")
    with scoping.scopes_disabled():
        project = Project.objects.get(name="HIVMedQA reviewer copy")
    assert loaded.project == project
    with scoping.in_project(project):
        corpus = Corpus.objects.get(project=project, name="HIVMedQA answers")
        answers = {ext: (case, rep, model) for ext, case, rep, model in Dialogue.objects.filter(corpus=corpus)
                   .values_list("external_id", "case", "replicate", "source_model")}
        assert len(answers) == 450
        assert answers[hiv.answer_id("model-b", 7, 3)] == ("q07", 3, "model-b")
        assert answers == {line["id"]: (line["case"], line["replicate"], line["model"]) for line in hiv.answers()}

        run, live = JudgeRun.objects.filter(project=project).order_by("pk")
        assert (run.source, run.source_file, run.source_sha256) == ("imported", JUDGE_FILE, facts["judge_sha256"])
        assert run.is_imported and run.name == hiv.JUDGE and run.snapshot["model"] == hiv.JUDGE_MODEL
        stored = {(ext, code): value for ext, code, value in JudgeResult.objects.filter(run=run).values_list(
            "dialogue__external_id", "item__code", "value")}
        scores = facts["scores"]
        assert stored == {(a, c): scores[a][c] for a in scores for c in hiv.CRITERIA}
        assert {v for v in stored.values() if v % 1} == {4.5}  # half points kept exactly
        prompts = dict(ImportedPrompt.objects.filter(result__run=run).values_list(
            "result__dialogue__external_id", "text").distinct())
        assert len(prompts) == len(scores) and ImportedPrompt.objects.filter(result__run=run).count() == len(stored)
        answer = hiv.answer_id("model-c", 30, 5)
        assert prompts[answer] == f"Act as a senior clinician specialised in HIV ... evaluate answer {answer}"
        first = JudgeResult.objects.filter(run=run).order_by("pk").first()
        assert first.rationale.startswith("Here is my evaluation.\n```json")
        assert run.config is None and "prompt_set" not in run.snapshot

        # the live run keeps the prompt set it ran with and its judge under the judge's name now
        sets = {p.version: p for p in PromptSet.objects.filter(project=project)}
        assert sorted(sets) == [1, 2]
        assert (live.source, live.name, live.config.name, live.config.prompt_set) == ("live", LIVE_JUDGE, RENAMED,
                                                                                   sets[2])
        assert live.snapshot["prompt_set"] == sets[1].pk and live.snapshot["prompt_set_name"] == str(sets[1])
        assert live.snapshot["config_id"] == live.config.pk and scale_version_id(live) == sets[1].scale_version_id
        live_scores = hiv.judge_scores(seed=LIVE_SEED)
        assert dict(((ext, code), value) for ext, code, value in JudgeResult.objects.filter(run=live).values_list(
            "dialogue__external_id", "item__code", "value")) == {
            (a, c): live_scores[a][c] for a in live_scores for c in hiv.CRITERIA}

        campaign = Campaign.objects.get(project=project, name=CAMPAIGN)
        sample = RandomSample.objects.get(campaign=campaign)
        assert (sample.kind, sample.seed, sample.size, sample.stratified) == ("drawn", SAMPLE_SEED, SAMPLE_SIZE, True)
        assert sample.strata == facts["strata"] == {m: {"population": 150, "sample": 12} for m in hiv.MODELS}
        external = dict(Dialogue.objects.filter(corpus=corpus).values_list("pk", "external_id"))
        assert sorted(external[pk] for pk in sample.dialogues) == facts["sampled"]
        assert sorted(external[pk] for pk in reproduce(sample)) == facts["sampled"]  # the seed draws it again
        assert sorted((external[pk], model) for pk, model in sample.population) == sorted(
            (line["id"], line["model"]) for line in hiv.answers())
        assert sorted(external[pk] for pk in campaign.dialogues().values_list("pk", flat=True)) == facts["sampled"]
        labelled = set(Label.objects.filter(campaign=campaign).values_list("dialogue__external_id", flat=True))
        assert labelled == set(facts["sampled"])
        assert Label.objects.filter(campaign=campaign).count() == SAMPLE_SIZE * 3 * len(hiv.CRITERIA)

        archive = open_archive(path)
        recomputed = {row["figure"]: row["value"] for row in study_figures.figure_rows(
            study_figures.compute_reports(project, archive.json("settings/reports.json")))}
    archived = _archived_figures(path)
    assert len(archived) == facts["summary"]["figures"]
    assert recomputed == archived


def _postgres_answers() -> bool:
    import socket

    try:
        with socket.create_connection(("127.0.0.1", 5432), timeout=2):
            return True
    except OSError:
        return False


def _manage(args: list[str], env: dict[str, str], timeout: int = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=BASE_DIR, env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.integration
def test_an_archive_verifies_in_the_other_mode(db, hivmedqa_archive, tmp_path):
    """Exported on SQLite, verified on PostgreSQL; exported on PostgreSQL, verified on SQLite (a fresh database
    migrated for the purpose, in another process)."""
    from django.db import connection

    path, facts = hivmedqa_archive
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL", "LIMITER_URL", "CELERY_RESULT_BACKEND",
                        "MINICEX_VAR_DIR", "DJANGO_SETTINGS_MODULE")}
    env.update(SECRET_KEY="roundtrip-other-mode", MINICEX_VAR_DIR=str(tmp_path / "var"))
    dropped = None
    if connection.vendor == "sqlite":
        if not _postgres_answers():
            pytest.skip("PostgreSQL does not answer on 127.0.0.1:5432: the SQLite archive cannot be verified there")
        import psycopg

        name = f"minicex_roundtrip_other_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        dropped = name
        env["DATABASE_URL"] = f"{POSTGRES}/{name}"
    else:
        assert connection.vendor == "postgresql"
        # embedded mode: SQLite at MINICEX_VAR_DIR/db.sqlite3 and the filesystem broker under MINICEX_VAR_DIR
    try:
        migrated = _manage(["migrate", "--no-input"], env)
        assert migrated.returncode == 0, migrated.stderr[-3000:]
        verified = _manage(["verify_study", str(path), "--differences"], env)
        assert verified.returncode == 0, (verified.stdout[-3000:], verified.stderr[-3000:])
        assert f"All {facts['summary']['figures']} figures equal." in verified.stdout
        if connection.vendor == "postgresql":
            assert (tmp_path / "var" / "db.sqlite3").stat().st_size > 0  # the other mode it ran in
    finally:
        if dropped:
            import psycopg

            with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{dropped}" WITH (FORCE)')


def test_the_hivmedqa_archive_is_a_valid_data_package_and_ro_crate(db, hivmedqa_archive, tmp_path):
    """``frictionless validate datapackage.json`` and the rocrate library on the HIVMedQA-shaped archive (answers
    with case and replicate, an imported judge run, a random sample: every JSON column of the schema is filled)."""
    from tests.archive_standards import crate_problems, frictionless_errors, unpack

    folder = unpack(hivmedqa_archive[0], tmp_path / "hivmedqa")
    assert frictionless_errors(folder) == []
    assert crate_problems(folder) == []
