"""The notifier's own settings; the namespace, allowed kinds and table are the Lambdas' (jobsync.settings)."""

from __future__ import annotations

from pydantic import Field

from jobsync.settings import _FromEnvironment


class NotifierSettings(_FromEnvironment):
    """Each field is ``JOBSYNC_<FIELD>``."""

    event_bus_name: str = Field(min_length=1, description="The EventBridge bus the stack created (EventBusName).")
    health_port: int = Field(8080, ge=0, le=65535, description="Port of /healthz and /readyz (0: any free port).")
    watch_timeout_seconds: int = Field(
        300, gt=0, description="How long one watch request lasts before it is opened again from where it ended."
    )
    stale_after_seconds: int = Field(
        900, gt=0, description="/healthz fails when no list or watch answered for this long."
    )
    publish_concurrency: int = Field(8, ge=1, le=32, description="PutEvents calls at once (each puts up to 10 events).")
    page_size: int = Field(500, ge=1, le=10_000, description="Jobs per page of a LIST: the most it reads at once.")
