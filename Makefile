# The two commands of the README: `make demo` and `make test`. Both set up .venv first.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.setup-stamp
DEMO_STAMP := $(VENV)/.demo-stamp
DEMO_NOW ?= 2026-03-02T23:25:00+11:00

.PHONY: setup demo test lint bench e2e chromium

setup: $(STAMP)

# torch exports the embedding model to ONNX once, here (`assemble model export`); at run time
# the model runs with onnxruntime. torch goes first and pinned: on the development machines
# this version is a CPU build on the disk, while an unpinned torch (pulled by
# sentence-transformers, in the `export` extra) would download a CUDA build of several GB.
# Elsewhere take the CPU build from PyTorch's own index:
#   make demo TORCH_INDEX=https://download.pytorch.org/whl/cpu
# torch runs once, for the export: its thousands of modules are not byte-compiled ahead.
# The demo needs the package, the export and nothing else; the tests' tools and the browser
# come with `setup` (make test, make e2e).
TORCH ?= torch==2.13.0
TORCH_INDEX ?=
$(DEMO_STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --no-compile $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX)) '$(TORCH)'
	$(PY) -m pip install --quiet -e '.[export]'
	$(VENV)/bin/assemble model export
	touch $(DEMO_STAMP)

$(STAMP): $(DEMO_STAMP)
	$(PY) -m pip install --quiet -e '.[dev,export]'
	-@$(MAKE) --no-print-directory chromium
	touch $(STAMP)

# The status page's browser tests drive Debian's Chromium. Installed where the machine allows
# (apt-get, as root); elsewhere the tests are skipped and say why. Never fails the setup.
chromium:
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then \
		echo "chromium: found"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) \
			>/dev/null \
			|| echo "chromium: apt-get install failed; the browser tests will be skipped"; \
	else \
		echo "chromium: not installed (needs root and apt-get); the browser tests will be skipped"; \
	fi

demo: $(DEMO_STAMP)
	$(VENV)/bin/assemble --once --workspace workspace-example --now $(DEMO_NOW)
	$(VENV)/bin/assemble show --workspace workspace-example

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

test: lint
	$(VENV)/bin/pytest -q

# The agent hosts' real programs against a mock model (installs them into a cache first).
e2e: setup
	$(VENV)/bin/pytest -q -m e2e

bench: setup
	$(PY) bench/bench_real_sessions.py
	$(PY) bench/bench_tail_read.py
	$(PY) bench/bench_mood_speed.py
	$(PY) bench/bench_mood_eval.py
	$(PY) bench/bench_mood_window.py
	$(PY) bench/bench_retrieval.py
	$(PY) bench/bench_memory_floor.py
	$(PY) bench/bench_working_on.py
	$(PY) bench/bench_tokens.py
	$(PY) bench/bench_index.py
	$(PY) bench/bench_pad.py
	$(PY) bench/bench_observations.py
	$(PY) bench/bench_hook.py
	$(PY) bench/bench_daemon_cycle.py
	$(PY) bench/bench_long_message.py
	$(PY) bench/bench_claude_code_turn.py
	$(PY) bench/bench_openclaw_turn.py
	$(PY) bench/bench_serve.py
