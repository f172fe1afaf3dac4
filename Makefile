# jobsync: the commands a developer and CI run.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
SAM_VENV := .venv-sam
SCAN_VENV := .venv-scan
ASL_DIR := tools/asl-validator
export SAM_CLI_TELEMETRY := 0
STAMP := $(VENV)/.installed

SCENARIO ?= success
MODE ?= poll
INPUT ?= events/run-job-input.json

.PHONY: test test-future package-check chart generated demo demo-story lint format bench bench-throughput bench-runjobs validate build scan clean sam-local bench-container bench-notifier bench-e2e-callback

$(STAMP): requirements-dev.txt layers/jobsync/requirements.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	touch $@

## Run the whole test suite, then lint. The template tests translate it with the scanners' pinned
## aws-sam-translator (its pydantic pin clashes with the layer's), so .venv-scan comes first.
test: $(STAMP) $(SCAN_VENV)/.installed
	$(BIN)/python -m pytest -q
	$(MAKE) --no-print-directory lint

## The suite again with every clock the project reads moved four years ahead.
test-future: $(STAMP) $(SCAN_VENV)/.installed
	$(BIN)/python -m pytest -q --clock-offset-days=1460

## Run the state machine end to end on the local Kubernetes API and operator simulator;
## CLUSTER=local-real: on the e2e tier's real control plane (make e2e-build first; NAMESPACE, KINDS apply), the
## functions in the Lambda runtime (sam local start-lambda) when a Docker daemon can be had.
## KINDS: the kinds the deployment allows (default: the input's own). A failing story's last line is its
## verdict: make exits 2 with it (the story's own code, 3 for JobFailed, ... is python -m harness.demo's).
DEMO_VERDICT := build/demo/verdict
demo: demo-story
	$(if $(filter-out 0,$(shell cat $(DEMO_VERDICT).code)),$(error $(or $(shell cat $(DEMO_VERDICT) 2>/dev/null),the demo did not run (exit $(shell cat $(DEMO_VERDICT).code)))))

# The story itself: it never fails the recipe, so make prints no error line of its own; demo reads how it ended.
demo-story: $(STAMP) $(if $(filter local-real,$(CLUSTER)),e2e-build $(SAM_VENV)/bin/sam)
	@mkdir -p $(dir $(DEMO_VERDICT)) && rm -f $(DEMO_VERDICT)
ifeq ($(CLUSTER),local-real)
	@PYTHONPATH=layers/jobsync:notifier:cli:. $(BIN)/python -m lambda_runtime run --if-available -- $(BIN)/python -m e2e.demo \
	  --scenario $(SCENARIO) --input $(INPUT) --namespace $(NAMESPACE) --kinds $(KINDS) --verdict-file $(DEMO_VERDICT); \
	  echo $$? > $(DEMO_VERDICT).code
else
	@PYTHONPATH=layers/jobsync:notifier:cli:. $(BIN)/python -m harness.demo --scenario $(SCENARIO) --input $(INPUT) --mode $(MODE) $(if $(filter command line environment override,$(origin KINDS)),--kinds $(KINDS)) $(if $(KUBECONFIG_FILE),--kubeconfig $(KUBECONFIG_FILE)) --verdict-file $(DEMO_VERDICT); echo $$? > $(DEMO_VERDICT).code
endif

## ruff, mypy --strict, and the import rules (lint-imports: [tool.importlinter] in pyproject.toml).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	PYTHONPATH=layers/jobsync:notifier:cli $(BIN)/lint-imports --no-cache

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

## Detection delay and cost against the fixed 10-minute loop; regenerates docs/performance.md.
## It keeps the throughput figures of the last make bench-throughput (too slow to rerun here: minutes per mode).
bench: $(STAMP)
	PYTHONPATH=layers/jobsync:. $(BIN)/python -m bench

## Each function's cold start in the Lambda runtime (sam local start-lambda, needs Docker as make sam-local does);
## updates only the container_cold_start key of bench/results.json and the docs/performance.md rendered from it.
bench-container: $(STAMP) $(SAM_VENV)/bin/sam
	PYTHONPATH=layers/jobsync:notifier:. $(BIN)/python -m lambda_runtime run -- $(BIN)/python -m bench --container

NOTIFIER_SIZES ?= 1000,10000,20000
## The notifier process at 1,000 / 10,000 / 20,000 retained jobs of 2.5 KB against the local API, EventBridge at
## 0 and 20 ms: memory, readiness, publishing (bench/notifier.py; minutes). Updates only the notifier key of
## bench/results.json, the targets it is held to and the docs/performance.md rendered from them.
bench-notifier: $(STAMP)
	PYTHONPATH=layers/jobsync:notifier:. $(BIN)/python -m bench --notifier --notifier-sizes $(NOTIFIER_SIZES)

THROUGHPUT_MAX ?= 100
## Throughput of RunJobs in the local run: 1, 10 and 100 jobs started together per completion mode;
## THROUGHPUT_MAX=1000 adds the 1,000-job runs (opt-in: much longer). Updates only the throughput key
## of bench/results.json and the docs/performance.md rendered from it.
bench-throughput: $(STAMP)
	PYTHONPATH=layers/jobsync:notifier:. $(BIN)/python -m bench --throughput --throughput-max $(THROUGHPUT_MAX)

RUNJOBS_JOBS ?= 1000
## RunJobs at its largest: one run of 1,000 jobs (jobsFrom) in the local run (opt-in: minutes of wall time).
## Updates only the runjobs_<N> key of bench/results.json.
bench-runjobs: $(STAMP)
	PYTHONPATH=layers/jobsync:notifier:. $(BIN)/python -m bench.runjobs --jobs $(RUNJOBS_JOBS)

## Callback mode's job end -> execution resumed on the e2e tier, the functions in containers (needs Docker and
## the e2e binaries, as make e2e); records callback_containers in bench/results.json and docs/performance.md.
bench-e2e-callback: $(STAMP) $(SAM_VENV)/bin/sam e2e-build
	JOBSYNC_E2E_BENCH=build/e2e-callback.json PYTHONPATH=layers/jobsync:notifier:. $(BIN)/python -m lambda_runtime \
	  run -- $(BIN)/python -m pytest -m e2e e2e/tests/test_callback_latency.py
	PYTHONPATH=layers/jobsync:notifier:. $(BIN)/python -m bench --e2e-callback build/e2e-callback.json

NAMESPACE ?= ml-training
KINDS ?= PyTorchJob

E2E_BIN := $(or $(JOBSYNC_E2E_BIN),$(HOME)/.cache/jobsync-e2e/bin)
HELM := $(E2E_BIN)/helm
## The cluster side, charts/jobsync: build the pinned helm (e2e/cluster/build.sh helm: Go 1.26), lint the chart,
## render it with each charts/jobsync/ci/*-values.yaml into build/chart/ and validate that against the API schemas
## of KUBE_RELEASES (tools/kubeschema.py). make test compares what it renders with what the code calls
## (tests/integration/test_chart.py, test_rbac.py); make e2e installs it.
KUBE_RELEASES ?= v1.30.14 v1.34.4 v1.37.2
chart: $(STAMP)
	e2e/cluster/build.sh helm
	for values in charts/jobsync/ci/*-values.yaml; do $(HELM) lint --strict charts/jobsync -f $$values || exit 1; done
	mkdir -p build/chart
	for values in charts/jobsync/ci/*-values.yaml; do \
	  $(HELM) template jobsync charts/jobsync -n $(NAMESPACE) --kube-version v1.34.4 -f $$values \
	    > build/chart/$$(basename $$values -values.yaml).yaml || exit 1; \
	done
	$(BIN)/python tools/kubeschema.py $(KUBE_RELEASES) -- build/chart/*.yaml

## Rewrite what is generated from its source of truth (charts/jobsync/files/kinds.yaml, the docs' tables);
## make test fails when one drifts (tests/unit/test_generated.py).
generated: $(STAMP) $(SCAN_VENV)/.installed
	PYTHONPATH=layers/jobsync:cli:notifier:. $(BIN)/python -m tools.generated

## pip install . into a fresh virtual environment, then run its jobsync command.
package-check:
	rm -rf build/package-check && $(PYTHON) -m venv build/package-check
	build/package-check/bin/python -m pip install --quiet .
	build/package-check/bin/jobsync evaluate events/evaluate-pytorchjob-succeeded-index5.json
	build/package-check/bin/jobsync preflight --help > /dev/null
	rm -rf build/package-check layers/jobsync/*.egg-info cli/*.egg-info

$(SAM_VENV)/bin/sam:
	$(PYTHON) -m venv $(SAM_VENV)
	$(SAM_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(SAM_VENV)/bin/python -m pip install --quiet -r requirements-sam.txt

## sam validate --lint and sam build, neither needs Docker.
validate: $(SAM_VENV)/bin/sam
	$(SAM_VENV)/bin/sam validate --lint --template template.yaml
	for example in examples/*/template.yaml; do $(SAM_VENV)/bin/sam validate --lint --template $$example || exit 1; done

build: $(SAM_VENV)/bin/sam
	PATH=$(abspath $(SAM_VENV))/bin:$$PATH $(SAM_VENV)/bin/sam build --template template.yaml

## The functions as AWS runs them: a Docker daemon (started and stopped again when none answers), the Lambda
## image built from pinned parts (lambda_runtime/), sam build, then every sample event through sam local.
sam-local: $(STAMP) $(SAM_VENV)/bin/sam
	PYTHONPATH=layers/jobsync:notifier:. $(BIN)/python -m lambda_runtime check -q

# The scanners, each in a folder of its own, pinned: requirements-scan.txt and the npm lock.
$(SCAN_VENV)/.installed: requirements-scan.txt
	test -x $(SCAN_VENV)/bin/python || $(PYTHON) -m venv $(SCAN_VENV)
	$(SCAN_VENV)/bin/python -m pip install --quiet pip==26.3
	$(SCAN_VENV)/bin/python -m pip install --quiet -r requirements-scan.txt
	touch $@

$(ASL_DIR)/node_modules/.installed: $(ASL_DIR)/package.json $(ASL_DIR)/package-lock.json
	cd $(ASL_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

## cfn-lint with the serverless rules, checkov on the translated template, asl-validator on the ASL;
## the same for each examples/*/ stack.
## Skips, each with its reason: tools/scan/cfn-lint.yaml, tools/scan/checkov.yaml.
scan: $(SCAN_VENV)/.installed $(ASL_DIR)/node_modules/.installed
	$(SCAN_VENV)/bin/cfn-lint --config-file tools/scan/cfn-lint.yaml template.yaml --append-rules cfn_lint_serverless.rules
	$(SCAN_VENV)/bin/python tools/scan/sam_translate.py template.yaml build/scan/template.json
	$(SCAN_VENV)/bin/checkov --config-file tools/scan/checkov.yaml --file build/scan/template.json
	for definition in statemachine/*.asl.json examples/*/*.asl.json; do $(ASL_DIR)/node_modules/.bin/asl-validator --json-path $$definition || exit 1; done
	for example in examples/*/template.yaml; do \
	  $(SCAN_VENV)/bin/cfn-lint --config-file tools/scan/cfn-lint.yaml $$example --append-rules cfn_lint_serverless.rules || exit 1; \
	  $(SCAN_VENV)/bin/python tools/scan/sam_translate.py $$example build/scan/$$(basename $$(dirname $$example)).json || exit 1; \
	  $(SCAN_VENV)/bin/checkov --config-file tools/scan/checkov.yaml --file build/scan/$$(basename $$(dirname $$example)).json || exit 1; \
	done

clean:
	rm -rf $(VENV) $(SAM_VENV) $(SCAN_VENV) $(ASL_DIR)/node_modules .aws-sam build/scan .pytest_cache .ruff_cache .hypothesis

## End-to-end tier: real etcd, kube-apiserver, controller-manager, scheduler, kwok and training-operator, and Kueue,
## JobSet and Trainer v2 for the tests that need them (e2e/README.md).
.PHONY: e2e-build cluster e2e

## Build the e2e binaries into $JOBSYNC_E2E_BIN (default ~/.cache/jobsync-e2e/bin); quick when nothing changed.
e2e-build:
	e2e/cluster/build.sh

## Start the e2e control plane for a human: prints the kubeconfigs and versions; Ctrl-C stops it.
cluster: $(STAMP) e2e-build
	PYTHONPATH=layers/jobsync:. $(BIN)/python -m e2e.controlplane up $(if $(WORKDIR),--workdir $(WORKDIR))

## Build, then run the e2e tests (make test does not collect them: testpaths is tests/).
## JOBSYNC_E2E_REQUIRED=1 (set by .ci/run): missing binaries fail the run instead of skipping it.
## The Lambdas run in-process and, where a Docker daemon can be had (python -m lambda_runtime run), also in the
## Lambda runtime through sam local start-lambda; without one those tests skip.
e2e: $(STAMP) $(SAM_VENV)/bin/sam e2e-build
	PYTHONPATH=layers/jobsync:notifier:. $(BIN)/python -m lambda_runtime run --if-available -- \
	  $(BIN)/python -m pytest -m e2e e2e/tests
