# The two commands of the README: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: run test lint

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

# Install with the test tools, then lint, type-check and run every test.
test: $(VENV)/.installed-dev
	bash scripts/test

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy .
