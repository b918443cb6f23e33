# Every target creates .venv on first use and installs what it needs into it, pinned:
# requirements/core.lock is the engine, every scheduler, the experiments and the plots
# (all `make demo` needs), and each extra of pyproject.toml has its own lock beside it —
# testbed (PyTorch), service, ray, dev (pytest, ruff, mypy).  `make install` installs them all.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip
LOCKS := requirements
EXTRAS := testbed service ray dev
# a stamp per part, named after its lock (and pyproject.toml): a changed pin reinstalls it
stamp = $(VENV)/.installed-$(1)-$(shell cat pyproject.toml $(LOCKS)/$(1).lock | cksum | cut -d' ' -f1)
count = $$(grep -c '^[a-zA-Z]' $(LOCKS)/$(1).lock)
CORE := $(call stamp,core)
SEEDS ?= 10
SEED_BASE ?= 0
HELD_OUT ?= 100

.PHONY: install install-core $(EXTRAS:%=install-%) demo quickstart test test-deps test-slow \
	slurm-deps slurm-cluster slurm-cluster-stop bench bench-service lint reproduce-all \
	testbed-validate testbed-repredict clean

install: install-core $(EXTRAS:%=install-%)

install-core: $(CORE)

$(CORE): pyproject.toml $(LOCKS)/core.lock
	@test -x $(BIN)/python || { echo "make: creating $(VENV) with $(PYTHON)"; $(PYTHON) -m venv $(VENV); }
	@echo "make install-core: $(call count,core) pinned packages from $(LOCKS)/core.lock into $(VENV)"
	@echo "  (numpy, scipy, pandas, matplotlib, numba, HiGHS, cvxpy, typer, rich and what they"
	@echo "  need; no PyTorch): about a minute from a local wheel cache, a few more to download"
	@$(PIP) install --quiet --upgrade pip
	@$(PIP) install --progress-bar on -r $(LOCKS)/core.lock
	@echo "make install-core: dmlsched itself (editable, from src/)"
	@$(PIP) install --quiet --no-deps -e .
	@$(BIN)/python -m compileall -q src >/dev/null
	@echo "make install-core: compiling the numba kernels into their on-disk cache (about a minute)"
	@$(BIN)/python -m dmlsched.experiments.warm
	@rm -f $(VENV)/.installed-core-*
	@touch $@
	@echo "make install-core: done ($(BIN)/dmlsched)"

# one install-<extra> per extra: its lock, constrained by the core's pins
define extra_rule
install-$(1): $(call stamp,$(1))
$(call stamp,$(1)): $(CORE) $(LOCKS)/$(1).lock
	@echo "make install-$(1): $$$$(grep -c '^[a-zA-Z]' $(LOCKS)/$(1).lock) pinned packages from $(LOCKS)/$(1).lock: $(2)"
	@$(PIP) install --progress-bar on -r $(LOCKS)/$(1).lock -c $(LOCKS)/core.lock
	@rm -f $(VENV)/.installed-$(1)-*
	@touch $$@
endef
$(eval $(call extra_rule,testbed,PyTorch (CPU build; about 900 MB on disk) and scikit-learn; 1-3 min))
$(eval $(call extra_rule,service,FastAPI / uvicorn / httpx / psycopg for dmlsched serve; seconds))
$(eval $(call extra_rule,ray,Ray for --ray; about a minute))
$(eval $(call extra_rule,dev,pytest / hypothesis / ruff / mypy / selenium for make test and make lint; seconds))

# Eight schedulers on a communication-bound workload (the thesis's async jobs) that almost every
# job could finish alone: who finishes them is the scheduler's doing, not the workload's.
DEMO_SCHEDULERS := pd-ors+,pd-ors,srtf,tiresias,drf,oasis,dorm,fifo
demo: install-core
	$(BIN)/dmlsched compare --schedulers $(DEMO_SCHEDULERS) --workload synthetic --mode async \
	  --jobs 60 --machines 10 --slots 20 --seeds 5 --plots --out results/demo

# the live service + 3 agents on emulated machines; submits 4 jobs, waits for real training,
# then keeps the service up (dashboard) until Ctrl-C.  EXECUTOR=slurm: a 3-node Slurm cluster
# instead of agents (PD-ORS; prints sacct's account of every step beside its decision)
EXECUTOR ?= local
quickstart: install-core install-service install-testbed $(if $(filter slurm,$(EXECUTOR)),slurm-deps)
	$(BIN)/python -m dmlsched.service.$(if $(filter slurm,$(EXECUTOR)),quickstart_slurm,quickstart) --jobs 4

# worksteal: an idle worker takes tests queued for the other, so the real-process tests
# (seconds each, grouped by module) do not leave one worker finishing alone
test: install test-deps
	$(BIN)/python -m pytest -n 2 --dist worksteal

# Debian packages that the service's tests drive: headless Chromium for the dashboard,
# a PostgreSQL server for the shared-log option.  Installed as root where missing (about
# 50 s on a fresh machine, nothing when present); elsewhere those tests skip with a reason.
TEST_DEBS := chromium chromium-driver postgresql
test-deps: slurm-deps
	@missing=$$(for p in $(TEST_DEBS); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "test-deps: installing" $$missing "from Debian"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing \
	    >/dev/null) || echo "test-deps: could not install" $$missing "- those tests skip"; \
	else echo "test-deps:" $$missing "missing and not root - those tests skip"; fi

# Debian's Slurm (slurmctld, slurmd, client commands), MUNGE, and slurmdbd with MariaDB for
# sacct: for make slurm-cluster and the Slurm executor's tests (about 60 s on a fresh machine;
# without root those tests skip with a reason).
SLURM_DEBS := slurm-wlm munge slurmdbd mariadb-server
slurm-deps:
	@missing=$$(for p in $(SLURM_DEBS); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "slurm-deps: installing" $$missing "from Debian"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    --no-install-recommends $$missing >/dev/null) \
	    || echo "slurm-deps: could not install" $$missing "- the Slurm tests skip"; \
	else echo "slurm-deps:" $$missing "missing and not root - the Slurm tests skip"; fi

# a Slurm cluster on this host: munge, slurmdbd, slurmctld (10.77.0.254 in its own namespace)
# and one slurmd per node, each in its own network namespace; stop with make slurm-cluster-stop
SLURM_NODES ?= 3
slurm-cluster: install-core install-service slurm-deps
	$(BIN)/dmlsched slurm start --machines $(SLURM_NODES)

slurm-cluster-stop: install-core install-service
	$(BIN)/dmlsched slurm stop

test-slow: install test-deps
	$(BIN)/python -m pytest -n 2 --dist worksteal -m slow

bench: install-core
	$(BIN)/dmlsched bench --json

# the service under load (JSON lines on stdout): 16 clients, 2,000 jobs, a SIGKILL half-way,
# on SQLite and on a throwaway PostgreSQL (root); submit latency with and without 4
# concurrent readers (4 alternating pairs of phases)
bench-service: install-core install-service
	$(BIN)/python -m dmlsched.service.loadtest --clients 16 --jobs 2000 --kill
	$(BIN)/python -m dmlsched.service.loadtest --clients 16 --jobs 2000 --kill --postgres
	$(BIN)/python -m dmlsched.service.loadtest --clients 16 --jobs 300 --readers 4 --paired 4

# mypy reads every part's packages (torch, FastAPI, ray): the whole install
lint: install
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy
	$(BIN)/hadolint --failure-threshold style deploy/Dockerfile

# seeds SEED_BASE.. and the held-out seeds HELD_OUT.. side by side (HELD_OUT= : one set)
reproduce-all: install-core
	$(BIN)/dmlsched reproduce --all --seeds $(SEEDS) --seed-base $(SEED_BASE) \
	  $(if $(HELD_OUT),--held-out $(HELD_OUT)) --out results/reproduce-all \
	  $(if $(ONLY),--only "$(ONLY)",--report docs/reproduction.md)

# the testbed's sim-vs-real check on held-out seeds (real processes, both emulations, about
# two hours; netns needs root): calibration with held-out probes, every cluster scheduler,
# then the errors pooled over every job per scheduler and mode
testbed-validate: install-core install-testbed
	$(BIN)/dmlsched reproduce testbed-pdors --seeds 3 --workers 1 --out results/testbed-pdors
	$(BIN)/python -m dmlsched.testbed.pooled

# the held-out runs above predicted again with this checkout's engine (the real runs as they
# were; report/again.csv beside each run's report) and their pooled errors
testbed-repredict: install-core
	$(BIN)/python -m dmlsched.experiments.repredict

clean:
	rm -rf $(VENV) results .pytest_cache .ruff_cache
