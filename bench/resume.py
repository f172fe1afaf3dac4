"""What Resume's choice costs: it wakes the execution for a look, rather than trusting the event's verdict.

One callback-mode job runs through the local service (the real state machine,
handlers and notifier process, on virtual time); its execution history and the
local API's request log give what the job's end cost: the states entered and
history events from the event to the execution's end, the Lambda invocations,
and the Kubernetes requests of the Resume function and the look it woke. The
alternative, Resume ending the wait with the event's verdict (read off the
same definition: ``bench.statemachine.walk`` without the wake), is the
baseline the difference is given against. Why wake: docs/state-machine.md,
"Callback mode".
"""

from __future__ import annotations

import contextlib
import io
from typing import Any

from bench.statemachine import (
    JOBSYNC_POLL_STATE,
    history_events,
    lambda_invocations,
    load_jobsync_definition,
    walk,
    with_completion_mode,
)
from tests.support.lambdas import QUIET, load_event

TIMINGS = {"pending_s": 60, "run_s": 1800}
CALLBACK = {**QUIET, "JOBSYNC_COMPLETION_MODE": "callback"}
# What a Resume that trusted the event would still read at a success: the leading pod's termination
# message, the run's result (the event carries none).
TRUSTED_REQUESTS = {"list pods": 1}


def trusting_the_event() -> dict[str, int]:
    """The same job's end if the event's SendTaskSuccess ended the wait: the definition walked without the wake."""
    definition = with_completion_mode(load_jobsync_definition(), "callback")
    woken = walk(definition, JOBSYNC_POLL_STATE, ["SUCCEEDED"])
    trusted = woken[: woken.index("Await") + 1] + woken[woken.index("Await") + 3 :]  # no second Await, IsDone
    return {
        "transitions": len(woken) - len(trusted),
        "history_events": history_events(definition, woken) - history_events(definition, trusted),
        "lambda_invocations": lambda_invocations(definition, woken) - lambda_invocations(definition, trusted),
    }


def measure() -> dict[str, Any]:
    """One callback job to its end in the local run; what its end cost, by part."""
    from harness.local import LocalJobsync  # moto: only when this measurement runs

    with contextlib.redirect_stdout(io.StringIO()), LocalJobsync("success", TIMINGS, env=CALLBACK) as local:
        assert local.sfn and local.api
        result = local.run(load_event("run-job-input.json"), name="bench-resume", timeout_s=120)
        if result.status != "SUCCEEDED":
            raise RuntimeError(f"the callback run ended {result.status}: {result.cause}")
        history = local.sfn.history(result.execution_arn)
        resumes = [c for c in local.sfn.invocations if c.function_name == "jobsync-resume" and c.result]
        woke = next(c for c in resumes if c.result["resumed"])
        # From the wake on: the Resume function's check, then the woken wait's look (the notifier's
        # lists and watches of the jobs are not the run's).
        notifiers = ("list", "watch")
        after = [
            r
            for r in local.api.requests
            if r.at is not None and r.at >= woke.at and not (r.verb in notifiers and r.resource == "pytorchjobs")
        ]
        woken_at = next(i for i, e in enumerate(history) if e["type"] == "TaskSucceeded" and _after(e, woke.at))
        tail = history[woken_at:]
    requests: dict[str, int] = {}
    for record in after:
        key = f"{record.verb} {record.resource}"
        requests[key] = requests.get(key, 0) + 1
    return {
        "choice": "wake: Resume checks the claim with one GET, the woken wait's look gives the verdict",
        "job_end": {
            "states_entered": sum(1 for e in tail if e["type"].endswith("StateEntered")),
            "history_events": len(tail),
            "kubernetes_requests": dict(sorted(requests.items())),
        },
        "more_than_trusting_the_event": {
            **trusting_the_event(),
            "kubernetes_requests": sum(requests.values()) - sum(TRUSTED_REQUESTS.values()),
        },
    }


def _after(event: dict[str, Any], at: float) -> bool:
    return bool(event["timestamp"].timestamp() >= at)
