"""Strict JSON for everything that leaves Python for AWS: no NaN, no Infinity.

Python's ``json`` writes a float that is not finite as ``NaN`` or ``Infinity``,
and so does the Lambda Python runtime for a handler's response: that is not
JSON, and Step Functions (a Lambda's response Payload, SendTaskSuccess's
output), EventBridge and DynamoDB refuse it. Values are made finite where they
come in (a termination message's out-of-range number stays text:
``jobsync.core.result.parse_message``); these helpers refuse, by the field's
path, whatever still is not, so the error is ours and names the field instead
of AWS's.
"""

from __future__ import annotations

import json
import math
from typing import Any, TypeVar

T = TypeVar("T")


class NotStrictJSON(ValueError):
    """A value with a number JSON cannot hold (NaN, Infinity)."""


def not_finite(value: Any, path: str = "$") -> str | None:
    """The path of the first number in ``value`` that is not finite (``$.result.accuracy``), None if none is."""
    if isinstance(value, float):
        return None if math.isfinite(value) else path
    if isinstance(value, dict):
        for key, item in value.items():
            found = not_finite(item, f"{path}.{key}")
            if found:
                return found
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            found = not_finite(item, f"{path}[{index}]")
            if found:
                return found
    return None


def checked(value: T) -> T:
    """``value`` itself, once it is known to serialise to strict JSON (a Lambda handler's response)."""
    where = not_finite(value)
    if where is not None:
        raise NotStrictJSON(f"{where}: a number JSON cannot hold (NaN or Infinity)")
    return value


def dumps(value: Any) -> str:
    """``value`` as strict JSON text (SendTaskSuccess's output, an event's Detail)."""
    return json.dumps(checked(value), allow_nan=False)
