"""Label selectors (``labelSelector``) and field selectors (``fieldSelector``)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from harness.kubeapi.errors import ApiError
from harness.kubeapi.routes import Obj


class Selector:
    """A label selector: ``a=b``, ``a==b``, ``a!=b``, ``a``, ``!a``, ``a in (x,y)``, ``a notin (x,y)``."""

    _SET = re.compile(r"^\s*([^\s!=(),]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")
    _EQ = re.compile(r"^\s*([^\s!=]+)\s*(==|=|!=)\s*([^\s]*)\s*$")
    _EXISTS = re.compile(r"^\s*(!?)\s*([^\s!=(),]+)\s*$")

    def __init__(self, text: str | None) -> None:
        self.terms: list[Callable[[dict[str, str]], bool]] = []
        for term in _split_terms(text or ""):
            self.terms.append(self._parse(term))

    def _parse(self, term: str) -> Callable[[dict[str, str]], bool]:
        if m := self._SET.match(term):
            key, op, values = m.group(1), m.group(2), {v.strip() for v in m.group(3).split(",") if v.strip()}
            if op == "in":
                return lambda labels: labels.get(key) in values
            return lambda labels: labels.get(key) not in values
        if m := self._EQ.match(term):
            key, op, value = m.groups()
            if op == "!=":
                return lambda labels: labels.get(key) != value
            return lambda labels: labels.get(key) == value
        if m := self._EXISTS.match(term):
            neg, key = m.groups()
            return (lambda labels: key not in labels) if neg else (lambda labels: key in labels)
        raise ApiError(400, "BadRequest", f"unable to parse requirement: {term!r}")

    def matches(self, labels: dict[str, str] | None) -> bool:
        return all(term(labels or {}) for term in self.terms)


def _split_terms(text: str) -> list[str]:
    """Split on commas that are not inside ``( )``."""
    terms, depth, cur = [], 0, ""
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            terms.append(cur)
            cur = ""
        else:
            cur += ch
    terms.append(cur)
    return [t for t in terms if t.strip()]


class FieldSelector:
    """``metadata.name=x``, ``metadata.namespace!=y``, ``status.phase=Running``: dotted paths, = / == / !=."""

    def __init__(self, text: str | None) -> None:
        self.terms: list[tuple[list[str], bool, str]] = []
        for term in _split_terms(text or ""):
            m = re.match(r"^\s*([\w.]+)\s*(==|=|!=)\s*(.*?)\s*$", term)
            if not m:
                raise ApiError(400, "BadRequest", f"invalid selector: '{text}'; can't understand '{term}'")
            self.terms.append((m.group(1).split("."), m.group(2) != "!=", m.group(3)))

    def matches(self, obj: Obj) -> bool:
        for path, equal, value in self.terms:
            cur: Any = obj
            for part in path:
                cur = cur.get(part) if isinstance(cur, dict) else None
            if ((cur if cur is not None else "") == value) != equal:
                return False
        return True
