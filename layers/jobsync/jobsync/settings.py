"""Settings of a deployment, read once from the environment the template sets."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from jobsync import kinds
from jobsync.kinds import KindSpec
from jobsync.policy import WaitBounds

DAY = 86_400
# A watch must end, and the poll answer, within the Lambda's 900 s maximum.
MAX_WATCH_SECONDS = 840


def _int(env: dict[str, str], name: str, default: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"environment variable {name} must be a whole number, got {raw!r}") from None


def _flag(env: dict[str, str], name: str) -> bool:
    return env.get(name, "").strip().lower() in {"1", "true", "yes"}


def parse_allowed_kinds(value: str) -> tuple[KindSpec, ...]:
    """``PyTorchJob,TFJob`` or ``apiVersion/Kind`` entries where a kind name is ambiguous."""
    specs: list[KindSpec] = []
    for entry in (e.strip() for e in value.split(",")):
        if not entry:
            continue
        if "/" in entry:
            api_version, kind = entry.rsplit("/", 1)
            specs.append(kinds.lookup(api_version, kind))
            continue
        found = [k for k in kinds.by_kind_name(entry) if k.plural]
        if not found:
            raise ValueError(f"JOBSYNC_ALLOWED_KINDS: unknown kind {entry!r}")
        specs.extend(found)
    if not specs:
        raise ValueError("JOBSYNC_ALLOWED_KINDS names no kind")
    return tuple(specs)


@dataclass(frozen=True)
class Settings:
    namespace: str = "ml-training"
    allowed_kinds: tuple[KindSpec, ...] = field(default_factory=lambda: parse_allowed_kinds("PyTorchJob"))
    default_timeout_seconds: int = DAY
    max_timeout_seconds: int = 30 * DAY
    wait_bounds: WaitBounds = field(default_factory=WaitBounds)
    template_bucket: str = ""
    template_prefix: str = ""
    allow_privileged_pods: bool = False
    max_manifest_bytes: int = 64 * 1024
    # A 404 this soon after submission is the API catching up, not a lost job.
    not_found_grace_seconds: int = 60
    # Read the pods of a job PENDING this long (why has it not started?).
    diagnose_after_seconds: int = 120
    # Pods in ImagePullBackOff or Unschedulable this long end the job as FAILED.
    stuck_grace_seconds: int = 900
    # A job whose status the operator never fills in this long ends as FAILED.
    operator_timeout_seconds: int = 300
    log_tail_bytes: int = 4096
    # Watch mode: each poll holds a watch on the job up to this long and returns
    # as soon as its phase changes (0: off). Under the Lambda's 900 s limit.
    watch_seconds: int = 0

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        env = dict(os.environ if env is None else env)
        bounds = WaitBounds(
            min_seconds=_int(env, "JOBSYNC_MIN_WAIT_SECONDS", WaitBounds.min_seconds),
            max_seconds=_int(env, "JOBSYNC_MAX_WAIT_SECONDS", WaitBounds.max_seconds),
            pending_max_seconds=_int(env, "JOBSYNC_PENDING_MAX_WAIT_SECONDS", WaitBounds.pending_max_seconds),
            running_max_seconds=_int(env, "JOBSYNC_RUNNING_MAX_WAIT_SECONDS", WaitBounds.running_max_seconds),
            poll_budget=_int(env, "JOBSYNC_POLL_BUDGET", WaitBounds.poll_budget),
        )
        return cls(
            namespace=env.get("JOBSYNC_NAMESPACE", "").strip() or cls.namespace,
            allowed_kinds=parse_allowed_kinds(env.get("JOBSYNC_ALLOWED_KINDS", "PyTorchJob")),
            default_timeout_seconds=_int(env, "JOBSYNC_DEFAULT_TIMEOUT_SECONDS", cls.default_timeout_seconds),
            max_timeout_seconds=_int(env, "JOBSYNC_MAX_TIMEOUT_SECONDS", cls.max_timeout_seconds),
            wait_bounds=bounds,
            template_bucket=env.get("JOBSYNC_TEMPLATE_BUCKET", "").strip(),
            template_prefix=env.get("JOBSYNC_TEMPLATE_PREFIX", "").strip(),
            allow_privileged_pods=_flag(env, "JOBSYNC_ALLOW_PRIVILEGED_PODS"),
            max_manifest_bytes=_int(env, "JOBSYNC_MAX_MANIFEST_BYTES", cls.max_manifest_bytes),
            not_found_grace_seconds=_int(env, "JOBSYNC_NOT_FOUND_GRACE_SECONDS", cls.not_found_grace_seconds),
            diagnose_after_seconds=_int(env, "JOBSYNC_DIAGNOSE_AFTER_SECONDS", cls.diagnose_after_seconds),
            stuck_grace_seconds=_int(env, "JOBSYNC_STUCK_GRACE_SECONDS", cls.stuck_grace_seconds),
            operator_timeout_seconds=_int(env, "JOBSYNC_OPERATOR_TIMEOUT_SECONDS", cls.operator_timeout_seconds),
            log_tail_bytes=_int(env, "JOBSYNC_LOG_TAIL_BYTES", cls.log_tail_bytes),
            watch_seconds=_int(env, "JOBSYNC_WATCH_SECONDS", cls.watch_seconds),
        )

    def __post_init__(self) -> None:
        if not 0 <= self.watch_seconds <= MAX_WATCH_SECONDS:
            raise ValueError(f"JOBSYNC_WATCH_SECONDS must be 0 to {MAX_WATCH_SECONDS}, got {self.watch_seconds}")

    def allowed(self, api_version: str, kind: str) -> KindSpec | None:
        for spec in self.allowed_kinds:
            if spec.api_version == api_version and spec.kind == kind:
                return spec
        return None
