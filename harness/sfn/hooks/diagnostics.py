"""What moto would swallow, kept for ``LocalStepFunctions.wait()`` to raise: a harness or interpreter bug is
reported as one, never turned into a state's failure that a Catch could hide.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from harness.sfn import moto

if TYPE_CHECKING:
    from harness.sfn.hooks import Patch
    from harness.sfn.service import LocalStepFunctions


def execution_thread_crashes_are_kept(harness: LocalStepFunctions, patch: Patch) -> None:
    """An exception that kills the execution thread is kept for ``wait()`` to raise.

    In moto it dies silently and the execution stays RUNNING forever. The hook also
    signals the end of every execution, so ``wait()`` needs no polling.
    """
    original = moto.EXECUTION_LOGIC.original

    def execution_logic(worker: Any) -> None:
        arn = moto.worker_execution(worker)
        harness.started(arn, this_thread=True)
        try:
            original(worker)
        except BaseException as exc:
            harness._crashes[arn] = exc
        finally:
            harness.parked(arn)  # ended
            harness._done_event(arn).set()
            harness.wake_sync_waits(child=arn)

    patch(moto.EXECUTION_LOGIC, execution_logic)


def state_exceptions_are_kept(harness: LocalStepFunctions, patch: Patch) -> None:
    """A Python exception inside a state is kept in ``internal_errors`` for ``wait()`` to raise (strict).

    A moto or harness bug, or a clock callback that raised, is logged here and then
    turned into States.Runtime by moto, which a Catch on States.ALL would hide.
    Exceptions moto raises on purpose (its own types, and ClientErrors from service
    calls such as an injected Lambda error) are how states fail, and are not kept.
    """
    original = moto.LOG_EXCEPTION.original

    def log_exception(component: Any, exception: Exception) -> None:
        expected = isinstance(exception, ClientError) or type(exception).__module__.startswith(
            "moto.stepfunctions.parser"
        )
        if not expected and not any(exception is seen for seen in harness.internal_errors):
            harness.internal_errors.append(exception)
        original(component, exception)

    patch(moto.LOG_EXCEPTION, log_exception)
