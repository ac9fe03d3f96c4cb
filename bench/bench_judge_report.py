"""Benchmark: the judge-vs-physicians report on a MedEval-sized study (issue 26 item 5).

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

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_export  # noqa: E402  (sets the environment and builds the shared study)

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


def main() -> int:
    from bench.machine import calibration_line

    print(calibration_line())
    print(bench_export.ensure_database(bench_export.os.environ["DATABASE_URL"]))
    bench_export.setup_django()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    if not bench_export.study_is_complete():
        print("building the study (once)...")
        bench_export.drop_study()
        bench_export.build_study()
    campaign, run = ensure_judge_run()
    print(f"run #{run.pk} on campaign {campaign.name!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
