# jobsync: the commands a developer and CI run.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
SAM_VENV := .venv-sam
export SAM_CLI_TELEMETRY := 0
STAMP := $(VENV)/.installed

SCENARIO ?= success
INPUT ?= events/run-job-input.json

.PHONY: test demo lint format bench validate build clean

$(STAMP): requirements-dev.txt layers/jobsync/requirements.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	touch $@

## Run the whole test suite, then lint.
test: $(STAMP)
	$(BIN)/python -m pytest -q
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

## Run the state machine end to end on the local Kubernetes API and operator simulator.
demo: $(STAMP)
	PYTHONPATH=layers/jobsync:. $(BIN)/python -m harness.demo --scenario $(SCENARIO) --input $(INPUT) $(if $(KUBECONFIG_FILE),--kubeconfig $(KUBECONFIG_FILE))

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

## Detection delay and cost against the fixed 10-minute loop; regenerates docs/performance.md.
bench: $(STAMP)
	PYTHONPATH=layers/jobsync:. $(BIN)/python -m bench

$(SAM_VENV)/bin/sam:
	$(PYTHON) -m venv $(SAM_VENV)
	$(SAM_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(SAM_VENV)/bin/python -m pip install --quiet -r requirements-sam.txt

## sam validate --lint and sam build, neither needs Docker.
validate: $(SAM_VENV)/bin/sam
	$(SAM_VENV)/bin/sam validate --lint --template template.yaml

build: $(SAM_VENV)/bin/sam
	PATH=$(abspath $(SAM_VENV))/bin:$$PATH $(SAM_VENV)/bin/sam build --template template.yaml

clean:
	rm -rf $(VENV) $(SAM_VENV) .aws-sam .pytest_cache .ruff_cache .hypothesis

## End-to-end tier: real etcd, kube-apiserver, controller-manager, scheduler, kwok and training-operator (e2e/README.md).
.PHONY: e2e-build cluster e2e

## Build the e2e binaries into $JOBSYNC_E2E_BIN (default ~/.cache/jobsync-e2e/bin); quick when nothing changed.
e2e-build:
	e2e/cluster/build.sh

## Start the e2e control plane for a human: prints the kubeconfigs and versions; Ctrl-C stops it.
cluster: $(STAMP) e2e-build
	PYTHONPATH=layers/jobsync:. $(BIN)/python -m e2e.controlplane up $(if $(WORKDIR),--workdir $(WORKDIR))

## Build, then run the e2e tests (make test does not collect them: testpaths is tests/).
e2e: $(STAMP) e2e-build
	PYTHONPATH=layers/jobsync:. $(BIN)/python -m pytest -m e2e e2e/tests
