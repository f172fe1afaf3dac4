"""``jobsync logs EXECUTION|JOB [-f]``: the leading replica's log (or a named replica's), as the verdict reads pods.

The job is an execution's (its ARN: the job its Submit created, by uid, read from the
execution's history) or one named on the cluster (``NAME``, ``KIND/NAME``). Its pods are the
ones it owns (``jobsync.run.pods``: their controller reference leads to the job's uid),
never a pod that merely carries its labels; the pod read is its leading replica's
(``jobsync.core.result.leading_pods``: PyTorchJob's master, else worker 0, ...) unless
``--replica`` names another, and the container the kind's main one.

``-f`` follows the log until the job ends, across a replica's restarts: each container
instance's lines are printed once, however often its log is read again (a dropped
connection, a container that ended while the job goes on). The exit code is then the
job's, as ``jobsync wait`` gives it.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TextIO

from jobsync.bodies import meta
from jobsync.core.state import JobRef
from jobsync.errors import JobsyncError, TransientClusterError
from jobsync.evaluation import evaluate
from jobsync.evaluation.kinds import KindSpec
from jobsync_cli import cluster
from jobsync_cli.aws import FollowError, region_of
from jobsync_cli.follow import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_SUCCEEDED

REPLICA_TYPE = "training.kubeflow.org/replica-type"
REPLICA_INDEX = "training.kubeflow.org/replica-index"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"


@dataclass(frozen=True)
class Target:
    """The job whose log is read: its kind, and the reference (namespace, name, uid) ownership checks against."""

    spec: KindSpec
    job: JobRef
    execution: str | None = None  # the execution that created it, when named by its ARN


def execution_job(arn: str, region: str | None) -> Target:
    """The job an execution's Submit created (from its history), and its kind."""
    from jobsync.evaluation import kinds
    from jobsync.run.execution_events import submitted_job
    from jobsync_cli.aws import aws_error, client
    from jobsync_cli.history import HistoryPager

    sfn = client("stepfunctions", region or region_of(arn))
    try:
        events = HistoryPager(sfn, arn).read()
    except Exception as err:
        if "ExecutionDoesNotExist" in str(err):
            raise FollowError(f"no such execution: {arn}") from None
        raise aws_error(err, f"cannot read the history of {arn}") from None
    submitted = submitted_job(events, arn)
    if submitted.job is None:
        if any(event.get("type") in ("MapRunStarted", "TaskSubmitted") for event in events):
            raise FollowError(f"{arn} runs several jobs (RunJobs): give one job's execution (jobsync run names them)")
        why = "its Submit did not answer" if submitted.ran else "it never reached Submit"
        raise FollowError(f"{arn} created no job: {why}")
    job = submitted.job
    try:
        spec = kinds.lookup(job.apiVersion, job.kind)
    except JobsyncError as err:
        raise FollowError(str(err)) from None
    return Target(spec, job, arn)


def named_job(text: str, args: argparse.Namespace, jobs: Any) -> Target:
    """A job named on the cluster: adopted by the uid its GET shows."""
    spec, name = cluster.job(text, args)
    namespace = cluster.namespace(args)
    obj = jobs.get(spec, namespace, name)
    if obj is None:
        raise FollowError(f"{spec.kind} {namespace}/{name}: no such job")
    return Target(
        spec,
        JobRef(apiVersion=spec.api_version or "", kind=spec.kind, namespace=namespace, name=name, uid=meta(obj).uid),
    )


def choose_pod(target: Target, pods: list[dict[str, Any]], replica: str | None) -> dict[str, Any] | None:
    """The pod whose log is read: ``replica`` (``worker-1``, ``master``, an index), else the leading replica's."""
    from jobsync.core.result import leading_pods

    if not pods:
        return None
    if replica is None:
        leading = leading_pods(target.spec, pods)
        return dict(leading[0]) if leading else _newest(pods)
    kind, _, index = replica.lower().rpartition("-")
    if not kind and not index.isdigit():
        kind, index = index, "0"
    for pod in sorted(pods, key=lambda p: str(meta(p).creation_timestamp or ""), reverse=True):
        labels = meta(pod).labels
        if kind and str(labels.get(REPLICA_TYPE, "")).lower() == kind and str(labels.get(REPLICA_INDEX, "0")) == index:
            return pod
        if not kind and str(labels.get(COMPLETION_INDEX, labels.get(REPLICA_INDEX, ""))) == index:
            return pod
    names = ", ".join(sorted(_replica_names(pods))) or "none yet"
    raise FollowError(f"{target.job.kind} {target.job.namespace}/{target.job.name} has no replica {replica} ({names})")


def _replica_names(pods: list[dict[str, Any]]) -> set[str]:
    names = set()
    for pod in pods:
        labels = meta(pod).labels
        if REPLICA_TYPE in labels:
            names.add(f"{str(labels[REPLICA_TYPE]).lower()}-{labels.get(REPLICA_INDEX, '0')}")
        elif COMPLETION_INDEX in labels:
            names.add(str(labels[COMPLETION_INDEX]))
    return names


def _newest(pods: list[dict[str, Any]]) -> dict[str, Any] | None:
    return max(pods, key=lambda p: str(meta(p).creation_timestamp or ""), default=None)


def container_of(target: Target, pod: Mapping[str, Any], wanted: str | None) -> str:
    """``wanted``, else the kind's main container (``jobsync.core.result.LEADERS``), else the pod's first."""
    from jobsync.core.result import LEADERS

    names = [str(c.get("name")) for c in (pod.get("spec") or {}).get("containers") or [] if isinstance(c, dict)]
    if wanted:
        if names and wanted not in names:
            raise FollowError(f"pod {meta(pod).name} has no container {wanted} ({', '.join(names)})")
        return wanted
    leader = LEADERS.get((target.spec.api_version or "", target.spec.kind))
    if leader and leader.container in names:
        return str(leader.container)
    return names[0] if names else ""


def instance(pod: Mapping[str, Any], container: str) -> tuple[str, str, int]:
    """One run of a container: the pod's uid, the container, its restart count (a restart is a new log)."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    restarts = next((int(s.get("restartCount") or 0) for s in statuses if s.get("name") == container), 0)
    return meta(pod).uid, container, restarts


class Follower:
    """Prints each container instance's log lines once, however often the log is read again."""

    def __init__(self, jobs: Any, target: Target, out: TextIO, replica: str | None, container: str | None) -> None:
        self.jobs = jobs
        self.target = target
        self.out = out
        self.replica = replica
        self.container = container
        self.printed: dict[tuple[str, str, int], int] = {}
        self.announced: tuple[str, str] | None = None

    def pods(self) -> list[dict[str, Any]]:
        from jobsync.run.pods import job_pods

        job = self.target.job
        found = job_pods(self.target.spec, job.namespace, job.name, job.uid or "", self.jobs)
        return list(found.pods) if found is not None else []

    def read_once(self, follow: bool) -> bool:
        """Read the chosen pod's log (following it while it runs); False when there is no pod to read yet."""
        pod = choose_pod(self.target, self.pods(), self.replica)
        if pod is None:
            return False
        container = container_of(self.target, pod, self.container)
        name = meta(pod).name
        if self.announced != (name, container):
            print(f"==> pod {name}, container {container}", file=sys.stderr, flush=True)
            self.announced = (name, container)
        key = instance(pod, container)
        skip = self.printed.get(key, 0)
        count = 0
        try:
            for line in self.jobs.stream_log(self.target.job.namespace, name, container, follow=follow):
                count += 1
                if count > skip:
                    print(line, file=self.out, flush=True)
        finally:
            self.printed[key] = max(skip, count)
        return True

    def job_ended(self) -> Any:
        """The job's phase when it has ended (or is gone), else None."""
        from jobsync.core.outcome import Phase

        obj = self.jobs.get(self.target.spec, self.target.job.namespace, self.target.job.name)
        if obj is None or (self.target.job.uid and meta(obj).uid != self.target.job.uid):
            return Phase.NOT_FOUND
        verdict = evaluate(obj)
        return verdict.phase if verdict.terminal else None


def follow_to_the_end(follower: Follower, sleep: Callable[[float], None] = time.sleep, pause: float = 2.0) -> int:
    """Follow the log until the job ends; the job's exit code."""
    while True:
        with contextlib.suppress(TransientClusterError):  # a dropped or quiet stream: look at the job, read again
            follower.read_once(follow=True)
        ended = follower.job_ended()
        if ended is not None:
            follower.read_once(follow=False)  # the lines written after the stream ended, if any
            print(f"==> {follower.target.job.kind} {follower.target.job.name} ended {ended}", file=sys.stderr)
            return int(ended.exit_code)
        sleep(pause)


def cmd_logs(args: argparse.Namespace) -> int:
    out = sys.stdout
    try:
        jobs = cluster.connect(args)
        if args.job.startswith("arn:"):
            target = execution_job(args.job, args.region)
        else:
            target = named_job(args.job, args, jobs)
        _check_ours(target, jobs)
        follower = Follower(jobs, target, out, args.replica, args.container)
        if args.follow:
            return follow_to_the_end(follower)
        if not follower.read_once(follow=False):
            job = target.job
            print(f"jobsync logs: {job.kind} {job.namespace}/{job.name} has no pod yet", file=sys.stderr)
        return EXIT_SUCCEEDED
    except FollowError as err:
        print(f"jobsync logs: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except JobsyncError as err:
        print(f"jobsync logs: {' '.join(str(err).split())}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("\njobsync logs: stopped following; the job goes on", file=sys.stderr)
        return EXIT_INTERRUPTED


def _check_ours(target: Target, jobs: Any) -> None:
    """An execution's job must still be the object it created (its label and uid), as every step checks."""
    if target.execution is None:
        return
    from jobsync.core.ours import not_ours

    job = target.job
    obj = jobs.get(target.spec, job.namespace, job.name)
    if obj is None:
        raise FollowError(f"{job.kind} {job.namespace}/{job.name} of {target.execution} is gone (deleted)")
    why = not_ours(obj, target.execution, job.uid)
    if why is not None:
        raise FollowError(f"{job.kind} {job.namespace}/{job.name} is {why}: its pods are not read")


def add_command(commands: Any) -> None:
    from jobsync_cli.follow import _HelpFormatter

    parser = commands.add_parser(
        "logs",
        help="the log of a job's leading replica (or a named one); -f follows it until the job ends",
        description="Print the log of a job's leading replica (PyTorchJob: master, else worker 0; TFJob: chief,\n"
        "...), or of --replica. The job is an execution's (its ARN: the job its Submit created) or one named\n"
        "on the cluster. Only the pods the job owns are read (their controller reference leads to its uid).\n"
        "-f follows the log until the job ends, across restarts, each line once; the exit code is then\n"
        "the job's, as jobsync wait gives it. Exit code 2: bad input, no such job, an unreachable cluster.",
        formatter_class=_HelpFormatter,
    )
    parser.add_argument(
        "job", metavar="EXECUTION|JOB", help="an execution's ARN, or a job: NAME (of --kind) or KIND/NAME"
    )
    parser.add_argument("-f", "--follow", action="store_true", help="follow the log until the job ends")
    parser.add_argument(
        "--replica", default=None, help="the replica to read instead of the leading one: worker-1, master, 0, ..."
    )
    parser.add_argument("-c", "--container", default=None, help="the container (without one: the kind's main one)")
    cluster.add_options(parser)
    parser.add_argument("--region", default=None, help="the AWS region, for an execution (without one: the ARN's)")
    parser.set_defaults(func=cmd_logs)
