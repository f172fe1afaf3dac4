"""``python -m jobsync_notifier``: run the notifier until SIGTERM.

``python -m jobsync_notifier manifests --image ... --event-bus ...`` prints
its objects for ``kubectl apply -f -`` instead.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence

import yaml
from aws_lambda_powertools import Logger

from jobsync.cluster import get_api_client
from jobsync.errors import JobsyncError
from jobsync.settings import ClusterSettings, Settings
from jobsync_notifier.notifier import Notifier
from jobsync_notifier.settings import NotifierSettings

logger = Logger(service="jobsync-notifier")


def manifests(argv: Sequence[str]) -> int:
    from jobsync.settings import parse_allowed_kinds
    from jobsync_notifier.deploy import objects

    parser = argparse.ArgumentParser(
        prog="python -m jobsync_notifier manifests", formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--namespace", default="ml-training", help="the stack's Namespace")
    parser.add_argument("--kinds", default="PyTorchJob", help="the stack's AllowedKinds")
    parser.add_argument("--image", required=True, help="the notifier image (notifier/Dockerfile)")
    parser.add_argument("--event-bus", required=True, help="the stack's EventBusName output")
    parser.add_argument("--region", required=True, help="the stack's region")
    parser.add_argument("--irsa-role-arn", default=None, help="use IRSA with this role instead of Pod Identity")
    args = parser.parse_args(argv)
    try:
        kinds = parse_allowed_kinds(args.kinds)
    except ValueError as exc:
        parser.error(str(exc))
    docs = objects(args.namespace, kinds, args.image, args.event_bus, args.region, args.irsa_role_arn)
    print(yaml.safe_dump_all(docs, sort_keys=False), end="")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["manifests"]:
        return manifests(argv[1:])
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
