# The two commands of the README: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: run serve test lint dist

$(VENV)/.installed-run: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e ".[dev]"
	touch $@ $(VENV)/.installed-run

# Install, migrate, create the admin user and an API key if missing, then run
# web + worker + beat in the foreground (Ctrl-C or SIGTERM stops all three).
run: $(VENV)/.installed-run
	$(PY) manage.py xworkmate run

# The production profile (DATABASE_URL and CELERY_BROKER_URL set): web, workers, one beat.
serve: $(VENV)/.installed-run
	$(VENV)/bin/xworkmate serve

# Install with the test tools, then lint, type-check and run every test.
test: $(VENV)/.installed-dev
	bash scripts/test

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy .

# The release's files in dist/: sdist, wheel, the offline runtime tarball, SHA256SUMS.
dist: $(VENV)/.installed-dev
	PY=$(PY) bash scripts/dist
