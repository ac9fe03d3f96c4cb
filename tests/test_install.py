"""The pinned install: uv.lock (what `make` installs with uv) and constraints.txt (the pip fallback) agree with each
other and with pyproject.toml, so a fresh clone gets the versions the tests ran with whichever way it installs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

BASE_DIR = Path(__file__).resolve().parent.parent
PROJECT = "minicex-workbench"


def lock() -> dict:
    return tomllib.loads((BASE_DIR / "uv.lock").read_text(encoding="utf-8"))


def test_constraints_pin_exactly_the_versions_of_uv_lock():
    locked = {(canonicalize_name(p["name"]), p["version"]) for p in lock()["package"] if p["name"] != PROJECT}
    text = (BASE_DIR / "constraints.txt").read_text(encoding="utf-8")
    pinned = {(canonicalize_name(name), version)
              for name, version in re.findall(r"^([A-Za-z0-9_.-]+)==([^\s;]+)", text, flags=re.MULTILINE)}
    assert pinned == locked, "run `make lock` (writes uv.lock and constraints.txt) and commit both"


def test_uv_lock_was_made_from_this_pyproject():
    project = tomllib.loads((BASE_DIR / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = {(canonicalize_name(r.name), frozenset(map(str, r.specifier)), tuple(sorted(r.extras))) for r in map(
        Requirement, project["dependencies"] + project["optional-dependencies"]["dev"])}
    entry = next(p for p in lock()["package"] if p["name"] == PROJECT)
    recorded = {(canonicalize_name(d["name"]), frozenset(map(str, SpecifierSet(d.get("specifier", "")))),
                 tuple(sorted(d.get("extras", [])))) for d in entry["metadata"]["requires-dist"]}
    assert recorded == wanted, "pyproject.toml changed since uv.lock was written: run `make lock`"


def test_the_makefile_installs_through_the_script_with_a_pinned_uv():
    makefile = (BASE_DIR / "Makefile").read_text(encoding="utf-8")
    script = (BASE_DIR / "scripts" / "install.sh").read_text(encoding="utf-8")
    assert "scripts/install.sh app" in makefile and "scripts/install.sh dev" in makefile
    assert re.search(r'UV_VERSION="\$\{UV_VERSION:-\d+\.\d+\.\d+\}"', script)
    assert "sync --quiet --locked" in script and '--constraint "$CONSTRAINTS"' in script


def test_the_bytecode_warm_up_writes_what_the_app_imports_whatever_the_environment_says(tmp_path):
    """With PYTHONDONTWRITEBYTECODE set (as on many machines), nothing was ever written and every process
    compiled the app and its libraries again; scripts/warm_bytecode.py writes them once, at install."""
    import importlib.util

    source = BASE_DIR / "scoring" / "reports" / "figures.py"
    cached = Path(importlib.util.cache_from_source(str(source)))
    cached.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "DATABASE_URL": "postgres://nobody@127.0.0.1:1/none"}
    result = subprocess.run([sys.executable, "scripts/warm_bytecode.py", "app"], cwd=BASE_DIR, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert re.search(r"==> bytecode of \d+ modules written", result.stdout) and "not imported" not in result.stdout
    assert cached.exists()
