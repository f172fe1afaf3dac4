"""The README's execution input is the sample event a test runs, not a copy that drifts."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_readme_input_example_is_events_run_job_input():
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("**Execution input** (`events/run-job-input.json`):") :]
    example = re.search(r"```json\n(.*?)\n```", section, re.S)
    assert example is not None
    assert json.loads(example.group(1)) == json.loads((ROOT / "events" / "run-job-input.json").read_text())
