# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# llama-cpp-python builds from source; pip keeps the built wheel in its cache, so this happens once per machine.
# Not -march=native: virtual CPUs here advertise AMX but fault on it, so name the instruction sets instead.
export CMAKE_BUILD_PARALLEL_LEVEL ?= 2
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON

.PHONY: demo services test lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.demo-installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[local,cli,server]'  # server: batonflow serve and web after the demo
	touch $@

$(VENV)/.test-installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev,postgres,redis]'
	touch $@ $(VENV)/.demo-installed

demo: $(VENV)/.demo-installed
	$(BIN)/batonflow demo

lint: $(VENV)/.test-installed
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/ruff format --check src tests benchmarks examples
	$(BIN)/mypy --strict src/batonflow
	$(BIN)/lint-imports --no-logo

# PostgreSQL, Redis and chromium, probed and set up only when they do not answer (scripts/services says how).
services:
	scripts/services

test: services lint
	$(BIN)/pytest

# The peers get a venv of their own: Google ADK pins google-genai below 3, and the gemini extra (among the test
# extras) needs 3.6 or later. bench needs none of the test extras (and so no llama.cpp build).
BENCH := .venv-bench
$(BENCH)/bin/python:
	$(PYTHON) -m venv $(BENCH)
	$(BENCH)/bin/python -m pip install --quiet --upgrade pip

$(BENCH)/.installed: pyproject.toml | $(BENCH)/bin/python
	$(BENCH)/bin/python -m pip install --quiet -e '.[bench]'
	touch $@

bench: $(BENCH)/.installed
	$(BENCH)/bin/python -m benchmarks

clean:
	rm -rf $(VENV) $(BENCH) .pytest_cache .mypy_cache .ruff_cache .import_linter_cache
