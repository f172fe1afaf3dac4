"""The Lambdas' inputs as typed models.

A bad event fails with ``InvalidInput`` whose message names every field that
is wrong, never with a KeyError. The loop state (Status's and Await's input)
is the core's (``jobsync.core.state``), the notifier's event too
(``jobsync.core.event``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from jobsync.core.state import (
    DNS1123_LABEL,
    EXECUTION_ARN,
    MAX_EXPECTED_DURATION_SECONDS,
    CleanupMode,
    DeadlineFrom,
    JobRef,
    LoopState,
)
from jobsync.errors import InvalidInput

__all__ = [
    "EXECUTION_ARN",
    "MAX_CONTEXT_BYTES",
    "MAX_EXPECTED_DURATION_SECONDS",
    "AwaitRequest",
    "CleanupRequest",
    "JobRef",
    "LoopState",
    "SubmitRequest",
    "describe",
    "parse",
]

S3_URI = r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]/.+"
PARAMETER_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# The execution input's free-form ``context`` (a pipeline run id, a commit): carried unchanged into the
# output and every failure's Cause, so it is kept small (Step Functions' payloads are limited to 256 KB).
MAX_CONTEXT_BYTES = 4096


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


# Each Lambda validates one request model; the others are built on first use, not at every cold import
# (LoopState, which most Lambdas use, is built at once).
ON_FIRST_USE = ConfigDict(defer_build=True)


class SubmitRequest(_Strict):
    """What the state machine passes to Submit: the execution input plus the execution's ARN."""

    model_config = _Strict.model_config | ON_FIRST_USE

    execution: str = Field(pattern=EXECUTION_ARN)
    job: dict[str, Any] | None = None
    jobTemplate: str | None = Field(default=None, pattern=S3_URI)
    parameters: dict[str, str | int | float | bool] = Field(default_factory=dict)
    namespace: str | None = Field(default=None, pattern=DNS1123_LABEL, max_length=63)
    timeoutSeconds: int | None = Field(default=None, gt=0)
    # The run's budget and the queue's apart: the longest a queued job (Kueue) may wait for admission, and
    # whether timeoutSeconds counts from submission or from that admission.
    queueTimeoutSeconds: int | None = Field(default=None, gt=0)
    deadlineFrom: DeadlineFrom = "submission"
    expectedDurationSeconds: int | None = Field(default=None, gt=0, le=MAX_EXPECTED_DURATION_SECONDS)
    # Learned hints: runs of one family share their durations (default: the manifest's metadata.name).
    jobFamily: str | None = Field(default=None, pattern=DNS1123_LABEL, max_length=63)
    cleanup: CleanupMode = "onFailure"
    context: dict[str, Any] | None = None

    @field_validator("context")
    @classmethod
    def _small_context(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None:
            size = len(json.dumps(value, separators=(",", ":")).encode())
            if size > MAX_CONTEXT_BYTES:
                raise ValueError(f"{size} bytes of JSON, over the limit of {MAX_CONTEXT_BYTES}")
        return value

    @model_validator(mode="after")
    def _one_source(self) -> SubmitRequest:
        if (self.job is None) == (self.jobTemplate is None):
            raise ValueError("give exactly one of 'job' (the manifest) or 'jobTemplate' (s3://bucket/key.yaml)")
        if self.parameters and self.jobTemplate is None:
            raise ValueError("'parameters' only apply to 'jobTemplate'")
        bad = sorted(k for k in self.parameters if not PARAMETER_NAME.match(k))
        if bad:
            raise ValueError(f"parameters: invalid names {bad} (letters, digits and _ only)")
        return self


class CleanupRequest(BaseModel):
    """Cleanup takes the loop state (or just the job) and, from a Catch, the error.

    ``execution`` (the loop state carries it) is required: cleanup deletes
    only a job labelled as the one this execution created.
    """

    model_config = ConfigDict(extra="ignore") | ON_FIRST_USE

    job: JobRef
    execution: str = Field(pattern=EXECUTION_ARN)
    cleanup: CleanupMode = "onFailure"
    phase: str | None = None


class AwaitRequest(_Strict):
    """What callback mode's Await task passes: the loop state and the task token to store."""

    model_config = ConfigDict(extra="forbid", strict=False) | ON_FIRST_USE

    state: LoopState
    # SendTaskSuccess takes a taskToken of 1-2,048 characters: any token the service hands out fits.
    taskToken: str = Field(min_length=1, max_length=2048)


def parse(model: type[BaseModel], event: Any) -> Any:
    """``model`` built from ``event``, or InvalidInput naming each bad field."""
    if not isinstance(event, dict):
        raise InvalidInput(f"the event must be a JSON object, got {type(event).__name__}")
    try:
        return model.model_validate(event)
    except ValidationError as exc:
        raise InvalidInput(describe(exc)) from None


def describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False, include_input=False):
        where = ".".join(str(p) for p in err["loc"]) or "(event)"
        message = err["msg"].removeprefix("Value error, ")
        parts.append(f"{where}: {message}")
    return "invalid input: " + "; ".join(parts)
