"""The history budget in every completion mode, at the worst settings the template allows, to the deadline.

Through the real state machine on virtual time: SafetyPollSeconds at its minimum
(60 s), WatchSeconds at its shortest (60 s), the longest deadline an input may
ask for (MaxTimeoutSeconds' default, 30 days), and a healthy job that runs
until two hours before it. Callback mode runs without a notifier (and, with the
sweeper's settings, without its schedule: every wait is the Await's backstop),
so every round is an Await that times out and one Status poll: the most a round can cost. The
execution must succeed, under 25,000 history events (the local run fails it at
25,000 as AWS does), and each look must cost what the policy budgets for it.
"""

from __future__ import annotations

import collections
import itertools

import pytest

from harness.local import LocalJobsync
from jobsync import clock
from jobsync.core.wait import LOOK_EVENTS
from tests.support.lambdas import QUIET, load_event

DAY = 86_400
DEADLINE = 30 * DAY
HISTORY_LIMIT = 25_000
MODES = {
    "poll": {},
    "watch": {"JOBSYNC_COMPLETION_MODE": "watch", "JOBSYNC_WATCH_SECONDS": "60"},
    "callback": {"JOBSYNC_COMPLETION_MODE": "callback", "JOBSYNC_SAFETY_POLL_SECONDS": "60"},
    # The stack's sweeper, dead as well as the notifier: every round is the Await's backstop, here an hour (the
    # template's is 6 h; tests/unit/test_look_budget.py holds the shortest, 60 s, to the budget up to a year).
    "sweeper": {
        "JOBSYNC_COMPLETION_MODE": "callback",
        "JOBSYNC_SWEEP_SECONDS": "120",
        "JOBSYNC_BACKSTOP_SECONDS": "3600",
    },
}
LOOKS_AS = {"poll": "poll", "watch": "watch", "callback": "callback", "sweeper": "callback"}


def look_lengths(types: list[str]) -> collections.Counter[int]:
    """How many events lie between one IsDone and the next: one look each, after Submit's."""
    choices = [i for i, t in enumerate(types) if t == "ChoiceStateEntered"]
    return collections.Counter(b - a for a, b in itertools.pairwise(choices[:-1]))


@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_healthy_job_to_the_longest_deadline_keeps_the_history_budget(mode):
    timings = {"pending_s": 60, "run_s": DEADLINE - 2 * 3600 - 60}
    env = {**QUIET, **MODES[mode]}
    with LocalJobsync("success", timings, env=env, notifier=False, sweeper=False, max_step=600) as local:
        assert local.sfn
        # Nothing answers a token here (no notifier): a wait moves time to its timeout in one step.
        local.sfn.callback_step_seconds = float(DEADLINE)
        execution_input = {**load_event("run-job-input.json"), "timeoutSeconds": DEADLINE}
        result = local.run(execution_input, name=f"budget-{mode}", timeout_s=1800)
        types = local.sfn.history_types(result.execution_arn)
    assert result.status == "SUCCEEDED", (result.error, result.cause)
    assert result.output["phase"] == "SUCCEEDED"
    assert len(types) < HISTORY_LIMIT
    # The looks spread to the deadline: the job's end two hours before it was seen before it.
    noticed = clock.parse(result.output["noticedAt"]) - clock.parse(result.output["finishedAt"])
    assert 0 <= noticed < 2 * 3600
    lengths = look_lengths(types)
    assert lengths.most_common(1)[0][0] == LOOK_EVENTS[LOOKS_AS[mode]], lengths  # what a look costs, as budgeted
