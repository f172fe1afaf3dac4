"""No credential leaves jobsync: not in a Lambda's output or error, a Step Functions payload, or a log line.

Executions run in EKS mode (tests/integration/local_eks.py): the Lambdas get
the endpoint and CA from DescribeCluster and send minted bearer tokens over
TLS. One job comes from an S3 template that carries a fake credential (the
kind of thing people put in a manifest's env or annotations), one fails and
has its logs read, one is aborted and cleaned up from its EventBridge event,
and one is refused by the cluster (401). Everything an operator could see
is collected and scanned for:

- the bearer tokens the API server received, and the token prefix ``k8s-aws-v1.``;
- the cluster CA, as PEM (``BEGIN CERTIFICATE``, its body) and as the base64
  DescribeCluster returns; the API endpoint URL;
- the AWS credentials the Lambdas signed with;
- the credential in the S3 template: the manifest goes to the cluster, never
  back out through jobsync's payloads or logs.
"""

from __future__ import annotations

import io
import json
import logging
import os
from typing import Any

import boto3
import pytest

from harness.kubeapi import Fault
from harness.local import LocalJobsync
from tests.integration.local_eks import ca_data, eks_jobsync
from tests.integration.test_aborts import run_and_abort, status_change
from tests.support.lambdas import EVENTS, QUIET, invoke, load_event

QUIET_METRICS = {**QUIET, "POWERTOOLS_LOG_LEVEL": "DEBUG"}  # every log line, to scan: no metrics
TEMPLATE_CREDENTIAL = "wJalrXUtnFEMI-K7MDENG-jobsyncFAKEsecret0042"
BUCKET = "jobsync-templates-123456789012"
TEMPLATE_KEY = "jobsync/templates/with-credential.yaml"


def template_with_a_credential() -> str:
    text = (EVENTS / "templates" / "pytorch-mnist.yaml").read_text()
    annotated = "metadata:\n  name: pytorch-mnist\n  annotations:\n"
    annotated += f"    example.com/registry-token: {TEMPLATE_CREDENTIAL}\n"
    return text.replace("metadata:\n  name: pytorch-mnist\n", annotated, 1)


class Capture:
    """Everything the handlers log: Powertools' JSON lines and any other library's records."""

    def __init__(self) -> None:
        self.stream = io.StringIO()
        self.handler = logging.StreamHandler(self.stream)
        self.handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s %(args)s"))
        self._saved: list[tuple[logging.Handler, Any]] = []
        self._levels: dict[str, int] = {}

    def __enter__(self) -> Capture:
        jobsync_logger = logging.getLogger("jobsync")
        for handler in jobsync_logger.handlers:  # Powertools writes JSON (with extras) to stdout
            if isinstance(handler, logging.StreamHandler):
                self._saved.append((handler, handler.setStream(self.stream)))
        for name in ("jobsync", "kubernetes", "urllib3"):
            self._levels[name] = logging.getLogger(name).level
            logging.getLogger(name).setLevel(logging.DEBUG)
        logging.getLogger().addHandler(self.handler)
        return self

    def __exit__(self, *exc: object) -> None:
        logging.getLogger().removeHandler(self.handler)
        for handler, stream in self._saved:
            handler.setStream(stream)
        for name, level in self._levels.items():
            logging.getLogger(name).setLevel(level)

    @property
    def text(self) -> str:
        return self.stream.getvalue()


def everything_visible(local: LocalJobsync, arns: list[str], extra: list[Any]) -> dict[str, str]:
    """What an operator can read: invocation events, results and errors, histories, descriptions."""
    texts = {f"invocation {i} {c.function_name}": json.dumps([c.event, c.result, c.error]) for i, c in
             enumerate(local.sfn.invocations)}  # fmt: skip
    for arn in arns:
        texts[f"history {arn}"] = json.dumps(local.sfn.history(arn), default=str)
        texts[f"describe {arn}"] = json.dumps(local.sfn.wait(arn), default=str)
    for i, item in enumerate(extra):
        texts[f"extra {i}"] = json.dumps(item, default=str)
    return texts


def test_no_token_ca_endpoint_or_credential_appears_anywhere(monkeypatch):
    monkeypatch.setattr(logging.getLogger("jobsync"), "propagate", True)
    tokens: set[str] = set()
    with eks_jobsync("success", {"pending_s": 30, "run_s": 300}, env=QUIET_METRICS) as local, Capture() as logs:
        local.api.accepted_tokens = lambda token: bool(tokens.add(token)) or token.startswith("k8s-aws-v1.")
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        s3.put_object(Bucket=BUCKET, Key=TEMPLATE_KEY, Body=template_with_a_credential().encode())
        arns, extra = [], []

        from_template = {
            "jobTemplate": f"s3://{BUCKET}/{TEMPLATE_KEY}",
            "parameters": {"IMAGE": "docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727", "EPOCHS": 1,
                           "WORKERS": 1},
        }  # fmt: skip
        result = local.run(from_template, name="from-template")
        assert result.status == "SUCCEEDED"
        (job,) = local.api.objects("kubeflow.org", "v1", "pytorchjobs")
        assert job["metadata"]["annotations"]["example.com/registry-token"] == TEMPLATE_CREDENTIAL  # it did go
        arns.append(result.execution_arn)

        local.scenario = "failure"
        result = local.run(load_event("run-job-input.json"), name="fails")
        assert result.error == "JobFailed" and "CUDA error" in result.cause  # the log tail was read
        arns.append(result.execution_arn)

        local.scenario, local.timings = "success", {"pending_s": 30, "run_s": 6 * 3600}
        description = run_and_abort(local, load_event("run-job-input.json"))
        extra.append(invoke("cleanup", status_change(description)))
        arns.append(description["executionArn"])

        local.timings = {"pending_s": 30, "run_s": 300}
        local.api.inject(Fault.unauthorized(), method="GET", path_contains="/pytorchjobs/", times=1000)
        result = local.run(load_event("run-job-input.json"), name="refused")
        assert result.error == "ClusterAuthError"
        arns.append(result.execution_arn)

        texts = everything_visible(local, arns, extra)
        texts["logs"] = logs.text
        ca_pem = local.api.ca_pem.decode()
        secrets = {
            "token prefix": "k8s-aws-v1.",
            "PEM header": "BEGIN CERTIFICATE",
            "CA body": ca_pem.splitlines()[1],
            "CA base64": ca_data(local)[:60],
            "endpoint": local.api.url,
            "template credential": TEMPLATE_CREDENTIAL,
        }
        secrets |= {f"token {i}": token for i, token in enumerate(sorted(tokens))}
        for name in ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
            if len(os.environ.get(name, "")) >= 8:
                secrets[name] = os.environ[name]

    # The scan looks for the real tokens the API saw. A re-mint within the same second of
    # the wall clock (which the presigned URL is dated with) gives the same token again.
    assert tokens and all(token.startswith("k8s-aws-v1.") for token in tokens)
    assert "job polled" in texts["logs"] and "cleanup" in texts["logs"]  # the capture caught the handlers
    leaks = [(secret, where) for secret, value in secrets.items() for where, text in texts.items() if value in text]
    assert leaks == []


@pytest.mark.parametrize("field", ["endpoint", "certificateAuthority", "token"])
def test_the_loop_state_refuses_cluster_credentials_in_its_payload(field):
    # The old eks:call loops carried endpoint and CA through every state; the loop state cannot.
    state = load_event("status-running.json") | {field: "x"}
    with pytest.raises(Exception, match=f"{field}: Extra inputs are not permitted"):
        invoke("status", state)
