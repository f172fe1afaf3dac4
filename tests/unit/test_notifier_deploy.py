"""The notifier's image agrees with the code that runs in it (its cluster objects: tests/integration/test_chart.py)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_image_copies_what_exists_and_pins_what_the_layer_pins():
    dockerfile = (ROOT / "notifier" / "Dockerfile").read_text()
    for source in re.findall(r"^COPY (\S+) ", dockerfile, re.M):
        assert (ROOT / source).exists(), source
    layer = dict(
        line.split("==") for line in (ROOT / "layers/jobsync/requirements.txt").read_text().splitlines() if "==" in line
    )
    notifier = dict(
        line.split("==") for line in (ROOT / "notifier/requirements.txt").read_text().splitlines() if "==" in line
    )
    assert notifier and all(layer[name] == version for name, version in notifier.items())
