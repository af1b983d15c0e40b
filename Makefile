# agentmsg developer commands. `make demo` and `make test` set everything up on a fresh machine.
PYTHON ?= python3
SHELL := bash
.SHELLFLAGS := -eo pipefail -c
export RUFF_NO_CACHE := true

.PHONY: help install demo test lint typecheck codegen codegen-check pytest conformance ts-conformance vectors-lock bench clean
.PHONY: client client-check client-test client-size browser-test viewer-screenshot

help:
	@echo "make demo        - install, then build/validate/round-trip/print messages of every kind"
	@echo "make test        - install, lint, type check, codegen drift check, all tests"
	@echo "make codegen     - regenerate generated/ from schemas/"
	@echo "make bench       - speed: agentmsg vs pydantic / msgspec / orjson, side by side"
	@echo "make client      - build @agentmsg/client (sdk/typescript) and the viewer's assets (committed)"
	@echo "make browser-test - the viewer in headless Chromium (skipped, saying so, without one)"

.installed: pyproject.toml
	$(PYTHON) -m pip install --quiet --disable-pip-version-check -e ".[dev,bench]"
	@touch .installed

install: .installed

demo: install
	$(PYTHON) examples/demo.py

codegen: install
	$(PYTHON) codegen/generate.py
	node codegen/typescript.mjs
	node sdk/typescript/scripts/build.mjs

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

test: lint typecheck codegen-check client-check pytest ts-conformance client-test

# @agentmsg/client (sdk/typescript): compiled validators, dist/ and the viewer's assets in
# sdk/agentmsg/web/static are built by esbuild/tsc and committed; client-check fails when they drift.
client:
	node sdk/typescript/scripts/build.mjs

client-check:
	node sdk/typescript/scripts/build.mjs --check

client-test:
	cd sdk/typescript && node --test test/

client-size:
	node sdk/typescript/scripts/size.mjs

# The viewer in Debian's headless Chromium (tests/browser; also part of every pytest run).
browser-test: install
	$(PYTHON) -m pytest tests/browser -rs

viewer-screenshot: install
	$(PYTHON) -m pytest tests/browser -q -k "java_streams and tool-call-then-answer and whole"
	mkdir -p docs/images && cp tests/browser/out/viewer-java-react-tool-call-then-answer.png docs/images/viewer.png

bench: install
	$(PYTHON) bench/run.py

clean:
	rm -rf .installed build *.egg-info .mypy_cache .pytest_cache .hypothesis
