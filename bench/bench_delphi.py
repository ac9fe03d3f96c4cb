"""Benchmark: the Delphi between-rounds (focus-group) view for 210 panelists x 30 items.

Target: GET /delphi/rounds/<id>/ (per-item statistics, round statistics with Kendall's W, every opinion with its
Adopt / Not adopt control and every item's decision form) renders in at most 1 s.

What it does:
  1. Uses DATABASE_URL (default postgres://postgres@127.0.0.1:5432/minicex_bench_delphi); creates the database if
     missing and runs ``migrate``.
  2. Builds the study once (reused on later runs): a draft scale of 3 dimensions x 10 items, 210 panelists who
     completed round 1 with a full self-assessment, 6,300 importance ratings (seeded), a comment on 15% and a
     proposed rewording on 5% of the answers, a decision on every third item.
  3. Renders the page through Django's test client as a coordinator (one warm-up, then the median of 5 runs),
     and times the statistics alone.

Run:  cd /work/main && .venv/bin/python bench/bench_delphi.py
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/minicex_bench_delphi")
os.environ.setdefault("SECRET_KEY", "bench-delphi-not-secret")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("LOG_LEVEL", "WARNING")

N_PANELISTS, N_DIMS, N_PER_DIM = 210, 3, 10
TITLE = "bench-delphi"
TARGET = 1.0
SEED = 6


def build(user):
    import numpy as np
    from django.db import transaction
    from django.utils import timezone

    from delphi import services
    from delphi.models import ItemDecision, Panelist, Participation, Response, Round

    lines = []
    for d in range(1, N_DIMS + 1):
        lines.append(f"{d} Dimension {d}")
        lines += [f"{d}.{i} Item {d}.{i}: the doctor does something specific and observable" for i in
                  range(1, N_PER_DIM + 1)]
    rng = np.random.default_rng(SEED)
    with transaction.atomic():
        study = services.create_study(title=TITLE, user=user, scale_name=f"{TITLE} scale", item_lines="\n".join(lines))
        rnd = study.rounds.get()
        Round.objects.filter(pk=rnd.pk).update(status="open", opened_at=timezone.now())
        now = timezone.now()
        panelists = Panelist.objects.bulk_create([
            Panelist(study=study, pseudonym=f"P{n:03d}", name=f"Expert {n}", email=f"e{n}@example.org")
            for n in range(1, N_PANELISTS + 1)])
        levels = ["high", "medium", "low"]
        parts = Participation.objects.bulk_create([
            Participation(round=rnd, panelist=p, invited_at=now, started_at=now, completed_at=now,
                          familiarity=int(rng.integers(2, 6)), basis_practice=levels[rng.integers(0, 3)],
                          basis_theory=levels[rng.integers(0, 3)], basis_literature=levels[rng.integers(0, 3)],
                          basis_intuition=levels[rng.integers(0, 3)]) for p in panelists])
        items = services.round_items(rnd)
        item_mean = rng.uniform(3.2, 4.7, len(items))
        responses = []
        for part in parts:
            bias = rng.normal(0, 0.4)
            for k, item in enumerate(items):
                value = int(np.clip(np.round(item_mean[k] + bias + rng.normal(0, 0.7)), 1, 5))
                u = rng.random()
                responses.append(Response(participation=part, item=item, importance=value,
                                          comment=f"Opinion of {part.panelist.pseudonym} on {item.code}: consider "
                                                  "the wording and an example." if u < 0.15 else "",
                                          proposed_wording=f"Reworded {item.code}" if u < 0.05 else ""))
        Response.objects.bulk_create(responses, batch_size=2000)
        for item in items[::3]:
            ItemDecision.objects.create(round=rnd, item=item, action="revise", new_text_en=f"{item.text_en} (clearer)",
                                        reason="panel opinions", decided_by=user)
    return rnd


def main() -> int:
    from bench.machine import ensure_postgres_database

    print(ensure_postgres_database(os.environ["DATABASE_URL"]))
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client

    from delphi import views
    from delphi.models import DelphiStudy, Response
    from projects.roles import assign_role

    call_command("migrate", verbosity=0)
    from bench.machine import enter_project

    enter_project("Bench Delphi")  # the study and its coordinator are the benchmark project's
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    User = get_user_model()
    user = User.objects.filter(username="bench-coordinator").first() or User.objects.create_user(
        "bench-coordinator", password="bench-password-123")
    assign_role(user, "coordinator")
    study = DelphiStudy.objects.filter(title=TITLE).first()
    n_expected = N_PANELISTS * N_DIMS * N_PER_DIM
    if study is None or Response.objects.filter(participation__round__study=study).count() != n_expected:
        if study is not None:
            print("incomplete study found; rebuild with a fresh database (drop minicex_bench_delphi)")
            return 1
        print("building the study (once)...")
        started = time.monotonic()
        build(user)
        print(f"  built in {time.monotonic() - started:.1f} s")
        study = DelphiStudy.objects.get(title=TITLE)
    rnd = study.rounds.get(number=1)
    n_opinions = Response.objects.filter(participation__round=rnd).exclude(comment="", proposed_wording="").count()
    print(f"panelists: {N_PANELISTS}  items: {N_DIMS * N_PER_DIM}  answers: {n_expected:,}  opinions: {n_opinions:,}")

    from delphi.services import compute_statistics_now

    started = time.monotonic()
    job = compute_statistics_now(rnd)  # a worker's job when the answers change; the page reads the stored figures
    stats_time = time.monotonic() - started
    s = job.result["summary"]
    print(f"round statistics (stored; the worker's job): {stats_time:.3f} s  (W = {s['kendall_w']:.3f}, "
          f"Cr = {s['cr']:.3f})")
    started = time.monotonic()
    views.focus_group_context(rnd)
    print(f"page context with the stored statistics: {time.monotonic() - started:.3f} s")
    client = Client()
    client.force_login(user)
    url = f"/delphi/rounds/{rnd.pk}/"
    response = client.get(url)
    assert response.status_code == 200, response.status_code
    times = []
    for _ in range(5):
        started = time.monotonic()
        response = client.get(url)
        times.append(time.monotonic() - started)
        assert response.status_code == 200
    median = statistics.median(times)
    print(f"page size: {len(response.content) / 1024:.0f} KiB; runs: " + ", ".join(f"{t:.3f}" for t in times))
    verdict = "PASS" if median <= TARGET else "FAIL"
    print(f"BETWEEN-ROUNDS VIEW: median {median:.3f} s (target <= {TARGET:.0f} s) {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
