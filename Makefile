# The two commands a newcomer runs: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck unit bench fuzz clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python examples/run_demo.py

lint: $(STAMP)
	$(BIN)/ruff check src tests bench examples
	$(BIN)/ruff format --check src tests bench examples

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest

test: lint typecheck unit

bench: $(STAMP)
	$(BIN)/python bench/run.py

# Longer fuzzing than the suite's: `make fuzz FUZZ_SECONDS=600` (reproducers in fuzz/failures/).
FUZZ_SECONDS ?= 120
fuzz: $(STAMP)
	$(BIN)/python fuzz/run.py --seconds $(FUZZ_SECONDS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
