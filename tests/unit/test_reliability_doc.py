"""docs/reliability.md stays true: every test it names exists, every catalogued bad input is listed."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "reliability.md").read_text()


def test_every_test_the_doc_names_exists():
    defined = set()
    for path in (ROOT / "tests").rglob("test_*.py"):
        defined |= set(re.findall(r"^def (test_\w+)", path.read_text(), re.MULTILINE))
    named = set(re.findall(r"`(test_\w+)", DOC))
    assert len(named) >= 25
    assert named - defined == set()


def test_every_bad_input_is_in_the_table_and_the_count_is_right():
    entries = yaml.safe_load((ROOT / "tests" / "data" / "bad_inputs.yaml").read_text())
    rows = re.findall(r"^\| `([a-z0-9-]+)` \| (submit|status|cleanup|evaluate) \|", DOC, re.MULTILINE)
    assert [row[0] for row in rows] == [e["id"] for e in entries]
    assert f"\n{len(entries)} malformed" in DOC
