"""A judge run with replicates and no campaign (HIVMedQA's judge scores imported alone) still contributes its table
of repeated answers to the study archive: per model and criterion the mean over cases, the SD (ddof 1) of the
replicate means and the 95% t-interval, named as the instrument's source names it ("HIVMedQA Table 2") in
``figures/figures.csv``, recomputed by ``verify_study``, and called by what it is in methods.md. A run on texts
without replicate numbers contributes none.

A small HIVMedQA-shaped study (3 models x 4 questions x 5 replicates) is built and exported once for the module,
inside a transaction that is rolled back. Run this file in both modes."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import zipfile
from pathlib import Path

import pytest
from django.core.management import call_command

from tests import hivmedqa_data as hiv

QUESTIONS = 4
TABLE = "replicates run-1 [HIVMedQA Table 2]"
LICENSE = "https://creativecommons.org/licenses/by/4.0/"


def _scores() -> dict[str, dict[str, float]]:
    return {answer: values for answer, values in hiv.judge_scores().items()
            if int(answer.split("-q")[1][:2]) <= QUESTIONS}


def _build(path: Path) -> None:
    from annotation.importers import import_dialogues
    from annotation.instruments import install_shipped
    from annotation.label_import import import_labels
    from annotation.models import Corpus
    from projects import scoping
    from projects.services import create_project
    from studies.export import export_study

    with scoping.scopes_disabled():
        project = create_project("Judge scores alone")
    scores = _scores()
    with scoping.in_project(project):
        version = install_shipped("hivmedqa-medgpt")[0]
        corpus = Corpus.objects.create(project=project, name="HIVMedQA answers")
        lines = [json.dumps(a) for a in hiv.answers() if a["id"] in scores]
        assert import_dialogues(corpus, lines)["created"] == len(scores) == 3 * QUESTIONS * hiv.REPLICATES
        assert len(import_labels(corpus, io.BytesIO(hiv.judge_csv(scores).encode()).readlines(),
                                 file_name="medgpt.csv", scale_version=version)["judge_runs"]) == 1
        # the same judge on answers without a case or replicate number: no table of repeated answers
        plain = Corpus.objects.create(project=project, name="Single answers")
        first = {a: v for a, v in scores.items() if a.endswith("-r1")}
        import_dialogues(plain, [json.dumps({k: v for k, v in a.items() if k not in ("case", "replicate")})
                                 for a in hiv.answers() if a["id"] in first])
        import_labels(plain, io.BytesIO(hiv.judge_csv(first).encode()).readlines(), file_name="single.csv",
                      scale_version=version)
        export_study(project, path)
    # the same study through the command, naming the data's licence
    call_command("export_study", "--project", project.name, "--out", str(path.with_name("licensed.zip")),
                 "--license", LICENSE, stdout=io.StringIO())


@pytest.fixture(scope="module")
def replicate_archive(django_db_setup, django_db_blocker, tmp_path_factory):
    from django.db import transaction

    path = tmp_path_factory.mktemp("replicates") / "judge-alone.zip"
    with django_db_blocker.unblock(), transaction.atomic():
        _build(path)
        transaction.set_rollback(True)
    return path


def _files(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def _figures(data: bytes) -> dict[str, str]:
    return {row["figure"]: row["value"] for row in csv.DictReader(io.StringIO(data.decode()))}


def test_a_run_without_a_campaign_contributes_its_table_and_verify_recomputes_it(db, replicate_archive):
    from studies.figure_rows import printed
    from studies.verify import verify_study

    files = _files(replicate_archive)
    settings = json.loads(files["settings/reports.json"])
    assert settings["campaign_reports"] == settings["judge_reports"] == []  # no campaign to compare with
    assert settings["replicate_tables"] == [{"run": "run-1", "table": "HIVMedQA Table 2"}]  # not run-2: no replicates
    figures = _figures(files["figures/figures.csv"])
    assert {name.split(" ")[0] for name in figures} == {"replicates"}
    assert figures[f"{TABLE} n_replicates"] == str(hiv.REPLICATES)
    assert figures[f"{TABLE} n_cases"] == str(QUESTIONS)
    want = hiv.table2(_scores())
    for model in hiv.MODELS:
        for code in hiv.CRITERIA:
            prefix, row = f"{TABLE} models/{model}/criteria/{code}", want.loc[(model, code)]
            assert figures[f"{prefix}/mean"] == printed(float(row["mean"]))
            assert figures[f"{prefix}/sd"] == printed(float(row["sd"]))
            if row["sd"] > 0:
                assert (figures[f"{prefix}/ci_low"], figures[f"{prefix}/ci_high"]) == (
                    printed(float(row["ci_low"])), printed(float(row["ci_high"])))
            else:  # every replicate the same mean: no interval, never [x, x]
                assert f"{prefix}/ci_low" not in figures
    report = json.loads(files["figures/reports/1.json"])
    assert (report["figure"], report["kind"]) == (TABLE, "replicates")
    assert report["report"]["judge"] == hiv.JUDGE
    checks = verify_study(replicate_archive)
    assert len(checks) == len(figures) > 100
    assert [c for c in checks if not c.equal] == []


def test_methods_call_the_table_by_what_it_is(db, replicate_archive):
    methods = _files(replicate_archive)["methods/methods.md"].decode()
    assert f"## Mean score ± SD over {hiv.REPLICATES} replicates per model: judge {hiv.JUDGE}" in methods
    assert "**Mean score ± SD over 5 replicates per model (HIVMedQA Table 2)** (source: `figures/reports/1.json`)" \
        in methods
    table = methods.split("(HIVMedQA Table 2)** (source")[1].split("\n\n")[1].splitlines()
    assert table[0] == "| Model | " + " | ".join(f"{c}: mean ± SD [95% CI]" for c in hiv.CRITERIA) + " |"
    assert [line.split(" | ")[0] for line in table[2:]] == [f"| {m}" for m in hiv.MODELS]
    want = hiv.table2(_scores()).loc[("model-a", "comprehension")]
    assert f"| model-a | {want['mean']:.2f} ± {want['sd']:.2f} [{want['ci_low']:.2f}, {want['ci_high']:.2f}] |" in \
        table[2]


def test_a_changed_judge_score_moves_the_table_in_verify(db, replicate_archive, tmp_path):
    """One of the judge's scores changed inside the archive (the manifest re-hashed to hide it): the table's
    figures it moves and the data fingerprint differ."""
    from studies.verify import verify_study

    files = _files(replicate_archive)
    text = files["data/judge_results.csv"].decode()
    rows = list(csv.DictReader(io.StringIO(text)))
    target = next(r for r in rows if r["run"] == "run-1" and r["item"] == "reasoning" and r["value"] not in ("", "0"))
    target["value"] = "0"
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    files["data/judge_results.csv"] = out.getvalue().encode()
    manifest = json.loads(files["manifest.json"])
    manifest["files"]["data/judge_results.csv"] = hashlib.sha256(files["data/judge_results.csv"]).hexdigest()
    files["manifest.json"] = json.dumps(manifest).encode()
    changed = tmp_path / "changed.zip"
    with zipfile.ZipFile(changed, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    differing = {c.figure for c in verify_study(changed) if not c.equal}
    model = target["external_id"].split("-q")[0]
    assert f"{TABLE} data fingerprint" in differing
    assert f"{TABLE} models/{model}/criteria/reasoning/mean" in differing
    assert not any("/criteria/harm/" in name for name in differing)


def test_the_table_is_named_by_the_instruments_source():
    from studies.replicates import GENERIC_NAME, table_name

    assert table_name("Cardenal-Antolin et al., HIVMedQA: Benchmarking large language models") == "HIVMedQA Table 2"
    assert table_name("Shi et al., LLM-Mini-CEX") == table_name("") == GENERIC_NAME


def test_the_archive_with_the_table_is_a_valid_data_package_and_ro_crate(db, replicate_archive, tmp_path):
    from tests.archive_standards import crate_problems, frictionless_errors, unpack

    folder = unpack(replicate_archive, tmp_path / "unpacked")
    assert frictionless_errors(folder) == []
    assert crate_problems(folder) == []


def test_the_crate_names_the_licence_given_or_says_it_was_not_recorded(db, replicate_archive):
    def licence(path: Path) -> dict:
        graph = {e["@id"]: e for e in json.loads(_files(path)["ro-crate-metadata.json"])["@graph"]}
        return graph[graph["./"]["license"]["@id"]]

    assert licence(replicate_archive)["name"] == "Licence not recorded"
    given = licence(replicate_archive.with_name("licensed.zip"))
    assert (given["@id"], given["@type"]) == (LICENSE, "CreativeWork")


def test_the_methods_page_and_download_of_an_imported_copy_show_the_table(db, replicate_archive, make_user, client):
    """In the browser: the archive imported into a new project, whose Methods page names the run's table of repeated
    answers and whose methods.md download holds it with the same figures as the archive's."""
    from django.urls import reverse

    from core.jobs import services as jobs
    from core.jobs.models import Job
    from projects.services import add_member
    from studies.load import import_study

    project = import_study(replicate_archive, "Review copy").project
    analyst = make_user("table-reader")
    add_member(project, analyst, "analyst")
    client.force_login(analyst)
    client.post(reverse("project-switch"), {"project": project.pk})
    assert "figures-computing" in client.get(reverse("study-archive-methods")).content.decode()
    for job in Job.unscoped.filter(kind=Job.Kind.STUDY_METHODS, status=Job.Status.QUEUED):
        jobs.execute(job.pk)  # a worker writes the page's data (a job of the imported copy's project)
    page = client.get(reverse("study-archive-methods"))
    assert page.status_code == 200
    body = page.content.decode()
    assert "Mean score ± SD over 5 replicates per model (HIVMedQA Table 2)" in body
    download = client.get(reverse("study-archive-document", args=["methods.md"])).content.decode()
    archived = _files(replicate_archive)["methods/methods.md"].decode()
    table = "**Mean score ± SD over 5 replicates per model (HIVMedQA Table 2)**"
    assert download.split(table)[1].split("## ")[0] == archived.split(table)[1].split("## ")[0]
