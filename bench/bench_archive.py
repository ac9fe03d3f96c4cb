"""Benchmark: the study archive of a MedEval-sized study.

Targets: ``export_study`` of 2,680 dialogues x 24 items x 10 raters (643,200 labels) within 60 s and 200 MB;
``verify_study`` of its archive within 5 minutes.

What it does:
  1. Uses DATABASE_URL (default postgres://postgres@127.0.0.1:5432/minicex_bench_archive); creates the database if
     missing, migrates, and builds the study once with bench/bench_export.py's builder (one formal campaign on the
     Mini-CEX v1, every assignment submitted, labels by COPY; no label history rows) in its own project.
  2. In fresh child processes (so each peak RSS is its own), with the report cache in memory (CACHE_URL=locmem://)
     so that no run reads an earlier run's figures:
     a. ``export_study`` of a study whose agreement report the app has not computed: the export computes it
        (1,000 bootstrap resamples) and writes every table;
     b. the campaign's agreement report computed as a worker computes it when an analyst opens it (a report job);
     c. ``export_study`` of the study as the app then holds it: the export takes the finished report's figures
        and writes every table. This is the export a coordinator makes of a study whose reports were looked at.
     Each export prints seconds, archive MB and the peak RSS (VmHWM).
  3. In another child process: ``verify_study`` of the last archive (hash check, load into a throwaway project
     rolled back, recompute every figure, compare). Prints seconds, peak RSS and whether every figure was equal.

With ``--padded-manifest [MB]`` (default 400) it measures instead how a malformed archive is refused: a small archive
whose manifest.json is padded with MB megabytes of spaces (a valid JSON document, as in a reported attack), given to
``verify_study`` in a fresh child process; and, for comparison, the peak of a child that reads and parses that
manifest whole (what the reader did before it checked the manifest's size) and of a child that only starts Django.
Target: refused within 1 s, with a peak within 20 MB of Django's own.

Run:  cd /work/main && .venv/bin/python bench/bench_archive.py [--rebuild]
      cd /work/main && .venv/bin/python bench/bench_archive.py --padded-manifest [MB]
Exit status 0 when the benchmark ran (targets met or not), 1 when it could not run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/minicex_bench_archive")
os.environ.setdefault("SECRET_KEY", "bench-archive-not-secret")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("LOG_LEVEL", "WARNING")
os.environ.setdefault("CACHE_URL", "locmem://")

from bench import bench_export as study  # noqa: E402 - after the environment above

PROJECT = "Bench archive"
TARGET_EXPORT_SECONDS, TARGET_EXPORT_MB, TARGET_VERIFY_SECONDS = 60.0, 200.0, 300.0


def _forget_reports(project) -> None:
    """No report job of the bench project: the export has no stored figures to take."""
    from core.jobs.models import Job

    Job.objects.filter(project=project).delete()


def child_report(path: str) -> dict:
    """The campaign's agreement report as a worker computes it (a report job for an analyst without names)."""
    study.setup_django()
    from annotation.models import Campaign
    from scoring.reports import figures as report_figures

    study.enter_bench_project(PROJECT)
    started = time.perf_counter()
    job = report_figures.compute_now(Campaign.objects.get(name=study.CAMPAIGN), None)
    return {"seconds": time.perf_counter() - started, "status": job.status,
            "peak_rss_mb": study.proc_status_mb("VmHWM")}


def child_export(path: str, fresh: bool = False) -> dict:
    study.setup_django()
    from studies.export import export_study

    project = study.enter_bench_project(PROJECT)
    if fresh:
        _forget_reports(project)
    rss_before = study.proc_status_mb("VmRSS")
    started = time.perf_counter()
    summary = export_study(project, path)
    return {"seconds": time.perf_counter() - started, "bytes": os.path.getsize(path), "figures": summary["figures"],
            "labels": summary["tables"]["data/labels.csv"], "rss_before_mb": rss_before,
            "peak_rss_mb": study.proc_status_mb("VmHWM")}


def child_verify(path: str) -> dict:
    study.setup_django()
    from studies.verify import verify_study

    started = time.perf_counter()
    checks = verify_study(path)
    return {"seconds": time.perf_counter() - started, "figures": len(checks),
            "differing": sum(not c.equal for c in checks), "peak_rss_mb": study.proc_status_mb("VmHWM")}


def child_refusal(path: str, how: str) -> dict:
    """A padded archive given to verify_study (``how`` = "verify"), its manifest read and parsed whole ("whole"),
    or nothing ("django": the peak of starting Django and importing the archive's code)."""
    study.setup_django()
    import zipfile

    from studies.archive import ArchiveError
    from studies.verify import verify_study

    started = time.perf_counter()
    outcome = "nothing read"
    if how == "verify":
        try:
            verify_study(path)
            outcome = "ACCEPTED"
        except ArchiveError as exc:
            outcome = f"refused: {exc}"
    elif how == "whole":
        with zipfile.ZipFile(path) as zf:
            outcome = f"parsed {len(json.loads(zf.read('manifest.json'))['files'])} listed files"
    return {"seconds": time.perf_counter() - started, "outcome": outcome, "peak_rss_mb": study.proc_status_mb("VmHWM")}


def write_padded_archive(path: str, megabytes: int) -> None:
    """A small archive (one file) whose manifest is valid JSON padded with ``megabytes`` MB of spaces, written in
    1 MB pieces."""
    import hashlib
    import zipfile

    from studies.archive import FORMAT, FORMAT_VERSION, MANIFEST

    data = b'{"project": "padded"}'
    head = json.dumps({"format": FORMAT, "format_version": FORMAT_VERSION, "algorithm": "sha256",
                       "files": {"study.json": hashlib.sha256(data).hexdigest()}})[:-1].encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("study.json", data)
        with zf.open(MANIFEST, "w", force_zip64=True) as out:
            out.write(head)
            for _ in range(megabytes):
                out.write(b" " * 1_000_000)
            out.write(b"}")


def padded_manifest(megabytes: int) -> int:
    from bench.machine import calibration_line

    print(calibration_line())
    with tempfile.TemporaryDirectory(prefix="bench-archive-padded-") as folder:
        path = os.path.join(folder, "padded.zip")
        started = time.perf_counter()
        write_padded_archive(path, megabytes)
        print(f"padded archive: manifest.json of {megabytes} MB of spaces, {os.path.getsize(path) / 1e6:.1f} MB zip, "
              f"written in {time.perf_counter() - started:.1f} s")
        try:
            results = {how: _child(f"refusal-{how}", path) for how in ("django", "whole", "verify")}
        except RuntimeError as exc:
            print(f"the benchmark failed:\n{exc}", file=sys.stderr)
            return 1
    base = results["django"]["peak_rss_mb"]
    for how, what in (("django", "Django and the archive code alone"),
                      ("whole", "the manifest read and parsed whole (the reader before its size check)"),
                      ("verify", "verify_study")):
        done = results[how]
        print(f"{what}: {done['outcome']} in {done['seconds']:.2f} s; peak {done['peak_rss_mb']:.0f} MB (VmHWM), "
              f"{round(done['peak_rss_mb'] - base):+d} MB over Django alone")
    verify = results["verify"]
    met = verify["outcome"].startswith("refused") and verify["seconds"] <= 1 and verify["peak_rss_mb"] - base <= 20
    print(f"  target: refused within 1 s and 20 MB over Django alone {'met' if met else 'MISSED'}")
    return 0


def _child(kind: str, path: str) -> dict:
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", kind, path], capture_output=True,
                          text=True, env=os.environ.copy(), cwd=BASE_DIR)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rebuild", action="store_true", help="drop and rebuild the bench study")
    parser.add_argument("--padded-manifest", type=int, nargs="?", const=400, metavar="MB",
                        help="measure the refusal of an archive whose manifest is padded with MB megabytes "
                             "(default 400) instead of the export and verification")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, path = args.child
        children = {"export-fresh": lambda: child_export(path, fresh=True), "report": lambda: child_report(path),
                    "export": lambda: child_export(path), "verify": lambda: child_verify(path),
                    **{f"refusal-{how}": (lambda how=how: child_refusal(path, how))
                       for how in ("django", "whole", "verify")}}
        print(json.dumps(children[kind]()))
        return 0
    if args.padded_manifest is not None:
        return padded_manifest(args.padded_manifest)
    from bench.machine import calibration_line

    print(calibration_line())
    try:
        print(study.ensure_database(os.environ["DATABASE_URL"]), f"({os.cpu_count()} CPUs)")
        study.setup_django()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        study.enter_bench_project(PROJECT)  # the study is the bench project's
        if args.rebuild or not study.study_is_complete():
            study.drop_study()
            started = time.perf_counter()
            study.build_study()
            print(f"built the study: {study.N_LABELS:,} labels in {time.perf_counter() - started:.1f} s")
        else:
            print(f"reusing the study: {study.N_LABELS:,} labels in campaign {study.CAMPAIGN!r}")
    except Exception as exc:  # setup failures: say what and exit 1
        print(f"could not set up the benchmark: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    folder = tempfile.mkdtemp(prefix="bench-archive-")
    path = os.path.join(folder, "study.zip")
    try:
        for kind, what in (("export-fresh", "export_study computing the report itself"),
                           ("report", "the agreement report as a worker computes it"),
                           ("export", "export_study of the study as the app holds it (report computed)")):
            done = _child(kind, path)
            if kind == "report":
                print(f"{what}: {done['status']} in {done['seconds']:.1f} s; peak {done['peak_rss_mb']:.0f} MB")
                continue
            print(f"{what}: {done['labels']:,} labels, {done['figures']:,} figures, "
                  f"{done['bytes'] / 1e6:.1f} MB archive in {done['seconds']:.1f} s; RSS before "
                  f"{done['rss_before_mb']:.0f} MB, peak {done['peak_rss_mb']:.0f} MB (VmHWM)")
            print(f"  targets: <= {TARGET_EXPORT_SECONDS:.0f} s "
                  f"{'met' if done['seconds'] <= TARGET_EXPORT_SECONDS else 'MISSED'}; "
                  f"< {TARGET_EXPORT_MB:.0f} MB {'met' if done['peak_rss_mb'] < TARGET_EXPORT_MB else 'MISSED'}")
        verify = _child("verify", path)
        print(f"verify_study: {verify['figures']:,} figures, {verify['differing']} differing, in "
              f"{verify['seconds']:.1f} s; peak {verify['peak_rss_mb']:.0f} MB (VmHWM)")
        print(f"  target: <= {TARGET_VERIFY_SECONDS:.0f} s "
              f"{'met' if verify['seconds'] <= TARGET_VERIFY_SECONDS else 'MISSED'}")
    except RuntimeError as exc:
        print(f"the benchmark failed:\n{exc}", file=sys.stderr)
        return 1
    finally:
        if os.path.exists(path):
            os.unlink(path)
        os.rmdir(folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
