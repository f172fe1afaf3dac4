"""Hostile S3 templates and parameters through the real submit handler: refused by name, nothing created.

The same local Kubernetes API and moto S3 as tests/integration/test_bad_inputs.py;
no request may reach the API, and the error (what the execution's Cause
shows) names the line or the parameter without quoting the template.
"""

from __future__ import annotations

import time

import boto3
import pytest
from moto import mock_aws

from harness.kubeapi import KubeAPI
from harness.local import load_handler, pytorchjob_crd
from jobsync import cluster, runtime
from tests.support.lambdas import EVENTS, FakeLambdaContext, load_event

BUCKET, PREFIX = "jobsync-templates-123456789012", "jobsync/templates/"
PYTORCHJOBS = ("kubeflow.org", "v1", "pytorchjobs")
MNIST = (EVENTS / "templates" / "pytorch-mnist.yaml").read_text()
HEAD = "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: x}\n"
ONE_LINE = "parameters.IMAGE: values must be a single line"
TOKEN = "ghp_FAKEtoken0123456789abcdefFAKEtoken01"
TEMPLATES = {
    "bomb.yaml": HEAD
    + 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    + "".join(f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 9) + "]\n" for i in range(8))
    + "spec: {x: *i}\n",
    "deep.yaml": HEAD + "spec: {x: " + "[" * 3000 + "]" * 3000 + "}\n",
    "binary.yaml": HEAD + "spec:\n  x: !!binary aGVsbG8=\n",
    "leaky.yaml": HEAD + "spec:\n  value: [unclosed\n  registry: {auth: " + TOKEN + "}\n",
    "host-process.yaml": MNIST.replace(
        "            - name: pytorch\n",
        "            - name: pytorch\n              securityContext: {windowsOptions: {hostProcess: true}}\n",
        1,
    ),
}
CASES = {
    "alias-bomb": ({"/jobTemplate": "bomb.yaml", "/parameters": {}}, "jobTemplate: line 4, column 20: expands"),
    "nested-3000-deep": ({"/jobTemplate": "deep.yaml", "/parameters": {}}, "jobTemplate: line 4, column "),
    "binary-tag": (
        {"/jobTemplate": "binary.yaml", "/parameters": {}},
        "jobTemplate: line 5, column 6: the tag !!binary",
    ),
    "token-on-the-bad-line": ({"/jobTemplate": "leaky.yaml", "/parameters": {}}, "jobTemplate: not valid YAML: line "),
    "image-with-a-line-separator": (
        {"/parameters/IMAGE": "busybox\u2028serviceAccountName: admin\u2028nodeName: control-plane"},
        ONE_LINE,
    ),
    "image-with-nel": (
        {"/parameters/IMAGE": "busybox\x85nodeName: n"},
        ONE_LINE,
    ),
    "host-process": (
        {"/jobTemplate": "host-process.yaml"},
        "job.spec.pytorchReplicaSpecs.Master.template.spec.containers[0].securityContext.windowsOptions.hostProcess",
    ),
}


@pytest.fixture(scope="module")
def api():
    with pytest.MonkeyPatch.context() as mp, KubeAPI() as server, mock_aws():
        server.register_crd(pytorchjob_crd())
        server.create_namespace("ml-training")
        for name, value in {
            "JOBSYNC_CLUSTER_MODE": "url",
            "JOBSYNC_KUBE_URL": server.url,
            "JOBSYNC_NAMESPACE": "ml-training",
            "JOBSYNC_TEMPLATE_BUCKET": BUCKET,
            "JOBSYNC_TEMPLATE_PREFIX": PREFIX,
            "POWERTOOLS_LOG_LEVEL": "ERROR",
            "POWERTOOLS_METRICS_DISABLED": "true",
        }.items():
            mp.setenv(name, value)
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        for name, text in {**TEMPLATES, "pytorch-mnist.yaml": MNIST}.items():
            s3.put_object(Bucket=BUCKET, Key=PREFIX + name, Body=text.encode())
        runtime.reset()
        cluster.reset_cache()
        yield server
        cluster.reset_cache()
        runtime.reset()


@pytest.mark.parametrize(("patch", "fragment"), CASES.values(), ids=list(CASES))
def test_a_hostile_template_or_parameter_is_refused_by_name_and_creates_nothing(api, patch, fragment):
    event = load_event("submit-template.json")
    for pointer, value in patch.items():
        if pointer == "/jobTemplate":
            event["jobTemplate"] = f"s3://{BUCKET}/{PREFIX}{value}"
        elif pointer == "/parameters":
            event["parameters"] = value
        else:
            event["parameters"][pointer.rsplit("/", 1)[-1]] = value
    api.clear_requests()
    started = time.perf_counter()
    with pytest.raises(Exception) as caught:
        load_handler("submit").lambda_handler(event, FakeLambdaContext())
    assert time.perf_counter() - started < 5
    assert type(caught.value).__name__ == "InvalidInput", f"{type(caught.value).__name__}: {caught.value}"
    message = str(caught.value)
    assert fragment in message, message
    assert TOKEN not in message and "lol" not in message
    assert api.requests == [], "a rejected input must not reach the Kubernetes API"
    assert api.objects(*PYTORCHJOBS) == []
