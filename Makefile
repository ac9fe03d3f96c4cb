# Two commands for a new user: `make run` and `make test`. Everything else is set up on the way.
# The app is installed with uv (a pinned version, fetched from PyPI into its own folder when missing) at the versions
# in uv.lock, or with pip and constraints.txt (the same versions) when uv cannot be had: see scripts/install.sh.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
export PYTHON

.PHONY: run test install install-dev lint lock bench clean

$(VENV)/.installed: pyproject.toml uv.lock constraints.txt
	@scripts/install.sh app
	@touch $@

$(VENV)/.installed-dev: pyproject.toml uv.lock constraints.txt $(VENV)/.installed
	@scripts/install.sh dev
	@touch $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

## Re-resolve the pinned versions after a change to pyproject.toml (writes uv.lock and constraints.txt).
lock:
	@scripts/install.sh lock

## Embedded mode (SQLite + filesystem broker) unless DATABASE_URL / CELERY_BROKER_URL are set.
## One process migrates and loads the demo data (printing each phase), then starts the web server and the workers.
run: install
	@$(PY) -m config.run dev --migrate --demo

lint: install-dev
	$(PY) -m ruff check .

## The whole suite: lint, migration check, unit, API, Celery integration and browser tests, in as many processes
## as the machine has cores (at most 4; TEST_PROCESSES=1 for one). Embedded mode unless DATABASE_URL and
## CELERY_BROKER_URL are set.
TEST_PROCESSES ?= $(shell n=$$(nproc 2>/dev/null || echo 2); [ $$n -gt 4 ] && n=4; echo $$n)
## Each step says what it does first; pytest's test processes print their collection as it goes (tests/progress.py),
## then one dot per test with the share done, and the slowest tests at the end. --dist worksteal: a process that runs
## out of tests takes half of another's queue. xdist's default hands out shrinking batches in collection order, which
## ends with pytest-django's slow transactional tests: one process was left with 200 s of them while the other idled.
## PYTHONDONTWRITEBYTECODE is emptied for pytest and what it starts (workers, commands, `make run`): where a machine
## sets it, each of the ~40 worker processes of a pass compiled pandas, scipy, pingouin or openai from source again.
test: install-dev
	@echo "==> 1/3 lint: ruff check ."
	@$(PY) -m ruff check .
	@echo "==> 2/3 migrations: makemigrations --check (no model change without its migration)"
	@SECRET_KEY=$${SECRET_KEY:-test-only-insecure-key} $(PY) manage.py makemigrations --check --dry-run
	@echo "==> 3/3 pytest in $(TEST_PROCESSES) processes: each starts Django and collects the tests (lines below), then one dot per test"
	@PYTHONDONTWRITEBYTECODE= SECRET_KEY=$${SECRET_KEY:-test-only-insecure-key} CELERY_TASK_DEFAULT_QUEUE=minicex-test CELERY_LLM_QUEUE=minicex-test-llm $(PY) -m pytest -n $(TEST_PROCESSES) --dist worksteal --durations=10

bench: install-dev
	@for script in bench/*.py; do echo "== $$script"; $(PY) $$script || exit 1; done

clean:
	rm -rf $(VENV) var .pytest_cache .ruff_cache test-artifacts
