"""A handler's cold import, in a fresh process with the environment Lambda gives it,
imports only what a call needs: no boto3 until an AWS call, no X-Ray SDK when tracing is off."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from aws_lambda_powertools import Tracer

from jobsync import tracing
from tests.support.lambdas import ROOT, lambda_like_env

FUNCTIONS = sorted(p.parent.name for p in (ROOT / "functions").glob("*/app.py"))
URL_MODE = {"JOBSYNC_CLUSTER_MODE": "url", "JOBSYNC_KUBE_URL": "http://127.0.0.1:9", "JOBSYNC_NAMESPACE": "ml"}
WATCHED = ("boto3", "botocore.client", "botocore.session", "aws_xray_sdk", "aws_xray_sdk.core", "requests")

REPORT = """
import json, sys
import app
after_import = {name: name in sys.modules for name in WATCHED}
patched = None
if "aws_xray_sdk.core" in sys.modules:
    from aws_xray_sdk.core import patcher
    patched = sorted(patcher._PATCHED_MODULES)
then = None
if "--boto3" in sys.argv:
    from jobsync import aws
    aws.boto3().client("sts", region_name="us-east-1")
    import botocore.client
    then = {"patched": sorted(patcher._PATCHED_MODULES) if patched is not None else None,
            "xray_on_botocore": hasattr(botocore.client, "_xray_enabled")}
print(json.dumps({"modules": after_import, "patched": patched, "then": then}))
"""


def cold_import(function: str, tracing_on: bool, *args: str) -> dict:
    env = lambda_like_env(function, tracing=tracing_on, settings=URL_MODE)
    code = f"WATCHED = {WATCHED!r}\n{REPORT}"
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=ROOT / "functions" / function,  # Lambda's working directory is LAMBDA_TASK_ROOT
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize("function", FUNCTIONS)
def test_no_handler_imports_boto3_or_the_xray_sdk_with_tracing_off(function):
    seen = cold_import(function, tracing_on=False)["modules"]
    assert not seen["boto3"] and not seen["botocore.client"] and not seen["botocore.session"], seen
    assert not seen["aws_xray_sdk"] and not seen["aws_xray_sdk.core"], seen


def test_status_with_tracing_on_traces_as_deployed_and_patches_botocore_only_when_boto3_comes():
    seen = cold_import("status", True, "--boto3")
    assert seen["modules"]["aws_xray_sdk.core"], "tracing on: the X-Ray SDK is the tracer's provider"
    assert not seen["modules"]["boto3"] and not seen["modules"]["botocore.client"], seen
    assert seen["patched"] == ["requests"]
    # The first AWS client jobsync makes comes with botocore traced, as patch_all() traced it.
    assert seen["then"] == {"patched": ["botocore", "requests"], "xray_on_botocore": True}


def test_boto3_with_tracing_off_patches_nothing():
    seen = cold_import("status", False, "--boto3")
    assert seen["patched"] is None
    assert seen["then"] == {"patched": None, "xray_on_botocore": False}


ENVIRONMENTS = [
    {},
    {"LAMBDA_TASK_ROOT": "/var/task"},
    {"LAMBDA_TASK_ROOT": "/var/task", "POWERTOOLS_TRACE_DISABLED": "true"},
    {"LAMBDA_TASK_ROOT": "/var/task", "POWERTOOLS_TRACE_DISABLED": "0"},
    {"LAMBDA_TASK_ROOT": "/var/task", "POWERTOOLS_TRACE_DISABLED": "False"},
    {"LAMBDA_TASK_ROOT": "/var/task", "AWS_SAM_LOCAL": "true"},
    {"LAMBDA_TASK_ROOT": "/var/task", "AWS_CHALICE_CLI_MODE": "true"},
    {"POWERTOOLS_TRACE_DISABLED": "false"},
]


@pytest.mark.parametrize("env", ENVIRONMENTS, ids=lambda e: ",".join(f"{k}={v}" for k, v in e.items()) or "none")
def test_tracing_is_on_exactly_when_powertools_would_trace(monkeypatch, env):
    for name in ("LAMBDA_TASK_ROOT", "POWERTOOLS_TRACE_DISABLED", "AWS_SAM_LOCAL", "AWS_CHALICE_CLI_MODE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert tracing.enabled() is (not Tracer._is_tracer_disabled())


def test_a_handler_is_left_as_it_is_when_tracing_is_off(monkeypatch):
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")

    def handler(event, context):
        return event

    assert tracing.capture_lambda_handler(handler) is handler
