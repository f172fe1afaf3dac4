"""Doc sections between markers, each rendered from its source of truth.

A section in a Markdown file reads::

    <!-- generated: NAME (from SOURCE: make generated) -->
    ...
    <!-- /generated: NAME -->

and only what is between the markers is rewritten. Without the line break after the opening marker, the
section is a phrase inside a line (a table cell).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Section:
    path: Path
    name: str
    source: str
    render: Callable[[], str]

    def pattern(self) -> re.Pattern[str]:
        name = re.escape(self.name)
        return re.compile(rf"(<!-- generated: {name} \(from [^)]*\) -->\n?)(.*?)(<!-- /generated: {name} -->)", re.S)

    def current(self) -> str:
        found = self.pattern().search(self.path.read_text())
        if found is None:
            raise LookupError(f"{self.path.relative_to(ROOT)} has no generated section {self.name!r}")
        return found.group(2)

    def apply(self, text: str, body: str) -> str:
        opening = f"<!-- generated: {self.name} (from {self.source}: make generated) -->"

        def one(match: re.Match[str]) -> str:
            newline = "\n" if match.group(1).endswith("\n") else ""  # a block, or a phrase inside a line
            return opening + newline + body + match.group(3)

        replaced, count = self.pattern().subn(one, text)
        if count != 1:
            raise LookupError(f"{self.path.relative_to(ROOT)}: {count} sections named {self.name!r}")
        return replaced
