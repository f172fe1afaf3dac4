"""The Lambdas' inputs as typed models.

A bad event fails with ``InvalidInput`` whose message names every field that
is wrong, never with a KeyError.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from jobsync import clock
from jobsync.errors import InvalidInput

CleanupMode = Literal["onFailure", "always", "never"]
DNS1123_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
EXECUTION_ARN = r"^arn:aws[a-z-]*:states:[a-z0-9-]+:\d{12}:execution:[^:]+:[^:]+$"
S3_URI = r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]/.+"
PARAMETER_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# A hint past any deadline a deployment allows is a mistake (and 10**400 overflows the wait
# policy's float arithmetic): refused here by name; submit also holds it to max_timeout_seconds.
MAX_EXPECTED_DURATION_SECONDS = 365 * 86400
# The execution input's free-form ``context`` (a pipeline run id, a commit): carried unchanged into the
# output and every failure's Cause, so it is kept small (Step Functions' payloads are limited to 256 KB).
MAX_CONTEXT_BYTES = 4096
TimesFrom = Literal["job", "polls"]


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


class JobRef(_Strict):
    """A compact reference to the submitted job: enough to find it, nothing secret."""

    apiVersion: str
    kind: str
    namespace: str = Field(pattern=DNS1123_LABEL)
    name: str = Field(pattern=DNS1123_LABEL)
    uid: str | None = None


class LoopState(BaseModel):
    """What Submit returns and Status takes and returns: the state of one run.

    Timestamps are RFC 3339 strings so the execution's payloads stay readable.
    """

    model_config = ConfigDict(extra="forbid")

    job: JobRef
    execution: str = Field(pattern=EXECUTION_ARN)  # status reads only the job this execution created
    cleanup: CleanupMode = "onFailure"
    submittedAt: str
    deadline: str
    expectedDurationSeconds: int | None = Field(default=None, le=MAX_EXPECTED_DURATION_SECONDS)
    jobFamily: str | None = None
    # Where expectedDurationSeconds came from: the input, or the family's learned median.
    hintSource: Literal["input", "learned"] | None = None
    phase: str
    reason: str = ""
    message: str = ""
    terminal: bool = False
    phaseSince: str
    # The job's own times from its status, or the polls' when it says nothing (``timesFrom`` tells
    # which, per time); ``noticedAt`` is the poll that saw the end (jobsync.run.poll).
    startedAt: str | None = None
    finishedAt: str | None = None
    noticedAt: str | None = None
    timesFrom: dict[Literal["startedAt", "finishedAt"], TimesFrom] = Field(default_factory=dict)
    stuckSince: str | None = None
    polls: int = Field(default=0, ge=0)
    waitSeconds: int = Field(default=0, ge=0)
    diagnostics: list[dict[str, Any]] = Field(default_factory=list)
    logTail: str | None = None
    # A job that ended as SUCCEEDED or FAILED: its leading replica's termination message, parsed and
    # bounded, or what a SageMaker job's status carries (jobsync.core.result); None when there is none.
    result: Any = None

    @field_validator("submittedAt", "deadline", "phaseSince", "startedAt", "finishedAt", "noticedAt", "stuckSince")
    @classmethod
    def _rfc3339(cls, value: str | None) -> str | None:
        # Checked here so a bad timestamp is named, and refused before any request to the cluster.
        if value is not None and (clock.parse(value) is None or not _has_offset(value)):
            raise ValueError(f"not an RFC 3339 timestamp with a time zone: {value!r}")
        return value


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


class PhaseChangedEvent(BaseModel):
    """An EventBridge "Job Phase Changed" event from the notifier (only what resume reads is checked)."""

    model_config = ConfigDict(extra="ignore") | ON_FIRST_USE

    source: Literal["jobsync"] = Field(alias="source")
    detail_type: Literal["Job Phase Changed"] = Field(alias="detail-type")
    detail: dict[str, Any]

    @property
    def execution(self) -> str | None:
        value = self.detail.get("executionArn")
        return value if isinstance(value, str) else None

    @property
    def finished_at(self) -> float | None:
        value = self.detail.get("finishedAt")
        return clock.parse(value) if isinstance(value, str) else None


def _has_offset(value: str) -> bool:
    return value.endswith(("Z", "z")) or bool(re.search(r"[+-]\d{2}:?\d{2}$", value))


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
