"""Benchmark: reports computed fresh with the vectorised statistics kernels.

Targets, each computed from scratch (nothing cached), 1,000 bootstrap resamples:

* **judge report** (``manage.py judge_report``) on a HIVMedQA-sized study: 276 answers (12 models x 23 questions) x
  5 criteria of HIVMedQA's rubric (0-5), 4 raters and the judge: within 3 s. Printed twice: the report as the
  command computes it inside one process (``call_command``), and the whole command in a new process (Django's
  start-up and the imports of numpy, pandas, scipy included).
* **campaign agreement report** (``scoring.reports.agreement``: load the labels, every figure and the plots) on
  2,680 dialogues x 24 items of the Mini-CEX x 10 raters (643,200 labels): within 3 s. The statistics libraries
  are imported before the clock starts, as a report worker has them after its first report (their one-off import
  time is printed apart).

Mode: embedded (SQLite under ``var/bench-kernels/``) unless DATABASE_URL is set, e.g.
``DATABASE_URL=postgres://postgres@127.0.0.1:5432/minicex_bench_kernels`` (created when missing). Both studies are
built on first use in the project "Default" and reused by later runs (``--rebuild`` builds them again).

Run:  .venv/bin/python bench/bench_kernels.py [--repeats 3] [--only judge|campaign] [--rebuild]
Exit status 0 when the benchmark ran (targets met or not), 1 when it could not run.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))
os.environ.setdefault("SECRET_KEY", "bench-kernels-not-secret")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("LOG_LEVEL", "WARNING")
if not os.environ.get("DATABASE_URL"):
    os.environ.setdefault("MINICEX_VAR_DIR", str(BASE_DIR / "var" / "bench-kernels"))

TARGET_JUDGE, TARGET_CAMPAIGN = 3.0, 3.0
N_RESAMPLES = 1000
# HIVMedQA-sized (Cardenal-Antolin et al., HIVMedQA): 12 models x 23 questions = 276 answers, 5 criteria, 4 raters.
MODELS = tuple(f"model-{chr(ord('a') + m)}" for m in range(12))
QUESTIONS = 23
CRITERIA = ("comprehension", "reasoning", "knowledge", "bias", "harm")
RATERS = ("rater_1", "rater_2", "rater_3", "rater_4")
JUDGE = "bench judge"
HIV_CORPUS, HIV_CAMPAIGN = "bench-kernels HIVMedQA", "bench-kernels raters"
# MedEval-sized campaign: the study of bench/bench_export.py.
N_DIALOGUES, N_ITEMS, N_RATERS = 2680, 24, 10
N_LABELS = N_DIALOGUES * N_ITEMS * N_RATERS
CAMPAIGN_NAME = "bench-kernels campaign"
SEED = 34


def ensure_database() -> str:
    """Create the PostgreSQL database named by DATABASE_URL when missing (SQLite creates its own file)."""
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith("postgres"):
        return f"embedded mode: SQLite under {os.environ['MINICEX_VAR_DIR']}"
    from bench.machine import ensure_postgres_database

    return f"production mode: PostgreSQL {ensure_postgres_database(url)}"


def setup() -> None:
    import django

    django.setup()
    from django.core.management import call_command

    started = time.perf_counter()
    call_command("migrate", verbosity=0)
    print(f"migrate: {time.perf_counter() - started:.1f} s")


def default_project():
    from projects.models import Project

    return Project.objects.get(name="Default")


# ---------------------------------------------------------------------------------------------------------------
# the HIVMedQA-sized study
# ---------------------------------------------------------------------------------------------------------------
def hiv_scores() -> tuple[dict[str, dict[str, float]], list[tuple[str, str, str, float]]]:
    """The judge's scores (answer -> criterion -> 0..5) and the raters' rows, seeded: the raters land within a point
    of the judge, ``bias`` is near-constant (nearly always 5) as in the paper."""
    import numpy as np

    rng = np.random.default_rng(SEED)
    judge: dict[str, dict[str, float]] = {}
    rows = []
    difficulty = rng.normal(0, 0.8, QUESTIONS)
    for m, model in enumerate(MODELS):
        for q in range(QUESTIONS):
            answer = f"{model}-q{q + 1:02d}"
            latent = 3.4 + 0.1 * (m - 6) - difficulty[q] + rng.normal(0, 0.4)
            judge[answer] = {code: (5.0 if rng.random() < 0.97 else 4.0) if code == "bias"
                             else float(np.clip(np.round(latent + rng.normal(0, 0.5)), 0, 5)) for code in CRITERIA}
            for rater in RATERS:
                for code in CRITERIA:
                    base = judge[answer][code]
                    if code == "bias":
                        value = base if rng.random() < 0.98 else 4.0
                    else:
                        value = float(np.clip(base + rng.choice([-1.0, 0.0, 0.0, 1.0]), 0, 5))
                    rows.append((answer, rater, code, value))
    return judge, rows


def _csv(header: list[str], rows) -> list[bytes]:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(header)
    writer.writerows(rows)
    return io.BytesIO(buffer.getvalue().encode()).readlines()


def ensure_hiv_study(rebuild: bool):
    """The corpus of 276 answers, the raters' campaign and the judge's imported run, built once."""
    from annotation.importers import import_dialogues
    from annotation.instruments import install_shipped
    from annotation.label_import import import_labels
    from annotation.models import Campaign, Corpus, Label
    from scoring.judges.models import JudgeRun

    corpus = Corpus.objects.filter(name=HIV_CORPUS).first()
    if corpus is not None and not rebuild:
        campaign = Campaign.objects.filter(corpus=corpus, name=HIV_CAMPAIGN).first()
        run = JudgeRun.objects.filter(corpus=corpus).first()
        if campaign and run and Label.objects.filter(campaign=campaign).count() == 276 * 5 * len(RATERS):
            return corpus, campaign, run
    started = time.perf_counter()
    if corpus is not None:
        corpus.name = f"{HIV_CORPUS} (old {corpus.pk})"
        corpus.save(update_fields=["name"])
        Campaign.objects.filter(corpus=corpus).update(name=f"{HIV_CAMPAIGN} (old {corpus.pk})")
    version = install_shipped("hivmedqa-medgpt")[0]
    corpus = Corpus.objects.create(name=HIV_CORPUS, description="Benchmark data (bench/bench_kernels.py).")
    judge, rows = hiv_scores()
    import_dialogues(corpus, [json.dumps({"id": answer, "question": f"HIV question {answer[-2:]}: which regimen?",
                                          "answer": f"{answer}: the answer.", "reference": "The reference answer.",
                                          "model": answer.rsplit("-q", 1)[0], "language": "en"})
                              for answer in judge])

    def text(value: float) -> str:
        return str(int(value)) if float(value).is_integer() else str(value)

    import_labels(corpus, _csv(["dialogue_id", "rater", "item", "value"],
                               [(a, r, c, text(v)) for a, r, c, v in rows]),
                  file_name="raters.csv", scale_version=version, campaign_name=HIV_CAMPAIGN, random_sample=True)
    counts = import_labels(corpus, _csv(["dialogue_id", "rater", "item", "value", "rater_kind", "judge_model"],
                                        [(a, JUDGE, c, text(v), "judge", "bench-model")
                                         for a, scores in judge.items() for c, v in scores.items()]),
                           file_name="judge.csv", scale_version=version)
    print(f"built the HIVMedQA-sized study: {time.perf_counter() - started:.1f} s")
    return corpus, Campaign.objects.get(corpus=corpus, name=HIV_CAMPAIGN), JudgeRun.objects.get(
        pk=counts["judge_runs"][0]["id"])


def judge_report_in_process(corpus, run, repeats: int) -> list[tuple[float, float]]:
    """(wall, CPU) seconds of ``call_command("judge_report", ...)`` writing the JSON report, ``repeats`` times."""
    from django.core.management import call_command

    times = []
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(repeats):
            cpu, started = time.process_time(), time.perf_counter()
            call_command("judge_report", "--corpus", corpus.name, "--judge", str(run.pk), "--campaign", HIV_CAMPAIGN,
                         "--out", str(Path(folder) / "report.json"), stdout=io.StringIO(), stderr=io.StringIO())
            times.append((time.perf_counter() - started, time.process_time() - cpu))
    return times


def judge_report_command(corpus, run) -> tuple[float, float]:
    """``manage.py judge_report`` in a new process, from its start to its exit: (wall, CPU) seconds."""
    with tempfile.TemporaryDirectory() as folder:
        cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run([sys.executable, str(BASE_DIR / "manage.py"), "judge_report", "--corpus", corpus.name,
                        "--judge", str(run.pk), "--campaign", HIV_CAMPAIGN, "--out", str(Path(folder) / "r.json")],
                       check=True, cwd=BASE_DIR, env=os.environ.copy(), stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return wall, after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime


def verdict(seconds: float, target: float) -> str:
    return f"(target < {target:.0f} s) {'PASS' if seconds < target else 'FAIL'}"


def bench_judge(rebuild: bool, repeats: int) -> None:
    corpus, campaign, run = ensure_hiv_study(rebuild)
    judge_report_in_process(corpus, run, 1)  # the imports the report makes on first use, as a worker has them
    times = judge_report_in_process(corpus, run, repeats)
    print(f"judge report, 276 answers x 5 criteria x {len(RATERS)} raters + judge, {N_RESAMPLES:,} resamples")
    median = statistics.median(wall for wall, _ in times)
    cpu = statistics.median(cpu for _, cpu in times)
    print(f"JUDGE REPORT (in process): median {median:.2f} s, best {min(wall for wall, _ in times):.2f} s of "
          f"{len(times)}, CPU median {cpu:.2f} s {verdict(median, TARGET_JUDGE)}")
    wall, cpu = judge_report_command(corpus, run)
    print(f"JUDGE REPORT (manage.py judge_report, new process, imports included): {wall:.2f} s, CPU {cpu:.2f} s "
          f"{verdict(wall, TARGET_JUDGE)}")


# ---------------------------------------------------------------------------------------------------------------
# the MedEval-sized campaign (as bench/bench_export.py builds it, in either database)
# ---------------------------------------------------------------------------------------------------------------
def campaign_is_complete():
    from annotation.models import Campaign, Label

    campaign = Campaign.objects.filter(name=CAMPAIGN_NAME).first()
    if campaign is not None and Label.objects.filter(campaign=campaign).count() == N_LABELS:
        return campaign
    return None


def build_campaign() -> None:
    """2,680 dialogues, 10 raters, a campaign on the Mini-CEX v1 with overlap 10, a submitted assignment per dialogue
    and rater and 643,200 labels (binary items 0/1 with 70% ones, item 4 from 1 to 3; seeded). Labels go in by COPY on
    PostgreSQL and by executemany on SQLite; no LabelChange history rows (the report does not read them)."""
    import random

    from django.contrib.auth import get_user_model
    from django.db import connection, transaction
    from django.utils import timezone

    from annotation.campaigns import create_campaign
    from annotation.models import (
        Assignment,
        Campaign,
        CampaignRater,
        Corpus,
        Dialogue,
        Label,
        ScaleVersion,
    )

    started = time.perf_counter()
    rng = random.Random(SEED)
    for old in Campaign.objects.filter(name=CAMPAIGN_NAME):  # an incomplete earlier build: renamed, left alone
        old.name = f"{CAMPAIGN_NAME} (incomplete {old.pk})"
        old.save(update_fields=["name"])
        Corpus.objects.filter(pk=old.corpus_id).update(name=f"{CAMPAIGN_NAME} (incomplete {old.pk})")
    version = ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=1)
    items = list(version.rating_items().order_by("order").values_list("pk", "response_type"))
    assert len(items) == N_ITEMS, f"expected {N_ITEMS} rating items, found {len(items)}"
    now = timezone.now()
    User = get_user_model()
    with transaction.atomic():
        corpus = Corpus.objects.create(name=CAMPAIGN_NAME, description="Benchmark data (bench/bench_kernels.py).")
        models = ["GPT-4", "Qwen-72B", "Baichuan2", "ChatGLM3"]
        Dialogue.objects.bulk_create([
            Dialogue(corpus=corpus, external_id=f"medeval-{n:05d}", self_report=f"Complaint {n}",
                     turns=[{"role": "patient", "text": f"Complaint {n}"}, {"role": "doctor", "text": "Since when?"}],
                     source_model=models[n % 4], language="en", split="test") for n in range(N_DIALOGUES)],
            batch_size=2000)
        dialogue_ids = list(Dialogue.objects.filter(corpus=corpus).order_by("pk").values_list("pk", flat=True))
        users = []
        for n in range(1, N_RATERS + 1):
            user, _ = User.objects.get_or_create(username=f"bench_kernels_rater_{n:02d}")
            users.append(user)
        campaign = create_campaign(name=CAMPAIGN_NAME, corpus=corpus, scale_version=version, overlap=N_RATERS)
        CampaignRater.objects.bulk_create([CampaignRater(campaign=campaign, user=u) for u in users])
        assignments = Assignment.objects.bulk_create([
            Assignment(campaign=campaign, dialogue_id=d, rater=u, status=Assignment.Status.SUBMITTED, position=p,
                       created_at=now, started_at=now, submitted_at=now)
            for u in users for p, d in enumerate(dialogue_ids, start=1)], batch_size=2000)
        if any(a.pk is None for a in assignments):  # a database that does not give the ids back
            assignments = list(Assignment.objects.filter(campaign=campaign).only("pk", "dialogue_id", "rater_id"))
        columns = ("assignment_id", "campaign_id", "dialogue_id", "rater_id", "item_id", "value", "comment",
                   "client_seq", "created_at", "updated_at", "item_language")
        rows = ((a.pk, campaign.pk, a.dialogue_id, a.rater_id, item_id,
                 rng.randint(1, 3) if kind == "ordinal" else int(rng.random() < 0.7), "", 0, now, now, "")
                for a in assignments for item_id, kind in items)
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                with cursor.cursor.copy(f"COPY {Label._meta.db_table} ({', '.join(columns)}) FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(row)
            else:
                cursor.executemany(f"INSERT INTO {Label._meta.db_table} ({', '.join(columns)}) VALUES "
                                   f"({', '.join(['%s'] * len(columns))})", list(rows))
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:  # fresh planner statistics, as autovacuum would give a real study
            for model in (Label, Assignment, Dialogue, CampaignRater):
                cursor.execute(f"ANALYZE {model._meta.db_table}")
    print(f"built the campaign: {N_LABELS:,} labels in {time.perf_counter() - started:.1f} s")


def campaign_report(campaign) -> tuple[float, float, list[tuple[str, float]]]:
    """The agreement report from scratch as its worker computes it: load the labels, every figure and the plots."""
    from scoring.reports import agreement as reports

    stages: list[tuple[str, float]] = []
    cpu, started = time.process_time(), time.perf_counter()
    last = [started, "load labels"]

    def progress(fraction: float, message: str) -> None:
        now = time.perf_counter()
        stages.append((last[1], now - last[0]))
        last[:] = [now, message]

    study = reports.load_study([campaign])
    progress(0.0, "(report)")
    reports.compute(study, progress=progress)
    finished = time.perf_counter()
    stages.append((last[1], finished - last[0]))
    shown = [(name, seconds) for name, seconds in stages if name != "(report)" and seconds >= 0.01]
    return finished - started, time.process_time() - cpu, shown


def bench_campaign(rebuild: bool, repeats: int) -> None:
    campaign = None if rebuild else campaign_is_complete()
    if campaign is None:
        print("building the campaign (once)...")
        build_campaign()
        campaign = campaign_is_complete()
    started = time.perf_counter()
    import importlib

    # the plots, and the libraries the report imports on first use (reliability: pingouin, factor_analyzer; Fleiss:
    # statsmodels; alpha: krippendorff); before 2026-11-27 only the first two were imported here, so the first
    # fresh report also paid for the others (about 2 s of its reliability stage)
    for module in ("matplotlib.pyplot", "scipy.stats", "pingouin", "factor_analyzer", "statsmodels.stats.inter_rater",
                   "krippendorff", "threadpoolctl"):
        importlib.import_module(module)
    print(f"one-off imports of matplotlib, scipy.stats, pingouin, factor_analyzer, statsmodels and krippendorff (a "
          f"worker's first report): {time.perf_counter() - started:.2f} s")
    runs = [campaign_report(campaign) for _ in range(repeats)]
    for seconds, cpu, stages in runs:
        detail = ", ".join(f"{name} {value:.2f} s" for name, value in stages)
        print(f"  fresh report: {seconds:.2f} s, CPU {cpu:.2f} s ({detail})")
    median = statistics.median(seconds for seconds, _, _ in runs)
    print(f"CAMPAIGN REPORT ({N_DIALOGUES:,} dialogues x {N_ITEMS} items x {N_RATERS} raters, fresh): median "
          f"{median:.2f} s, best {min(s for s, _, _ in runs):.2f} s of {len(runs)}, CPU median "
          f"{statistics.median(cpu for _, cpu, _ in runs):.2f} s {verdict(median, TARGET_CAMPAIGN)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", choices=("judge", "campaign"))
    parser.add_argument("--rebuild", action="store_true")
    args = parser.parse_args()
    from bench.machine import calibration_line

    print(calibration_line())
    print(ensure_database())
    setup()
    from projects.scoping import in_project

    with in_project(default_project()):
        if args.only in (None, "judge"):
            bench_judge(args.rebuild, args.repeats)
        if args.only in (None, "campaign"):
            bench_campaign(args.rebuild, args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
