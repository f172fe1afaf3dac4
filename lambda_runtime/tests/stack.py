"""What the sample events need around the functions, for the container and for the in-process handler alike.

``LocalJobsync`` is the backing: the local Kubernetes API (url mode), moto (S3 with events/templates,
the table, Step Functions), the state machine ARN the cleanup function trusts. The containers reach
the API and moto through relays on the bridge's gateway (``lambda_runtime.relay``) with the same
settings the in-process handlers read from this process's environment.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.local import LocalJobsync
from jobsync import clock as jobsync_clock
from jobsync import runtime
from lambda_runtime import sam
from lambda_runtime.daemon import Daemon
from lambda_runtime.relay import relayed
from lambda_runtime.remote import local_settings
from tests.support.lambdas import QUIET, FakeLambdaContext, invoke


@dataclass
class Stack:
    daemon: Daemon
    local: LocalJobsync
    template: Path
    env_vars: Path
    container_env: dict[str, str]

    def in_process(self, function: str, event: Any) -> Any:
        """functions/<function>/app.py's answer, on the wall clock as the container's is; an error as its payload."""
        runtime.reset()
        previous = jobsync_clock._now
        jobsync_clock.set_clock(jobsync_clock.wall)
        try:
            return invoke(function, event, FakeLambdaContext(function_name=f"jobsync-{function}"))
        except Exception as exc:  # what the runtime reports for it, as the harness builds it
            from harness.sfn.lambdas import runtime_error

            return runtime_error(exc, "in-process")
        finally:
            jobsync_clock.set_clock(previous)


@contextlib.contextmanager
def stack(
    daemon: Daemon,
    gateway: str,
    local: LocalJobsync | None = None,
    functions: Mapping[str, Mapping[str, Any]] | None = None,
    env: Mapping[str, str] | None = None,
) -> Iterator[Stack]:
    """A LocalJobsync (or ``local``), the relays to it, and the template and env file SAM runs with.

    ``functions``: properties changed in the template copy (``sam.local_template``); ``env``: settings of the
    containers' over the in-process ones.
    """
    with contextlib.ExitStack() as exits:
        if local is None:
            local = exits.enter_context(LocalJobsync(env=QUIET))
        assert local.api is not None
        kube_url = exits.enter_context(relayed(gateway, local.api.url))
        aws_url = exits.enter_context(relayed(gateway, local._aws_endpoint()))
        values = {**local_settings(kube_url, aws_url), **(env or {})}
        template = exits.enter_context(sam.local_template(values, functions))
        env_vars = exits.enter_context(sam.env_file(values))
        yield Stack(daemon, local, template, env_vars, values)
