# Two commands for a new user: `make run` and `make test`. Everything else is set up on the way.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python

.PHONY: run test install install-dev lint bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml $(VENV)/.installed
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

## Embedded mode (SQLite + filesystem broker) unless DATABASE_URL / CELERY_BROKER_URL are set.
run: install
	$(PY) manage.py migrate --noinput
	$(PY) manage.py load_demo
	$(PY) manage.py load_delphi_demo
	$(PY) manage.py load_preference_demo
	$(PY) manage.py load_generation_demo
	$(PY) -m config.run

lint: install-dev
	$(PY) -m ruff check .

## The whole suite: lint, migration check, unit, API, Celery integration and browser tests.
test: install-dev
	$(PY) -m ruff check .
	SECRET_KEY=$${SECRET_KEY:-test-only-insecure-key} $(PY) manage.py makemigrations --check --dry-run
	SECRET_KEY=$${SECRET_KEY:-test-only-insecure-key} CELERY_TASK_DEFAULT_QUEUE=minicex-test CELERY_LLM_QUEUE=minicex-test-llm $(PY) -m pytest

bench: install-dev
	@for script in bench/*.py; do echo "== $$script"; $(PY) $$script || exit 1; done

clean:
	rm -rf $(VENV) var .pytest_cache .ruff_cache test-artifacts
