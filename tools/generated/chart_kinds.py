"""charts/jobsync/files/kinds.yaml: the kind registry (jobsync.evaluation.kinds) as the chart reads it.

The chart turns AllowedKinds into Role rules with it; the functions read the same registry in Python.
Only kinds the Kubernetes API serves (a plural) are listed; ``via`` are the objects between a job and
its pods whose owner references are read (get).
"""

from __future__ import annotations

from pathlib import Path

import yaml

from jobsync.evaluation.kinds import KINDS

ROOT = Path(__file__).resolve().parents[2]
PATH = ROOT / "charts" / "jobsync" / "files" / "kinds.yaml"
HEADER = "# Generated from layers/jobsync/jobsync/evaluation/kinds.py by `make generated`: do not edit.\n"


def render() -> str:
    kinds = [
        {
            "apiVersion": spec.api_version,
            "kind": spec.kind,
            "group": spec.group,
            "plural": spec.plural,
            "byName": spec.by_name,
            "owners": [{"group": part.group, "plural": part.plural} for part in spec.owners],
        }
        for spec in KINDS
        if spec.plural
    ]
    return HEADER + yaml.safe_dump({"kinds": kinds}, sort_keys=False)
