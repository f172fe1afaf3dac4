"""Error names as the runtime reports them, held to the state machine's Retry and Catch lists.

Step Functions takes a function error's ``errorType`` as the state's ``Error``: every Retry and Catch of
statemachine/run_job.asl.json keys on those names. Each error here is raised in the container by what
causes it in production (an input, an API answer the local Kubernetes API is told to give, a setting),
never by a hook in the code: the ``errorType`` the runtime returns must be the class the in-process
handler raises, with the same message, and the ASL must retry or catch it as the errors module says.
Timeouts and a runtime killed for its memory are the Lambda service's names; SAM CLI and the emulator
word them differently (``lambda_runtime.service``), and the template copy these run on gives the
function a Timeout of 3 s or a MemorySize it cannot start in.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from harness.kubeapi.faults import Fault
from harness.local import ROOT, LocalJobsync
from jobsync import errors
from jobsync.run.manifests import job_name
from lambda_runtime import sam
from lambda_runtime.daemon import Daemon
from lambda_runtime.service import service_error
from lambda_runtime.tests.stack import Stack, stack
from lambda_runtime.tests.test_sample_events import prepared, put_job
from tests.support.kube import PYTORCHJOBS
from tests.support.lambdas import load_event

ASL = json.loads((ROOT / "statemachine" / "run_job.asl.json").read_text())
TASKS = {"submit": "Submit", "status": "Status", "cleanup": "Cleanup", "await": "Await"}
RETRIED = {"TransientClusterError", "Sandbox.Timedout", "Runtime.ExitError"}


def handling(function: str, error: str) -> tuple[bool, str]:
    """Whether the function's task retries ``error``, and the first Catch that takes it (its ErrorEquals)."""
    state = ASL["States"][TASKS[function]]
    retried = any(error in retry["ErrorEquals"] for retry in state.get("Retry", []))
    catch = next(c for c in state["Catch"] if error in c["ErrorEquals"] or "States.ALL" in c["ErrorEquals"])
    return retried, ",".join(catch["ErrorEquals"])


def test_the_retried_names_are_the_asls() -> None:
    """Every task retries exactly the names this file expects retried, of those a function can report."""
    for function in TASKS:
        names = {n for retry in ASL["States"][TASKS[function]]["Retry"] for n in retry["ErrorEquals"]}
        assert names - {n for n in names if n.startswith("Lambda.")} == RETRIED, function


@dataclass
class Case:
    function: str
    error: str
    event: Callable[[LocalJobsync], Any]
    faults: list[tuple[Fault, str | None, str | None]] = field(default_factory=list)  # fault, method, path part


def submit_event(local: LocalJobsync, **changes: Any) -> Any:
    return {**prepared(local, "submit-inline.json"), **changes}


def conflicting(local: LocalJobsync) -> Any:
    """submit-inline.json while a job of the name it derives exists, another execution's."""
    event = prepared(local, "submit-inline.json")
    other = event["execution"] + "-other"
    ref = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "namespace": "ml-training"}
    put_job(local, {**ref, "name": job_name(event["execution"], "pytorch-simple")}, other)
    return event


def strangers_job(local: LocalJobsync) -> Any:
    """status-running.json about a job of that name that another execution created."""
    event = load_event("status-running.json")
    event["job"]["uid"] = put_job(local, event["job"], event["execution"] + "-other")
    return event


ALWAYS = 50  # a fault for every retry the client makes

CASES = [
    Case("submit", "InvalidInput", lambda local: submit_event(local, cleanup="sometimes")),
    Case("submit", "JobConflict", conflicting),
    Case("submit", "ClusterRequestFailed", submit_event, [(Fault.status(405, "MethodNotAllowed", "no"), "POST", None)]),
    Case(
        "status",
        "TransientClusterError",
        lambda local: prepared(local, "status-running.json"),
        [(Fault.unavailable(), "GET", None)],
    ),
    Case(
        "status",
        "ClusterAccessDenied",
        lambda local: prepared(local, "status-running.json"),
        [(Fault.forbidden(), "GET", None)],
    ),
    Case(
        "status",
        "ClusterAuthError",
        lambda local: prepared(local, "status-running.json"),
        [(Fault.unauthorized(), "GET", None)],
    ),
    Case("status", "NotOurJob", strangers_job),
    Case(
        "cleanup",
        "TransientClusterError",
        lambda local: prepared(local, "cleanup-failed.json"),
        [(Fault.internal_error(), None, None)],
    ),
    Case("await", "InvalidInput", lambda local: {"state": prepared(local, "status-running.json")}),
    Case("evaluate", "InvalidInput", lambda local: {"object": 42}),
]


@pytest.fixture(scope="module")
def served(daemon: Daemon, gateway: str) -> Iterator[tuple[Stack, sam.StartLambda]]:
    with stack(daemon, gateway) as backing, sam.StartLambda(daemon, backing.template, backing.env_vars) as server:
        yield backing, server


def raised(backing: Stack, case: Case, call: Callable[[Any], Any]) -> dict[str, Any]:
    assert backing.local.api is not None
    event = case.event(backing.local)
    for fault, method, path in case.faults:
        backing.local.api.inject(fault, method=method, path_contains=path, times=ALWAYS)
    try:
        answer = call(event)
    finally:
        backing.local.api.clear_faults()
    assert isinstance(answer, dict) and "errorType" in answer, answer
    return answer


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.function}-{c.error}")
def test_error_type_in_the_runtime(served: tuple[Stack, sam.StartLambda], case: Case) -> None:
    backing, server = served
    container = raised(backing, case, lambda event: service_error(server.invoke(case.function, event).payload, "x"))
    in_process = raised(backing, case, lambda event: backing.in_process(case.function, event))
    assert issubclass(getattr(errors, case.error), errors.JobsyncError)
    assert container["errorType"] == in_process["errorType"] == case.error
    assert container["errorMessage"] == in_process["errorMessage"]
    assert set(container) == {"errorType", "errorMessage", "requestId", "stackTrace"}
    if case.function in TASKS:
        retried, catch = handling(case.function, case.error)  # a Catch always takes it: cleanup still runs
        assert retried is (case.error in RETRIED)
        assert (catch == "States.ALL") is (
            case.error != "TransientClusterError" or case.function in ("submit", "cleanup")
        )


def test_missing_cluster_url_is_a_config_error(
    served: tuple[Stack, sam.StartLambda], daemon: Daemon, gateway: str, tmp_path: Path
) -> None:
    """url mode without JOBSYNC_KUBE_URL: ClusterConfigError, not retried (a retry cannot fix a setting)."""
    with stack(daemon, gateway, served[0].local, env={"JOBSYNC_KUBE_URL": ""}) as backing:
        event = prepared(backing.local, "status-running.json")
        path = tmp_path / "event.json"
        path.write_text(json.dumps(event))
        answer = sam.invoke(daemon, "status", path, backing.template, backing.env_vars).payload
    assert answer["errorType"] == "ClusterConfigError", answer
    assert "url mode needs JOBSYNC_KUBE_URL" in answer["errorMessage"]
    assert handling("status", "ClusterConfigError") == (False, "States.ALL")


TIMEOUT_S = 3
SHORT_LIVED = {"StatusFunction": {"Timeout": TIMEOUT_S}, "CleanupFunction": {"MemorySize": 16}}


@pytest.fixture(scope="module")
def strained(daemon: Daemon, gateway: str, served: Any) -> Iterator[tuple[Stack, sam.StartLambda]]:
    backing, _ = served
    with (
        stack(daemon, gateway, backing.local, functions=SHORT_LIVED) as strained_stack,
        sam.StartLambda(daemon, strained_stack.template, strained_stack.env_vars) as server,
    ):
        yield strained_stack, server


def test_a_timeout_is_sandbox_timedout(strained: tuple[Stack, sam.StartLambda]) -> None:
    """The API answers after 10 s, the function may run 3 s: SAM stops it and answers with its own text;
    the Lambda service's name for it is Sandbox.Timedout, which every task retries."""
    backing, server = strained
    assert backing.local.api is not None
    event = prepared(backing.local, "status-running.json")
    backing.local.api.inject(Fault.delay(10), method="GET", times=ALWAYS)
    try:
        answer = server.invoke("status", event)
    finally:
        backing.local.api.clear_faults()
    assert answer.payload == f"Task timed out after {TIMEOUT_S}.00 seconds"
    assert answer.status == 200 and "X-Amz-Function-Error" not in answer.headers
    error = service_error(answer.payload, "r-1", server.log())
    assert error == {
        "errorType": "Sandbox.Timedout",
        "errorMessage": "RequestId: r-1 Error: Task timed out after 3.00 seconds",
    }
    assert answer.seconds >= TIMEOUT_S
    for function in TASKS:
        assert handling(function, "Sandbox.Timedout")[0], function


def test_a_runtime_killed_for_its_memory_is_runtime_exit_error(strained: tuple[Stack, sam.StartLambda]) -> None:
    """16 MB is less than the runtime needs to start: the kernel kills it; SAM answers with nothing, the emulator
    logs the signal, and the Lambda service's name for it is Runtime.ExitError, which every task retries."""
    backing, server = strained
    answer = server.invoke("cleanup", prepared(backing.local, "cleanup-failed.json"))
    assert answer.payload is None and answer.status == 200
    log = server.log()
    assert "Runtime exited with error: signal: killed" in log
    error = service_error(answer.payload, "r-2", log)
    assert error == {
        "errorType": "Runtime.ExitError",
        "errorMessage": "RequestId: r-2 Error: Runtime exited with error: signal: killed",
    }, [line for line in log.splitlines() if "exited" in line]
    for function in TASKS:
        assert handling(function, "Runtime.ExitError")[0], function
    assert backing.local.api is not None and backing.local.api.objects(*PYTORCHJOBS)  # nothing was deleted
