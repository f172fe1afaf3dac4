"""Properties of the evaluator over generated input (hypothesis).

- Permuting the conditions of a real payload never changes the evaluation.
- Adding conditions whose status is not True, or whose type the family does
  not know, never changes it.
- Any JSON value given to evaluate(), unwrap_event()/evaluate_event() or the
  CLI core raises nothing but EvaluationError (the CLI core: nothing at all).
"""

from __future__ import annotations

import contextlib
import json
from datetime import UTC

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobsync import evaluate
from jobsync.errors import EvaluationError
from jobsync.evaluation import kinds
from jobsync.evaluation.evaluator import evaluate_event, unwrap_event
from jobsync_cli.main import evaluate_text
from tests.payloads import load_payload

# Condition-based payloads and the condition types their family reads.
_KUBEFLOW = {"Created", "Running", "Restarting", "Succeeded", "Failed", "Suspended"}
_TRAINER = {"Created", "Complete", "Failed", "Suspended"}
_BATCH = {"Complete", "Failed", "Suspended", "SuccessCriteriaMet", "FailureTarget"}
_ACK = {"ACK.Terminal", "ACK.Recoverable", "ACK.ResourceSynced"}
_JOBSET = {"Completed", "Failed", "Suspended", "RestartingJobSet", "StartupPolicyInProgress", "StartupPolicyCompleted"}
CONDITION_PAYLOADS = {
    "kubeflow_v1/pytorchjob_succeeded_hyperpod.yaml": _KUBEFLOW,
    "kubeflow_v1/pytorchjob_succeeded_at_index5.yaml": _KUBEFLOW,
    "kubeflow_v1/pytorchjob_failed_after_restarting.yaml": _KUBEFLOW,
    "kubeflow_v1/pytorchjob_restarting.yaml": _KUBEFLOW,
    "kubeflow_v1/pytorchjob_resumed.yaml": _KUBEFLOW,
    "kubeflow_v1/pytorchjob_suspended_after_running.yaml": _KUBEFLOW,
    "kubeflow_v1/pytorchjob_created.yaml": _KUBEFLOW,
    "kubeflow_v1/tfjob_succeeded.yaml": _KUBEFLOW,
    "kubeflow_v1/paddlejob_succeeded.yaml": _KUBEFLOW,
    "trainer_v2/trainjob_complete.yaml": _TRAINER,
    "trainer_v2/trainjob_resumed_complete.yaml": _TRAINER,
    "trainer_v2/trainjob_suspended.yaml": _TRAINER,
    "trainer_v2/trainjob_running.yaml": _TRAINER,
    "batch/job_complete.yaml": _BATCH,
    "batch/job_failed.yaml": _BATCH,
    "batch/job_failure_target.yaml": _BATCH,
    "batch/job_suspended.yaml": _BATCH,
    "ack/trainingjob_terminal.yaml": _ACK,
    "ack/trainingjob_inprogress.yaml": _ACK,
    "trainer_v2/trainjob_progress_e2e.yaml": _TRAINER,
    "jobset/jobset_completed.yaml": _JOBSET,
    "jobset/jobset_failed_jobs.yaml": _JOBSET,
    "jobset/jobset_reached_max_restarts.yaml": _JOBSET,
    "jobset/jobset_restarting.yaml": _JOBSET,
    "jobset/jobset_suspended.yaml": _JOBSET,
    "jobset/jobset_startup_in_progress.yaml": _JOBSET,
    "mpi_operator/mpijob_succeeded_readme.yaml": _KUBEFLOW,
    "mpi_operator/mpijob_launcher_failed.yaml": _KUBEFLOW,
    "mpi_operator/mpijob_suspended.yaml": _KUBEFLOW,
}
ALL_KNOWN_TYPES = _KUBEFLOW | _TRAINER | _BATCH | _ACK | _JOBSET

timestamps = st.datetimes(timezones=st.just(UTC)).map(lambda d: d.strftime("%Y-%m-%dT%H:%M:%SZ"))


def _condition(types: st.SearchStrategy[str], statuses: st.SearchStrategy) -> st.SearchStrategy[dict]:
    return st.fixed_dictionaries(
        {"type": types, "status": statuses},
        optional={"reason": st.text(max_size=20), "message": st.text(max_size=40), "lastTransitionTime": timestamps},
    )


not_true = st.sampled_from(["False", "Unknown", "", "true", "TRUE", False, None, 0])
unknown_types = st.text(min_size=1, max_size=20).filter(lambda t: t not in ALL_KNOWN_TYPES)
# A condition that must not count: a known type with a status other than True,
# or a type the family does not read, whatever its status.
irrelevant_conditions = st.one_of(
    _condition(st.sampled_from(sorted(ALL_KNOWN_TYPES)), not_true),
    _condition(unknown_types, st.sampled_from(["True", "False", "Unknown", True])),
)


@settings(max_examples=40)
@given(data=st.data(), name=st.sampled_from(sorted(CONDITION_PAYLOADS)))
def test_permuting_conditions_never_changes_the_evaluation(data, name):
    obj = load_payload(name)
    expected = evaluate(obj)

    obj["status"]["conditions"] = data.draw(st.permutations(obj["status"]["conditions"]))

    assert evaluate(obj) == expected


@settings(max_examples=60)
@given(data=st.data(), name=st.sampled_from(sorted(CONDITION_PAYLOADS)))
def test_adding_false_or_unknown_conditions_never_changes_the_evaluation(data, name):
    obj = load_payload(name)
    expected = evaluate(obj)
    conditions = obj["status"]["conditions"]

    for extra in data.draw(st.lists(irrelevant_conditions, min_size=1, max_size=6)):
        conditions.insert(data.draw(st.integers(0, len(conditions))), extra)

    assert evaluate(obj) == expected


# --- arbitrary input -----------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=30,
)
registered = st.sampled_from([(k.api_version, k.kind) for k in kinds.KINDS])
status_fields = st.sampled_from(
    [
        "conditions",
        "jobsStatus",
        "active",
        "startTime",
        "trainingJobStatus",
        "hyperParameterTuningJobStatus",
        "transformJobStatus",
        "processingJobStatus",
        "endpointStatus",
        "hostingAutoscalingPolicyStatus",
        "additional",
        "secondaryStatus",
        "failureReason",
        "lastCheckTime",
        "lastModifiedTime",
        # JobSet, RayJob, SparkApplication, Volcano Job, TrainJob's progress
        "replicatedJobsStatus",
        "terminalState",
        "restarts",
        "jobDeploymentStatus",
        "jobStatus",
        "reason",
        "message",
        "rayJobInfo",
        "rayClusterName",
        "endTime",
        "applicationState",
        "terminationTime",
        "state",
        "failed",
        "trainerStatus",
    ]
)
condition_like = st.dictionaries(
    st.sampled_from(["type", "status", "reason", "message", "lastTransitionTime"]),
    st.sampled_from([*sorted(ALL_KNOWN_TYPES), "True", "False"]) | json_values,
)
statuses = st.one_of(
    json_values,
    st.dictionaries(status_fields, json_values | st.lists(condition_like, max_size=5), max_size=6),
)


@st.composite
def kind_shaped(draw) -> dict:
    """Objects of registered kinds with arbitrary status and metadata: they reach the evaluators."""
    api_version, kind = draw(registered)
    obj = {"kind": kind, "status": draw(statuses)}
    if api_version is not None:
        obj["apiVersion"] = api_version
    if draw(st.booleans()):
        obj["metadata"] = draw(st.dictionaries(st.sampled_from(["name", "deletionTimestamp"]), json_values))
    return obj


anything = st.one_of(json_values, kind_shaped())


def _only_evaluation_error(call, value):
    with contextlib.suppress(EvaluationError):
        call(value)


@settings(max_examples=400)
@given(anything)
def test_evaluate_raises_only_evaluation_error(value):
    try:
        result = evaluate(value)
    except EvaluationError:
        return
    json.dumps(result.to_dict())  # always serialisable


@settings(max_examples=300)
@given(
    st.one_of(
        anything,
        anything.map(lambda v: {"object": v}),
        anything.map(lambda v: {"ResponseBody": v}),
        st.lists(anything, max_size=3).map(lambda items: {"ResponseBody": {"kind": "JobList", "items": items}}),
        st.lists(anything, max_size=3).map(lambda items: {"ResponseBody": {"items": items}}),
    )
)
def test_unwrapping_raises_only_evaluation_error(event):
    _only_evaluation_error(unwrap_event, event)
    _only_evaluation_error(evaluate_event, event)


@settings(max_examples=300)
@given(st.one_of(st.text(max_size=200), anything.map(json.dumps)))
def test_cli_core_never_raises(text):
    code, result = evaluate_text(text)

    assert code in (0, 2)
    assert ("error" in result) == (code == 2)
    json.dumps(result)


@pytest.mark.parametrize(
    "text",
    [
        "[" * 5000,  # deeper than the bound (and than the YAML parser can go)
        "lastTransitionTime: 2019-13-45T00:00:00Z",  # a YAML timestamp that is no date
        "? [a, b]\n: c",  # an unhashable key
        "a: !!python/object:os.system ls",  # safe_load refuses
        "--- 1\n--- 2",  # two documents
    ],
)
def test_cli_core_refuses_awkward_yaml(text):
    code, result = evaluate_text(text)

    assert code == 2
    assert result["error"] in {"unparseable", "cannot evaluate", "too deep"}
