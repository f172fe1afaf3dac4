"""Every generated output: whole files (path -> render) and doc sections (tools.generated.docs)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tools.generated import chart_kinds, docs
from tools.generated.sections import ROOT, Section

FILES: dict[Path, Callable[[], str]] = {chart_kinds.PATH: chart_kinds.render}


def sections() -> list[Section]:
    return docs.sections()


def render_all() -> dict[Path, str]:
    """Each file as its sources say it should read now."""
    out = {path: render() for path, render in FILES.items()}
    for section in sections():
        text = out.get(section.path) or section.path.read_text()
        out[section.path] = section.apply(text, section.render())
    return out


__all__ = ["FILES", "ROOT", "render_all", "sections"]
