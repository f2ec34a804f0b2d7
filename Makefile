# KernelHub: the README's commands. Every target sets up .venv itself on a fresh machine.
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8000
HOST ?= 127.0.0.1
PYTEST_ARGS ?=
# Parallel test workers (pytest-xdist); tests that share one outside resource (the shared
# Redis database) carry one xdist_group and run on one worker.
TEST_WORKERS ?= 2
PYTEST_PARALLEL := -n $(TEST_WORKERS) --dist loadgroup
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export ANONYMIZED_TELEMETRY := False

.PHONY: run test test-postgres worker worker-gpu chroma migrate seed bench plotly-bundle clean

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

# Embedded default: SQLite + Chroma under KERNELHUB_DATA_DIR (var/), in-memory channels.
run: $(VENV)/.installed
	$(PY) manage.py migrate --noinput
	$(PY) manage.py collectstatic --noinput --verbosity 0
	$(PY) manage.py seed_demo
	@echo "KernelHub on http://$(HOST):$(PORT)/"
	$(VENV)/bin/daphne -b $(HOST) -p $(PORT) kernelhub.asgi:application

test: $(VENV)/.installed
	$(PY) -m pytest $(PYTEST_PARALLEL) $(PYTEST_ARGS)

# The database-backed tests again on PostgreSQL (CI runs this after `make test`).
test-postgres: $(VENV)/.installed
	DATABASE_URL=$${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/kernelhub} \
	  $(PY) -m pytest $(PYTEST_PARALLEL) tests/kernelhub tests/knowledge $(PYTEST_ARGS)

# --- distributed mode (set DATABASE_URL, REDIS_URL, CHROMA_URL) -------------------------
migrate: $(VENV)/.installed
	$(PY) manage.py migrate --noinput

seed: $(VENV)/.installed
	$(PY) manage.py seed_demo

# Workers run under supervision: restarted 2 s after any exit (in production, let systemd or
# your process manager do it; see the README). Gossip, mingle and the event heartbeat are off:
# presence is stored in the database, and those steps are what crashed on a Redis restart.
WORKER_FLAGS ?= --without-gossip --without-mingle --without-heartbeat -l info
comma := ,
# (Ctrl-C or SIGTERM ends the loop too, once the worker has shut down.)
supervise = trap 'exit 130' INT TERM; while true; do $(1); echo "worker exited ($$?); restarting in 2 s" >&2; sleep 2; done

# Session loops, problem coverage and background ingestion (also relaunches lost loops).
# SEARCH_CONCURRENCY loops run at once per search worker; a further session waits in the
# queue, and its page and the API say "queued for a loop slot".
SEARCH_CONCURRENCY ?= 4
worker: $(VENV)/.installed
	$(call supervise,$(VENV)/bin/celery -A kernelhub worker -Q search$(comma)ingest -c $(SEARCH_CONCURRENCY) -n search@%h $(WORKER_FLAGS))

# One per GPU: make worker-gpu TARGET=h200 GPU=0 (a fresh child process per evaluation).
TARGET ?= h200
GPU ?= 0
worker-gpu: $(VENV)/.installed
	$(call supervise,CUDA_VISIBLE_DEVICES=$(GPU) $(VENV)/bin/celery -A kernelhub worker \
	  -Q gpu.$(TARGET) -c 1 --max-tasks-per-child 1 -n gpu$(GPU)@%h $(WORKER_FLAGS))

chroma: $(VENV)/.installed
	$(VENV)/bin/chroma run --path $${KERNELHUB_DATA_DIR:-var}/chroma-server --host 127.0.0.1 --port $${CHROMA_PORT:-8001}

bench: $(VENV)/.installed
	$(PY) -m benchmarks $(BENCH_ARGS)

# Rebuild static/vendor/plotly/ (committed; needs node and npm) after a plotly upgrade or when a
# page draws a new trace type: tests/kernelhub/test_plotly_bundle.py says when.
plotly-bundle:
	cd tools/plotly_bundle && npm ci --no-audit --no-fund && npm run build

clean:
	rm -rf var/staticfiles .pytest_cache
