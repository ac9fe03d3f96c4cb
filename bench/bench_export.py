"""Benchmark: streaming CSV and XLSX export of every label of a MedEval-sized study.

Target: 2,680 dialogues x 24 rating items x 10 raters = 643,200 labels in PostgreSQL exported as CSV and as XLSX
(scoring.reports.exports.write_csv / write_xlsx of label_rows(...), the code behind ``manage.py export_labels``; the web
download streams the same writers) each in at most 20 s with the process under 300 MB.

What it does:
  1. Uses DATABASE_URL (default postgres://postgres@127.0.0.1:5432/minicex_bench_export); creates that database
     if it is missing and runs ``migrate`` (the migration loads the LLM-specific Mini-CEX v1).
  2. Builds the study once and reuses it on later runs (rebuilt only if incomplete): corpus "bench-export" with
     2,680 dialogues, 10 physicians with pseudonyms, one formal campaign on the Mini-CEX v1 with overlap 10,
     one submitted Assignment per dialogue x rater (26,800), and 643,200 Label rows (binary items 0/1, item 4
     1-3, random with a fixed seed). Dialogues, raters and assignments go in with bulk_create; labels with
     PostgreSQL COPY. For speed no LabelChange history rows are written (the export does not read them).
  3. Runs each export in a fresh child process (so the peak RSS is the export's, not the data build's): writes
     the file to a temporary path and reports rows, seconds, MB written, MB/s, the RSS before the export and the
     process's peak RSS (VmHWM from /proc/self/status, covering Django, the database driver and the export;
     getrusage ru_maxrss is printed too). The XLSX file is checked with zipfile's CRC test.

Run:  cd /work/main && .venv/bin/python bench/bench_export.py [--formats csv,xlsx] [--names] [--rebuild]
Exit status 0 when the benchmark ran (targets met or not), 1 when it could not run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/minicex_bench_export"
os.environ.setdefault("DATABASE_URL", DEFAULT_DATABASE_URL)
os.environ.setdefault("SECRET_KEY", "bench-export-not-secret")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("LOG_LEVEL", "WARNING")

N_DIALOGUES, N_RATERS, N_ITEMS = 2680, 10, 24
N_LABELS = N_DIALOGUES * N_RATERS * N_ITEMS
CORPUS = CAMPAIGN = "bench-export"
TARGET_SECONDS, TARGET_MB = 20.0, 300.0
SEED = 4


def ensure_database(url: str) -> str:
    """Create the database named in ``url`` if it does not exist; returns what happened."""
    from bench.machine import ensure_postgres_database

    return ensure_postgres_database(url)


def setup_django() -> None:
    import django

    django.setup()


PROJECT = "Bench export"


def enter_bench_project(name: str = PROJECT):
    """Work in the benchmark's project for the rest of this process (:func:`bench.machine.enter_project`)."""
    from bench.machine import enter_project

    return enter_project(name)


def study_is_complete() -> bool:
    from annotation.models import Campaign, Label

    campaign = Campaign.objects.filter(name=CAMPAIGN, corpus__name=CORPUS).first()
    return campaign is not None and Label.objects.filter(campaign=campaign).count() == N_LABELS


def drop_study() -> None:
    """Remove an earlier (incomplete) bench study: benchmark data, deleted with plain SQL in FK order."""
    from django.contrib.auth import get_user_model
    from django.db import connection, transaction

    from annotation.models import (
        Assignment,
        Campaign,
        CampaignRater,
        Corpus,
        Dialogue,
        Label,
        LabelChange,
        RaterProfile,
    )
    from projects.models import AuditEvent

    campaign_ids = list(Campaign.objects.filter(name=CAMPAIGN).values_list("pk", flat=True))
    corpus_ids = list(Corpus.objects.filter(name=CORPUS).values_list("pk", flat=True))
    label_table = Label._meta.db_table
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {LabelChange._meta.db_table} WHERE label_id IN "
                       f"(SELECT id FROM {label_table} WHERE campaign_id = ANY(%s))", [campaign_ids])
        for model in (Label, Assignment, CampaignRater):
            cursor.execute(f"DELETE FROM {model._meta.db_table} WHERE campaign_id = ANY(%s)", [campaign_ids])
        cursor.execute(f"DELETE FROM {AuditEvent._meta.db_table} WHERE target_repr = ANY(%s)", [[CAMPAIGN, CORPUS]])
        cursor.execute(f"DELETE FROM {Campaign._meta.db_table} WHERE id = ANY(%s)", [campaign_ids])
        cursor.execute(f"DELETE FROM {Dialogue._meta.db_table} WHERE corpus_id = ANY(%s)", [corpus_ids])
        cursor.execute(f"DELETE FROM {Corpus._meta.db_table} WHERE id = ANY(%s)", [corpus_ids])
        users = list(get_user_model().objects.filter(username__startswith="bench_rater_").values_list("pk", flat=True))
        RaterProfile.objects.filter(user_id__in=users).delete()
        get_user_model().objects.filter(pk__in=users).delete()


def build_study() -> None:
    from django.contrib.auth import get_user_model
    from django.db import DatabaseError, connection, transaction
    from django.utils import timezone

    from annotation.campaigns import create_campaign
    from annotation.models import Assignment, CampaignRater, Corpus, Dialogue, Label, RaterProfile, ScaleVersion
    from projects.roles import PHYSICIAN, assign_role

    rng = random.Random(SEED)
    version = ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=1)
    items = list(version.rating_items().order_by("order").values_list("pk", "response_type"))
    assert len(items) == N_ITEMS, f"expected {N_ITEMS} rating items, found {len(items)}"
    now = timezone.now()
    User = get_user_model()
    t0 = time.perf_counter()
    with transaction.atomic():
        corpus = Corpus.objects.create(name=CORPUS, description="Benchmark data (bench/bench_export.py).")
        models = ["GPT-4", "Qwen-72B", "Baichuan2", "ChatGLM3"]
        Dialogue.objects.bulk_create([
            Dialogue(corpus=corpus, external_id=f"medeval-{n:05d}", self_report=f"Complaint {n}",
                     turns=[{"role": "patient", "text": f"Complaint {n}"}, {"role": "doctor", "text": "Since when?"}],
                     source_model=models[n % 4], language="zh" if n % 3 == 0 else "en", split="test")
            for n in range(N_DIALOGUES)], batch_size=10_000)
        dialogue_ids = list(Dialogue.objects.filter(corpus=corpus).order_by("pk").values_list("pk", flat=True))
        users = []
        for n in range(1, N_RATERS + 1):
            user = User(username=f"bench_rater_{n:02d}", is_active=True)
            user.set_unusable_password()
            users.append(user)
        User.objects.bulk_create(users)
        users = list(User.objects.filter(username__startswith="bench_rater_").order_by("username"))
        for user in users:
            RaterProfile.objects.get_or_create(user=user)
            assign_role(user, PHYSICIAN, corpus.project)
        campaign = create_campaign(name=CAMPAIGN, corpus=corpus, scale_version=version, overlap=N_RATERS)
        CampaignRater.objects.bulk_create([CampaignRater(campaign=campaign, user=u) for u in users])
        assignments = Assignment.objects.bulk_create([
            Assignment(campaign=campaign, dialogue_id=d, rater=u, status=Assignment.Status.SUBMITTED, position=p,
                       created_at=now, started_at=now, submitted_at=now)
            for u in users for p, d in enumerate(dialogue_ids, start=1)], batch_size=10_000)
        columns = ("assignment_id", "campaign_id", "dialogue_id", "rater_id", "item_id", "value", "comment",
                   "client_seq", "created_at", "updated_at", "item_language")
        print(f"  dialogues, raters, campaign, {len(assignments):,} assignments: {time.perf_counter() - t0:.1f} s")
        with connection.cursor() as cursor:
            # The rows reference what was just created, so skip the 3.2 million foreign-key trigger checks
            # (session_replication_role needs a superuser; without one the checks run, only slower).
            try:
                with transaction.atomic():
                    cursor.execute("SET LOCAL session_replication_role = replica")
            except DatabaseError:
                pass
            copy_sql = f"COPY {Label._meta.db_table} ({', '.join(columns)}) FROM STDIN"
            with cursor.cursor.copy(copy_sql) as copy:
                for a in assignments:
                    for item_id, kind in items:
                        value = rng.randint(1, 3) if kind == "ordinal" else int(rng.random() < 0.7)
                        copy.write_row((a.pk, campaign.pk, a.dialogue_id, a.rater_id, item_id, value, "", 0,
                                        now, now, ""))
        print(f"  + {N_LABELS:,} labels by COPY: {time.perf_counter() - t0:.1f} s")
    with connection.cursor() as cursor:  # fresh planner statistics, as autovacuum would give a real study
        for model in (Label, Assignment, Dialogue, CampaignRater, RaterProfile, User):
            cursor.execute(f"ANALYZE {model._meta.db_table}")


def prepare_study() -> None:
    """Django set up on the benchmark database, migrated, with the study built once (rebuilt if incomplete)."""
    print(ensure_database(os.environ["DATABASE_URL"]))
    setup_django()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    enter_bench_project()
    if not study_is_complete():
        print("building the study (once)...")
        drop_study()
        build_study()


def run_export(names: bool, fmt: str) -> dict:
    """Child process: time write_csv / write_xlsx(label_rows(...)) to a temp file; report figures as JSON."""
    setup_django()
    enter_bench_project()
    from annotation.models import Corpus
    from scoring.reports.exports import label_rows, write_csv, write_xlsx

    corpus = Corpus.objects.get(name=CORPUS)
    rss_before = proc_status_mb("VmRSS")
    fd, path = tempfile.mkstemp(prefix="bench-export-", suffix=f".{fmt}")
    os.close(fd)
    try:
        started = time.perf_counter()
        if fmt == "csv":
            with open(path, "w", encoding="utf-8", newline="") as handle:
                rows = write_csv(label_rows(corpus, names=names), handle)
        else:
            rows = write_xlsx(label_rows(corpus, names=names), path)
        seconds = time.perf_counter() - started
        size = os.path.getsize(path)
        valid = True
        if fmt == "xlsx":
            import zipfile

            with zipfile.ZipFile(path) as archive:
                valid = archive.testzip() is None and "xl/worksheets/sheet1.xml" in archive.namelist()
    finally:
        os.unlink(path)
    return {"rows": rows, "seconds": seconds, "bytes": size, "rss_before_mb": rss_before,
            "peak_rss_mb": proc_status_mb("VmHWM"), "valid": valid,
            "ru_maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def proc_status_mb(field: str) -> float:
    """VmRSS (now) or VmHWM (peak) of this process in MB. Linux keeps ru_maxrss across fork + exec, so a child
    would report its parent's size there; VmHWM belongs to this process image only. Falls back to ru_maxrss."""
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--names", action="store_true", help="export usernames instead of pseudonyms")
    parser.add_argument("--rebuild", action="store_true", help="drop and rebuild the bench study")
    parser.add_argument("--formats", default="csv,xlsx", help="comma-separated: csv, xlsx (default both)")
    parser.add_argument("--child", choices=("csv", "xlsx"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_export(args.names, args.child)))
        return 0
    formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    if not formats or set(formats) - {"csv", "xlsx"}:
        parser.error("--formats takes csv and/or xlsx")

    from bench.machine import calibration_line

    print(calibration_line())
    url = os.environ["DATABASE_URL"]
    try:
        print(ensure_database(url), f"({os.cpu_count()} CPUs)")
        setup_django()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        enter_bench_project()
        if args.rebuild or not study_is_complete():
            drop_study()
            started = time.perf_counter()
            build_study()
            print(f"built the study: {N_DIALOGUES:,} dialogues x {N_RATERS} raters x {N_ITEMS} items = "
                  f"{N_LABELS:,} labels in {time.perf_counter() - started:.1f} s (no LabelChange rows)")
        else:
            print(f"reusing the study: {N_LABELS:,} labels in campaign {CAMPAIGN!r}")
    except Exception as exc:  # setup failures: say what and exit 1
        print(f"could not set up the benchmark: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1

    for fmt in formats:
        cmd = [sys.executable, os.path.abspath(__file__), "--child", fmt] + (["--names"] if args.names else [])
        done = subprocess.run(cmd, capture_output=True, text=True, env=os.environ.copy(), cwd=BASE_DIR)
        if done.returncode != 0:
            print(done.stderr[-3000:], file=sys.stderr)
            return 1
        result = json.loads(done.stdout.strip().splitlines()[-1])
        mb = result["bytes"] / 1e6
        ok_time = result["seconds"] <= TARGET_SECONDS
        ok_mem = result["peak_rss_mb"] < TARGET_MB
        print(f"{fmt.upper()} export ({'usernames' if args.names else 'pseudonyms'}): {result['rows']:,} rows, "
              f"{mb:.1f} MB {fmt.upper()} in {result['seconds']:.2f} s = {mb / result['seconds']:.1f} MB/s, "
              f"{result['rows'] / result['seconds']:,.0f} rows/s" + ("" if result["valid"] else "; FILE INVALID"))
        print(f"  RSS before the export {result['rss_before_mb']:.0f} MB, peak RSS of the process "
              f"{result['peak_rss_mb']:.0f} MB (VmHWM; getrusage ru_maxrss {result['ru_maxrss_mb']:.0f} MB, which "
              "on Linux includes the parent's size at fork)")
        print(f"  targets: <= {TARGET_SECONDS:.0f} s {'met' if ok_time else 'MISSED'} ({result['seconds']:.1f} s); "
              f"< {TARGET_MB:.0f} MB {'met' if ok_mem else 'MISSED'} ({result['peak_rss_mb']:.0f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
