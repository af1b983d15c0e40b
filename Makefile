# agentmsg developer commands. `make demo` and `make test` set everything up on a fresh machine.
PYTHON ?= python3
SHELL := bash
.SHELLFLAGS := -eo pipefail -c
export RUFF_NO_CACHE := true

.PHONY: help install demo test lint typecheck codegen codegen-check pytest conformance ts-conformance vectors-lock bench fuzz clean

help:
	@echo "make demo        - install, then build/validate/round-trip/print messages of every kind"
	@echo "make test        - install, lint, type check, codegen drift check, all tests"
	@echo "make codegen     - regenerate generated/ from schemas/"
	@echo "make bench       - speed: agentmsg vs pydantic / msgspec / orjson, side by side"
	@echo "make fuzz        - longer fuzz runs of the event reducer and readers (FUZZ_SECONDS, FUZZ_SEED)"

.installed: pyproject.toml
	$(PYTHON) -m pip install --quiet --disable-pip-version-check -e ".[dev,bench]"
	@touch .installed

install: .installed

demo: install
	$(PYTHON) examples/demo.py

codegen: install
	$(PYTHON) codegen/generate.py
	node codegen/typescript.mjs

codegen-check: install
	$(PYTHON) codegen/generate.py --check
	node codegen/typescript.mjs --check

PY_DIRS := $(wildcard sdk generated codegen tests examples bench)

lint: install
	$(PYTHON) -m ruff check $(PY_DIRS)
	$(PYTHON) -m ruff format --check $(PY_DIRS)

typecheck: install
	$(PYTHON) -m mypy

pytest: install
	$(PYTHON) -m pytest

# Conformance: the same vectors in Python (two validators + decoder + reducer) and TypeScript (ajv).
conformance: install
	@echo "== Python: schema vectors (python-jsonschema + jsonschema-rs + decoder), reducer vectors, versioning =="
	$(PYTHON) -m pytest tests/conformance/test_schema_vectors.py tests/conformance/test_versioning.py tests/test_events_reducer.py
	@echo "== TypeScript: ajv over every vector via the generated @agentmsg/schema package =="
	bash tests/typescript/run.sh 2>&1 | grep -E "^# (tests|pass|fail)"
	@echo "== Java: AgentScope agentscope-core (Maven Central) reads/writes every vector, builders, role rules =="
	$(PYTHON) -m pytest tests/conformance/test_java.py

ts-conformance:
	bash tests/typescript/run.sh

vectors-lock: install
	$(PYTHON) tests/conformance/lock_vectors.py

test: lint typecheck codegen-check pytest ts-conformance

bench: install
	$(PYTHON) bench/run.py

# Longer fuzz runs of the event reducer / JSONL fast path / SSE reader (make test runs them ~15 s each).
FUZZ_SECONDS ?= 300
FUZZ_SEED ?= $(shell date +%s)
fuzz: install
	AGENTMSG_FUZZ_SECONDS=$(FUZZ_SECONDS) AGENTMSG_FUZZ_SEED=$(FUZZ_SEED) $(PYTHON) -m pytest tests/test_events_fuzz.py -q --timeout=0 -p no:cacheprovider

clean:
	rm -rf .installed build *.egg-info .mypy_cache .pytest_cache .hypothesis
