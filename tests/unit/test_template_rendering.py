"""S3 templates through the submit step: every template and parameter becomes plain JSON or a named refusal.

Each case goes through ``jobsync.run.submit.submit`` with a cluster that
records what it is asked to create, so a refusal is shown to create nothing.
"""

from __future__ import annotations

import json
import re
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from jobsync.errors import InvalidInput
from jobsync.run.inputs import SubmitRequest
from jobsync.run.submit import submit
from jobsync.settings import Settings

EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:jobsync-run-job:templated"
URI = "s3://jobsync-templates-123456789012/jobsync/templates/t.yaml"
MNIST = (Path(__file__).resolve().parents[2] / "events" / "templates" / "pytorch-mnist.yaml").read_text()
PARAMETERS = {"IMAGE": "docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727", "EPOCHS": 3, "WORKERS": 2}
HEAD = "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: x}\n"
POD = "{spec: {containers: [{name: c, image: '${IMAGE}'}]}}"


class RecordingCluster:
    """Records every create; nothing else is expected of it."""

    def __init__(self) -> None:
        self.created: list[dict[str, Any]] = []

    def create(self, spec, obj):
        self.created.append(obj)
        return {**obj, "metadata": {**obj["metadata"], "uid": "uid-1"}}

    def get(self, spec, namespace, name):
        raise AssertionError("not expected")


def run(template: str, parameters: dict[str, Any] | None = None, settings: Settings | None = None):
    cluster = RecordingCluster()
    request = SubmitRequest(
        execution=EXECUTION, jobTemplate=URI, parameters=PARAMETERS if parameters is None else parameters
    )
    submit(request, cluster, settings or Settings(), lambda uri: template)
    (created,) = cluster.created
    return created


def refused(template: str, parameters: dict[str, Any] | None = None, settings: Settings | None = None) -> str:
    cluster = RecordingCluster()
    request = SubmitRequest(
        execution=EXECUTION, jobTemplate=URI, parameters=PARAMETERS if parameters is None else parameters
    )
    with pytest.raises(InvalidInput) as caught:
        submit(request, cluster, settings or Settings(), lambda uri: template)
    assert cluster.created == [], "a refused template must create nothing"
    return str(caught.value)


def worker_template() -> str:
    return (
        HEAD + "spec:\n  pytorchReplicaSpecs:\n    Worker:\n      replicas: ${WORKERS}\n      template: " + POD + "\n"
    )


# --- the shipped template keeps working --------------------------------------------------


def test_the_shipped_template_renders_with_typed_values():
    job = run(MNIST)
    worker = job["spec"]["pytorchReplicaSpecs"]["Worker"]
    assert worker["replicas"] == 2  # a scalar that is exactly ${WORKERS} takes the parameter's JSON type
    container = worker["template"]["spec"]["containers"][0]
    assert container["image"] == PARAMETERS["IMAGE"]
    assert container["command"][-1] == "--epochs=3"  # inside a longer string: substituted as text


@pytest.mark.parametrize(
    ("scalar", "value", "expected"),
    [
        ("${V}", 2, 2),
        ("${V}", 2.5, 2.5),
        ("${V}", True, True),
        ("${V}", "2", "2"),  # a string parameter stays a string, even when it looks like a number
        ("${V}", "true", "true"),
        ("${V}", "2024-01-02", "2024-01-02"),
        ("'${V}'", 2, "2"),  # quoted in the template: always a string
        ('"${V}"', False, "false"),
        ("x-${V}-y", 7, "x-7-y"),
        ("${V}${V}", "ab", "abab"),
    ],
)
def test_a_placeholder_becomes_a_scalar_of_the_right_type(scalar, value, expected):
    job = run(HEAD + f"spec: {{value: {scalar}}}\n", {"V": value}, Settings(allow_privileged_pods=True))
    assert job["spec"]["value"] == expected


# --- defect 6: templates that crash or exhaust Submit ------------------------------------

BOMB = (
    HEAD
    + 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    + "".join(f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 9) + "]\n" for i in range(8))
    + "spec: {x: *i}\n"
)


def test_an_alias_bomb_is_refused_quickly_in_bounded_memory():
    assert len(BOMB) < 500
    tracemalloc.start()
    started = time.perf_counter()
    try:
        message = refused(BOMB, {})
    finally:
        elapsed = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert "jobTemplate" in message and "over the limit" in message, message
    assert elapsed < 2.0, f"{elapsed:.1f}s"
    assert peak < 20 * 1024 * 1024, f"{peak / 1e6:.0f} MB"


def test_a_merge_key_bomb_is_refused_quickly():
    merges = "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} {{<<: [" + ", ".join([f"*{chr(97 + i)}"] * 9) + "]}\n" for i in range(8)
    )
    template = HEAD + "a: &a {k: v}\n" + merges + "spec: {x: *i}\n"
    started = time.perf_counter()
    message = refused(template, {})
    assert time.perf_counter() - started < 2.0
    assert "jobTemplate" in message


def test_aliases_within_the_bounds_are_expanded_into_plain_json():
    template = (
        HEAD
        + "spec:\n  pytorchReplicaSpecs:\n    Master: &pod {replicas: 1, template: "
        + POD
        + "}\n    Worker: *pod\n"
    )
    job = run(template)
    replicas = job["spec"]["pytorchReplicaSpecs"]
    assert replicas["Master"] == replicas["Worker"]
    assert replicas["Worker"] is not replicas["Master"]  # plain JSON: no shared objects
    json.dumps(job)


@pytest.mark.parametrize("depth", [101, 3000])
def test_a_deeply_nested_template_is_refused_by_line(depth):
    message = refused(HEAD + "spec: {x: " + "[" * depth + "]" * depth + "}\n", {})
    assert "jobTemplate: line 4" in message and "nested deeper than 100" in message, message


def test_a_self_referencing_alias_is_refused():
    message = refused(HEAD + "spec: &s {x: [*s]}\n", {})
    assert "jobTemplate" in message and ("nested deeper" in message or "refers to itself" in message), message


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2024-01-02", "2024-01-02"),
        ("2001-12-14t21:59:43.10-05:00", "2001-12-14t21:59:43.10-05:00"),
        ("!!binary aGVsbG8=", None),
        ("!!set {a, b}", None),
        ("!!omap [a: 1]", None),
        ("!!pairs [a: 1]", None),
        ("!!timestamp 2024-01-02", None),
        ("!!python/object:os.system x", None),
        ("!!python/name:os.system ''", None),
        ("!local x", None),
        (".nan", None),
        ("-.inf", None),
    ],
)
def test_only_plain_json_values_come_out_of_a_template(value, expected):
    template = HEAD + f"spec:\n  value: {value}\n"
    if expected is not None:
        assert run(template, {}, Settings(allow_privileged_pods=True))["spec"]["value"] == expected
    else:
        message = refused(template, {})
        assert "jobTemplate: line 5, column 10" in message, message


@pytest.mark.parametrize("value", ["2024-01-02", "!!binary aGVsbG8=", "!!set {a, b}", "1:30"])
def test_a_parameter_that_looks_like_a_yaml_type_stays_a_string(value):
    job = run(HEAD + "spec: {v: ${V}, w: 'x ${V}'}\n", {"V": value}, Settings(allow_privileged_pods=True))
    assert job["spec"] == {"v": value, "w": f"x {value}"}


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_a_parameter_that_is_not_a_finite_number_is_refused(value):
    assert "parameters.V" in refused(HEAD + "spec: {v: ${V}}\n", {"V": value})


def test_the_size_limit_applies_to_the_template_and_to_the_result():
    settings = Settings(max_manifest_bytes=2048)
    message = refused(HEAD + "spec: {v: ${V}}\n# " + "x" * 4096 + "\n", {"V": 1}, settings)
    assert "jobTemplate: " in message and "over the limit of 2048" in message, message
    template = HEAD + "spec: {" + ", ".join(f"k{i}: ${{V}}" for i in range(40)) + "}\n"
    message = refused(template, {"V": "y" * 200}, settings)
    assert "over the limit of 2048" in message, message


def test_duplicate_keys_and_non_string_keys_are_refused_by_line():
    assert "jobTemplate: line 6, column 3: duplicate key" in refused(HEAD + "spec:\n  a: 1\n  a: 2\n", {})
    assert "jobTemplate: line 4, column 8: keys must be strings" in refused(HEAD + "spec: {1: a}\n", {})


def test_a_placeholder_in_a_key_is_refused():
    assert "placeholders may only stand in values" in refused(HEAD + "spec: {${V}: a}\n", {"V": "k"})


def test_missing_parameters_are_named():
    message = refused(worker_template(), {"IMAGE": "busybox"})
    assert "parameters: missing values for placeholders ['WORKERS'] in jobTemplate" in message


# --- defect 7: every line break YAML honours ---------------------------------------------

INJECTION = "serviceAccountName: admin\nautomountServiceAccountToken: true\nnodeName: control-plane"


@pytest.mark.parametrize(
    "brk", ["\n", "\r", "\r\n", "\x85", "\u2028", "\u2029", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"]
)
def test_a_parameter_with_any_line_break_is_refused(brk):
    value = "busybox" + brk + INJECTION.replace("\n", brk)
    message = refused(MNIST, {**PARAMETERS, "IMAGE": value}, Settings(allow_privileged_pods=True))
    assert "parameters.IMAGE: values must be a single line" in message


@pytest.mark.parametrize(
    "value", ["busybox: {privileged: true}", "a, b]: c", "x # y", "'q'", '"q', "{a: 1}", "- a", "&x *y !z |"]
)
def test_a_single_line_value_can_never_add_structure(value):
    job = run(MNIST, {**PARAMETERS, "IMAGE": value})
    for role in ("Master", "Worker"):
        spec = job["spec"]["pytorchReplicaSpecs"][role]["template"]["spec"]
        assert list(spec) == ["containers"]
        assert spec["containers"][0]["image"] == value
        assert set(spec["containers"][0]) == {"name", "image", "command"}


# --- defect 8: a template's secrets never reach the error --------------------------------

TOKEN = "ghp_FAKEtoken0123456789abcdefFAKEtoken01"


@pytest.mark.parametrize(
    "bad",
    [
        # A parse error whose snippet would quote the line after the bad value.
        "spec:\n  value: [unclosed\n  registry: {auth: " + TOKEN + "}\n",
        "spec:\n  a: b: c  # " + TOKEN + "\n",
        "spec:\n  x: !!binary " + TOKEN + "\n",
        "spec:\n  x: !" + TOKEN + " y\n",
        'spec:\n  x: "\\q ' + TOKEN + '"\n',
        "spec:\n  x: *" + TOKEN + "\n",
        "spec:\n  " + TOKEN + ": 1\n  " + TOKEN + ": 2\n",
        "spec:\n  x: 1\n\t" + TOKEN + "\n",
        "spec:\n  x: " + TOKEN + "\x07\n",
    ],
)
def test_a_yaml_error_names_the_line_and_never_echoes_the_template(bad):
    message = refused(HEAD + bad, {})
    assert TOKEN not in message and TOKEN[:12] not in message, message
    assert re.search(r"^jobTemplate: (not valid YAML: )?line \d+, column \d+: ", message), message
