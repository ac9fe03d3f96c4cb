#!/usr/bin/env bash
# Install the app into .venv with the versions pinned in uv.lock (`scripts/install.sh dev` adds the test tools).
# Uses uv, a pinned version installed from PyPI into its own folder when missing; falls back to `python -m venv`
# and pip with constraints.txt (the same versions) when uv cannot be had. Prints each phase as "==> phase: N.N s".
# `scripts/install.sh lock` re-resolves after a change to pyproject.toml: writes uv.lock and constraints.txt.
set -euo pipefail
cd "$(dirname "$0")/.."

UV_VERSION="${UV_VERSION:-0.13.9}"
PYTHON="${PYTHON:-python3}"
VENV="${VENV:-.venv}"
CONSTRAINTS="constraints.txt"
TOOLS_DIR="${MINICEX_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/minicex-workbench}"
mode="${1:-app}"
target="." what="the app"
[[ "$mode" == dev ]] && target=".[dev]" what="the app and its test tools"

now() { printf '%s' "${EPOCHREALTIME/,/.}"; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# The pinned uv: on PATH already, in our tools folder, or installed there now with the system's pip.
find_uv() {
  if command -v uv >/dev/null 2>&1 && [[ "$(uv --version 2>/dev/null)" == "uv $UV_VERSION"* ]]; then
    command -v uv
    return
  fi
  local home="$TOOLS_DIR/uv-$UV_VERSION"
  if [[ ! -x "$home/bin/uv" ]]; then
    local start staging
    start=$(now)
    staging="$home.partial.$$"
    rm -rf "$staging"
    local log
    if ! log=$(PIP_ROOT_USER_ACTION=ignore "$PYTHON" -m pip install --quiet --disable-pip-version-check \
        --no-warn-script-location --target "$staging" "uv==$UV_VERSION" 2>&1); then
      printf '%s\n' "$log" | grep -v '^WARNING' | tail -n 2 | cut -c1-200 >&2
      rm -rf "$staging"
      return 1
    fi
    mkdir -p "$TOOLS_DIR"
    rm -rf "$home" && mv "$staging" "$home"
    echo "==> uv $UV_VERSION from PyPI: $(since "$start") s (into $home)" >&2
  fi
  "$home/bin/uv" --version >/dev/null 2>&1 || return 1
  echo "$home/bin/uv"
}

if [[ "$mode" == lock ]]; then
  uv_bin=$(find_uv) || { echo "make lock needs uv $UV_VERSION, which could not be installed." >&2; exit 1; }
  "$uv_bin" lock --python "$(command -v "$PYTHON")"
  "$uv_bin" export --quiet --frozen --format requirements-txt --no-hashes --all-extras --no-emit-project \
    --output-file "$CONSTRAINTS"
  echo "Wrote uv.lock and $CONSTRAINTS: commit both."
  exit 0
fi

start=$(now)
if uv_bin=$(find_uv); then
  export UV_PROJECT_ENVIRONMENT="$VENV" UV_PYTHON_DOWNLOADS=never
  if [[ ! -x "$VENV/bin/python" ]]; then
    "$uv_bin" venv --quiet --python "$(command -v "$PYTHON")" "$VENV"
  fi
  # --locked: exactly the versions in uv.lock, and an error (not a silent re-resolution) when pyproject.toml
  # changed without `make lock`. --inexact keeps what another target added (make test's tools for make run).
  extras=()
  [[ "$target" == ".[dev]" ]] && extras=(--extra dev)
  if ! "$uv_bin" sync --quiet --locked --inexact "${extras[@]}"; then
    echo "uv sync failed (see above). After a change to pyproject.toml, run \`make lock\` and commit uv.lock" \
      "and constraints.txt." >&2
    exit 1
  fi
  echo "==> install $what with uv $UV_VERSION: $(since "$start") s"
else
  echo "uv $UV_VERSION could not be installed; installing with pip instead (slower)." >&2
  [[ -x "$VENV/bin/python" ]] || "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip --version >/dev/null 2>&1 || "$VENV/bin/python" -m ensurepip --quiet
  # constraints.txt holds the versions of uv.lock (make lock writes both).
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --constraint "$CONSTRAINTS" \
    --editable "$target"
  echo "==> install $what with pip: $(since "$start") s"
fi

# Bytecode of what the app imports, written once: where PYTHONDONTWRITEBYTECODE is set, every process (the web
# server, each worker, each test process) would otherwise compile it again from source (scripts/warm_bytecode.py).
# For the test tools it is written now (the test processes all start at once); for the app, at the lowest priority
# behind `make run`, whose first page needs only part of it and whose workers start a few seconds later.
if [[ "$mode" == dev ]]; then
  "$VENV/bin/python" scripts/warm_bytecode.py dev || echo "(bytecode warm-up failed; Python compiles as it goes)" >&2
else
  nohup nice -n 19 "$VENV/bin/python" scripts/warm_bytecode.py app >/dev/null 2>&1 &
  echo "==> bytecode: being written in the background"
fi
