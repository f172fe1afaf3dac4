"""Real job objects for the evaluator tests; see README.md here for where each comes from."""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

import yaml

PAYLOADS = Path(__file__).resolve().parent


@cache
def _load(name: str) -> Any:
    path = PAYLOADS / name
    text = path.read_text()
    return json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)


def load_payload(name: str) -> Any:
    """A fresh copy of ``tests/payloads/<name>`` (YAML or JSON), safe to modify."""
    return copy.deepcopy(_load(name))


#: Queue states recorded by the e2e tier: a job and its Kueue Workload together, not one job object.
KUEUE = "kueue"


def payload_names() -> list[str]:
    """Every job payload file, relative to this folder (the Kueue states are ``kueue_state_names``)."""
    return sorted(
        str(p.relative_to(PAYLOADS))
        for p in PAYLOADS.rglob("*")
        if p.suffix in {".yaml", ".json"} and p.relative_to(PAYLOADS).parts[0] != KUEUE
    )


def kueue_state_names() -> list[str]:
    """Every recorded Kueue state (``kueue/<state>.yaml``: ``{"job": ..., "workload": ...}``)."""
    return sorted(p.stem for p in (PAYLOADS / KUEUE).glob("*.yaml"))
