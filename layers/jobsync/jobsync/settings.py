"""A deployment's configuration, read once from the environment the template sets.

Two readers, each a ``pydantic-settings`` model with the ``JOBSYNC_`` prefix
and every field documented: ``Settings`` (what the steps may do and how they
wait) and ``ClusterSettings`` (which cluster to reach and how). A bad value
raises an error that names the variable.

The variables are flat, one per template parameter; the code reads them in
groups, each a frozen view built once: ``Settings.wait`` (``WaitSettings``:
the bounds, the completion mode, the watch and the safety poll),
``Settings.starts`` (``StartSettings``: how long a start may take before it
is a failure), ``Settings.callback`` (``CallbackSettings``: the stack's table
and state machine) and ``ClusterSettings``. Nothing here imports the steps
that read them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cached_property
from typing import Annotated, Any, Literal, Self

from pydantic import AliasChoices, Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, EnvSettingsSource, NoDecode, PydanticBaseSettingsSource, SettingsConfigDict

from jobsync.errors import ClusterConfigError
from jobsync.evaluation import kinds
from jobsync.evaluation.kinds import KindSpec

DAY = 86_400
# A watch must end, and the poll answer, within the Lambda's 900 s maximum.
MAX_WATCH_SECONDS = 840
# (connect, read) seconds, for every call that passes no timeout: a Lambda
# must never hang on a silent API server.
REQUEST_TIMEOUT = (5.0, 20.0)
CompletionMode = Literal["poll", "watch", "callback"]
MODES = ("eks", "kubeconfig", "incluster", "url")
Mode = Literal["eks", "kubeconfig", "incluster", "url"]

# History events one look costs, as counted in the local run's histories (docs/state-machine.md):
# poll and watch mode, Wait 2 + Status 5 + IsDone 2; callback mode, IsDone 2 + Await 6 (TaskStateEntered,
# TaskScheduled, TaskStarted, TaskSubmitted, TaskTimedOut, TaskStateExited) + Status 5.
POLL_EVENTS = 9
LOOK_EVENTS = {"poll": POLL_EVENTS, "watch": POLL_EVENTS, "callback": 13}


@dataclass(frozen=True)
class WaitBounds:
    """Bounds set in the template (MinWaitSeconds, MaxWaitSeconds, ...) and the history budget."""

    min_seconds: int = 30
    max_seconds: int = 3600
    pending_max_seconds: int = 60
    running_max_seconds: int = 420
    hint_tolerance: float = 0.2
    # Polls one execution may make. Step Functions ends an execution at 25,000
    # history events; one poll costs 9 (docs/state-machine.md), so 2,400 polls
    # leave room for submit, cleanup, retries and the end states.
    poll_budget: int = 2400
    # History events one look costs in the completion mode (LOOK_EVENTS): the
    # poll budget's events buy fewer of the dearer looks (``looks``).
    look_events: int = POLL_EVENTS

    def __post_init__(self) -> None:
        if not 1 <= self.min_seconds <= self.pending_max_seconds <= self.max_seconds:
            raise ValueError("wait bounds need 1 <= min <= pending_max <= max")
        if not self.min_seconds <= self.running_max_seconds <= self.max_seconds:
            raise ValueError("wait bounds need min <= running_max <= max")
        if not 0 <= self.hint_tolerance < 1:
            raise ValueError("hint_tolerance must be in [0, 1)")
        if self.poll_budget < 2:
            raise ValueError("poll_budget must be at least 2")
        if self.look_events < 1:
            raise ValueError("look_events must be at least 1")

    @property
    def looks(self) -> int:
        """Looks one execution may make: the poll budget's history events at ``look_events`` each."""
        return max(2, self.poll_budget * POLL_EVENTS // self.look_events)


WaitMode = Literal["poll", "watch", "callback"]


@dataclass(frozen=True)
class WaitSettings:
    """How an execution waits between two looks at its job."""

    bounds: WaitBounds
    completion_mode: CompletionMode
    watch_seconds: int
    safety_poll_seconds: int
    sweep_seconds: int = 0
    backstop_seconds: int = 21_600

    @property
    def sweeps(self) -> bool:
        """Whether the stack's sweeper runs (callback mode with a sweep interval, ``jobsync.run.sweep``)."""
        return self.mode == "callback" and self.sweep_seconds > 0

    @property
    def mode(self) -> WaitMode:
        """How the steps wait: watch whenever a watch is set (WatchSeconds), else callback or poll."""
        if self.watch_seconds:
            return "watch"
        return "callback" if self.completion_mode == "callback" else "poll"


@dataclass(frozen=True)
class StartSettings:
    """How long each way a start can go wrong may last before the run ends FAILED (``jobsync.core.verdict``)."""

    not_found_grace_seconds: int
    diagnose_after_seconds: int
    operator_timeout_seconds: int
    stuck_grace_seconds: int
    capacity_grace_seconds: int
    unschedulable_grace_seconds: int
    image_error_grace_seconds: int
    log_tail_bytes: int


@dataclass(frozen=True)
class CallbackSettings:
    """The stack's table (task tokens, learned hints) and state machine (cleanup's check of an execution event)."""

    table_name: str
    state_machine_arn: str


# The environment ``from_env`` reads; None: the process's.
_environment: ContextVar[Mapping[str, str] | None] = ContextVar("jobsync_environment", default=None)


class _MappingSource(EnvSettingsSource):
    """The environment source, over a given mapping instead of ``os.environ``."""

    def __init__(self, settings_cls: type[BaseSettings], env: Mapping[str, str]) -> None:
        super().__init__(settings_cls)
        self.env_vars = {k.lower(): v for k, v in env.items()}


class _FromEnvironment(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="JOBSYNC_", frozen=True, extra="ignore", populate_by_name=True)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        env = _environment.get()
        return (init_settings, env_settings if env is None else _MappingSource(settings_cls, env))

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Self:
        """The settings from ``env`` (the process's environment by default)."""
        token = _environment.set(dict(os.environ if env is None else env))
        try:
            return cls()
        except ValidationError as exc:
            raise ValueError(describe(exc, cls)) from None
        finally:
            _environment.reset(token)

    @classmethod
    def variable(cls, field: str) -> str:
        """The environment variable that sets ``field``."""
        alias = cls.model_fields[field].validation_alias
        if isinstance(alias, AliasChoices):
            return str(alias.choices[0])
        return str(alias or f"JOBSYNC_{field.upper()}")

    @classmethod
    def variables(cls) -> set[str]:
        """Every environment variable these settings read."""
        out = set()
        for name, info in cls.model_fields.items():
            alias = info.validation_alias
            out |= {str(a) for a in alias.choices} if isinstance(alias, AliasChoices) else {cls.variable(name)}
        return out


def describe(exc: ValidationError, cls: type[_FromEnvironment]) -> str:
    """One line per bad value, each naming its environment variable."""
    parts = []
    for err in exc.errors(include_url=False):
        field = str(err["loc"][0]) if err["loc"] else ""
        # pydantic names a field read through an alias by that alias, which is already the variable.
        by_alias = {name.lower(): name for name in cls.variables() if name.isupper()}
        variable = cls.variable(field) if field in cls.model_fields else by_alias.get(field.lower(), cls.__name__)
        message = str(err["msg"]).removeprefix("Value error, ")
        if err["type"] in {"int_parsing", "int_from_float", "int_type"}:
            message = f"must be a whole number, got {err.get('input')!r}"
        elif err["type"] in {"greater_than_equal", "less_than_equal"} and field == "watch_seconds":
            message = f"must be 0 to {MAX_WATCH_SECONDS}, got {err.get('input')}"
        parts.append(message if variable in message else f"environment variable {variable} {message}")
    return "; ".join(parts)


def parse_allowed_kinds(value: str, source: str = "JOBSYNC_ALLOWED_KINDS") -> tuple[KindSpec, ...]:
    """``PyTorchJob,TFJob`` or ``apiVersion/Kind`` entries where a kind name is ambiguous.

    A kind's name is matched in any case (``pytorchjob``, as kubectl takes it). Errors name ``source``:
    the variable, or the flag a command line read it from.
    """
    specs: list[KindSpec] = []
    for entry in (e.strip() for e in value.split(",")):
        if not entry:
            continue
        if "/" in entry:
            api_version, kind = entry.rsplit("/", 1)
            found = [k for k in kinds.KINDS if k.api_version == api_version and k.kind.lower() == kind.lower()]
            specs.extend(found or [kinds.lookup(api_version, kind)])  # none: lookup's error names both
            continue
        # by_kind_name's entries, in any case: a bare name never means a kind that must be named by apiVersion
        found = [k for k in kinds.KINDS if k.plural and k.by_name and k.kind.lower() == entry.lower()]
        if not found:
            known = ", ".join(sorted({k.kind for k in kinds.KINDS if k.plural}))
            raise ValueError(f"{source}: unknown kind {entry!r} (known: {known})")
        specs.extend(spec for spec in found if spec not in specs)
    if not specs:
        raise ValueError(f"{source} names no kind")
    return tuple(specs)


class Settings(_FromEnvironment):
    """What the steps may do, and how they wait. Each field is ``JOBSYNC_<FIELD>``."""

    namespace: str = Field("ml-training", min_length=1, description="The one namespace jobs run in.")
    allowed_kinds: Annotated[tuple[KindSpec, ...], NoDecode] = Field(
        default_factory=lambda: parse_allowed_kinds("PyTorchJob"),
        description="Kinds a job may be: names (PyTorchJob,TFJob) or apiVersion/Kind entries.",
    )
    default_timeout_seconds: int = Field(DAY, gt=0, description="A job's deadline when the input gives none.")
    max_timeout_seconds: int = Field(30 * DAY, gt=0, description="The longest deadline an input may ask for.")
    min_wait_seconds: int = Field(WaitBounds.min_seconds, description="The shortest wait between two polls.")
    max_wait_seconds: int = Field(WaitBounds.max_seconds, description="The longest wait between two polls.")
    pending_max_wait_seconds: int = Field(
        WaitBounds.pending_max_seconds, description="The longest wait while a job is starting."
    )
    running_max_wait_seconds: int = Field(
        WaitBounds.running_max_seconds, description="The longest wait while a job runs without a hint."
    )
    poll_budget: int = Field(WaitBounds.poll_budget, description="Polls one execution may make (history budget).")
    template_bucket: str = Field("", description="The only bucket jobTemplate may name ('' allows any).")
    template_prefix: str = Field("", description="The key prefix jobTemplate must start with.")
    allow_privileged_pods: bool = Field(False, description="Let pods ask for what Pod Security Baseline forbids.")
    max_manifest_bytes: int = Field(64 * 1024, gt=0, description="The largest manifest submit accepts.")
    not_found_grace_seconds: int = Field(
        60, ge=0, description="A 404 this soon after submission is the API catching up, not a lost job."
    )
    diagnose_after_seconds: int = Field(120, ge=0, description="Read the pods of a job PENDING this long.")
    stuck_grace_seconds: int = Field(
        900,
        ge=0,
        description="Pods stuck otherwise (an image pull error that may heal, CreateContainerConfigError) "
        "this long end the job as FAILED.",
    )
    capacity_grace_seconds: int = Field(
        6 * 3600,
        ge=0,
        description="Pods Unschedulable while capacity is coming (an autoscaler scales up, or the nodes are full) "
        "this long end the job as FAILED.",
    )
    unschedulable_grace_seconds: int = Field(
        600,
        ge=0,
        description="Pods no node or autoscaler can ever take (selectors, taints, requests beyond any node) "
        "this long end the job as FAILED.",
    )
    image_error_grace_seconds: int = Field(
        120,
        ge=0,
        description="Pods whose image can never be pulled (not found, unauthorized, an invalid name) "
        "this long after they started end the job as FAILED.",
    )
    operator_timeout_seconds: int = Field(
        300, ge=0, description="A job whose status the operator never fills in this long ends as FAILED."
    )
    log_tail_bytes: int = Field(4096, ge=0, description="The most of a failed container's log put in the Cause.")
    kueue_enabled: bool = Field(
        False,
        description="The cluster queues jobs with Kueue: a queued job's Workload (and LocalQueue) are read "
        "(the chart's kueueEnabled grants get on them).",
    )
    watch_seconds: int = Field(
        0,
        ge=0,
        le=MAX_WATCH_SECONDS,
        description="Watch mode: each poll holds a watch on the job up to this long (0: off).",
    )
    completion_mode: CompletionMode = Field(
        "poll", description="How an execution learns the job ended: poll, watch, or callback (the notifier's events)."
    )
    # The template's SafetyPollSeconds keeps deployments at 60 s or more; the local tiers go lower.
    safety_poll_seconds: int = Field(
        3600,
        ge=1,
        description="Callback mode: the longest wait for an event before one ordinary poll (a dead notifier's cost).",
    )
    sweep_seconds: int = Field(
        0,
        ge=0,
        description="Callback mode: the stack's sweeper runs this often and does the starting jobs' checks and a "
        "dead notifier's work (0: no sweeper; each Await then times out to look itself).",
    )
    backstop_seconds: int = Field(
        21_600,
        ge=60,
        description="Callback mode with the sweeper: the longest an Await waits before it looks itself, should "
        "both the notifier and the sweeper fail.",
    )
    table_name: str = Field("", description="Callback mode and learned hints: the stack's DynamoDB table.")
    runs_bucket: str = Field("", description="RunJobs: the bucket of its runs' jobs, results and outcomes.")
    state_machine_arn: str = Field(
        "",
        description="This deployment's state machine: cleanup after an execution event acts only on its "
        "executions, once DescribeExecution says they ended ('' refuses every such event).",
    )

    @field_validator("allowed_kinds", mode="before")
    @classmethod
    def _kinds(cls, value: Any) -> Any:
        return parse_allowed_kinds(value) if isinstance(value, str) else value

    @field_validator("namespace", "template_bucket", "template_prefix", mode="before")
    @classmethod
    def _strip(cls, value: Any) -> Any:
        return value.strip() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _bounds(self) -> Settings:
        self.wait  # noqa: B018 - WaitBounds checks the bounds fit together
        return self

    @cached_property
    def wait(self) -> WaitSettings:
        bounds = WaitBounds(
            min_seconds=self.min_wait_seconds,
            max_seconds=self.max_wait_seconds,
            pending_max_seconds=self.pending_max_wait_seconds,
            running_max_seconds=self.running_max_wait_seconds,
            poll_budget=self.poll_budget,
        )
        return WaitSettings(
            bounds,
            self.completion_mode,
            self.watch_seconds,
            self.safety_poll_seconds,
            self.sweep_seconds,
            self.backstop_seconds,
        )

    @cached_property
    def starts(self) -> StartSettings:
        return StartSettings(
            not_found_grace_seconds=self.not_found_grace_seconds,
            diagnose_after_seconds=self.diagnose_after_seconds,
            operator_timeout_seconds=self.operator_timeout_seconds,
            stuck_grace_seconds=self.stuck_grace_seconds,
            capacity_grace_seconds=self.capacity_grace_seconds,
            unschedulable_grace_seconds=self.unschedulable_grace_seconds,
            image_error_grace_seconds=self.image_error_grace_seconds,
            log_tail_bytes=self.log_tail_bytes,
        )

    @cached_property
    def callback(self) -> CallbackSettings:
        return CallbackSettings(self.table_name, self.state_machine_arn)

    @property
    def wait_bounds(self) -> WaitBounds:
        return self.wait.bounds

    def allowed(self, api_version: str, kind: str) -> KindSpec | None:
        for spec in self.allowed_kinds:
            if spec.api_version == api_version and spec.kind == kind:
                return spec
        return None


class ClusterSettings(_FromEnvironment):
    """Which cluster to reach and how (jobsync.cluster.connection). Hashable: the client cache key."""

    mode: Mode = Field("eks", validation_alias=AliasChoices("JOBSYNC_CLUSTER_MODE", "mode"))
    cluster_name: str | None = Field(
        None, validation_alias=AliasChoices("JOBSYNC_CLUSTER_NAME", "cluster_name"), description="eks mode."
    )
    region: str | None = Field(
        None, validation_alias=AliasChoices("AWS_REGION", "AWS_DEFAULT_REGION", "region"), description="eks mode."
    )
    kubeconfig: str | None = Field(
        None, validation_alias=AliasChoices("KUBECONFIG", "kubeconfig"), description="kubeconfig mode."
    )
    context: str | None = Field(
        None, validation_alias=AliasChoices("JOBSYNC_KUBE_CONTEXT", "context"), description="kubeconfig mode."
    )
    url: str | None = Field(
        None, repr=False, validation_alias=AliasChoices("JOBSYNC_KUBE_URL", "url"), description="url mode."
    )
    connect_timeout: float = Field(
        REQUEST_TIMEOUT[0],
        gt=0,
        validation_alias=AliasChoices("JOBSYNC_CONNECT_TIMEOUT_SECONDS", "connect_timeout"),
        description="Seconds to connect, for a call that passes no timeout.",
    )
    read_timeout: float = Field(
        REQUEST_TIMEOUT[1],
        gt=0,
        validation_alias=AliasChoices("JOBSYNC_READ_TIMEOUT_SECONDS", "read_timeout"),
        description="Seconds to wait for an answer, for a call that passes no timeout.",
    )

    @field_validator("mode", mode="before")
    @classmethod
    def _mode(cls, value: Any) -> Any:
        mode = value.strip().lower() if isinstance(value, str) else value
        if mode not in MODES:
            # Not a ValueError: pydantic would wrap it; the caller gets this very error.
            raise ClusterConfigError(f"unknown JOBSYNC_CLUSTER_MODE {value!r}; use one of {', '.join(MODES)}")
        return mode

    @field_validator("cluster_name", "region", "kubeconfig", "context", "url", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: Any) -> Any:
        return value or None

    @model_validator(mode="after")
    def _complete(self) -> ClusterSettings:
        if self.mode == "eks" and not (self.cluster_name and self.region):
            raise ClusterConfigError(f"cluster {self.label!r}: eks mode needs JOBSYNC_CLUSTER_NAME and AWS_REGION")
        if self.mode == "url" and not self.url:
            raise ClusterConfigError(f"cluster {self.label!r}: url mode needs JOBSYNC_KUBE_URL")
        return self

    @property
    def label(self) -> str:
        """How messages and logs name the cluster."""
        if self.mode == "kubeconfig":
            return f"kubeconfig context {self.context or '(current)'}"
        if self.mode == "url":
            return "local API (url mode)"
        if self.mode == "incluster":
            return "this cluster (in-cluster)"
        return self.cluster_name or "(unnamed)"
