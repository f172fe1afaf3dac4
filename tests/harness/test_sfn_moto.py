"""moto's insides are touched in one place (harness/sfn/moto.py), for the pinned versions only.

The hooks replace private methods and module globals of moto's interpreter, and read some of its private
state. Those change between releases without notice, so every one of them is named in harness.sfn.moto:
no other harness module imports moto's Step Functions internals, every seam exists in the pinned
release, and another release fails at import, naming the file to re-check.
"""

from __future__ import annotations

import ast
import importlib.metadata
from pathlib import Path

import pytest

from harness.sfn import hooks, moto

SFN = Path(moto.__file__).resolve().parent


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    return names | {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}


def test_only_the_adapter_imports_the_interpreters_insides():
    others = [p for p in SFN.rglob("*.py") if p.name != "moto.py"]
    assert len(others) >= 8
    for path in others:
        internal = ("moto.stepfunctions", "moto.events", "moto.awslambda", "moto.core", "jsonata.timebox")
        inside = {m for m in imported_modules(path) if m.startswith(internal)}
        assert inside == set(), f"{path.relative_to(SFN)} imports {inside}: name it in harness/sfn/moto.py"


def test_every_seam_exists_in_the_pinned_release():
    seams = [v for v in vars(moto).values() if isinstance(v, moto.Seam)]
    seams += [s for v in vars(moto).values() if isinstance(v, tuple) for s in v if isinstance(s, moto.Seam)]
    assert len(seams) >= 30
    assert all(hasattr(seam.owner, seam.name) for seam in seams)


def test_another_release_is_refused_naming_what_to_recheck(monkeypatch):
    monkeypatch.setattr(importlib.metadata, "version", lambda dist: "9.9.9")
    with pytest.raises(ImportError, match=r"moto==5\.2\.5.*moto==9\.9\.9.*harness/sfn/moto\.py"):
        moto.require_pinned_versions()


def test_the_hooks_are_grouped_and_each_patches_once():
    groups = {hook.__module__.rsplit(".", 1)[-1] for hook in hooks.HOOKS}
    assert groups == {
        "jsonata",
        "services",
        "limits",
        "virtual_time",
        "in_process",
        "diagnostics",
        "distributed_map",
    }
    assert len({hook.__name__ for hook in hooks.HOOKS}) == len(hooks.HOOKS)
    assert all(hook.__doc__ for hook in hooks.HOOKS)
