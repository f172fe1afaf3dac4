"""What the Lambda service makes of a ``sam local`` answer: the function's result, or its error payload.

In AWS the runtime reports a function's exception (``errorType``, ``errorMessage``, ``stackTrace``) and
the Lambda service adds the errors only it sees: a function that ran past its timeout is
``Sandbox.Timedout``, a runtime that exited (killed for its memory, say) is ``Runtime.ExitError``; Step
Functions takes ``errorType`` as the state's ``Error``. SAM CLI (1.170) and the emulator say these
differently, which ``lambda_runtime/tests/test_error_names.py`` pins down:

- a function error: the runtime's JSON, as in AWS, with no ``X-Amz-Function-Error`` header;
- a timeout: SAM's own text ``Task timed out after 3.00 seconds`` (SAM stops the container itself);
- a runtime that died: an empty body; the emulator logs ``Runtime exited with error: signal: killed``.

``service_error`` turns each into the payload AWS's Lambda service returns, so that a state machine
run against ``sam local start-lambda`` sees the ``Error`` names it sees in AWS.
"""

from __future__ import annotations

import re
from typing import Any

TIMED_OUT = re.compile(r"^Task timed out after (\d+(?:\.\d+)?) seconds$")
EXITED = re.compile(r"Runtime exited with error: (.+?)(?:\s+InvokeID=\S*)?\s*$", re.MULTILINE)


def service_error(payload: Any, request_id: str, log: str = "") -> dict[str, Any] | None:
    """The error payload AWS's Lambda service returns for this answer, or None for a result.

    ``log`` is SAM CLI's output so far: the emulator's account of a runtime that died.
    """
    if isinstance(payload, dict) and isinstance(payload.get("errorType"), str) and "errorMessage" in payload:
        return payload  # the runtime's own report of the function's exception
    if isinstance(payload, str) and (timed_out := TIMED_OUT.match(payload.strip())):
        seconds = float(timed_out.group(1))
        message = f"RequestId: {request_id} Error: Task timed out after {seconds:.2f} seconds"
        return {"errorType": "Sandbox.Timedout", "errorMessage": message}
    if payload is None or payload == "":
        exits = EXITED.findall(log)
        why = exits[-1] if exits else "exited without an answer"
        message = f"RequestId: {request_id} Error: Runtime exited with error: {why}"
        return {"errorType": "Runtime.ExitError", "errorMessage": message}
    return None
