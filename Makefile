# Every target creates .venv on first use and installs pinned dependencies into it.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml requirements.lock | cksum | cut -d' ' -f1)
SEEDS ?= 10

.PHONY: install demo test test-slow bench lint reproduce-all clean

install: $(STAMP)

$(STAMP): pyproject.toml requirements.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.lock
	$(BIN)/python -m pip install --quiet --no-deps -e .
	rm -f $(VENV)/.installed-*
	touch $@

demo: $(STAMP)
	$(BIN)/dmlsched compare --setting cluster --schedulers pd-ors,pd-ors+,oasis,dorm,drf,fifo \
	  --workload synthetic --jobs 60 --machines 20 --slots 20 --seeds 3 --out results/demo

test: $(STAMP)
	$(BIN)/python -m pytest -n 2

test-slow: $(STAMP)
	$(BIN)/python -m pytest -n 2 -m slow

bench: $(STAMP)
	$(BIN)/dmlsched bench --json

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

reproduce-all: $(STAMP)
	$(BIN)/dmlsched reproduce --all --seeds $(SEEDS) --out results/reproduce-all $(if $(ONLY),--only "$(ONLY)",--report docs/reproduction.md)

clean:
	rm -rf $(VENV) results .pytest_cache .ruff_cache
