"""Benchmark: the judge-vs-physicians report on a MedEval-sized study.

Targets at 2,680 dialogues x 24 items x 10 physicians (643,200 labels) and one judge run (64,320 answers) in
PostgreSQL:

* **fresh**: the report computed as the report worker computes it (``scoring.judges.jobs.judge_report``: load the
  labels and the judge's answers, every figure with 1,000 bootstrap resamples) in under 3 s; the statistics
  libraries are imported before the clock starts, as a worker has them after its first report;
* **cached**: the report page (``GET /judges/runs/<run>/report/?campaign=<id>``, the whole Django request with
  its middleware, the fingerprints of labels and judge answers and the template) once the report is computed,
  under 0.3 s (median of 7 requests).

Reuses the study of bench/bench_export.py (same database, built on first use) and adds a synthetic judge run to it
(built on first use: the physician majority with 15% of the answers drawn at random).

Run:  .venv/bin/python bench/bench_judge_report.py   (DATABASE_URL to use another database)
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_export  # noqa: E402  (sets the environment and builds the shared study)

bench_export.os.environ.setdefault("ALLOWED_HOSTS", "testserver,127.0.0.1,localhost")

TARGET_FRESH, TARGET_CACHED = 3.0, 0.3
JUDGE = "bench-judge-report"
COORDINATOR = "bench_judge_report_coordinator"


def ensure_judge_run():
    """The synthetic judge run on the bench corpus (one done answer per dialogue and item), built once."""
    import numpy as np
    from django.utils import timezone

    from annotation.models import Campaign, Label, ScaleVersion
    from scoring.judges.models import JudgeConfig, JudgeResult, JudgeRun
    from scoring.judges.prompts import default_prompt_set
    from scoring.judges.runs import config_snapshot

    campaign = Campaign.objects.get(name=bench_export.CAMPAIGN)
    version = ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=1)
    items = list(version.rating_items().order_by("order"))
    run = JudgeRun.objects.filter(config__name=JUDGE, corpus=campaign.corpus).first()
    if run is not None and JudgeResult.objects.filter(run=run).count() == bench_export.N_DIALOGUES * len(items):
        return campaign, run
    started = time.perf_counter()
    JudgeRun.objects.filter(config__name=JUDGE).delete()
    config, _ = JudgeConfig.objects.get_or_create(name=JUDGE, defaults={
        "model": "synthetic", "prompt_set": default_prompt_set(version), "base_url": "http://synthetic.invalid/v1"})
    now = timezone.now()
    run = JudgeRun.objects.create(config=config, corpus=campaign.corpus, snapshot=config_snapshot(config),
                                  status=JudgeRun.Status.SUCCEEDED, started_at=now, finished_at=now)
    rng = np.random.default_rng(26)
    rows = []
    for item in items:
        values = item.allowed_values()
        frame = np.asarray(Label.objects.filter(campaign=campaign, item=item).order_by()
                           .values_list("dialogue_id", "value"))
        dialogues = np.unique(frame[:, 0])
        counts = np.zeros((len(dialogues), max(values) + 1), dtype=int)
        np.add.at(counts, (np.searchsorted(dialogues, frame[:, 0]), frame[:, 1]), 1)
        majority = counts.argmax(axis=1)
        noise = rng.random(len(dialogues)) < 0.15
        answers = np.where(noise, rng.choice(values, len(dialogues)), majority)
        rows += [JudgeResult(run=run, dialogue_id=int(d), item=item, status=JudgeResult.Status.DONE, value=int(v),
                             attempts=1, updated_at=now) for d, v in zip(dialogues, answers, strict=True)]
    JudgeResult.objects.bulk_create(rows, batch_size=5000)
    print(f"built the judge run: {len(rows):,} answers in {time.perf_counter() - started:.1f} s")
    return campaign, run


def coordinator():
    from django.contrib.auth import get_user_model

    from projects.roles import assign_role

    user, created = get_user_model().objects.get_or_create(username=COORDINATOR)
    if created:
        user.set_unusable_password()
        user.save()
        assign_role(user, "coordinator")
    return user


def fresh(run, campaign, user, repeats: int) -> list[tuple[float, dict]]:
    """The report computed from scratch as its worker computes it (jobs.execute of a new judge_report job: load,
    every figure, storing the result), ``repeats`` times; each with the time of its stages, from its progress
    messages (the fingerprints before the first; the last one to the end includes storing the result)."""
    from core.jobs import services as jobs
    from core.jobs.models import Job
    from scoring.judges import figures as judge_figures
    from scoring.judges.report import VerdictSettings

    names = {"loading labels and answers": "load labels and answers", "labels and answers loaded": "arrange",
             "model ranking and scores": "ranking, Table 6 and storing the result"}
    out = []
    original = jobs.set_progress
    for _ in range(repeats):
        Job.objects.filter(kind=Job.Kind.JUDGE_REPORT, params__run=run.pk).delete()
        events: list[tuple[float, str]] = []

        def timed(job, fraction, message, events=events):
            events.append((time.perf_counter(), message))
            original(job, fraction, message)

        jobs.set_progress = timed
        try:
            cpu = time.process_time()
            started = time.perf_counter()
            job = judge_figures.compute_now(run, campaign, user, VerdictSettings())
            finished = time.perf_counter()
            cpu = time.process_time() - cpu
        finally:
            jobs.set_progress = original
        assert job.status == Job.Status.SUCCEEDED, job.error
        stages = {"CPU (all threads of this process)": cpu, "fingerprints": events[0][0] - started}
        for (at, message), (after, _) in zip(events, [*events[1:], (finished, "")], strict=True):
            stage = "items" if message.startswith("item ") else names.get(message, message)
            stages[stage] = stages.get(stage, 0.0) + after - at
        out.append((finished - started, stages))
    return out


def cached(run, campaign, user, repeats: int) -> list[float]:
    """The report page served from the cache: the whole request through Django's test client."""
    from django.test import Client
    from django.urls import reverse

    client = Client()
    client.force_login(user)
    url = reverse("judge-run-report", args=[run.pk])
    first = client.get(url, {"campaign": campaign.pk})
    assert first.status_code == 200 and b'data-testid="judge-verdicts"' in first.content, "report not cached"
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        response = client.get(url, {"campaign": campaign.pk})
        times.append(time.perf_counter() - started)
        assert response.status_code == 200
    return times


def main() -> int:
    from bench.machine import calibration_line

    print(calibration_line())
    bench_export.prepare_study()
    from django.db import connection

    campaign, run = ensure_judge_run()
    user = coordinator()
    started = time.perf_counter()
    import krippendorff  # noqa: F401 - the report's alpha
    import pingouin  # noqa: F401 - the ICCs of scale items
    import scipy.stats  # noqa: F401 - Kendall's tau

    print(f"one-off imports of scipy, pingouin and krippendorff (a worker's first report): "
          f"{time.perf_counter() - started:.2f} s")
    print(f"run #{run.pk} on campaign {campaign.name!r}: {bench_export.N_DIALOGUES:,} dialogues x "
          f"{bench_export.N_ITEMS} items x {bench_export.N_RATERS} physicians ({bench_export.N_LABELS:,} labels), "
          f"{bench_export.N_DIALOGUES * bench_export.N_ITEMS:,} judge answers; database {connection.vendor}")
    runs = fresh(run, campaign, user, repeats=3)
    for seconds, stages in runs:
        detail = ", ".join(f"{name} {value:.2f} s" for name, value in stages.items())
        print(f"  fresh report: {seconds:.2f} s ({detail})")
    best = min(seconds for seconds, _ in runs)
    median = statistics.median(seconds for seconds, _ in runs)
    print(f"FRESH: median {median:.2f} s, best {best:.2f} s of {len(runs)} (target < {TARGET_FRESH:.0f} s) "
          f"{'PASS' if median < TARGET_FRESH else 'FAIL'}")
    times = cached(run, campaign, user, repeats=7)
    median = statistics.median(times)
    print(f"CACHED: page median {median:.3f} s, fastest {min(times):.3f} s, slowest {max(times):.3f} s of "
          f"{len(times)} requests (target < {TARGET_CACHED} s) {'PASS' if median < TARGET_CACHED else 'FAIL'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
