# Two entry points (see README): `make demo` and `make test` (`make test-fast`: the fast loop).
# Each creates .venv with the Python in $(PYTHON) (>= 3.11) on first use and installs what it
# needs into it.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.lidframe-installed
TORCH ?= torch==2.13.0

.PHONY: demo test test-fast lint bench clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "lidframe needs Python >= 3.11; set PYTHON=python3.11 (or newer)")'
	$(PYTHON) -m venv $(VENV)
	@# torch for the audio attackers and their tests: keep one already installed (a GPU build,
	@# or CI's local CPU build), else take $(TORCH)
	$(BIN)/python -c 'import torch' 2>/dev/null || $(BIN)/python -m pip install --quiet '$(TORCH)'
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/lidframe demo --out demo-out --progress

# The suite in one worker process per core (pytest-xdist; at most 4: each holds torch and the demos'
# fixtures), each test file in one worker so that a module's fixtures (a demo run) are made once.
# `make test` runs every test once, in two runs: `make test-fast` (the tests not marked slow),
# so that CI runs the contributors' loop as they do, then the tests marked slow (each over 5 s
# on 2 cores), listing the 25 slowest.
XDIST := --numprocesses auto --maxprocesses 4 --dist loadfile
test: lint test-fast
	$(BIN)/python -m pytest $(XDIST) -m slow --durations=25

# The fast loop for contributors: the tests not marked slow, under 3 minutes on 2 cores (README),
# without the static checks (`make lint`); the 10 slowest are listed, to mark a test slow once it
# takes over 5 s.
test-fast: $(STAMP)
	$(BIN)/python -m pytest $(XDIST) -m "not slow" --durations=10

# Static checks (also run by `make test`, so in CI): lint and format (ruff), types (mypy),
# the layering of the wings (import-linter's contract in pyproject.toml), and the size
# limits of modules and functions (tests/test_structure.py).  attackers/
# and calibrators/ install as lidframe.attackers / lidframe.calibrators; import-linter and
# mypy read source folders, so both are also pointed at a view of the installed layout
# made of links (in the source layout mypy cannot resolve `lidframe.attackers.*` and
# `lidframe.calibrators.*` and treats what they export as Any).  mypy reads the view a
# second time as where torch is not installed (`pip install -e '.[test]'` alone): a config
# made of pyproject.toml's [tool.mypy] and an override that reads torch as Any, which is
# what ignore_missing_imports makes of a missing module; an annotation typed through torch
# must pass both ways.
IMPORT_VIEW := build/import-view
MYPY_WITHOUT_TORCH := build/mypy-without-torch.toml
lint: $(STAMP)
	$(BIN)/ruff check lidframe attackers calibrators tests bench
	$(BIN)/ruff format --check lidframe attackers calibrators tests bench
	$(BIN)/mypy
	rm -rf $(IMPORT_VIEW) && mkdir -p $(IMPORT_VIEW)/lidframe
	for entry in lidframe/*; do ln -s "$(CURDIR)/$$entry" $(IMPORT_VIEW)/lidframe/; done
	ln -s "$(CURDIR)/attackers" $(IMPORT_VIEW)/lidframe/attackers
	ln -s "$(CURDIR)/calibrators" $(IMPORT_VIEW)/lidframe/calibrators
	cd $(IMPORT_VIEW) && "$(CURDIR)/$(BIN)/mypy" --config-file "$(CURDIR)/pyproject.toml" --cache-dir "$(CURDIR)/build/mypy-view-cache" lidframe
	awk '/^\[/ { keep = ($$0 == "[tool.mypy]" || $$0 == "[[tool.mypy.overrides]]") } keep' pyproject.toml > $(MYPY_WITHOUT_TORCH)
	printf '\n[[tool.mypy.overrides]]\nmodule = ["torch", "torch.*"]\nfollow_imports = "skip"\n' >> $(MYPY_WITHOUT_TORCH)
	cd $(IMPORT_VIEW) && "$(CURDIR)/$(BIN)/mypy" --config-file "$(CURDIR)/$(MYPY_WITHOUT_TORCH)" --cache-dir "$(CURDIR)/build/mypy-without-torch-cache" lidframe
	cd $(IMPORT_VIEW) && PYTHONPATH=. "$(CURDIR)/$(BIN)/lint-imports" --no-cache "$(CURDIR)/pyproject.toml"
	$(BIN)/python -m pytest -q -p no:randomly tests/test_structure.py

# The API reference: Sphinx with numpydoc reads the docstrings (docs/api/conf.py says how) and
# writes build/docs/index.html; any warning fails it (-W), after all are reported (--keep-going).
# The `docs` extra goes into the same venv on first use.  docs/api is copied into build/ first,
# so the pages Sphinx generates never land in the source tree.  CI runs it after `make test`.
DOCS_STAMP := $(VENV)/.lidframe-docs-installed
$(DOCS_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[docs]'
	touch $(DOCS_STAMP)

.PHONY: docs
docs: $(DOCS_STAMP)
	rm -rf build/docs build/docs-src && mkdir -p build && cp -r docs/api build/docs-src
	$(BIN)/python -m sphinx -b html -W --keep-going -q build/docs-src build/docs
	@echo "API reference: build/docs/index.html"

bench: $(STAMP)
	$(BIN)/python bench/core_cpu.py

clean:
	rm -rf $(VENV) demo-out build *.egg-info .pytest_cache .hypothesis
