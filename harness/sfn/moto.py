"""The exact versions of moto and jsonata-python whose internals :mod:`harness.sfn.hooks` patches."""

from __future__ import annotations

import importlib.metadata

PINNED = {"moto": "5.2.5", "jsonata-python": "0.7.1"}


def require_pinned_versions() -> None:
    """Raise ImportError unless the installed versions are the pinned ones: the hooks are written for those."""
    for dist, version in PINNED.items():
        installed = importlib.metadata.version(dist)
        if installed != version:
            raise ImportError(
                f"harness.sfn patches {dist} internals and is written for {dist}=={version}, "
                f"but {dist}=={installed} is installed: install the pinned requirements-dev.txt, "
                "or re-check every hook in harness/sfn/hooks.py against the new version."
            )
