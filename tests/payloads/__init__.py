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


def payload_names() -> list[str]:
    """Every payload file, relative to this folder."""
    return sorted(str(p.relative_to(PAYLOADS)) for p in PAYLOADS.rglob("*") if p.suffix in {".yaml", ".json"})
