"""jobsync end to end on one machine: the real state machine, the real handlers.

``LocalJobsync`` wires together what stands in for AWS and the cluster:

- the in-process Kubernetes API (harness.kubeapi) with the real PyTorchJob CRD,
  and the training-operator simulator (harness.operator_sim) moving jobs along
  a scenario; with ``queue``, a Kueue simulator (harness.kueue_sim) that queues,
  admits, preempts or refuses them along a story; or, with a kubeconfig, any
  real cluster;
- moto's Amazon States Language interpreter (harness.sfn) executing
  statemachine/run_job.asl.json, its Lambda tasks calling the real handlers
  in functions/*/app.py in-process;
- one virtual clock for all of it, so hours of training pass in seconds;
- in callback mode, the notifier as the process it is when deployed
  (harness.notifier_process), watching the local API (or the kubeconfig's
  cluster) over HTTP and putting its events on the local bus over HTTP
  (harness.aws_server), where the stack's rule invokes the resume function;
  with JOBSYNC_SWEEP_SECONDS, the stack's schedule running the sweep function
  that often on the run's clock (harness.sweeper).

The demo (harness.demo), the tests and the benchmark all run through here.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from harness.clock import VirtualClock
from harness.invocations import own_metrics_per_thread
from harness.kubeapi import KubeAPI
from harness.kueue_sim import KueueSim
from harness.local_stack import EVENT_BUS, RUNS_BUCKET, TABLE, TEMPLATE_BUCKET, TEMPLATE_PREFIX, TEMPLATES, LocalStack
from harness.notifier_process import NotifierProcess
from harness.operator_sim import OperatorSim
from harness.sfn import LocalStepFunctions
from harness.sweeper import SweepSchedule
from jobsync import clock as jobsync_clock
from jobsync import cluster as jobsync_cluster
from jobsync import runtime
from jobsync.run import manifests
from jobsync.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
DEFINITION = ROOT / "statemachine" / "run_job.asl.json"
RUN_JOBS_DEFINITION = ROOT / "statemachine" / "run_jobs.asl.json"
PYTORCHJOB_CRD = Path(__file__).resolve().parent / "crds" / "kubeflow.org_pytorchjobs.yaml"
FUNCTIONS = ("submit", "status", "cleanup", "await", "resume", "sweep", "jobs")
NAMESPACE = "ml-training"
LOCAL_QUEUE = "e2e"  # the LocalQueue the Kueue simulator serves (its ClusterQueue: harness.kueue_sim.CLUSTER_QUEUE)
STATE_MACHINE = "jobsync-run-job"
RUN_JOBS_STATE_MACHINE = "jobsync-run-jobs"

__all__ = [
    "EVENT_BUS",
    "RUNS_BUCKET",
    "TABLE",
    "TEMPLATES",
    "TEMPLATE_BUCKET",
    "TEMPLATE_PREFIX",
    "LocalJobsync",
    "RunResult",
]

_handlers: dict[str, ModuleType] = {}


class WallClock(VirtualClock):
    """The real clock, for runs against a real cluster: Wait states really wait."""

    def __init__(self) -> None:
        super().__init__(start=jobsync_clock.wall())

    def now(self) -> float:
        return jobsync_clock.wall()

    def advance_to(self, target: float, stop: Callable[[], bool] | None = None) -> float:
        while (now := jobsync_clock.wall()) < target:
            time.sleep(min(1.0, target - now))
            if stop is not None and stop():
                break
        return jobsync_clock.wall()


def load_handler(function: str) -> ModuleType:
    """functions/<function>/app.py as a module of its own (every function's file is named app.py)."""
    if function not in _handlers:
        path = ROOT / "functions" / function / "app.py"
        spec = importlib.util.spec_from_file_location(f"jobsync_function_{function}", path)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        own_metrics_per_thread(module)
        _handlers[function] = module
    return _handlers[function]


_crd_cache: dict[str, Any] = {}


def pytorchjob_crd() -> dict[str, Any]:
    if "crd" not in _crd_cache:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        _crd_cache["crd"] = yaml.load(PYTORCHJOB_CRD.read_text(), Loader=loader)
    return _crd_cache["crd"]


@dataclass
class Poll:
    """One Status invocation as the demo prints it."""

    at: float
    phase: str
    reason: str
    wait_seconds: int
    answered: float | None = None  # when the Status call returned: later than ``at`` while a watch held it


@dataclass
class RunResult:
    status: str
    error: str | None
    cause: str | None
    output: Any
    polls: list[Poll] = field(default_factory=list)
    jobs_left: list[dict[str, str]] = field(default_factory=list)
    execution_arn: str = ""
    started_at: float = 0.0

    def summary(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "error": self.error,
            "cause": self.cause,
            "output": self.output,
            "jobsLeft": self.jobs_left,
        }


class LocalJobsync(LocalStack):
    """A context manager: the whole service on one machine (see the module docstring)."""

    def __init__(
        self,
        scenario: str = "success",
        timings: dict[str, float] | None = None,
        env: dict[str, str] | None = None,
        kubeconfig: str | None = None,
        max_step: float | None = 30.0,
        notifier: bool = True,
        execution_events: bool = False,
        notifier_kubeconfig: str | None = None,
        notifier_log: Path | None = None,
        notifier_env: dict[str, str] | None = None,
        template_dirs: tuple[Path, ...] = (),
        sweeper: bool = True,
        queue: str | None = None,
        queue_timings: dict[str, float] | None = None,
    ) -> None:
        self.scenario = scenario
        self.timings = timings or {}
        # Kueue: each job's story (harness.kueue_sim.STORIES); its jobs carry the LocalQueue label themselves.
        self.queue = queue
        self.queue_timings = queue_timings or {}
        self.kueue: KueueSim | None = None
        self.kubeconfig = kubeconfig
        self.clock = VirtualClock(max_step=max_step)
        self.env = {
            "JOBSYNC_NAMESPACE": NAMESPACE,
            "JOBSYNC_ALLOWED_KINDS": "PyTorchJob",
            "POWERTOOLS_SERVICE_NAME": "jobsync",
            "POWERTOOLS_METRICS_NAMESPACE": "jobsync",
            "POWERTOOLS_TRACE_DISABLED": "true",
            "AWS_DEFAULT_REGION": "us-east-1",
            **(env or {}),
        }
        self.api: KubeAPI | None = None
        self.sim: OperatorSim | None = None
        self.sfn: LocalStepFunctions | None = None
        self._saved_env: dict[str, str | None] = {}
        self._state_machine_arn = ""
        # Callback mode: the notifier runs as a process beside the API unless a test starts it itself.
        # Against a kubeconfig's cluster it uses ``notifier_kubeconfig`` (its own identity) or that kubeconfig.
        self.notifier_enabled = self.env.get("JOBSYNC_COMPLETION_MODE") == "callback" and notifier
        self.notifier_kubeconfig = notifier_kubeconfig
        self.notifier_log = notifier_log
        self.notifier_env = notifier_env or {}  # over the deployed settings (POWERTOOLS_LOG_LEVEL, ...)
        self.notifier: NotifierProcess | None = None
        self._aws_server: contextlib.ExitStack | None = None
        self._aws_url = ""
        # template.yaml's ExecutionEnded rule: a RunJob execution that ends ABORTED, TIMED_OUT or FAILED
        # sends its status change event to the cleanup function (off by default: most tests call cleanup themselves).
        self.execution_events = execution_events
        self._run_jobs_arn = ""
        # Folders whose *.yaml are served as job templates too, beside events/templates/ (an example's own).
        self.template_dirs = tuple(template_dirs)
        # Callback mode with JOBSYNC_SWEEP_SECONDS: the stack's schedule runs the sweeper (False: it never runs,
        # as when the schedule is disabled or the function fails; the Lambdas still wait as with a sweeper).
        self.sweeper_enabled = sweeper
        self.sweeps: SweepSchedule | None = None

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> LocalJobsync:
        try:
            self._start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _start(self) -> None:
        if self.kubeconfig:
            cluster_env = {"JOBSYNC_CLUSTER_MODE": "kubeconfig", "KUBECONFIG": self.kubeconfig}
            self.clock = WallClock()  # a real cluster runs on real time
        else:
            self.api = KubeAPI(clock=self.clock.now).start()
            self.api.register_crd(pytorchjob_crd())
            self.api.create_namespace(NAMESPACE)
            # On the wall clock a watch lasts its real timeoutSeconds. On virtual time watch mode's watches
            # wait on that clock (among RunJobs' children, in their turn); the notifier's watches (callback
            # mode) wait on the wall clock instead: on virtual time they would move the clock on between the
            # execution's steps, and a callback wait would then time out later than its TimeoutSeconds.
            if not isinstance(self.clock, WallClock) and not self.notifier_enabled:
                self.api.virtual_watch = self._virtual_watch
            self.sim = OperatorSim(self.api, self.clock.now, default_scenario=self.scenario)
            if self.queue is not None:
                self.kueue = KueueSim(self.api, self.clock.now, default_story=self.queue)
                self.kueue.local_queue(NAMESPACE, LOCAL_QUEUE)
                self.env.setdefault("JOBSYNC_KUEUE_ENABLED", "true")
            self.clock.on_advance(lambda _now: self._step())
            cluster_env = {"JOBSYNC_CLUSTER_MODE": "url", "JOBSYNC_KUBE_URL": self.api.url}
        self._set_env({**self.env, **cluster_env})
        runtime.reset()
        jobsync_cluster.reset_cache()
        handlers = {f"jobsync-{name}": load_handler(name).lambda_handler for name in FUNCTIONS}
        self.sfn = LocalStepFunctions(handlers, clock=self.clock).__enter__()
        if isinstance(self.clock, WallClock):
            # A token wait moves a wall clock by sleeping: in 30 s steps a SendTaskSuccess would wait out the step.
            self.sfn.callback_step_seconds = 0.01
        self._state_machine_arn = self.sfn.create_state_machine(
            DEFINITION.read_text(),
            STATE_MACHINE,
            {
                "SubmitFunctionArn": self.sfn.function_arn("jobsync-submit"),
                "StatusFunctionArn": self.sfn.function_arn("jobsync-status"),
                "CleanupFunctionArn": self.sfn.function_arn("jobsync-cleanup"),
                "AwaitFunctionArn": self.sfn.function_arn("jobsync-await"),
                "CompletionMode": os.environ.get("JOBSYNC_COMPLETION_MODE", "poll"),
            },
        )
        # As template.yaml tells the cleanup function which state machine's executions are its own.
        self._set_env({"JOBSYNC_STATE_MACHINE_ARN": self._state_machine_arn})
        self._make_runs_bucket()
        self._run_jobs_arn = self.sfn.create_state_machine(
            RUN_JOBS_DEFINITION.read_text(), RUN_JOBS_STATE_MACHINE, self._run_jobs_substitutions()
        )
        self._make_callback_resources()
        self._serve_templates()
        if self.execution_events:
            self._make_execution_ended_rule()
        runtime.reset()
        if self.notifier_enabled:
            self.start_notifier()
        seconds = int(os.environ.get("JOBSYNC_SWEEP_SECONDS") or 0)
        if self.sweeper_enabled and seconds and os.environ.get("JOBSYNC_COMPLETION_MODE") == "callback":
            self.sweeps = SweepSchedule(self.sfn, self.clock, seconds).start()

    def _step(self) -> None:
        """Kueue first (it resumes or suspends a job), then the operator (it runs or stops the job's pods)."""
        if self.kueue:
            self.kueue.step()
        if self.sim:
            self.sim.step()

    def _virtual_watch(self, seconds: float) -> None:
        """An open watch lets ``seconds`` pass: at once, or among RunJobs' children in its turn (``virtual_sleep``)."""
        if self.sfn is not None and self.sfn.cooperative_waits:
            self.sfn.virtual_sleep(seconds)
        else:
            self.clock.advance(seconds)

    def __exit__(self, *exc: object) -> None:
        if self.sweeps:
            self.sweeps.stop()
            self.sweeps = None
        self.stop_notifier()
        if self._aws_server is not None:
            self._aws_server.close()
            self._aws_server = None
        if self.sfn:
            self.sfn.__exit__(None, None, None)
            self.sfn = None
        if self.sim:
            self.sim.stop()
        if self.api:
            self.api.stop()
        jobsync_cluster.reset_cache()
        runtime.reset()
        self._restore_env()

    def _set_env(self, values: dict[str, str]) -> None:
        for key, value in values.items():
            self._saved_env.setdefault(key, os.environ.get(key))
            os.environ[key] = value

    def _restore_env(self) -> None:
        for key, value in self._saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self._saved_env.clear()

    # ------------------------------------------------------------------ running

    def start(self, execution_input: dict[str, Any], name: str | None = None) -> str:
        """StartExecution; the simulator is told the scenario for the job this execution will create."""
        assert self.sfn
        name = name or str(uuid.uuid4())
        if self.sim:
            arn = self._state_machine_arn.replace(":stateMachine:", ":execution:") + ":" + name
            self.sim.plan(NAMESPACE, self.job_name(arn, execution_input), self.scenario, **self.timings)
        if self.kueue and self.queue:
            self.kueue.plan(NAMESPACE, self.job_name(arn, execution_input), self.queue, **self.queue_timings)
        return self.sfn.start(self._state_machine_arn, execution_input, name=name)

    def job_name(self, execution_arn: str, execution_input: dict[str, Any]) -> str:
        """The name submit will give the execution's job (``manifests.job_name``, from the manifest it makes)."""
        if not isinstance(execution_input, dict):
            return manifests.job_name(execution_arn, None)  # refused before Submit: no job, any name will do
        manifest = execution_input.get("job")
        template = execution_input.get("jobTemplate")
        if manifest is None and isinstance(template, str):
            try:  # as submit renders it; a template submit refuses gives no job, and any name will do
                text = runtime.fetch_template(template)
                manifest = manifests.load_template(text, execution_input.get("parameters") or {}, "", Settings())
            except Exception:
                manifest = None
        return manifests.job_name(execution_arn, manifests.manifest_name(manifest))

    def substitutions(self) -> dict[str, str]:
        """What template.yaml's Outputs give another stack: the ARNs of RunJob and RunJobs, by the names
        a definition's ``${...}`` substitutions use for them."""
        return {
            "RunJobStateMachineArn": self._state_machine_arn,
            "RunJobsStateMachineArn": self._run_jobs_arn,
            **self._run_jobs_substitutions(),
        }

    def _run_jobs_substitutions(self) -> dict[str, str]:
        """What template.yaml's DefinitionSubstitutions give RunJobs."""
        assert self.sfn
        return {
            "RunJobStateMachineArn": self._state_machine_arn,
            "JobsFunctionArn": self.sfn.function_arn("jobsync-jobs"),
            "RunJobsBucket": RUNS_BUCKET,
        }

    def add_state_machine(self, definition: str, name: str, substitutions: dict[str, str] | None = None) -> str:
        """Another state machine beside RunJob and RunJobs (a pipeline that nests them); its ARN.

        Its ``${RunJobStateMachineArn}`` and ``${RunJobsStateMachineArn}`` are
        substituted as a stack built on this one would, ``substitutions`` adds or overrides.
        """
        assert self.sfn
        return self.sfn.create_state_machine(definition, name, {**self.substitutions(), **(substitutions or {})})

    def run_nested(
        self, state_machine_arn: str, execution_input: Any, name: str | None = None, timeout_s: float = 300
    ) -> RunResult:
        """Run an execution that starts RunJob executions (startExecution.sync:2) to its end, then its
        children, then let the status change events' cleanups finish. Each child job names its simulator
        scenario with the jobsync.local/scenario annotation (Step Functions names the children)."""
        assert self.sfn
        self.sfn.cooperative_waits = True  # many executions share the one virtual clock
        started = self.clock.now()
        arn = self.sfn.start(state_machine_arn, execution_input, name=name or str(uuid.uuid4()))
        description = self.sfn.wait(arn, timeout_s=timeout_s)
        for child in self.children(arn):
            self.sfn.wait(child, timeout_s=timeout_s)
        self.sfn.settle()
        result = self.result(arn, description, started)
        result.polls = self.polls()
        return result

    def start_jobs(self, execution_input: dict[str, Any], name: str | None = None) -> str:
        """StartExecution of RunJobs. Its children are named by Step Functions, so the simulator cannot be
        told their scenarios beforehand: each job names its own (the test-only jobsync.local/scenario annotation)."""
        assert self.sfn
        self.sfn.cooperative_waits = True  # many executions share the one virtual clock
        return self.sfn.start(self._run_jobs_arn, execution_input, name=name or str(uuid.uuid4()))

    def run_jobs(self, execution_input: dict[str, Any], name: str | None = None, timeout_s: float = 300) -> RunResult:
        """Run RunJobs to its end, then let the status change events' cleanups finish; returns what happened."""
        return self.run_nested(self._run_jobs_arn, execution_input, name=name, timeout_s=timeout_s)

    def run_jobs_together(self, execution_inputs: list[dict[str, Any]], timeout_s: float = 300) -> list[RunResult]:
        """Start several RunJobs runs at once (more jobs than one run takes), run each to its end, its children
        too, then let the status change events' cleanups finish; what happened to each run, in input order."""
        assert self.sfn
        started = self.clock.now()
        arns = [self.start_jobs(execution_input) for execution_input in execution_inputs]
        descriptions = [self.sfn.wait(arn, timeout_s=timeout_s) for arn in arns]
        for arn in arns:
            for child in self.children(arn):
                self.sfn.wait(child, timeout_s=timeout_s)
        self.sfn.settle()
        return [self.result(arn, description, started) for arn, description in zip(arns, descriptions, strict=True)]

    def children(self, run_jobs_arn: str) -> list[str]:
        """The executions a RunJobs (or any nesting) execution started, in the order it started them.

        Those its states started (``startExecution`` tasks), and those the child executions of its
        Distributed Maps started, in item order (the Map Run's children are ``map_run_children``).
        """
        assert self.sfn
        started = []
        for event in self.sfn.history(run_jobs_arn):
            if event["type"] == "TaskSubmitted":
                output = event["taskSubmittedEventDetails"]["output"]
                started.append(output and json.loads(output)["ExecutionArn"])
            elif event["type"] == "MapRunStarted":
                for child in self.map_run_children(event["mapRunStartedEventDetails"]["mapRunArn"]):
                    started += self.sfn.started_by(child)
        return started

    def map_run_children(self, map_run_arn: str) -> list[str]:
        """The child executions of a Map Run (ListExecutions with ``mapRunArn``), in item order."""
        assert self.sfn
        listed = self.sfn._sfn.list_executions(mapRunArn=map_run_arn)["executions"]
        return [str(e["executionArn"]) for e in listed]

    def run(self, execution_input: dict[str, Any], name: str | None = None, timeout_s: float = 120) -> RunResult:
        """Start an execution and wait for it to end; returns what happened."""
        assert self.sfn
        started = self.clock.now()
        arn = self.start(execution_input, name=name)
        description = self.sfn.wait(arn, timeout_s=timeout_s)
        return self.result(arn, description, started)

    def result(self, arn: str, description: dict[str, Any], started: float = 0.0) -> RunResult:
        output = description.get("output")
        return RunResult(
            status=description["status"],
            error=description.get("error"),
            cause=description.get("cause"),
            output=json.loads(output) if output else None,
            polls=self.polls(arn),
            jobs_left=self.jobs_left(),
            execution_arn=arn,
            started_at=started,
        )

    def polls(self, execution_arn: str | None = None) -> list[Poll]:
        assert self.sfn
        polls = []
        for call in self.sfn.invocations:
            if call.function_name != "jobsync-status" or not isinstance(call.result, dict):
                continue
            if execution_arn and call.result.get("execution") not in (None, execution_arn):
                continue
            result = call.result
            phase, reason, wait = result["phase"], result.get("reason", ""), result.get("waitSeconds", 0)
            polls.append(Poll(call.at, phase, reason, wait, call.answered))
        return polls

    def jobs_left(self) -> list[dict[str, str]]:
        """The jobs still in the cluster, of every allowed kind, with the phase jobsync would give them.

        In the local API, every job of those kinds; on a real cluster (a kubeconfig), the ones jobsync created
        (its managed-by label), read through the run's own cluster settings.
        """
        from jobsync import evaluate
        from jobsync.cluster.connection import get_api_client
        from jobsync.cluster.jobs import KubeJobs
        from jobsync.core.ours import MANAGED_BY

        settings = Settings.from_env()
        kinds = [spec for spec in settings.allowed_kinds if spec.plural]
        if self.api:
            found = [
                (spec, job) for spec in kinds for job in self.api.objects(spec.group, spec.version, spec.plural or "")
            ]
        elif self.kubeconfig:
            cluster = KubeJobs(get_api_client())
            selector = f"{MANAGED_BY}=jobsync"
            found = [(spec, job) for spec in kinds for job in cluster.list_jobs(spec, settings.namespace, selector)]
        else:
            return []
        return [
            {
                "namespace": job["metadata"]["namespace"],
                "name": job["metadata"]["name"],
                # A LIST's items carry no kind or apiVersion of their own (a real server's, for batch/v1 Jobs)
                "phase": str(evaluate({"apiVersion": spec.api_version, "kind": spec.kind, **job}).phase),
            }
            for spec, job in found
        ]
