# Two entry points for a fresh machine (see README):
#   make demo   create .venv, install, run the offline demo  -> results/demo/report.html
#   make test-fast   unit and plan tests, no whole workflow run (minutes)
#   make test   create .venv, install, run the whole test suite (CI)
#   make style   lint and formatting checked in seconds, first in make test and test-fast (make format applies it)
#   make cost   what a run costs before launch (CONFIG=presets/X.yaml; default config.yaml, the full study)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# rules that run `python -m ...` (BERT pretraining) must find the environment's python
export PATH := $(abspath $(BIN)):$(PATH)
# TORCH: the PyTorch build `make install` puts into .venv, chosen once per machine: cpu (the default: CI, laptops,
# login nodes) or the CUDA build of PyTorch's index that matches the cluster's driver, e.g.
#   make install TORCH=cu126     (cu118, cu126, cu128, ...: https://download.pytorch.org/whl/)
# The build's local version (+cpu, +cu126) is pinned in the venv's copy of constraints.txt, so no later dependency can
# swap it. A machine with the wheel on disk (pip find-links) uses that copy instead of PyTorch's index.
# Left out, it is the build this .venv was installed with (its stamp), else cpu.
TORCH ?= $(or $(patsubst $(VENV)/.installed-%,%,$(firstword $(wildcard $(VENV)/.installed-*))),cpu)
TORCH_INDEX ?= https://download.pytorch.org/whl/$(TORCH)
CORES ?= 2
# pytest-xdist workers of `make test`: the workflow runs of one overlap the other's unit tests and SLURM waits
TEST_WORKERS ?= 2

.PHONY: demo test test-fast test-real lint style format install accept-code cost

$(BIN)/activate:
	$(PYTHON) -m venv $(VENV)

# one stamp per build: `make install TORCH=cu126` over a CPU install reinstalls torch
$(VENV)/.installed-$(TORCH): $(BIN)/activate pyproject.toml constraints.txt
	$(BIN)/pip install --quiet --upgrade pip
	# constraints.txt with torch's build set to $(TORCH) (torch==<version>+$(TORCH))
	sed 's/^torch==\([^+]*\)+cpu$$/torch==\1+$(TORCH)/' constraints.txt > $(VENV)/constraints.txt
	grep -q '^torch==.*+$(TORCH)$$' $(VENV)/constraints.txt
	# torch first and alone, of build $(TORCH), so no later dependency can bring another build
	# a wheel already on the machine (pip's find-links) is used without asking PyTorch's index
	$(BIN)/pip install --quiet --no-compile -c $(VENV)/constraints.txt torch \
		|| $(BIN)/pip install --quiet --no-compile --extra-index-url $(TORCH_INDEX) -c $(VENV)/constraints.txt torch
	$(BIN)/pip install --quiet --no-compile -c $(VENV)/constraints.txt -e ".[test]"
	# the bytecode pip writes one file at a time (16,000 files: 44 s), on every core (29 s on two). As pip does, a
	# file that does not compile (torch's Python 3.12-only test helper) is left to the interpreter, hence || true
	$(BIN)/python -m compileall -qq -j 0 $(VENV)/lib || true
	rm -f $(VENV)/.installed-*
	touch $@

install: $(VENV)/.installed-$(TORCH)

demo: install
	$(BIN)/snakemake --profile profiles/local --cores $(CORES) --configfile presets/demo.yaml
	@echo "report: results/demo/report.html"

test: install style
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadscope

# the real preset's tests alone (presets/real.yaml on ../shared/data, its whole run included; make test runs them too)
test-real: install
	$(BIN)/python -m pytest tests/test_real_preset.py

# The fast tier (docs/testing.md): the tests marked `workflow` (Snakemake end to end: the shared test-preset run and
# the tests on it, the demo's and the real preset's runs, the SLURM branch) and `slow` (unit tests of a minute or
# more on two cores: kill-and-resume, DDP) left out; `make test` runs them
test-fast: install style
	$(BIN)/python -m pytest -n $(TEST_WORKERS) -m "not workflow and not slow"

# GPUS: the GPU counts to schedule the run on
CONFIG ?= config.yaml
GPUS ?= 1 8 32
cost: install
	$(BIN)/python -m xling.cost --configfile $(CONFIG) --gpus $(GPUS)

lint: install
	$(BIN)/snakemake --lint --configfile presets/demo.yaml

# The code's style, checked in seconds before the tests (configured in pyproject.toml: ruff's F and B rules at 120
# columns, ruff format, snakefmt); `make format` rewrites the files so that `make style` passes, the lint aside.
# Formatting reruns no job: a module's code version hashes its syntax tree (docs/testing.md, "Style").
SMK := Snakefile rules/
style: install
	$(BIN)/ruff check
	$(BIN)/ruff format --check
	$(BIN)/snakefmt --check $(SMK)

format: install
	$(BIN)/ruff format
	$(BIN)/snakefmt $(SMK)

# Accept code changes without rerunning (after a refactor): marks current the jobs whose only change is their code
# version, and refuses, touching nothing, when any job must run for another reason (docs/architecture.md: reruns).
#   make accept-code ARGS="--configfile presets/demo.yaml"
accept-code: install
	$(BIN)/python -m xling.plan.accept_code $(ARGS)
