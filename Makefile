# Every target creates .venv on first use and installs pinned dependencies into it.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml requirements.lock | cksum | cut -d' ' -f1)
SEEDS ?= 10

.PHONY: install demo quickstart test test-deps test-slow bench bench-service lint reproduce-all testbed-validate clean

install: $(STAMP)

$(STAMP): pyproject.toml requirements.lock
	@test -x $(BIN)/python || { echo "make install: creating $(VENV) with $(PYTHON)"; $(PYTHON) -m venv $(VENV); }
	@echo "make install: upgrading pip in $(VENV)"
	@$(BIN)/python -m pip install --quiet --upgrade pip
	@echo "make install: $$(grep -c . requirements.lock) pinned packages from requirements.lock:"
	@tr '\n' ' ' < requirements.lock | fold -s -w 100 | sed 's/^/    /'; echo
	@$(BIN)/python -m pip install --quiet -r requirements.lock
	@echo "make install: dmlsched itself (editable, from src/)"
	@$(BIN)/python -m pip install --quiet --no-deps -e .
	@echo "make install: compiling dmlsched's bytecode (as pip does for a regular install)"
	@$(BIN)/python -m compileall -q src >/dev/null
	@rm -f $(VENV)/.installed-*
	@touch $@
	@echo "make install: done ($(VENV)/bin/dmlsched)"

demo: $(STAMP)
	$(BIN)/dmlsched compare --setting cluster --schedulers pd-ors,pd-ors+,oasis,dorm,drf,fifo \
	  --workload synthetic --jobs 60 --machines 20 --slots 20 --seeds 3 --out results/demo

# the live service + 3 agents on emulated machines; submits 4 jobs, waits for real training
quickstart: $(STAMP)
	$(BIN)/python -m dmlsched.service.quickstart --jobs 4

test: $(STAMP) test-deps
	$(BIN)/python -m pytest -n 2

# Debian packages that the service's tests drive: headless Chromium for the dashboard,
# a PostgreSQL server for the shared-log option.  Installed as root where missing (about
# 50 s on a fresh machine, nothing when present); elsewhere those tests skip with a reason.
TEST_DEBS := chromium chromium-driver postgresql
test-deps:
	@missing=$$(for p in $(TEST_DEBS); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "test-deps: installing" $$missing "from Debian"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing \
	    >/dev/null) || echo "test-deps: could not install" $$missing "- those tests skip"; \
	else echo "test-deps:" $$missing "missing and not root - those tests skip"; fi

test-slow: $(STAMP) test-deps
	$(BIN)/python -m pytest -n 2 -m slow

bench: $(STAMP)
	$(BIN)/dmlsched bench --json

# the service under load: 16 clients, 2,000 jobs, a SIGKILL half-way (JSON on stdout)
bench-service: $(STAMP)
	$(BIN)/python -m dmlsched.service.loadtest --clients 16 --jobs 2000 --kill

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

reproduce-all: $(STAMP)
	$(BIN)/dmlsched reproduce --all --seeds $(SEEDS) --out results/reproduce-all $(if $(ONLY),--only "$(ONLY)",--report docs/reproduction.md)

# the testbed's sim-vs-real check on held-out seeds (real processes, both emulations, about
# two hours; netns needs root): calibration with held-out probes, every cluster scheduler,
# then the errors pooled over every job per scheduler and mode
testbed-validate: $(STAMP)
	$(BIN)/dmlsched reproduce testbed-pdors --seeds 3 --workers 1 --out results/testbed-pdors
	$(BIN)/python -m dmlsched.testbed.pooled

clean:
	rm -rf $(VENV) results .pytest_cache .ruff_cache
