"""One line per check: ``ok``, ``fix`` with the exact command that fixes it, or ``skip`` with why it could not run."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

Status = Literal["ok", "fix", "skip"]


@dataclass(frozen=True)
class Check:
    """A check's outcome. ``detail`` says what was found; ``fix``, for a failed check, the command."""

    name: str
    status: Status
    detail: str
    fix: str = ""

    def line(self) -> str:
        text = f"{self.status:<5} {self.name}: {self.detail}"
        return f"{text} -> {self.fix}" if self.fix else text


def ok(name: str, detail: str) -> Check:
    return Check(name, "ok", detail)


def fix(name: str, detail: str, command: str) -> Check:
    return Check(name, "fix", detail, command)


def skip(name: str, why: str) -> Check:
    return Check(name, "skip", why)


def exit_code(checks: Iterable[Check]) -> int:
    """0 when nothing needs fixing, 1 otherwise (a skipped check waits on one that needs fixing)."""
    return 1 if any(c.status != "ok" for c in checks) else 0
