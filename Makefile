# agentmsg developer commands. `make demo` and `make test` set everything up on a fresh machine;
# README.md ("Set up and run") says what each command needs and what it installs where.
SHELL := bash
.SHELLFLAGS := -eo pipefail -c
.DEFAULT_GOAL := help
export RUFF_NO_CACHE := true
export PIP_DISABLE_PIP_VERSION_CHECK := 1

# Which Python runs everything:
#   make ... PYTHON=/path/to/python   that interpreter as it is (agentmsg is installed into it);
#   an active virtualenv ($VIRTUAL_ENV)  its python;
#   otherwise                          the project's own virtualenv .venv, created from $(BASE_PYTHON).
# Python 3.10 or newer. On 3.10 the two pins that need 3.11+ (google-genai, the Gemini test oracle;
# agentscope, a bench peer) are not installed (markers in pyproject.toml): the tests run without the oracle's
# checks of the Gemini bodies and chunks, saying so, and make bench prints their rows as missing. The built wheel is tested in a separate virtualenv, .venv-wheel.
BASE_PYTHON ?= python3
VENV := .venv
WHEEL_VENV := .venv-wheel
ifeq ($(origin PYTHON),command line)
  STAMP := .make/installed-$(shell printf '%s' '$(PYTHON)' | cksum | cut -d' ' -f1)
else ifneq ($(VIRTUAL_ENV),)
  PYTHON := $(VIRTUAL_ENV)/bin/python
  STAMP := .make/installed-$(shell printf '%s' '$(PYTHON)' | cksum | cut -d' ' -f1)
else
  PYTHON := $(VENV)/bin/python
  STAMP := $(VENV)/.agentmsg-installed
  NEW_VENV := $(VENV)/pyvenv.cfg
endif
# Two levels of install into $(PYTHON), each with its stamp: $(STAMP) agentmsg with [dev,bench] (what make
# uses: tests, types, build, bench), $(RUNTIME_STAMP) agentmsg alone with its runtime dependencies (what
# make demo runs). The dev install includes the runtime one, so it refreshes both stamps.
RUNTIME_STAMP := $(STAMP).runtime
# Bounds of the steps that download (they run before pytest, whose limit is 300 s per test).
MAVEN_TIMEOUT ?= 1200
NPM_TIMEOUT ?= 600
# `$(call bound,SECONDS) CMD`: CMD stopped after SECONDS (no bound where timeout(1) is missing).
bound = $(if $(shell command -v timeout),timeout $(1))
PY_DIRS := $(wildcard sdk generated codegen tests examples bench)

.PHONY: help install install-runtime demo test lint typecheck codegen codegen-check docs-rules pytest deps java-harness ts-deps \
	ts-conformance conformance dist wheel-test vectors-lock bench clean
.PHONY: client client-check client-test client-size browser-test viewer-screenshot fuzz speedups

help:
	@echo "make demo          - set up .venv with agentmsg alone (no dev tools), then a tour of it (about 80 lines)"
	@echo "make test          - what CI runs: deps; lint, typecheck, codegen-check, the TypeScript checks (two at a time);"
	@echo "                     then dist, wheel-test: the pytest suite (Java conformance included) on the built wheel, on every"
	@echo "                     core, then the provider/event/wire/client (and CLI stream) tests again in pure Python"
	@echo "make install       - install agentmsg (editable) with [dev,bench] into the Python in use (.venv by default)"
	@echo "make install-runtime - install agentmsg (editable) with its runtime dependencies only (what make demo uses)"
	@echo "make lint          - ruff check + ruff format --check"
	@echo "make typecheck     - mypy --strict"
	@echo "make codegen       - regenerate generated/ (Python and TypeScript) from schemas/"
	@echo "make codegen-check - fail when generated/ differs from what the schemas generate"
	@echo "make docs-rules    - write docs/rules.md's entries from agentmsg/cli/_rules.py (every Problem rule)"
	@echo "make pytest        - the pytest suite against the source tree (editable install), then its pure-Python pass"
	@echo "make deps          - java-harness + ts-deps: the downloads, each with its own time limit"
	@echo "make java-harness  - build the AgentScope Java harness (Maven, artifacts into ~/.m2)"
	@echo "make ts-deps       - npm packages into codegen/node, sdk/typescript, tests/typescript, tests/browser (node_modules),"
	@echo "                     and the npm cache with what the @agentmsg/schema tarball needs (installed offline by the tests)"
	@echo "make ts-conformance - TypeScript suite (ajv + reducer); one summary line, full report on failure"
	@echo "make conformance   - the conformance vectors only: Python, TypeScript and Java"
	@echo "make dist          - build the sdist, the wheel (from the sdist) and the npm tarballs into dist/"
	@echo "make wheel-test    - install dist/'s wheel (not editable) into .venv-wheel, run pytest against it"
	@echo "make vectors-lock  - lock the conformance vectors' verdicts (a vector added; a schema version bump)"
	@echo "make bench         - speed, side by side: agentmsg vs pydantic / msgspec / orjson, AgentScope and the"
	@echo "                     official SDKs (formatters, streams, the live path over loopback HTTP)"
	@echo "make fuzz          - the tests marked fuzz or differential, with long budgets and a fresh seed, then those of"
	@echo "                     the provider/event/wire/client (and CLI stream) tests again in pure Python"
	@echo "make client        - build @agentmsg/client (sdk/typescript) and the viewer's assets (committed)"
	@echo "make client-check  - fail when the committed client build differs from a fresh one"
	@echo "make client-test   - the client's own tests (node --test)"
	@echo "make browser-test  - the viewer in headless Chromium (skipped, saying so, without one)"
	@echo "make clean         - remove everything make created (.venv, .venv-wheel, dist, node_modules, ...)"
	@echo "Python 3.10+: PYTHON=... (as is), else an active virtualenv, else .venv from BASE_PYTHON (default python3)."
	@echo "  On 3.10 google-genai (the Gemini test oracle) and agentscope (a bench peer) need 3.11+ and are not installed:"
	@echo "  the Gemini bodies and chunks go unchecked by it (the tests run on) and the bench rows of the peer say so."
	@echo "Packages are installed with uv (pinned, into .make/uv once), else pip; INSTALLER=pip uses pip only."

# --- Python environment --------------------------------------------------------------------------

# `quiet CMD...`: runs CMD, showing its output only when it fails.
define QUIET_SH
log=$$(mktemp)
"$$@" >"$$log" 2>&1 || { status=$$?; cat "$$log"; rm -f "$$log"; exit "$$status"; }
rm -f "$$log"
endef
export QUIET_SH

# `pip_progress CMD...`: runs a pip install, printing a line per step as it goes (the packages pip collects,
# the build, the install) instead of pip's log, which is shown whole only when it fails.
define PIP_PROGRESS_SH
set -o pipefail
log=$$(mktemp)
start=$$SECONDS
if "$$@" --progress-bar off 2>&1 | tee "$$log" | awk "$$PIP_PROGRESS_AWK"; then
  echo "   done in $$((SECONDS - start)) s"
  rm -f "$$log"
else
  status=$$?
  echo >&2; echo "make: pip failed; its log:" >&2; cat "$$log" >&2; rm -f "$$log"; exit "$$status"
fi
endef
export PIP_PROGRESS_SH

# The functions both installers' progress filters share: say(text), a line of its own; listed(lead, name), a
# name added to the list on the current line (opened with lead; wrapped at 104 columns under its first name).
define PROGRESS_AWK_LIB
function close_line() { if (width) { printf "\n"; width = 0 } }
function say(text) { close_line(); print "   " text; fflush() }
function listed(lead, name) {
  if (!width) { printf "%s%s", lead, name; width = length(lead) + length(name) }
  else if (width + length(name) > 104) { printf ",\n%*s%s", length(lead), "", name; width = length(lead) + length(name) }
  else { printf ", %s", name; width += 2 + length(name) }
  fflush()
}
END { close_line() }
endef

define PIP_PROGRESS_AWK
$(PROGRESS_AWK_LIB)
/^Collecting / { name = $$2; sub(/[<>=!~;[( ].*/, "", name); listed("   collecting ", name); next }
/Installing build dependencies: started/ { say("getting setuptools to build agentmsg (pip's isolated build)") }
/Building editable for .*: started/ { say("building agentmsg (editable; its C speed-ups where a C compiler is found)") }
/Building wheel for .*: started/ { say("building " $$4) }
/^Installing collected packages:/ { n = split(substr($$0, 32), names, ", "); say("installing " n (n == 1 ? " package" : " packages")) }
endef
export PIP_PROGRESS_AWK

# Packages are installed with uv where it can be had: it installs the ~170 packages of [dev,bench] in a few
# seconds from its cache (~/.cache/uv), where pip takes a minute or more per virtualenv. uv $(UV_VERSION) is
# installed once by pip into a folder of its own ($(UV_DIR), pip --target), never into the project's. Where that fails
# (no uv wheel for the platform, no network), or uv then fails, pip installs, saying so; INSTALLER=pip uses
# pip only. uv reads no pip.conf: PIP_INDEX_URL, PIP_EXTRA_INDEX_URL and PIP_FIND_LINKS are passed on to it,
# and it trusts the system's certificates, as pip does (UV_SYSTEM_CERTS=1: a proxy's own CA is among them).
INSTALLER ?= uv
UV_VERSION := 0.13.9
UV_DIR := .make/uv
export INSTALLER UV_VERSION UV_DIR

# `install progress|quiet PY ARGS...`: `pip install ARGS` into the Python PY, with uv (else pip, above);
# progress: a line per step (what uv resolved, built and installed, the packages' names), the whole log only
# when it fails; quiet: the log only when it fails.
define INSTALL_SH
set -o pipefail
mode=$$1 py=$$2; shift 2
get_uv() {
  [ "$$INSTALLER" = uv ] || return 1
  case $$("$$UV_DIR/bin/uv" --version 2>/dev/null) in "uv $$UV_VERSION "* | "uv $$UV_VERSION") return 0 ;; esac
  echo "   getting uv $$UV_VERSION (pip, into $$UV_DIR; once)"
  log=$$(mktemp)
  # (--upgrade replaces an older uv there; nothing else in the folder, which may be one given, is removed)
  if "$$py" -m pip install --quiet --upgrade --target "$$UV_DIR" "uv==$$UV_VERSION" \
    >"$$log" 2>&1 && [ -x "$$UV_DIR/bin/uv" ]; then rm -f "$$log"; return 0; fi
  tail -n 5 "$$log" | sed 's/^/   | /'; rm -f "$$log"
  echo "make: could not install uv $$UV_VERSION; installing with pip (slower)"
  return 1
}
if get_uv; then
  export UV_INDEX_URL="$${UV_INDEX_URL:-$${PIP_INDEX_URL:-}}" UV_EXTRA_INDEX_URL="$${UV_EXTRA_INDEX_URL:-$${PIP_EXTRA_INDEX_URL:-}}"
  export UV_FIND_LINKS="$${UV_FIND_LINKS:-$${PIP_FIND_LINKS:-}}" UV_SYSTEM_CERTS="$${UV_SYSTEM_CERTS:-1}"
  for v in UV_INDEX_URL UV_EXTRA_INDEX_URL UV_FIND_LINKS; do [ -n "$${!v}" ] || unset "$$v"; done
  log=$$(mktemp) start=$$SECONDS
  if [ "$$mode" = progress ]; then
    "$$UV_DIR/bin/uv" pip install --color never --python "$$py" "$$@" 2>&1 | tee "$$log" | awk "$$UV_PROGRESS_AWK"
  else
    "$$UV_DIR/bin/uv" pip install --color never --python "$$py" "$$@" >"$$log" 2>&1
  fi && {
    [ "$$mode" = quiet ] || echo "   done in $$((SECONDS - start)) s"
    rm -f "$$log"; exit 0
  }
  echo >&2; echo "make: uv failed; its log:" >&2; cat "$$log" >&2; rm -f "$$log"
  echo "make: installing with pip instead (INSTALLER=pip skips uv)" >&2
fi
args=() skip=0  # (uv's options in pip's words: --reinstall-package is pip's default for what it is given)
for a in "$$@"; do
  if [ "$$skip" = 1 ]; then skip=0; continue; fi
  case $$a in --reinstall-package) skip=1 ;; --reinstall) args+=(--force-reinstall) ;; *) args+=("$$a") ;; esac
done
set -- "$${args[@]}"
if [ "$$mode" = progress ]; then
  bash -c "$$PIP_PROGRESS_SH" pip "$$py" -m pip install "$$@"
else
  bash -c "$$QUIET_SH" quiet "$$py" -m pip install "$$@"
fi
endef
export INSTALL_SH

# uv's log as a line per step: resolved, each build, prepared, installed, then the names installed, wrapped.
define UV_PROGRESS_AWK
$(PROGRESS_AWK_LIB)
/^(Resolved|Prepared|Installed|Uninstalled|Audited) / { say(tolower(substr($$0, 1, 1)) substr($$0, 2)); next }
/^ *Building / { say("building " $$2 " (" ($$2 == "agentmsg" ? "its C speed-ups where a C compiler is found" : "from source") ")"); next }
/^ \+ / { name = $$2; sub(/==.*/, "", name); listed("   + ", name); next }
/^(warning|error)/ { say($$0) }
endef
export UV_PROGRESS_AWK

# `check_python PY`: fails with a clear message unless PY runs and is Python 3.10+.
define CHECK_PYTHON_SH
v=$$("$$1" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null) || {
  echo "make: '$$1' was not found or does not run (a virtualenv whose Python is gone? make clean). agentmsg needs Python 3.10+:" >&2
  echo "      install one, then e.g. make BASE_PYTHON=python3.12 $$2 (or activate a 3.10+ virtualenv)." >&2
  exit 1
}
"$$1" -c 'import sys; sys.exit(sys.version_info < (3, 10))' || {
  echo "make: agentmsg needs Python 3.10 or newer; '$$1' is Python $$v." >&2
  echo "      Install a newer Python, then e.g. make BASE_PYTHON=python3.12 $$2 (or activate a 3.10+ virtualenv)." >&2
  exit 1
}
endef
export CHECK_PYTHON_SH

# `make_venv PY DIR`: a virtualenv with pip. Where PY's venv has no ensurepip (Debian and Ubuntu without
# the python3-venv package), the virtualenv is made without pip and pip $(PIP_BOOTSTRAP) is fetched
# from PyPI (hash-checked) into it.
PIP_BOOTSTRAP := 25.2
define MAKE_VENV_SH
py=$$1 dir=$$2
rm -rf "$$dir"
if "$$py" -c 'import ensurepip' 2>/dev/null && "$$py" -m venv "$$dir" >/dev/null 2>&1; then exit 0; fi
echo "make: '$$py' cannot make a virtualenv with pip (no ensurepip: on Debian/Ubuntu the python3-venv package);" >&2
echo "      making $$dir without pip and fetching pip $(PIP_BOOTSTRAP) from PyPI into it." >&2
rm -rf "$$dir"
"$$py" -m venv --without-pip "$$dir"
whl=$$("$$py" -c "$$PIP_BOOTSTRAP_PY" "$$dir" "$(PIP_BOOTSTRAP)") && "$$dir/bin/python" "$$whl/pip" install --quiet "$$whl" || {
  rm -rf "$$dir"
  echo "make: could not bootstrap pip into $$dir. Install venv support (Debian/Ubuntu: sudo apt install python3-venv," >&2
  echo "      or python3.X-venv for your version), or use another Python: make BASE_PYTHON=... / PYTHON=..." >&2
  exit 1
}
rm -f "$$whl"
endef
export MAKE_VENV_SH

define PIP_BOOTSTRAP_PY
import hashlib, json, os, sys, urllib.parse, urllib.request
name = f"pip-{sys.argv[2]}-py3-none-any.whl"
index = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple").rstrip("/") + "/pip/"
request = urllib.request.Request(index, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
with urllib.request.urlopen(request, timeout=60) as r:
    base, files = r.geturl(), json.load(r)["files"]
entry = next(f for f in files if f["filename"] == name)
with urllib.request.urlopen(urllib.parse.urljoin(base, entry["url"]), timeout=300) as r:
    data = r.read()
if hashlib.sha256(data).hexdigest() != entry["hashes"]["sha256"]:
    sys.exit(f"make: {name}: sha256 differs from the index")
path = os.path.join(sys.argv[1], name)
with open(path, "wb") as f:
    f.write(data)
print(path)
endef
export PIP_BOOTSTRAP_PY

# `check_node WHAT`: fails with a clear message unless Node.js 20+ and npm are on PATH.
define CHECK_NODE_SH
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || {
  echo "make: $$1 needs Node.js 20 or newer and npm on PATH (node or npm not found)." >&2
  exit 1
}
node -e 'process.exit(Number(process.versions.node.split(".")[0]) < 20 ? 1 : 0)' || {
  echo "make: $$1 needs Node.js 20 or newer; node is $$(node --version)." >&2
  exit 1
}
endef
export CHECK_NODE_SH

# Exit 1 (with a note) unless `import agentmsg` in $(PYTHON) is this checkout's sdk/agentmsg (editable).
define CHECK_CHECKOUT_PY
import importlib.util, os, sys
spec = importlib.util.find_spec("agentmsg")
here = os.path.realpath(os.path.join(sys.argv[1], "sdk", "agentmsg"))
got = os.path.realpath(os.path.dirname(spec.origin)) if spec and spec.origin else None
if got != here:
    print(f"make: {sys.executable} imports agentmsg from {got}, not {here}: reinstalling", file=sys.stderr)
    sys.exit(1)
endef
export CHECK_CHECKOUT_PY

$(VENV)/pyvenv.cfg:
	@bash -c "$$CHECK_PYTHON_SH" check "$(BASE_PYTHON)" "$(MAKECMDGOALS)"
	@echo "== creating $(VENV) from $(BASE_PYTHON) =="
	@bash -c "$$MAKE_VENV_SH" make-venv "$(BASE_PYTHON)" "$(VENV)"

# Reinstalled when pyproject.toml or the C speed-ups (built in place by the editable install) changes, or the
# virtualenv is new. Installing [dev,bench] installs the runtime too: both stamps are touched. After a
# runtime-only install, the first target that needs the dev tools installs them (pip keeps what is there).
$(STAMP): pyproject.toml sdk/agentmsg/_speedups.c $(NEW_VENV)
	@bash -c "$$CHECK_PYTHON_SH" check "$(PYTHON)" "$(MAKECMDGOALS)"
	@echo "== installing agentmsg (editable) with its dev and bench extras into $(PYTHON) =="
	@bash -c "$$INSTALL_SH" install progress $(PYTHON) --reinstall-package agentmsg -e ".[dev,bench]"
	@mkdir -p $(@D) && touch $@ $(RUNTIME_STAMP)

$(RUNTIME_STAMP): pyproject.toml sdk/agentmsg/_speedups.c $(NEW_VENV)
	@bash -c "$$CHECK_PYTHON_SH" check "$(PYTHON)" "$(MAKECMDGOALS)"
	@echo "== installing agentmsg (editable) and what it needs to run into $(PYTHON); no dev tools (make install) =="
	@bash -c "$$INSTALL_SH" install progress $(PYTHON) --reinstall-package agentmsg -e .
	@mkdir -p $(@D) && touch $@

install: $(STAMP)
	@$(PYTHON) -c "$$CHECK_CHECKOUT_PY" "$(CURDIR)" || { rm -f $(STAMP) $(RUNTIME_STAMP); $(MAKE) --no-print-directory $(STAMP); }

install-runtime: $(RUNTIME_STAMP)
	@$(PYTHON) -c "$$CHECK_CHECKOUT_PY" "$(CURDIR)" || \
	  { rm -f $(STAMP) $(RUNTIME_STAMP); $(MAKE) --no-print-directory $(RUNTIME_STAMP); }

# --- Commands ------------------------------------------------------------------------------------

# DEMO_ARGS: e.g. --full (every body and event in full, not only in the files the tour names).
demo: install-runtime
	@$(PYTHON) examples/demo.py $(DEMO_ARGS)

codegen: install
	@bash -c "$$CHECK_NODE_SH" check "make codegen (TypeScript types)"
	$(PYTHON) codegen/generate.py
	node codegen/typescript.mjs
	node sdk/typescript/scripts/build.mjs --viewer

docs-rules:
	$(PYTHON) -c 'from agentmsg.cli._rules import write_page; write_page("docs/rules.md")'

codegen-check: install
	@bash -c "$$CHECK_NODE_SH" check "make codegen-check (TypeScript types)"
	$(PYTHON) codegen/generate.py --check
	node codegen/typescript.mjs --check

lint: install
	$(PYTHON) -m ruff check $(PY_DIRS)
	$(PYTHON) -m ruff format --check $(PY_DIRS)

typecheck: install
	$(PYTHON) -m mypy

# pytest on every core (pytest-xdist; PYTEST_WORKERS=0 runs one process). Tests that share one expensive
# fixture (the Java harness, one Chromium, the built wheel) carry an xdist_group marker and run on one worker.
PYTEST_WORKERS ?= auto
PYTEST_N = $(if $(filter 0,$(PYTEST_WORKERS)),-p no:xdist,-n $(PYTEST_WORKERS) --dist loadgroup)
# The Python defines the results and the C speed-ups (_speedups.c) only go faster, so the tests of what has a
# C path and a Python one (every provider, event, wire and client test: the SSE scanner, the reducer's loop,
# the text-delta reader) run a second time with AGENTMSG_PURE_PYTHON=1: without this pass the pure-Python
# configuration would be the less-tested one. Tests marked no_kernel reach none of those kernels (checked in
# every run: tests/conftest.py), so the second pass would run the same code again: it skips them; tests marked
# kernel_only compare a kernel with the Python, which the second pass has not: it leaves them out too. (The C
# JSON writer is held to the Python byte for byte by tests/native.) Both passes run each fuzz budget at a quarter
# (AGENTMSG_FUZZ_SHARE=$(FUZZ_SHARE), tests/_support/budget.py; the budgets written in the tests are what a bare
# `pytest` runs): every test runs, in the time make test has; make fuzz runs the fuzz tests long in both
# configurations. The fuzz tests took about 40% of the first pass's CPU at their whole budgets; the fuzz and
# differential tests 68 s of its 2-worker time at half, 55 s at a quarter (much of it is fixed: pages, JVMs).
FUZZ_SHARE ?= 0.25
# tests/cli/test_events.py and test_parse.py write long messages and read streams through the CLI (the JSON writer,
# the SSE scanner): the pure writer's memory once failed there alone; the other CLI tests start processes, not kernels.
PURE_PYTHON_PATHS = tests/providers tests/events tests/wire tests/clients tests/cli/test_events.py tests/cli/test_parse.py
PURE_PYTHON_TESTS = -m "not no_kernel and not kernel_only" $(PURE_PYTHON_PATHS)
# The first pass also writes down the tests of that selection that reached no read-side kernel and started no
# process (each kernel watched where agentmsg binds it, as for no_kernel: tests/conftest.py), and the pure-Python
# pass leaves them out too: the no_kernel marker, found by the run itself (about a third of the selection).
KERNEL_LOG = AGENTMSG_KERNEL_LOG="$(CURDIR)/.make/kernel-log" AGENTMSG_KERNEL_LOG_PATHS="$(PURE_PYTHON_PATHS)"
# Where PYTHONDONTWRITEBYTECODE is set, every pytest worker compiled and assertion-rewrote every test module
# anew (about 5 s of each worker's start) and every `python -m agentmsg` a test starts compiled the modules it
# imports: the pytest runs keep their bytecode in .make/pycache instead (PYTHONPYCACHEPREFIX; make clean
# removes it), so that nothing is written into the tree, as the setting asks, and nothing is compiled twice.
PYTEST_ENV = $(if $(PYTHONDONTWRITEBYTECODE),env -u PYTHONDONTWRITEBYTECODE PYTHONPYCACHEPREFIX="$(CURDIR)/.make/pycache")

pytest: install
	@echo "== pytest: the suite against the source tree ($(PYTEST_WORKERS) workers) =="
	$(KERNEL_LOG) AGENTMSG_FUZZ_SHARE=$(FUZZ_SHARE) $(PYTEST_ENV) $(PYTHON) -m pytest $(PYTEST_N)
	@echo "== pytest: provider, event, wire, client and CLI stream tests again in pure Python (AGENTMSG_PURE_PYTHON=1) =="
	$(KERNEL_LOG) AGENTMSG_PURE_PYTHON=1 AGENTMSG_FUZZ_SHARE=$(FUZZ_SHARE) $(PYTEST_ENV) $(PYTHON) -m pytest $(PYTEST_N) $(PURE_PYTHON_TESTS)

# Downloads before the tests, each with its own bound: Maven (AgentScope Java from Maven Central into
# ~/.m2; the first build takes minutes) and npm. The Java test then finds the harness built.
deps: java-harness ts-deps

java-harness:
	@if command -v java >/dev/null && command -v javac >/dev/null && command -v mvn >/dev/null; then \
	  echo "== AgentScope Java harness: Maven build (first run downloads into ~/.m2; limit $(MAVEN_TIMEOUT) s) =="; \
	  AGENTMSG_MAVEN_TIMEOUT=$(MAVEN_TIMEOUT) bash tests/java/run.sh --build-only; \
	else \
	  echo "== AgentScope Java harness: skipped, no JDK 17+ (java, javac) and Maven on PATH; the Java tests skip =="; \
	fi

ts-deps:
	@bash -c "$$CHECK_NODE_SH" check "the TypeScript suite and codegen"
	@echo "== npm packages: codegen/node, sdk/typescript, tests/typescript, tests/browser node_modules (limit $(NPM_TIMEOUT) s each) =="
	@[ -f codegen/node/node_modules/json-schema-to-typescript/package.json ] && [ -f codegen/node/node_modules/ajv/package.json ] || \
	  (cd codegen/node && bash -c "$$QUIET_SH" quiet $(call bound,$(NPM_TIMEOUT)) npm ci --no-audit --no-fund --loglevel=error)
	@[ -f sdk/typescript/node_modules/typescript/package.json ] || (cd sdk/typescript && \
	  bash -c "$$QUIET_SH" quiet $(call bound,$(NPM_TIMEOUT)) npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
	@AGENTMSG_NPM_TIMEOUT=$(NPM_TIMEOUT) bash tests/typescript/run.sh --prepare
	@[ -f tests/browser/node_modules/playwright-core/package.json ] || (cd tests/browser && \
	  bash -c "$$QUIET_SH" quiet $(call bound,$(NPM_TIMEOUT)) npm ci --no-audit --no-fund --loglevel=error)
	@# The npm cache gets what installing the @agentmsg/schema tarball resolves (ajv, ajv-formats and theirs), so
	@# tests/project/test_npm_packages.py installs the tarballs from make dist offline (a dry run downloads only).
	@scratch=$$(mktemp -d) && trap 'rm -rf "$$scratch"' EXIT && cd "$$scratch" && echo '{"private":true}' > package.json && \
	  bash -c "$$QUIET_SH" quiet $(call bound,$(NPM_TIMEOUT)) npm install --prefer-offline --dry-run --no-audit --no-fund \
	    --loglevel=error "$(CURDIR)/generated/typescript"

ts-conformance:
	@echo "== TypeScript suite: ajv over every vector, TypeScript reducer =="
	@bash tests/typescript/run.sh

# Conformance: the same vectors in Python (two validators + decoder + reducer), TypeScript (ajv) and Java.
conformance: install ts-conformance java-harness
	@echo "== Python: schema vectors (python-jsonschema + jsonschema-rs + decoder), reducer vectors, versioning =="
	$(PYTHON) -m pytest tests/conformance/test_schema_vectors.py tests/conformance/test_versioning.py tests/events/test_reducer.py
	@echo "== Java: AgentScope agentscope-core (Maven Central) reads/writes every vector, builders, role rules =="
	$(PYTHON) -m pytest tests/conformance/test_java.py

# The sdist, and the wheel built from it (so the sdist is proven complete). Build log only on failure.
# setuptools' agentmsg.egg-info is removed: beside tests/ (on sys.path) it would shadow the metadata of the
# installed wheel. Then the npm tarballs of @agentmsg/schema (generated/typescript) and @agentmsg/client
# (sdk/typescript, its dist/ built first: the tarball holds it, so installing runs no build), `npm pack`ed
# (skipped, saying so, without Node.js 20+ and npm; their tests skip then too).
dist: install
	@echo "== dist/: sdist and wheel =="
	@rm -rf dist build *.egg-info
	@bash -c "$$QUIET_SH" quiet $(PYTHON) -m build --no-isolation --outdir dist .
	@rm -rf build *.egg-info
	@if bash -c "$$CHECK_NODE_SH" check "the npm tarballs" 2>/dev/null; then \
	  echo "== dist/: npm tarballs of @agentmsg/schema and @agentmsg/client =="; \
	  node sdk/typescript/scripts/build.mjs --if-stale; \
	  bash -c "$$QUIET_SH" quiet npm pack --ignore-scripts --pack-destination dist ./generated/typescript ./sdk/typescript; \
	else \
	  echo "== dist/: npm tarballs skipped, no Node.js 20+ and npm on PATH =="; \
	fi
	@ls dist

# The built wheel, installed (not editable) into .venv-wheel, is what the test suite imports. The
# virtualenv and the test dependencies are made anew when pyproject.toml or the Python change; the
# agentmsg wheel is reinstalled on every run (the installer removes the previous copy file by file).
WHEEL_DEPS_KEY = $(shell $(PYTHON) -c 'import sys; print(sys.base_prefix, sys.version.split()[0])') $(shell cksum < pyproject.toml)
wheel-test: dist
	@whl=$$(ls dist/*.whl); sdist=$$(ls dist/*.tar.gz); \
	if [ "$$(cat $(WHEEL_VENV)/.agentmsg-deps 2>/dev/null)" != "$(WHEEL_DEPS_KEY)" ]; then \
	  echo "== creating $(WHEEL_VENV) with the wheel's dependencies and [test] =="; \
	  bash -c "$$MAKE_VENV_SH" make-venv "$(PYTHON)" "$(WHEEL_VENV)"; \
	  bash -c "$$INSTALL_SH" install quiet $(WHEEL_VENV)/bin/python "$$whl[test]"; \
	  echo "$(WHEEL_DEPS_KEY)" > $(WHEEL_VENV)/.agentmsg-deps; \
	fi; \
	echo "== installing $$whl into $(WHEEL_VENV) =="; \
	bash -c "$$INSTALL_SH" install quiet $(WHEEL_VENV)/bin/python --reinstall --no-deps "$$whl"; \
	echo "== pytest against the installed wheel ($(WHEEL_VENV), $(PYTEST_WORKERS) workers) =="; \
	export AGENTMSG_TEST_WHEEL="$(CURDIR)/$$whl" AGENTMSG_TEST_SDIST="$(CURDIR)/$$sdist" AGENTMSG_TEST_NPM_DIST="$(CURDIR)/dist"; \
	$(KERNEL_LOG) AGENTMSG_FUZZ_SHARE=$(FUZZ_SHARE) $(PYTEST_ENV) $(WHEEL_VENV)/bin/python -m pytest $(PYTEST_N); \
	echo "== pytest: provider, event, wire, client and CLI stream tests again in pure Python (AGENTMSG_PURE_PYTHON=1) =="; \
	$(KERNEL_LOG) AGENTMSG_PURE_PYTHON=1 AGENTMSG_FUZZ_SHARE=$(FUZZ_SHARE) $(PYTEST_ENV) $(WHEEL_VENV)/bin/python -m pytest $(PYTEST_N) $(PURE_PYTHON_TESTS)

# The downloads first; then the checks that need no wheel, two at a time (each one's output printed whole when it
# ends: --output-sync; about 17 s one after another on 2 cores, 9 s so), then the wheel's suite.
test: deps
	@$(MAKE) --no-print-directory -j2 --output-sync=target lint typecheck codegen-check client-check ts-conformance client-test
	@$(MAKE) --no-print-directory wheel-test

vectors-lock: install
	$(PYTHON) tests/conformance/lock_vectors.py

# @agentmsg/client (sdk/typescript): dist/ is built (not committed: `npm install` of the folder builds it
# too); the viewer's script in sdk/agentmsg/web/static is built by esbuild and committed, so the Python
# package serves the viewer without Node; client-check fails when it drifts from its sources.
client:
	node sdk/typescript/scripts/build.mjs --viewer

client-check:
	node sdk/typescript/scripts/build.mjs --check

client-test:
	@echo "== @agentmsg/client tests (node --test; failures in full) =="
	@node sdk/typescript/scripts/build.mjs --if-stale
	@cd sdk/typescript && node --test --test-reporter=dot test/ && echo && echo "@agentmsg/client: every test passed"

client-size:
	node sdk/typescript/scripts/build.mjs --if-stale
	node sdk/typescript/scripts/size.mjs

# The viewer in Debian's headless Chromium (tests/browser; also part of every pytest run).
browser-test: install
	$(PYTHON) -m pytest -p no:xdist tests/browser -rs

viewer-screenshot: install
	$(PYTHON) -m pytest -p no:xdist tests/browser -q -k "java_streams and tool-call-then-answer and whole"
	mkdir -p docs/images && cp tests/browser/out/viewer-java-react-tool-call-then-answer.png docs/images/viewer.png

bench: install
	$(PYTHON) bench/run.py

# The tests marked fuzz (generated inputs) or differential (two implementations that must agree) run in
# `make test` with short budgets; this runs them alone and longer, with a fresh seed each time
# (tests/_support/budget.py): FUZZ_SCALE times the Hypothesis examples (pytest --hypothesis-seed=N replays
# one), FUZZ_SECONDS for each seeded loop (the event, provider-body, client-server and endpoint fuzzers),
# FUZZ_SEED for their seeds (a failure prints it: make fuzz FUZZ_SEED=N replays). As in make test, those of the
# provider, event, wire, client and CLI stream tests then run again in pure Python (AGENTMSG_PURE_PYTHON=1, the
# same seed): the Python defines the results, and without this pass its fuzz runs were make test's short ones.
FUZZ_SCALE ?= 25
FUZZ_SECONDS ?= 300
# (expanded once: `?=` would run date again at each use, and the two passes and the header could differ)
FUZZ_SEED := $(or $(FUZZ_SEED),$(shell date +%s))
FUZZ_ENV = AGENTMSG_FUZZ_SCALE=$(FUZZ_SCALE) AGENTMSG_FUZZ_SECONDS=$(FUZZ_SECONDS) AGENTMSG_FUZZ_SEED=$(FUZZ_SEED) $(PYTEST_ENV)
fuzz: install
	@echo "== the fuzz and differential tests, longer: scale $(FUZZ_SCALE), $(FUZZ_SECONDS) s per seeded loop, seed $(FUZZ_SEED) =="
	$(FUZZ_ENV) $(PYTHON) -m pytest $(PYTEST_N) -m "fuzz or differential" -p no:cacheprovider --timeout=0
	@echo "== the same, of the provider, event, wire, client and CLI stream tests, in pure Python (AGENTMSG_PURE_PYTHON=1) =="
	$(FUZZ_ENV) AGENTMSG_PURE_PYTHON=1 $(PYTHON) -m pytest $(PYTEST_N) -p no:cacheprovider --timeout=0 \
	  -m "(fuzz or differential) and not no_kernel and not kernel_only" $(PURE_PYTHON_PATHS)

# Rebuild the C speed-ups in place (sdk/agentmsg/_speedups*.so) after editing _speedups.c, without pip:
# for work on the C sources (an editable install rebuilds them too). Ext modules as pyproject.toml lists them.
speedups:
	$(PYTHON) -c "$$BUILD_SPEEDUPS_PY"

clean:
	rm -rf $(VENV) $(WHEEL_VENV) .make .installed dist build *.egg-info .mypy_cache .pytest_cache .hypothesis .ruff_cache
	rm -rf tests/typescript/node_modules tests/typescript/dist codegen/node/node_modules tests/java/target tests/java/out
	rm -rf sdk/typescript/node_modules sdk/typescript/dist tests/browser/node_modules tests/browser/out
	find sdk generated codegen tests examples bench -name __pycache__ -type d -prune -exec rm -rf {} +
	find sdk -name "_speedups*.so" -delete

define BUILD_SPEEDUPS_PY
import tomllib
from setuptools import Extension, setup
with open("pyproject.toml", "rb") as f:
    mods = tomllib.load(f)["tool"]["setuptools"]["ext-modules"]
setup(
    script_args=["-q", "build_ext", "--inplace", "--force"],
    package_dir={"": "sdk"},
    ext_modules=[Extension(m["name"], m["sources"], extra_compile_args=m.get("extra-compile-args", [])) for m in mods],
)
endef
export BUILD_SPEEDUPS_PY
