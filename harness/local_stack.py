"""The stack's resources, made in the local run as template.yaml makes them, and the notifier beside them.

The table (task tokens, learned hints), the job event bus and its rule that invokes the resume
function (the rule's pattern is the event model's, ``jobsync.core.event.RESUME_PATTERN``), the
ExecutionEnded rule of the cleanup function, the template bucket; and, in callback mode, the notifier
as the process it is when deployed. ``LocalJobsync`` is one.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from harness.aws_server import client_env, endpoint, moto_server
from harness.eventbridge import put_events_size_limit
from harness.kubeapi import KubeAPI
from harness.notifier_process import NotifierProcess, deployed_env
from harness.sfn import LocalStepFunctions
from jobsync.core.event import RESUME_PATTERN

ROOT = Path(__file__).resolve().parent.parent
TABLE = "jobsync-table"
# The template bucket of events/submit-template.json, served from events/templates/.
TEMPLATE_BUCKET = "jobsync-templates-123456789012"
TEMPLATE_PREFIX = "jobsync/templates/"
TEMPLATES = ROOT / "events" / "templates"
EVENT_BUS = "jobsync-jobs"
# RunJobs' bucket (template.yaml RunJobsBucket): its runs' jobs, Map Run results and outcomes.
RUNS_BUCKET = "jobsync-runs-123456789012"


class LocalStack:
    """The stack's resources around the run (see the module docstring)."""

    # Provided by LocalJobsync.
    sfn: LocalStepFunctions | None
    api: KubeAPI | None
    env: dict[str, str]
    kubeconfig: str | None
    notifier_kubeconfig: str | None
    notifier_log: Path | None
    notifier_env: dict[str, str]
    notifier: NotifierProcess | None
    template_dirs: tuple[Path, ...]
    _aws_server: contextlib.ExitStack | None
    _aws_url: str
    _state_machine_arn: str

    def _set_env(self, values: dict[str, str]) -> None:
        raise NotImplementedError

    def _make_callback_resources(self) -> None:
        """The stack's table, its job event bus, and the rule that invokes the resume function (template.yaml)."""
        import boto3

        boto3.client("dynamodb").create_table(
            TableName=TABLE,
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            BillingMode="PAY_PER_REQUEST",
        )
        events = boto3.client("events")
        events.create_event_bus(Name=EVENT_BUS)
        events.put_rule(Name="job-ended", EventBusName=EVENT_BUS, EventPattern=json.dumps(RESUME_PATTERN))
        assert self.sfn
        target = {"Id": "resume", "Arn": self.sfn.function_arn("jobsync-resume")}
        events.put_targets(Rule="job-ended", EventBusName=EVENT_BUS, Targets=[target])
        self._set_env({"JOBSYNC_TABLE_NAME": TABLE})

    def _serve_templates(self) -> None:
        """events/templates/ as the deployment's template bucket, so a jobTemplate input runs like an inline job."""
        import boto3

        bucket = self.env.get("JOBSYNC_TEMPLATE_BUCKET", TEMPLATE_BUCKET)
        prefix = self.env.get("JOBSYNC_TEMPLATE_PREFIX", TEMPLATE_PREFIX)
        if not bucket:
            return
        s3 = boto3.client("s3")
        s3.create_bucket(Bucket=bucket)
        for path in [
            *sorted(TEMPLATES.glob("*.yaml")),
            *(p for d in self.template_dirs for p in sorted(d.glob("*.yaml"))),
        ]:
            s3.put_object(Bucket=bucket, Key=prefix + path.name, Body=path.read_bytes())
        self._set_env({"JOBSYNC_TEMPLATE_BUCKET": bucket, "JOBSYNC_TEMPLATE_PREFIX": prefix})

    def _make_runs_bucket(self) -> None:
        """template.yaml's RunJobsBucket, and the jobs function told its name."""
        import boto3

        boto3.client("s3").create_bucket(Bucket=RUNS_BUCKET)
        self._set_env({"JOBSYNC_RUNS_BUCKET": RUNS_BUCKET})

    def _make_execution_ended_rule(self) -> None:
        """template.yaml's CleanupFunction ExecutionEnded rule, on the default bus."""
        import boto3

        assert self.sfn
        pattern = {
            "source": ["aws.states"],
            "detail-type": ["Step Functions Execution Status Change"],
            "detail": {"status": ["ABORTED", "TIMED_OUT", "FAILED"], "stateMachineArn": [self._state_machine_arn]},
        }
        events = boto3.client("events")
        events.put_rule(Name="execution-ended", EventPattern=json.dumps(pattern))
        target = {"Id": "cleanup", "Arn": self.sfn.function_arn("jobsync-cleanup")}
        events.put_targets(Rule="execution-ended", Targets=[target])

    def start_notifier(self) -> NotifierProcess:
        """``python -m jobsync_notifier`` against the cluster, publishing to the local bus; returns once ready.

        Configured as its Deployment configures it (the namespace, kinds, bus and log level of this run),
        but for the cluster (the local API's URL, or a kubeconfig) and AWS (this process's moto backends
        over HTTP). Its watches wait on the wall clock (``_start``: on virtual time they would move the
        clock), and are short, as the in-process run has always had them.
        """
        if self.notifier is not None and self.notifier.running:
            raise RuntimeError("the notifier is already running; stop_notifier() or kill_notifier() first")
        assert self.sfn
        env = deployed_env(
            os.environ["JOBSYNC_NAMESPACE"], os.environ["JOBSYNC_ALLOWED_KINDS"], EVENT_BUS, self.sfn.region
        )
        if self.api:
            env.update(JOBSYNC_CLUSTER_MODE="url", JOBSYNC_KUBE_URL=self.api.url)
        elif self.kubeconfig:
            env.update(JOBSYNC_CLUSTER_MODE="kubeconfig", KUBECONFIG=self.notifier_kubeconfig or self.kubeconfig)
        env["JOBSYNC_WATCH_TIMEOUT_SECONDS"] = os.environ.get("JOBSYNC_WATCH_TIMEOUT_SECONDS", "5")
        env["POWERTOOLS_LOG_LEVEL"] = os.environ.get("POWERTOOLS_LOG_LEVEL", env["POWERTOOLS_LOG_LEVEL"])
        env = {**client_env(self._aws_endpoint(), base={}, service="EventBridge"), **env, **self.notifier_env}
        self.notifier = NotifierProcess(env, log=self.notifier_log).start()
        return self.notifier

    def _aws_endpoint(self) -> str:
        """The URL of this process's moto backends over HTTP (harness.aws_server), served from first use;
        PutEvents there meets AWS's 256 KB request limit (harness.eventbridge)."""
        if self._aws_server is None:
            self._aws_server = contextlib.ExitStack()
            self._aws_server.enter_context(put_events_size_limit())
            self._aws_url = endpoint(self._aws_server.enter_context(moto_server()))
        return self._aws_url

    def stop_notifier(self) -> None:
        """SIGTERM, as Kubernetes stops a pod; SIGKILL if it does not end in time."""
        if self.notifier:
            self.notifier.stop()

    def kill_notifier(self) -> None:
        """SIGKILL, as a crash: nothing it was doing is finished."""
        if self.notifier:
            self.notifier.kill()
