"""One Phase, and every copy of what it means held to it: the definitions' Outcome and IsDone, RunJobs'
map of error names, the template's event pattern, the command line's exit codes.

The state machine cannot import Python, so it spells the phase contract out again; these tests read the
real definitions and template and fail when one of them says something ``jobsync.core.outcome`` does not.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from jobsync.core import runs
from jobsync.core.event import RESUME_PATTERN, PhaseChanged
from jobsync.core.outcome import EVALUATED, JOB_ERRORS, OUTCOMES, TERMINAL, Phase
from jobsync_cli import follow
from tests.cfn import load_template

ROOT = Path(__file__).resolve().parents[2]
RUN_JOB = json.loads((ROOT / "statemachine" / "run_job.asl.json").read_text())
RUN_JOBS = (ROOT / "statemachine" / "run_jobs.asl.json").read_text()
OUTCOME_RULE = re.compile(r"^\{% \$states\.input\.phase = '([A-Z_]+)' %\}$")


def outcome_rules() -> dict[Phase, dict]:
    """The Outcome Choice's rules: the phase each compares with, and the state it goes to."""
    rules = {}
    for rule in RUN_JOB["States"]["Outcome"]["Choices"]:
        match = OUTCOME_RULE.match(rule["Condition"])
        assert match, rule["Condition"]
        rules[Phase(match.group(1))] = RUN_JOB["States"][rule["Next"]]
    return rules


def test_every_phase_has_one_outcome():
    assert set(OUTCOMES) == set(Phase)
    assert {p for p in Phase if p not in (Phase.NOT_FOUND, Phase.TIMED_OUT, Phase.ERROR)} == EVALUATED
    assert {Phase.SUCCEEDED, Phase.FAILED, Phase.STOPPED, Phase.NOT_FOUND, Phase.TIMED_OUT, Phase.ERROR} == TERMINAL


def test_the_definitions_outcome_ends_each_phase_as_the_phase_says():
    rules = outcome_rules()
    for phase, state in rules.items():
        assert phase.terminal, phase
        if phase.error_name is None:
            assert state["Type"] == "Succeed", phase
        else:
            assert (state["Type"], state["Error"]) == ("Fail", phase.error_name), phase
    # Every phase with an error name of its own has a rule; the others (ERROR) fail with the step's error.
    assert {p for p in Phase if p.error_name} | {Phase.SUCCEEDED} == set(rules)
    default = RUN_JOB["States"][RUN_JOB["States"]["Outcome"]["Default"]]
    assert default["Type"] == "Fail" and "$error.Error" in default["Error"]
    assert Phase.ERROR not in rules and Phase.ERROR.terminal and Phase.ERROR.error_name is None


def test_is_done_reads_the_loop_states_own_terminal():
    (first, *_rest) = RUN_JOB["States"]["IsDone"]["Choices"]
    assert first["Condition"] == "{% $states.input.terminal = true %}" and first["Next"] == "Cleanup"


def test_every_phase_the_definition_writes_comes_with_its_own_terminal():
    written = re.findall(r"'phase': '([A-Z_]+)', 'terminal': (true|false)", json.dumps(RUN_JOB))
    assert written, "the Catches set phase and terminal together"
    for phase, terminal in written:
        assert Phase(phase).terminal is (terminal == "true"), phase


def test_run_jobs_maps_each_childs_error_name_to_its_phase():
    (mapping,) = re.findall(r"\$phases := \{([^}]*)\}", RUN_JOBS)
    pairs = dict(re.findall(r"'(Job\w+)': '([A-Z_]+)'", mapping))
    assert pairs == {p.error_name: str(p) for p in Phase if p.error_name}
    (listed,) = re.findall(r"\$error in \[([^\]]*)\]", RUN_JOBS)
    assert set(re.findall(r"'(\w+)'", listed)) == set(JOB_ERRORS)


def test_run_jobs_outcomes_read_from_a_map_run_child_map_each_error_name_to_its_phase():
    assert {name: phase for name, phase in runs.PHASES.items() if name in JOB_ERRORS} == {
        p.error_name: str(p) for p in Phase if p.error_name
    }
    assert set(JOB_ERRORS) <= set(runs.PHASES)


def test_the_templates_resume_rule_matches_the_event_model():
    function = load_template()["Resources"]["ResumeFunction"]["Properties"]
    pattern = function["Events"]["JobEnded"]["Properties"]["Pattern"]
    assert pattern == RESUME_PATTERN
    # The pattern's terminal is the phase's: a NOT_FOUND event (a job deleted before it ended) resumes too.
    detail = {"executionArn": None, "phase": "NOT_FOUND", "terminal": True, "job": {}}
    event = PhaseChanged.model_validate({"source": "jobsync", "detail-type": "Job Phase Changed", "detail": detail})
    assert event.detail.terminal == event.detail.phase.terminal


@pytest.mark.parametrize("phase", [p for p in Phase if p.error_name])
def test_the_command_line_exits_with_the_phases_code(phase):
    assert follow.Outcome("FAILED", error=phase.error_name).exit_code == phase.exit_code
    assert phase.exit_code not in (follow.EXIT_BAD_INPUT, follow.EXIT_INTERRUPTED)


def test_a_run_that_succeeds_or_goes_on_exits_as_its_phase_says():
    assert follow.Outcome("SUCCEEDED").exit_code == Phase.SUCCEEDED.exit_code == 0
    assert follow.Outcome("RUNNING").exit_code == Phase.RUNNING.exit_code
    assert len({p.exit_code for p in TERMINAL}) == len(TERMINAL)  # each ending is told apart
