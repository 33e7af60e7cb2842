# Two entry points (see README): `make demo` and `make test`.  Each creates .venv with
# the Python in $(PYTHON) (>= 3.11) on first use and installs what it needs into it.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.lidframe-installed
TORCH ?= torch==2.13.0

.PHONY: demo test bench clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "lidframe needs Python >= 3.11; set PYTHON=python3.11 (or newer)")'
	$(PYTHON) -m venv $(VENV)
	@# torch for the audio attackers and their tests: keep one already installed (a GPU build,
	@# or CI's local CPU build), else take $(TORCH)
	$(BIN)/python -c 'import torch' 2>/dev/null || $(BIN)/python -m pip install --quiet '$(TORCH)'
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/lidframe demo --out demo-out

test: $(STAMP)
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python bench/core_cpu.py

clean:
	rm -rf $(VENV) demo-out build *.egg-info .pytest_cache .hypothesis
