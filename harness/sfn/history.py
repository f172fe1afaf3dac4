"""GetExecutionHistory as the service answers it (an AWS behaviour moto lacks), installed with the HOOKS.

moto's interpreter backend answers every GetExecutionHistory with the whole history, oldest first,
whatever was asked: a reader that pages, or asks for the newest events first, is never put to the
test. The service (API reference, GetExecutionHistory) answers pages of ``maxResults`` events
(100 when 0 or not given, at most 1000: more is a ValidationException), oldest first unless
``reverseOrder``, with a ``nextToken`` while more follow (a token it did not hand out for these
arguments is InvalidToken), and without the events' input and output when
``includeExecutionData`` is false.
"""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING, Any

from harness.sfn import moto
from harness.sfn.moto import ActionResult, InvalidToken, StepFunctionsValidationException

if TYPE_CHECKING:
    from harness.sfn.hooks import Patch
    from harness.sfn.service import LocalStepFunctions

DEFAULT_PAGE = 100
MAX_PAGE = 1000
_DATA_FIELDS = ("input", "inputDetails", "output", "outputDetails")


def _token(arn: str, reverse: bool, offset: int) -> str:
    return base64.urlsafe_b64encode(json.dumps([arn, reverse, offset]).encode()).decode()


def _offset(token: str, arn: str, reverse: bool) -> int:
    try:
        token_arn, token_reverse, offset = json.loads(base64.urlsafe_b64decode(token.encode()))
    except (ValueError, TypeError):
        raise InvalidToken() from None
    if token_arn != arn or token_reverse != reverse or not isinstance(offset, int) or offset < 0:
        raise InvalidToken()
    return offset


def _without_data(event: dict[str, Any]) -> dict[str, Any]:
    return {
        key: {k: v for k, v in value.items() if k not in _DATA_FIELDS} if key.endswith("EventDetails") else value
        for key, value in event.items()
    }


def execution_history_in_pages(harness: LocalStepFunctions, patch: Patch) -> None:
    """GetExecutionHistory answers pages, in the order asked, as the service does (see the module docstring)."""
    original = moto.HISTORY_PAGES.original

    def get_execution_history(self: Any) -> ActionResult:
        arn = moto.request_param(self, "executionArn")
        size = int(moto.request_param(self, "maxResults") or 0) or DEFAULT_PAGE
        if size > MAX_PAGE:
            raise StepFunctionsValidationException(
                f"1 validation error detected: Value '{size}' at 'maxResults' failed to satisfy constraint: "
                f"Member must have value less than or equal to {MAX_PAGE}"
            )
        reverse = bool(moto.request_param(self, "reverseOrder", False))
        token = moto.request_param(self, "nextToken")
        start = _offset(token, arn, reverse) if token else 0
        events = list(original(self).result["events"])  # type: ignore[index]  # the whole history, oldest first
        if reverse:
            events.reverse()
        page = events[start : start + size]
        if moto.request_param(self, "includeExecutionData", True) is False:
            page = [_without_data(event) for event in page]
        answer: dict[str, Any] = {"events": page}
        if start + size < len(events):
            answer["nextToken"] = _token(arn, reverse, start + size)
        return ActionResult(answer)

    patch(moto.HISTORY_PAGES, get_execution_history)
