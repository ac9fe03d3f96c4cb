"""Benchmark: `make run` on a fresh clone, to the first page and to the workers.

Targets: the login page answers 200 within 10 s of `make run` on a fresh clone when the package cache is warm
(within 60 s when it is cold), and the workers answer (/healthz 200) within 20 s.

What it does, for each cache state asked for (warm by default; --cold adds a run with empty caches):
  1. Clones this repository at its current commit (``git clone`` + ``git checkout --detach HEAD``; uncommitted
     changes are not in the clone, and the script says so) into a temporary folder.
  2. Runs ``make run`` there in the embedded mode (DATABASE_URL, CELERY_BROKER_URL and CACHE_URL removed from the
     environment, as for a new user) with a free PORT, in its own process group.
     *warm*: the uv cache and the folder holding the pinned uv as they are on this machine (a `make` here has
     filled them). *cold*: UV_CACHE_DIR and MINICEX_TOOLS_DIR point to empty folders and pip's cache is off, so uv
     itself and every package come from PyPI.
  3. Reads the phase lines `make run` prints ("==> phase: N.N s") and polls http://127.0.0.1:PORT/accounts/login/
     every 0.1 s until it answers 200; then /healthz (200 once the workers answer too).
  4. Stops `make run` with SIGINT to its process group (as Ctrl-C), SIGKILL after 20 s, checks that no process of
     the group is left, and removes the clone and the empty caches.

Run:  .venv/bin/python bench/bench_first_run.py [--cold] [--no-warm] [--timeout 300] [--verbose]
Exit status 0 when the benchmark ran (targets met or not), 1 when it could not run.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
TARGETS = {"warm": 10.0, "cold": 60.0}
TARGET_WORKERS = 20.0
PHASE_LINE = re.compile(r"^==> (?P<name>.+?): (?P<seconds>[0-9.]+) s\b")
SERVICE_VARIABLES = ("DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL", "LIMITER_URL", "MINICEX_VAR_DIR", "PORT",
                     "VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def status_of(url: str, timeout: float = 2) -> int | None:
    """The HTTP status of a GET, or None when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except (OSError, urllib.error.URLError):
        return None


def clone(commit: str, into: Path) -> None:
    subprocess.run(["git", "clone", "--quiet", str(BASE_DIR), str(into)], check=True)
    subprocess.run(["git", "-C", str(into), "checkout", "--quiet", "--detach", commit], check=True)


def stop_group(process: subprocess.Popen) -> str:
    """SIGINT the process group (Ctrl-C), then SIGKILL what is left after 20 s; says how it ended."""
    pgid = process.pid
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGINT)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if process.poll() is not None and not group_alive(pgid):
            return "stopped by SIGINT"
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)
    process.wait(timeout=10)
    time.sleep(0.5)
    return "killed (SIGKILL) after 20 s" + (" - processes are left!" if group_alive(pgid) else "")


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def first_run(state: str, commit: str, timeout: float, verbose: bool) -> dict:
    """One fresh clone + `make run`; returns the phases and the times to the first page and to /healthz 200."""
    work = Path(tempfile.mkdtemp(prefix=f"minicex-first-run-{state}-"))
    repo = work / "repo"
    clone(commit, repo)
    env = {k: v for k, v in os.environ.items() if k not in SERVICE_VARIABLES}
    port = free_port()
    env["PORT"] = str(port)
    if state == "cold":
        env["UV_CACHE_DIR"] = str(work / "uv-cache")
        env["MINICEX_TOOLS_DIR"] = str(work / "tools")
        env["PIP_NO_CACHE_DIR"] = "1"
    lines: list[tuple[float, str]] = []
    started = time.monotonic()
    process = subprocess.Popen(["make", "run"], cwd=repo, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True)

    def read() -> None:
        for line in process.stdout:
            lines.append((time.monotonic() - started, line.rstrip("\n")))
            if verbose:
                print(f"    [{lines[-1][0]:6.1f}] {lines[-1][1]}", flush=True)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    result: dict = {"state": state, "port": port, "first_page": None, "all_up": None}
    try:
        base = f"http://127.0.0.1:{port}"
        while time.monotonic() - started < timeout and process.poll() is None:
            if status_of(f"{base}/accounts/login/") == 200:
                result["first_page"] = time.monotonic() - started
                break
            time.sleep(0.1)
        if result["first_page"] is not None:
            while time.monotonic() - started < timeout and process.poll() is None:
                if status_of(f"{base}/healthz", timeout=10) == 200:  # the worker ping alone waits up to 1.5 s
                    result["all_up"] = time.monotonic() - started
                    break
                time.sleep(1)
    finally:
        result["stopped"] = stop_group(process)
        reader.join(timeout=5)
        shutil.rmtree(work, ignore_errors=True)
    result["phases"] = [(m["name"], float(m["seconds"]), at) for at, text in lines
                        if (m := PHASE_LINE.match(text))]
    result["exit"] = process.returncode
    result["tail"] = [text for _, text in lines[-15:]]
    return result


def report(result: dict) -> None:
    state, target = result["state"], TARGETS[result["state"]]
    print(f"{state} package cache: fresh clone, `make run` (embedded mode, port {result['port']})")
    print(f"  {'phase':<34} {'took':>7}   from -> to (s after make run)")
    previous_end = 0.0
    # By start time, a phase that contains another first; overlapping phases ran in parallel.
    for name, seconds, ended in sorted(result["phases"], key=lambda phase: (round(phase[2] - phase[1]), -phase[1])):
        began = max(0.0, ended - seconds)
        if began - previous_end >= 0.3:  # a gap between phases: a new Python process starting Django
            print(f"  {'(Python and Django start-up)':<34} {began - previous_end:5.1f} s   {previous_end:5.1f} -> "
                  f"{began:5.1f}")
        print(f"  {name:<34} {seconds:5.1f} s   {began:5.1f} -> {ended:5.1f}")
        previous_end = max(previous_end, ended)
    first = result["first_page"]
    if first is None:
        print(f"  first page: no 200 from /accounts/login/ (make run exit {result['exit']}); last lines:")
        for text in result["tail"]:
            print(f"    {text}")
        return
    verdict = "meets" if first <= target else "MISSES"
    print(f"  first page (/accounts/login/ 200)  {first:5.1f} s after make run   target <= {target:.0f} s: {verdict}")
    all_up = result["all_up"]
    verdict = "meets" if all_up and all_up <= TARGET_WORKERS else "MISSES"
    print("  web and workers up (/healthz 200)  " + (f"{all_up:5.1f} s after make run" if all_up
                                                     else "not within the timeout")
          + f"   target <= {TARGET_WORKERS:.0f} s: {verdict}")
    print(f"  make run {result['stopped']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cold", action="store_true", help="also measure with empty caches (downloads ~300 MB)")
    parser.add_argument("--no-warm", action="store_true", help="skip the warm-cache run")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the first page")
    parser.add_argument("--verbose", action="store_true", help="echo make run's output with timestamps")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(BASE_DIR))
    from bench.machine import calibration_line

    commit = subprocess.run(["git", "-C", str(BASE_DIR), "rev-parse", "HEAD"], check=True, capture_output=True,
                            text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(BASE_DIR), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    print(calibration_line())
    print(f"commit {commit[:12]}" + (" (uncommitted changes are not measured)" if dirty else ""))
    states = ([] if args.no_warm else ["warm"]) + (["cold"] if args.cold else [])
    if not states:
        parser.error("nothing to measure: --no-warm without --cold")
    for state in states:
        try:
            result = first_run(state, commit, args.timeout, args.verbose)
        except (OSError, subprocess.CalledProcessError) as exc:
            print(f"could not run the {state} benchmark: {exc}")
            return 1
        report(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
