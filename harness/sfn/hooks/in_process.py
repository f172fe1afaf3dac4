"""The functions a run maps, run here: a ``lambda:invoke`` reaches moto's Lambda backend, and the handler runs
in this process instead of the container moto would start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.sfn import moto
from harness.sfn.moto import JsonRESTError

if TYPE_CHECKING:
    from harness.sfn.hooks import Patch
    from harness.sfn.service import LocalStepFunctions


def lambda_runs_in_process(harness: LocalStepFunctions, patch: Patch) -> None:
    """Run the functions the harness maps in-process, where moto would start a Docker container.

    ``lambda:invoke`` (and a bare function ARN as Resource) reach moto's Lambda backend
    through a real Invoke call, so ARNs, qualifiers and ResourceNotFoundException stay
    moto's; only the function's code runs here (see ``InProcessLambdas._invoke``).
    Unmapped functions go to moto as before.
    """
    original = moto.LAMBDA_INVOKE.original

    def lambda_invoke(function: Any, body: Any, request_headers: Any, response_headers: Any) -> Any:
        handler = harness.handlers.get(function.function_name)
        if handler is None:
            return original(function, body, request_headers, response_headers)
        try:
            harness.activity()
            return harness._invoke(function, handler, body, response_headers)
        except JsonRESTError:
            raise  # an injected service error: Step Functions sees Lambda.<Code>
        except BaseException as exc:  # handler errors are caught inside; this is a harness or callback bug
            harness.internal_errors.append(exc)
            raise

    patch(moto.LAMBDA_INVOKE, lambda_invoke)


def reuse_service_clients(harness: LocalStepFunctions, patch: Patch) -> None:
    """Speed only: reuse one boto3 client per (region, service).

    moto builds a new boto3 client for every Lambda task, much of what a poll costs the local run,
    and for every ``states:startExecution`` task and each of its looks at the child.
    """
    clients: dict[tuple[str, str], Any] = {}
    original = moto.LAMBDA_CLIENT.original

    def boto_client_for(region: str, service: str, state_credentials: Any = None) -> Any:
        with harness._lock:
            if (region, service) not in clients:
                clients[region, service] = original(region, service, state_credentials)
            return clients[region, service]

    patch(moto.LAMBDA_CLIENT, boto_client_for)
    patch(moto.SFN_CLIENT, boto_client_for)
