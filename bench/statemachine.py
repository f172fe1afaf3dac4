"""What one execution costs in Step Functions, read off the state machine definitions.

Standard workflows bill one state transition per state entered, and an
execution ends when its history reaches 25,000 events. Both follow from the
path an execution takes through the definition, so the path is walked here
rather than counted by hand: ``CostModel.from_definition`` walks an execution
that polls once, twice and three times, and takes the fixed and the per-poll
part from the difference (checking that the cost really is linear in polls).
The one walk (``walk``) serves every machine: poll mode and the seed loop
poll, callback mode's Awaits time out to a poll until the event resumes one.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobsync.core.outcome import Phase

ROOT = Path(__file__).resolve().parent.parent
JOBSYNC_DEFINITION = ROOT / "statemachine" / "run_job.asl.json"
JOBSYNC_POLL_STATE = "Status"
HISTORY_CAP = 25_000

# History events each state type writes when it runs once and succeeds:
#   Task    TaskStateEntered, TaskScheduled, TaskStarted, TaskSucceeded, TaskStateExited
#   Wait    WaitStateEntered, WaitStateExited (and Choice, Pass, Succeed alike)
#   Fail    FailStateEntered (the ExecutionFailed that follows is the execution's own)
# A task that waits for a task token also writes TaskSubmitted (its Lambda answered; the wait begins),
# and ends in TaskSucceeded or, at its timeout, TaskTimedOut.
HISTORY_EVENTS_PER_STATE = {"Task": 5, "Wait": 2, "Choice": 2, "Pass": 2, "Succeed": 2, "Fail": 1}
TOKEN_WAIT_EXTRA_EVENTS = 1
EXECUTION_EVENTS = 2  # ExecutionStarted, and ExecutionSucceeded or ExecutionFailed
LAMBDA_RESOURCES = ("arn:aws:states:::lambda:invoke", "arn:aws:lambda:")

# The hand-written loop jobsync replaces, as the seed article builds it:
# create the PyTorchJob (there through a ConfigMap-templated Kubernetes Job, one
# eks:runJob.sync Task), take its name (Pass), then GET (eks:call) -> Choice on the
# conditions -> Pass -> Wait 600 s -> GET ... The article's Choice tests
# conditions[0..4].type with JSONPath rules; one JSONata condition per outcome here
# enters the same states, so it costs the same transitions and events.
SEED_600: dict[str, Any] = {
    "Comment": "The seed's fixed 600 s eks:call loop (reconstructed for counting, never deployed).",
    "QueryLanguage": "JSONata",
    "StartAt": "Create Training Job",
    "States": {
        "Create Training Job": {
            "Type": "Task",
            "Resource": "arn:aws:states:::eks:runJob.sync",
            "Next": "Get Training Job Name",
        },
        "Get Training Job Name": {"Type": "Pass", "Next": "Query Training Job Status"},
        "Query Training Job Status": {
            "Type": "Task",
            "Resource": "arn:aws:states:::eks:call",
            "Next": "Evaluate Job Completion",
        },
        "Evaluate Job Completion": {
            "Type": "Choice",
            "Choices": [
                {
                    "Condition": "{% 'Succeeded' in $states.input.ResponseBody.items[0].status.conditions.type %}",
                    "Next": "Training Completed Successfully",
                },
                {
                    "Condition": "{% 'Failed' in $states.input.ResponseBody.items[0].status.conditions.type %}",
                    "Next": "Training Failed",
                },
            ],
            "Default": "Prepare Next Query",
        },
        "Prepare Next Query": {"Type": "Pass", "Next": "Wait Polling Interval"},
        "Wait Polling Interval": {"Type": "Wait", "Seconds": 600, "Next": "Query Training Job Status"},
        "Training Completed Successfully": {"Type": "Succeed"},
        "Training Failed": {"Type": "Fail", "Error": "TrainingFailed"},
    },
}
SEED_POLL_STATE = "Query Training Job Status"


def states_entered(history: Iterable[dict[str, Any]]) -> int:
    """State transitions an execution was billed for: one per state entered (``*StateEntered`` events).

    Read off an execution history (GetExecutionHistory's events); a Map's history holds its iterations' states too.
    """
    return sum(1 for event in history if event["type"].endswith("StateEntered"))


def load_jobsync_definition(path: Path = JOBSYNC_DEFINITION) -> dict[str, Any]:
    return json.loads(path.read_text())


def _choose(state: dict[str, Any], phase: str) -> str:
    """The branch a Choice takes for ``phase``: the first rule whose condition names it.

    Conditions in both definitions compare the phase (or condition type) with
    quoted literals, e.g. ``phase = 'SUCCEEDED'``; jobsync's IsDone reads ``terminal``.
    A condition that compares two literals and reads no input (the substituted
    ``'${CompletionMode}' = 'callback'``) is decided as written.
    """
    for rule in state.get("Choices", []):
        condition = rule.get("Condition", "")
        literals = re.findall(r"'([A-Za-z_]+)'", condition)
        if "$states" not in condition and len(literals) == 2:
            if literals[0] == literals[1]:
                return str(rule["Next"])
            continue
        if "$type($states.input)" in condition:  # CheckInput: the benchmark's inputs are objects
            return str(rule["Next"])
        if "$states.input.terminal" in condition:  # jobsync's IsDone: the loop state's own verdict
            if phase.upper() in Phase.__members__ and Phase(phase.upper()).terminal:
                return str(rule["Next"])
            continue
        if phase.upper() in {word.upper() for word in literals}:
            return str(rule["Next"])
    return str(state["Default"])


CALLBACK_WAIT_RESOURCE = "waitForTaskToken"
COMPLETION_MODE = "${CompletionMode}"


def with_completion_mode(definition: dict[str, Any], mode: str) -> dict[str, Any]:
    """The definition as the stack deploys it with CompletionMode ``mode`` (a template substitution)."""
    return json.loads(json.dumps(definition).replace(COMPLETION_MODE, mode))


def _waits_for_token(state: dict[str, Any]) -> bool:
    return str(state.get("Resource", "")).endswith(CALLBACK_WAIT_RESOURCE)


def _timeout_catcher(state: dict[str, Any]) -> str:
    return str(next(c["Next"] for c in state["Catch"] if "States.Timeout" in c["ErrorEquals"]))


def walk(definition: dict[str, Any], poll_state: str, phases: Sequence[str], initial: str = "PENDING") -> list[str]:
    """The states an execution enters when its looks at the job see ``phases`` in turn (the last one ends it).

    A look is a poll (``poll_state`` takes the next phase), except the last one
    in callback mode: a task that waits for a task token (``Await``) times out
    to its ``States.Timeout`` catcher while more than one phase is left, so the
    poll after it looks; the last phase comes with the notifier's event, which
    wakes the task (SendTaskSuccess with the loop state it stored, the job not
    ended in it) to its Next; the execution then waits again, and that wait's
    own look sees the end and resumes it to its Next (``jobsync.run.callback``).
    A definition without such a task (poll mode, the seed) only polls.
    """
    states = definition["States"]
    name, phase, left = definition["StartAt"], initial, list(phases)
    woken = False
    path: list[str] = []
    for _ in range(100 * (len(phases) + 10)):
        state = states[name]
        path.append(name)
        if name == poll_state:
            phase = left.pop(0)
        if state["Type"] in ("Succeed", "Fail") or state.get("End"):
            return path
        if state["Type"] == "Choice":
            name = _choose(state, phase)
        elif _waits_for_token(state) and len(left) > 1:
            name = _timeout_catcher(state)
        elif _waits_for_token(state) and not woken:
            woken, name = True, state["Next"]  # the event's wake: the state it hands over has not ended
        elif _waits_for_token(state):
            phase, name = left.pop(0), state["Next"]  # the woken wait's look saw the end
        else:
            name = state["Next"]
    raise RuntimeError(f"no end state reached from {definition['StartAt']!r}: is the loop's exit reachable?")


def history_events(definition: dict[str, Any], path: Iterable[str]) -> int:
    states = definition["States"]
    written = [states[name] for name in path]
    extra = sum(TOKEN_WAIT_EXTRA_EVENTS for state in written if _waits_for_token(state))
    return EXECUTION_EVENTS + extra + sum(HISTORY_EVENTS_PER_STATE[state["Type"]] for state in written)


def lambda_invocations(definition: dict[str, Any], path: Iterable[str]) -> int:
    """The Lambda tasks entered, and the resume function once for the event that woke a task-token wait
    (EventBridge invokes it, not the definition): the first such wait that went on to its Next, not to its
    timeout catcher (the next one is resumed by its own look)."""
    states = definition["States"]
    names = list(path)
    tasks = sum(1 for name in names if str(states[name].get("Resource", "")).startswith(LAMBDA_RESOURCES))
    woken = any(
        _waits_for_token(states[name]) and after == states[name]["Next"] for name, after in itertools.pairwise(names)
    )
    return tasks + int(woken)


@dataclass(frozen=True)
class CostModel:
    """Per-execution cost as ``fixed + per_poll * polls`` (polls: looks at the job, the last one sees it end;
    in callback mode the timed-out Awaits' polls and the event's resume)."""

    machine: str
    loop: tuple[str, ...]  # the states one more poll enters, in order
    fixed_path: tuple[str, ...]  # an execution that polls once
    transitions_per_poll: int
    transitions_fixed: int
    events_per_poll: int
    events_fixed: int
    lambda_per_poll: int
    lambda_fixed: int

    @classmethod
    def from_definition(
        cls,
        machine: str,
        definition: dict[str, Any],
        poll_state: str,
        running: str = "RUNNING",
        done: str = "SUCCEEDED",
    ) -> CostModel:
        """Walk executions that look once, twice and three times (``walk``); fixed and per-look parts
        from the differences. In callback mode a look is a timed-out Await's poll, and the last one the
        event's resume (with the resume function among the Lambda invocations)."""
        paths = [walk(definition, poll_state, [running] * extra + [done]) for extra in range(3)]
        transitions = [len(p) for p in paths]
        events = [history_events(definition, p) for p in paths]
        lambdas = [lambda_invocations(definition, p) for p in paths]
        for series in (transitions, events, lambdas):
            if series[2] - series[1] != series[1] - series[0]:
                raise ValueError(f"{machine}: cost is not linear in polls: {series}")
        # The states between the first two polls (callback mode's last look is no poll: three looks, two polls).
        first, second = [i for i, name in enumerate(paths[2]) if name == poll_state][:2]
        return cls(
            machine=machine,
            loop=tuple(paths[2][first + 1 : second + 1]),
            fixed_path=tuple(paths[0]),
            transitions_per_poll=transitions[1] - transitions[0],
            transitions_fixed=2 * transitions[0] - transitions[1],
            events_per_poll=events[1] - events[0],
            events_fixed=2 * events[0] - events[1],
            lambda_per_poll=lambdas[1] - lambdas[0],
            lambda_fixed=2 * lambdas[0] - lambdas[1],
        )

    def transitions(self, polls: float) -> float:
        return self.transitions_fixed + self.transitions_per_poll * polls

    def events(self, polls: float) -> float:
        return self.events_fixed + self.events_per_poll * polls

    def lambda_invocations(self, polls: float) -> float:
        return self.lambda_fixed + self.lambda_per_poll * polls

    def max_polls(self, cap: int = HISTORY_CAP) -> int:
        """The most polls an execution can make before its history passes ``cap`` events."""
        return (cap - self.events_fixed) // self.events_per_poll

    def summary(self) -> dict[str, Any]:
        return {
            "states_per_poll": list(self.loop),
            "execution_that_polls_once": list(self.fixed_path),
            "transitions_per_poll": self.transitions_per_poll,
            "transitions_fixed": self.transitions_fixed,
            "history_events_per_poll": self.events_per_poll,
            "history_events_fixed": self.events_fixed,
            "lambda_invocations_per_poll": self.lambda_per_poll,
            "lambda_invocations_fixed": self.lambda_fixed,
            "max_polls_within_history_cap": self.max_polls(),
        }


def cost_models() -> dict[str, CostModel]:
    """The machines the policies run on: jobsync's definition in poll and in callback mode, and the seed loop."""
    definition = load_jobsync_definition()
    return {
        "jobsync": CostModel.from_definition("jobsync", with_completion_mode(definition, "poll"), JOBSYNC_POLL_STATE),
        "seed": CostModel.from_definition("seed", SEED_600, SEED_POLL_STATE),
        "callback": CostModel.from_definition(
            "callback", with_completion_mode(definition, "callback"), JOBSYNC_POLL_STATE
        ),
    }
