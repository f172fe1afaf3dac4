"""What is generated from a source of truth is what that source says now (``make generated`` rewrites it).

Each output of tools/generated is rendered afresh from its source (the kind registry, template.yaml, the
chart, the translated template, bench/results.json) and compared with what the repository holds.
"""

from __future__ import annotations

import pytest

from tools.generated import outputs


@pytest.mark.parametrize("path", sorted(outputs.render_all()), ids=lambda p: str(p.relative_to(outputs.ROOT)))
def test_the_generated_text_is_what_its_source_says(path):
    expected = outputs.render_all()[path]
    assert path.read_text() == expected, f"{path.relative_to(outputs.ROOT)} drifted from its source: make generated"
