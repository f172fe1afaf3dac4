"""A cluster from a terminal: the kubeconfig options, the job a person names, a client that fails fast.

``jobsync wait`` and ``jobsync logs`` read the cluster as kubectl does: the
kubeconfig of ``--kubeconfig`` (else ``KUBECONFIG``, else ``~/.kube/config``),
its ``--context``, and the namespace the context names unless ``--namespace``
says otherwise. A job is named ``NAME`` (of ``--kind``, PyTorchJob by default)
or ``KIND/NAME`` (``pytorchjob/mnist``), a kind in any case. A kubeconfig whose
API server does not answer fails at once, saying so
(``jobsync.cluster.connection.check_reachable``), never after minutes of
silent retries.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from jobsync.errors import JobsyncError
from jobsync.evaluation.kinds import KindSpec
from jobsync_cli.aws import FollowError

DEFAULT_NAMESPACE = "default"


def add_options(parser: argparse.ArgumentParser, kind: bool = True) -> None:
    """--kubeconfig, --context, --namespace (and --kind, --api-version): where the job is."""
    parser.add_argument(
        "--kubeconfig",
        metavar="PATH",
        default=None,
        help="the kubeconfig (without one: KUBECONFIG, else ~/.kube/config)",
    )
    parser.add_argument("--context", default=None, help="the kubeconfig's context (without one: its current one)")
    parser.add_argument(
        "-n",
        "--namespace",
        default=None,
        help="the job's namespace (without one: the context's, else default)",
    )
    if kind:
        parser.add_argument("--kind", default="PyTorchJob", help="the job's kind, when JOB is a bare name")
        parser.add_argument(
            "--api-version", default=None, help="the kind's apiVersion, where several groups serve the name"
        )


def kubeconfig_path(args: argparse.Namespace) -> str:
    path = args.kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config"
    return os.path.expanduser(path.split(os.pathsep)[0])


def namespace(args: argparse.Namespace) -> str:
    """--namespace, else the namespace of the kubeconfig's context, else ``default``."""
    if args.namespace:
        return str(args.namespace)
    from kubernetes.config import list_kube_config_contexts
    from kubernetes.config.config_exception import ConfigException

    try:
        contexts, current = list_kube_config_contexts(config_file=kubeconfig_path(args))
    except (ConfigException, OSError, ValueError):
        return DEFAULT_NAMESPACE  # connect() says what is wrong with the kubeconfig
    chosen = next((c for c in contexts if c.get("name") == args.context), None) if args.context else current
    return str(((chosen or {}).get("context") or {}).get("namespace") or DEFAULT_NAMESPACE)


def job(text: str, args: argparse.Namespace) -> tuple[KindSpec, str]:
    """The kind and name a person wrote: ``NAME`` (of --kind) or ``KIND/NAME``."""
    from jobsync.run.wait import spec_for

    kind, _, name = text.rpartition("/")
    try:
        return spec_for(kind or args.kind, args.api_version), name
    except JobsyncError as err:
        raise FollowError(str(err)) from None


def connect(args: argparse.Namespace) -> Any:
    """The cluster (``KubeJobs``) of the kubeconfig, once its API server answered."""
    from jobsync.cluster.connection import check_reachable, get_api_client
    from jobsync.cluster.jobs import KubeJobs
    from jobsync.run.wait import kubeconfig_settings

    path = kubeconfig_path(args)
    if not os.path.exists(path):
        raise FollowError(f"no kubeconfig at {path} (give --kubeconfig PATH, or set KUBECONFIG)")
    settings = kubeconfig_settings(path, args.context)
    try:
        check_reachable(settings)
        return KubeJobs(get_api_client(settings))
    except JobsyncError as err:
        raise FollowError(str(err)) from None
