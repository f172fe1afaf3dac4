"""Every generated output: path -> its text as the sources say it should be."""

from __future__ import annotations

from pathlib import Path

from tools.generated import chart_kinds

ROOT = Path(__file__).resolve().parents[2]


def render_all() -> dict[Path, str]:
    return {chart_kinds.PATH: chart_kinds.render()}
