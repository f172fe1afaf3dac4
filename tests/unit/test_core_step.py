"""The core's one decision, row by row: (state, what was observed, now, settings) -> (next state, wait, outcome).

Every row is a look at one job: what the API showed (and, when asked, the job's pods, a stuck pod's
events, a failed container's log), the seconds since submission, the settings. The expected columns
are the verdict (phase, reason), the reads the core asked for before it decided, in order, and what
the next state keeps. No clock, no cluster: time is an argument and the reads are answered from the row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from jobsync import clock
from jobsync.core import verdict
from jobsync.core.diagnostics import JobPods
from jobsync.core.ours import job_labels
from jobsync.core.outcome import Phase
from jobsync.core.state import LoopState, seconds
from jobsync.core.step import Read, Step, begin, decide, step
from jobsync.core.wait import watch_hold
from jobsync.errors import NotOurJob
from jobsync.settings import Settings

T0 = clock.parse("2026-11-29T10:00:00Z") or 0.0
EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:jobsync-run-job:core"
NAME = "train-core"
UID = "uid-core"
REF = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "namespace": "ml-training", "name": NAME, "uid": UID}
SETTINGS = Settings()
MASTER = "train-core-master-0"


def state(**overrides: Any) -> LoopState:
    base = {
        "job": REF,
        "execution": EXECUTION,
        "submittedAt": clock.isoformat(T0),
        "deadline": clock.isoformat(T0 + 86400),
        "phase": "PENDING",
        "phaseSince": clock.isoformat(T0),
    }
    return LoopState.model_validate({**base, **overrides})


def job(*conditions: str, status: dict | None = None, **meta: Any) -> dict:
    metadata = {"name": NAME, "namespace": "ml-training", "uid": UID, "labels": job_labels(EXECUTION), **meta}
    obj: dict[str, Any] = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": metadata}
    if conditions or status is not None:
        at = clock.isoformat(T0 + 60)
        conds = [
            {"type": c, "status": "True", "reason": f"PyTorchJob{c}", "lastTransitionTime": at} for c in conditions
        ]
        obj["status"] = {**({"conditions": conds} if conds else {}), **(status or {})}
    return obj


def pod(waiting: str | None = None, message: str = "", exit_code: int | None = None, started: float = T0 + 5) -> dict:
    container: dict[str, Any] = {"name": "pytorch", "state": {}}
    if waiting:
        container["state"] = {"waiting": {"reason": waiting, "message": message}}
    if exit_code is not None:
        container["state"] = {"terminated": {"exitCode": exit_code, "reason": "Error", "message": '{"loss": 9}'}}
    labels = {"training.kubeflow.org/replica-type": "master", "training.kubeflow.org/replica-index": "0"}
    owner = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": NAME, "uid": UID, "controller": True}
    return {
        "metadata": {"name": MASTER, "uid": "pod-uid", "labels": labels, "ownerReferences": [owner]},
        "status": {"startTime": clock.isoformat(started), "containerStatuses": [container]},
    }


UNSCHEDULABLE_POD = {
    "metadata": pod()["metadata"],
    "status": {
        "conditions": [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "0/3 nodes: Insufficient gpu",
            }
        ]
    },
}
SCALE_UP = {
    "reason": "TriggeredScaleUp",
    "message": "pod triggered scale-up: [{eks-gpu 1->2 (max: 4)}]",
    "lastTimestamp": clock.isoformat(T0 + 100),
    "involvedObject": {"name": MASTER, "uid": "pod-uid"},
}


@dataclass
class World:
    """What the cluster would answer each read with; ``asked`` records the reads, in order."""

    obj: dict | None
    again: dict | None = None
    pods: list[dict] | None = None  # None: the LIST fails
    events: list[dict] = field(default_factory=list)
    log: str = "Traceback: boom\n"
    asked: list[str] = field(default_factory=list)

    def answer(self, read: Read) -> Any:
        self.asked.append(read.what)
        if read.what == "again":
            return self.again
        if read.what == "pods":
            if self.pods is None:
                assert read.tolerant, "only a tolerant read may fail and leave the verdict standing"
                return None
            return JobPods(list(self.pods))
        if read.what == "events":
            return self.events
        return self.log


def look(world: World, at: float, loop: LoopState | None = None, settings: Settings = SETTINGS) -> Step:
    """The core's one pass, each read it asks for answered from ``world``: as a look drives it, minus the I/O."""
    return decide(step(loop or state(), world.obj, T0 + at, settings), world.answer)


# (id, world, seconds since submission, loop state overrides, phase, reason, reads asked)
ROWS = [
    ("not shown yet", World(None), 30, {}, Phase.PENDING, "NotVisibleYet", []),
    ("gone, on the second look too", World(None), 600, {"phase": "RUNNING"}, Phase.NOT_FOUND, "JobDeleted", ["again"]),
    ("one wrong 404", World(None, again=job("Created", "Running")), 600, {}, Phase.RUNNING, "PyTorchJobRunning",
     ["again"]),
    ("no status yet", World(job()), 100, {}, Phase.PENDING, "NoStatus", []),
    ("no operator", World(job()), 301, {}, Phase.FAILED, "OperatorNotReconciling", []),
    ("created, pods not read before 120 s", World(job("Created")), 100, {}, Phase.PENDING, "PyTorchJobCreated", []),
    ("created, pods fine", World(job("Created"), pods=[pod()]), 200, {}, Phase.PENDING, "PyTorchJobCreated", ["pods"]),
    ("waiting for gpus", World(job("Created"), pods=[UNSCHEDULABLE_POD], events=[SCALE_UP]), 200, {}, Phase.PENDING,
     "WaitingForCapacity", ["pods", "events"]),
    ("an image that does not exist, past its grace", World(job("Created"), pods=[pod(
     "ErrImagePull", 'rpc error: failed to pull "x:nope": not found')]), 200, {}, Phase.FAILED, "ErrImagePull",
     ["pods"]),
    ("running", World(job("Created", "Running")), 600, {"phase": "RUNNING"}, Phase.RUNNING, "PyTorchJobRunning", []),
    ("failed, with a log", World(job("Created", "Failed"), pods=[pod(exit_code=1)]), 900, {"phase": "RUNNING"},
     Phase.FAILED, "PyTorchJobFailed", ["pods", "log"]),
    ("succeeded", World(job("Created", "Succeeded"), pods=[pod(exit_code=0)]), 900, {"phase": "RUNNING"},
     Phase.SUCCEEDED, "PyTorchJobSucceeded", ["pods"]),
    ("succeeded, pods unreadable", World(job("Created", "Succeeded"), pods=None), 900, {"phase": "RUNNING"},
     Phase.SUCCEEDED, "PyTorchJobSucceeded", ["pods"]),
    ("being deleted", World(job("Created", "Running", deletionTimestamp=clock.isoformat(T0 + 500))), 600,
     {"phase": "RUNNING"}, Phase.STOPPED, "Deleting", []),
    ("past the deadline", World(job("Created", "Running")), 86400, {"phase": "RUNNING"}, Phase.TIMED_OUT,
     "DeadlineExceeded", []),
    ("ended at the deadline", World(job("Created", "Succeeded"), pods=[]), 86400, {"phase": "RUNNING"},
     Phase.SUCCEEDED, "PyTorchJobSucceeded", ["pods"]),
    ("no operator past the deadline", World(job()), 86400, {}, Phase.FAILED, "OperatorNotReconciling", []),
]  # fmt: skip


@pytest.mark.parametrize(
    ("world", "at", "loop", "phase", "reason", "reads"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS]
)
def test_one_look_decides(world, at, loop, phase, reason, reads):
    decided = look(world, at, state(**loop))
    new = decided.state
    assert (new.phase, new.reason) == (phase, reason)
    assert world.asked == reads
    assert new.terminal is phase.terminal and decided.outcome == phase.outcome
    assert new.polls == 1 and (decided.wait == 0) is phase.terminal
    assert seconds(new.noticedAt) == T0 + at if phase.terminal else new.noticedAt is None


def test_a_look_that_ends_the_run_keeps_what_the_pods_said():
    failed = look(World(job("Created", "Failed"), pods=[pod(exit_code=1)]), 900, state(phase="RUNNING")).state
    assert failed.logTail == "Traceback: boom\n" and failed.result == {"loss": 9}
    assert failed.diagnostics and failed.diagnostics[0]["exitCode"] == 1
    unreadable = look(World(job("Created", "Succeeded"), pods=None), 900, state(phase="RUNNING")).state
    assert unreadable.result is None and unreadable.diagnostics == []


def test_a_stuck_pod_is_timed_and_the_next_look_comes_when_it_could_be_failed():
    world = World(job("Created"), pods=[UNSCHEDULABLE_POD], events=[SCALE_UP])
    callback = Settings(completion_mode="callback")
    waiting = look(world, 200, settings=callback).state
    assert seconds(waiting.stuckSince) == T0 + 200
    # Waiting for capacity: 6 h of grace, so the pace (the shortest grace, 120 s, and its jitter) decides.
    assert 120 <= waiting.waitSeconds <= 132
    fine = look(World(job("Created"), pods=[pod()]), 400, waiting, callback).state
    assert fine.stuckSince is None  # the pods were checked and none is stuck any more


def test_a_job_that_is_not_ours_is_read_no_further():
    world = World(job("Created", "Failed", labels={"jobsync.io/execution": "someone-else"}), pods=[pod(exit_code=1)])
    with pytest.raises(NotOurJob):
        look(world, 900)
    assert world.asked == []


def test_the_phase_since_and_times_follow_the_job():
    running = look(World(job("Created", "Running")), 600, state()).state
    assert running.phase == Phase.RUNNING and seconds(running.phaseSince) == T0 + 600
    assert seconds(running.startedAt) == T0 + 60 and running.timesFrom == {"startedAt": "job"}
    again = look(World(job("Created", "Running")), 900, running).state
    assert again.phaseSince == running.phaseSince and again.polls == 2


def test_a_status_time_that_is_no_time_is_not_kept():
    garbled = job("Created", status={"startTime": "not a time"})
    garbled["apiVersion"], garbled["kind"] = "batch/v1", "Job"
    loop = state(job={**REF, "apiVersion": "batch/v1", "kind": "Job"}, phase="RUNNING")
    new = look(World(garbled, pods=[]), 600, loop, Settings(allowed_kinds="batch/v1/Job")).state
    assert new.startedAt is None or new.timesFrom.get("startedAt") == "polls"
    LoopState.model_validate(new.payload())  # the next look can read what this one wrote


def test_begin_is_the_first_state_and_its_wait():
    first = begin(
        job=state().job, execution=EXECUTION, cleanup="always", created=job(), timeout=3600, now=T0, settings=SETTINGS
    )
    assert (first.state.phase, first.state.reason, first.state.polls) == (Phase.PENDING, "NoStatus", 0)
    assert seconds(first.state.deadline) == T0 + 3600 and first.wait >= SETTINGS.wait.bounds.min_seconds


# (id, phase, seconds to the deadline, watch seconds, expected hold)
HOLDS = [
    ("running: the whole watch", Phase.RUNNING, 86400, 840, 840),
    ("pending: no longer than the pending wait", Phase.PENDING, 86400, 840, 60),
    ("unknown: as pending", Phase.UNKNOWN, 86400, 840, 60),
    ("never past the deadline", Phase.RUNNING, 100, 840, 100),
    ("an ended job is not watched", Phase.SUCCEEDED, 86400, 840, 0),
]


@pytest.mark.parametrize(("phase", "left", "watch", "hold"), [r[1:] for r in HOLDS], ids=[r[0] for r in HOLDS])
def test_a_watch_holds_as_the_wait_rules_say(phase, left, watch, hold):
    loop = state(deadline=clock.isoformat(T0 + 1000 + left))
    assert watch_hold(loop, phase, T0 + 1000, Settings(completion_mode="watch", watch_seconds=watch)) == hold


# (id, the object the GET returned, whether it ended, what was seen)
CLAIMS = [
    ("gone", None, True, "the job is gone"),
    ("succeeded", job("Created", "Succeeded"), True, "the job is SUCCEEDED"),
    ("failed", job("Created", "Failed"), True, "the job is FAILED"),
    ("being deleted", job("Created", "Running", deletionTimestamp=clock.isoformat(T0)), True, "the job is STOPPED"),
    ("still running: a stale event", job("Created", "Running"), False, "the job is RUNNING"),
    ("another's object", job("Created", "Succeeded", uid="other"), False, "the object is the name now belongs"),
]


@pytest.mark.parametrize(("obj", "is_over", "seen"), [c[1:] for c in CLAIMS], ids=[c[0] for c in CLAIMS])
def test_an_events_claim_is_checked_against_the_job(obj, is_over, seen):
    claim = verdict.ended(state(phase="RUNNING"), obj)
    assert claim.ended is is_over and claim.seen.startswith(seen)
