# Two commands do all set-up on a fresh machine:
#   make test     create .venv if needed, install, run the whole test suite (unit tests + every notebook via nbval)
#   make reports  create .venv if needed, install, run every available notebook in quick mode, write the gallery
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
JOBS ?= 2  # parallel test workers (make test) and notebook runs (make reports)
SEEDS ?= 0

# Nothing may wait on a network.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
export HF_HUB_DISABLE_TELEMETRY := 1
export ICLR26_PROGRESS := 0
export MPLBACKEND := Agg
export PYDEVD_DISABLE_FILE_VALIDATION := 1

.PHONY: install test test-unit reports full-reports gallery readme strip lint clean clean-reports

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	# one pip command, torch pin first (any other torch spec pulls a multi-GB CUDA build)
	$(PY) -m pip install --quiet torch==2.13.0 -e '.[dev]'
	@touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -n $(JOBS) --dist loadfile --nbval-lax --nbval-current-env --nbval-cell-timeout=900 tests notebooks

test-unit: $(STAMP)
	$(PY) -m pytest -n $(JOBS) --dist loadfile tests

reports: $(STAMP)
	$(PY) -m lib run --all --mode quick --seeds $(SEEDS) --jobs $(JOBS)

full-reports: $(STAMP)
	$(PY) -m lib run --all --mode full --seeds $(SEEDS) --jobs $(JOBS)

gallery: $(STAMP)
	$(PY) -m lib gallery

readme: $(STAMP)
	$(PY) -m lib readme

strip: $(STAMP)
	$(PY) -m lib strip

clean-reports:
	rm -rf reports

clean: clean-reports
	rm -rf $(VENV) *.egg-info build dist
