"""What is generated from a source of truth is what that source says now (``make generated`` rewrites it).

Each generated file and doc section (tools/generated) is rendered afresh from its source - the kind
registry, template.yaml, the chart as the real helm renders it, the template as SAM translates it,
bench/results.json - and compared with what the repository holds. A section whose source needs a tool
this machine lacks (helm, the SAM translator) skips, saying which; CI has both.
"""

from __future__ import annotations

import pytest

from tools.generated import outputs
from tools.generated.sections import ROOT


@pytest.mark.parametrize("path", sorted(outputs.FILES), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_generated_file_is_what_its_source_says(path):
    assert path.read_text() == outputs.FILES[path](), (
        f"{path.relative_to(ROOT)} drifted from its source: make generated"
    )


@pytest.mark.parametrize("section", outputs.sections(), ids=lambda s: f"{s.path.relative_to(ROOT)}:{s.name}")
def test_the_generated_section_is_what_its_source_says(section):
    expected = section.render()
    assert section.current() == expected, (
        f"{section.path.relative_to(ROOT)}, section {section.name}, drifted from {section.source}: make generated"
    )


def test_a_drifted_section_is_seen():
    """So that the comparison above can fail: a figure changed by hand is not what the source says."""
    (headline,) = [s for s in outputs.sections() if s.name == "headline"]
    edited = headline.path.read_text().replace(" sooner than the fixed 10-minute", " sooner than a fixed 10-minute", 1)
    assert edited != headline.path.read_text()
    body = headline.pattern().search(edited).group(2)
    assert body != headline.render()
