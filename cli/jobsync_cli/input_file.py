"""A JSON or YAML document from a file or stdin, read within the bounds of what an execution accepts.

The command line reads what it hands to Step Functions (``jobsync run``'s execution input) or what a
state hands to EvaluateFunction (``jobsync evaluate``'s object). Neither can be larger than Step
Functions' payload limit, so no more than that is read, and nothing nested deeper than a job template
may be (``jobsync.run.templates.MAX_DEPTH``) is parsed: a 200,000-deep file is one line naming the file
and the bound, never a RecursionError or a read of the whole of a huge file.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import yaml

from jobsync.run.templates import MAX_DEPTH

# Step Functions: an execution's input, and every state's payload, is at most 256 KiB of UTF-8.
MAX_BYTES = 256 * 1024


class InputError(ValueError):
    """The input is over a bound; the message names the input and the bound."""


class TooLarge(InputError):
    pass


class TooDeep(InputError):
    pass


def source_name(path: str) -> str:
    return "stdin" if path == "-" else path


def read_text(path: str) -> str:
    """The UTF-8 text of ``path`` (``-``: stdin), reading at most one byte past :data:`MAX_BYTES`.

    Raises TooLarge past the bound, and what reading raises (OSError, UnicodeDecodeError) as it is.
    """
    if path == "-":
        data = sys.stdin.buffer.read(MAX_BYTES + 1)
    else:
        with open(path, "rb") as handle:
            data = handle.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise TooLarge(
            f"{source_name(path)}: more than {MAX_BYTES:,} bytes (256 KiB, Step Functions' limit on a payload)"
        )
    return data.decode("utf-8")


def load_json(text: str, source: str) -> Any:
    """``text`` as JSON, refused with TooDeep when nested deeper than :data:`MAX_DEPTH`.

    Raises ValueError (json.JSONDecodeError) for text that is not JSON.
    """
    try:
        document = json.loads(text)
    except RecursionError:  # the C decoder stops at the interpreter's recursion limit, far past MAX_DEPTH
        raise _too_deep(source) from None
    check_depth(document, source)
    return document


def load_yaml(text: str, source: str) -> Any:
    """``text`` as YAML (the safe loader's types), refused with TooDeep when nested deeper than MAX_DEPTH.

    Raises yaml.YAMLError (and ValueError for a date that is none) for text that is not YAML.
    """
    document = yaml.load(text, Loader=_loader(source))  # a SafeLoader, bounded
    check_depth(document, source)  # aliases can nest deeper than the text does, or refer to themselves
    return document


def check_depth(document: Any, source: str) -> None:
    """TooDeep when a value lies more than MAX_DEPTH levels down (the document itself is level 1).

    Each list and mapping is measured once, so a YAML alias used many times costs once and one that
    contains itself is too deep, not an endless walk.
    """
    heights: dict[int, int] = {}  # id -> levels from it to its deepest value; -1 while being measured

    def height(value: Any, level: int) -> int:
        if not isinstance(value, dict | list) or not value:
            return 1
        known = heights.get(id(value))
        if known is None:
            if level >= MAX_DEPTH:
                raise _too_deep(source)
            heights[id(value)] = -1
            known = 1 + max(height(item, level + 1) for item in (value.values() if isinstance(value, dict) else value))
            heights[id(value)] = known
        if known < 0 or level + known - 1 > MAX_DEPTH:
            raise _too_deep(source)
        return known

    height(document, 1)


def _too_deep(source: str) -> TooDeep:
    return TooDeep(f"{source}: nested deeper than {MAX_DEPTH} levels")


def _loader(source: str) -> type[yaml.SafeLoader]:
    """A SafeLoader whose composer (recursive, one call per level) stops at MAX_DEPTH."""

    class Loader(yaml.SafeLoader):
        depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            self.depth += 1
            try:
                if self.depth > MAX_DEPTH:
                    raise _too_deep(source)
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

    return Loader
