"""``python -m jobsync_notifier``: run the notifier until SIGTERM.

Its objects in the cluster (ServiceAccount, Role, Deployment) come from the chart, charts/jobsync.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Sequence

from aws_lambda_powertools import Logger

from jobsync.cluster import get_api_client
from jobsync.errors import JobsyncError
from jobsync.settings import ClusterSettings, Settings
from jobsync_notifier.notifier import Notifier
from jobsync_notifier.settings import NotifierSettings

logger = Logger(service="jobsync-notifier")


def main(argv: Sequence[str] | None = None) -> int:
    try:
        settings, notifier_settings = Settings.from_env(), NotifierSettings.from_env()
        client = get_api_client(ClusterSettings.from_env())
    except (ValueError, JobsyncError) as exc:
        logger.error("cannot start", extra={"error": str(exc)})
        return 2
    notifier = Notifier(client, settings, notifier_settings).start()
    logger.info(
        "notifier started",
        extra={
            "namespace": settings.namespace,
            "kinds": [s.kind for s in settings.allowed_kinds],
            "bus": notifier_settings.event_bus_name,
            "healthPort": notifier.health.port,
        },
    )
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    done.wait()
    notifier.stop()
    logger.info("notifier stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
