"""From an S3 job template and its parameters to a plain JSON manifest, in bounded time and memory.

A template is parsed once, with its ``${NAME}`` placeholders in it, and the
parameters are put into the parsed tree as scalars: a value can change what
a string says, never the shape of the manifest, whatever characters it holds.
A scalar that is exactly ``${NAME}`` (unquoted) takes the parameter's JSON
type (``replicas: ${WORKERS}`` becomes the number 2); anywhere else the value
is text.

What comes out is plain JSON: strings, finite numbers, booleans, null, lists
and mappings with string keys. Everything else is refused with InvalidInput
naming the line and column, never quoting the template (a template line can
hold a registry token):

- YAML types JSON has not: ``!!binary``, ``!!set``, ``!!omap``, ``!!pairs``,
  ``!!timestamp``, python and local tags, ``.nan`` and ``.inf``. An unquoted
  date stays the string it reads as (Kubernetes wants strings there).
- More than ``MAX_DEPTH`` levels of nesting (PyYAML's composer recurses per
  level: 3,000 levels is a RecursionError).
- A template that expands, through anchors, aliases and merge keys, to more
  than the manifest size limit: the expansion is counted as it is made, so a
  few hundred bytes of alias bomb are refused after at most that much work.
- A template over the size limit, duplicate keys, keys that are not strings,
  placeholders in keys, and a placeholder without a parameter.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import Resolver
from yaml.scanner import Scanner

from jobsync.errors import InvalidInput

PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
# Before parsing, ``${NAME}`` becomes ``OPEN NAME CLOSE`` in private-use characters: the same length (so
# line and column numbers hold), and a plain scalar in flow context too (``{replicas: ${WORKERS}}``), where
# ``{`` would end it.
_OPEN, _CLOSE = "\ue000\ue001", "\ue002"
_MARKED = re.compile(f"{_OPEN}([A-Za-z_][A-Za-z0-9_]*){_CLOSE}")
MAX_DEPTH = 100

# Every character PyYAML reads as a line break (\r, \n, NEL, LS, PS) and every
# other one Python's str.splitlines() splits on: a value is one line by any reading.
LINE_BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")

Parameter = str | int | float | bool

_TAG = "tag:yaml.org,2002:"
_STR, _NULL, _BOOL, _INT, _FLOAT = (_TAG + t for t in ("str", "null", "bool", "int", "float"))
_SEQ, _MAP, _MERGE = _TAG + "seq", _TAG + "map", _TAG + "merge"


class _Resolver(Resolver):
    """YAML 1.1's implicit types, less timestamps: an unquoted date stays a string."""

    yaml_implicit_resolvers: ClassVar[dict[str, list[tuple[str, re.Pattern[str]]]]] = {  # type: ignore[misc]
        first: [(tag, regexp) for tag, regexp in resolvers if tag != _TAG + "timestamp"]
        for first, resolvers in Resolver.yaml_implicit_resolvers.items()
    }


class _Loader(Reader, Scanner, Parser, Composer, _Resolver):
    """Parses and composes only (the node tree is converted by ``_Converter``), with bounded nesting."""

    def __init__(self, stream: str, source: str) -> None:
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)
        Composer.__init__(self)
        _Resolver.__init__(self)
        self._source = source
        self._depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                where = _where(self.peek_event().start_mark)  # type: ignore[no-untyped-call]
                raise InvalidInput(f"{self._source}: {where}nested deeper than {MAX_DEPTH}")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def render(text: str, parameters: Mapping[str, Parameter], source: str, max_bytes: int) -> dict[str, Any]:
    """The manifest a template and its parameters make, as plain JSON; InvalidInput naming what is wrong."""
    check_parameters(parameters)
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise InvalidInput(f"{source}: template is {size} bytes, over the limit of {max_bytes}")
    if any(c in text for c in _OPEN + _CLOSE):
        raise InvalidInput(f"{source}: holds the private-use characters U+E000 to U+E002, which jobsync reserves")
    docs = list(_documents(PLACEHOLDER.sub(lambda m: f"{_OPEN}{m.group(1)}{_CLOSE}", text), source))
    if len(docs) != 1:
        raise InvalidInput(f"{source}: must hold exactly one document, found {len(docs)}")
    converter = _Converter(parameters, source, max_bytes)
    manifest = converter.convert(docs[0])
    if converter.missing:
        raise InvalidInput(f"parameters: missing values for placeholders {sorted(converter.missing)} in {source}")
    if not isinstance(manifest, dict):
        raise InvalidInput(f"{source}: must be a mapping (a Kubernetes object), got {_json_type(manifest)}")
    return manifest


def check_parameters(parameters: Mapping[str, Parameter]) -> None:
    for name, value in parameters.items():
        if isinstance(value, str) and not LINE_BREAKS.isdisjoint(value):
            # A line break could smuggle YAML structure into a text template; here it is refused outright.
            raise InvalidInput(
                f"parameters.{name}: values must be a single line (no line breaks, "
                "including \\r, \\v, \\f, U+0085, U+2028 and U+2029)"
            )
        if isinstance(value, float) and not math.isfinite(value):
            raise InvalidInput(f"parameters.{name}: must be a finite number")


def _documents(text: str, source: str) -> Iterator[Node]:
    loader = None
    try:
        loader = _Loader(text, source)  # the reader checks every character here
        while loader.check_node():
            node = loader.get_node()
            if node is not None and not (isinstance(node, ScalarNode) and node.tag == _NULL):
                yield node
    except yaml.MarkedYAMLError as exc:
        raise InvalidInput(f"{source}: not valid YAML: {_where(exc.problem_mark)}{_redacted(exc.problem)}") from None
    except yaml.YAMLError as exc:  # the reader's: a character YAML does not allow
        position = getattr(exc, "position", None)
        where = ""
        if isinstance(position, int):
            line = text.count("\n", 0, position)
            where = f"line {line + 1}, column {position - (text.rfind(chr(10), 0, position) + 1) + 1}: "
        raise InvalidInput(f"{source}: not valid YAML: {where}a control character YAML does not allow") from None
    finally:
        if loader is not None:
            loader.dispose()


class _Converter:
    """Node tree to plain JSON values, counting the work against the size limit."""

    def __init__(self, parameters: Mapping[str, Parameter], source: str, max_bytes: int) -> None:
        self.parameters = parameters
        self.source = source
        self.budget = max_bytes
        self.max_bytes = max_bytes
        self.missing: set[str] = set()
        self.scalars = SafeConstructor()

    def refuse(self, node: Node, problem: str) -> InvalidInput:
        return InvalidInput(f"{self.source}: {_where(node.start_mark)}{problem}")

    def spend(self, node: Node, cost: int) -> None:
        self.budget -= cost
        if self.budget < 0:
            raise self.refuse(
                node, f"expands (anchors, aliases, merge keys) to over the limit of {self.max_bytes} bytes"
            )

    def convert(self, node: Node, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise self.refuse(node, f"nested deeper than {MAX_DEPTH} (an alias that refers to itself?)")
        if isinstance(node, ScalarNode):
            return self.scalar(node)
        if isinstance(node, SequenceNode):
            if node.tag != _SEQ:
                raise self.refuse(node, f"{_tag_name(node.tag)} is not allowed: a template holds plain JSON values")
            self.spend(node, 2)
            return [self.convert(item, depth + 1) for item in node.value]
        if isinstance(node, MappingNode):
            if node.tag != _MAP:
                raise self.refuse(node, f"{_tag_name(node.tag)} is not allowed: a template holds plain JSON values")
            self.spend(node, 2)
            return self.mapping(node, depth)
        raise self.refuse(node, "not a JSON value")  # pragma: no cover - PyYAML has no other node kinds

    def mapping(self, node: MappingNode, depth: int) -> dict[str, Any]:
        result: dict[str, Any] = {}
        merged: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if isinstance(key_node, ScalarNode) and key_node.tag == _MERGE:
                for source in self.merge_sources(value_node):
                    for key, value in self.convert(source, depth + 1).items():
                        merged.setdefault(key, value)  # the first mapping merged wins (YAML merge key spec)
                continue
            key = self.key(key_node)
            if key in result:
                raise self.refuse(key_node, "duplicate key")
            result[key] = self.convert(value_node, depth + 1)
        return {**merged, **result} if merged else result

    def merge_sources(self, node: Node) -> list[Node]:
        if isinstance(node, MappingNode):
            return [node]
        if isinstance(node, SequenceNode) and all(isinstance(n, MappingNode) for n in node.value):
            return list(node.value)
        raise self.refuse(node, "a merge key (<<) takes a mapping or a list of mappings")

    def key(self, node: Node) -> str:
        if not isinstance(node, ScalarNode) or node.tag != _STR:
            raise self.refuse(node, "keys must be strings")
        if _MARKED.search(node.value):
            raise self.refuse(node, "placeholders may only stand in values, not in keys")
        self.spend(node, len(node.value) + 3)
        return str(node.value)

    def scalar(self, node: ScalarNode) -> Any:
        tag = node.tag
        if tag == _STR:
            value = self.substitute(node)
        elif tag == _NULL:
            value = None
        elif tag == _BOOL:
            value = self.scalars.construct_yaml_bool(node)
        elif tag == _INT:
            value = self.scalars.construct_yaml_int(node)
        elif tag == _FLOAT:
            value = self.scalars.construct_yaml_float(node)
            if not math.isfinite(value):
                raise self.refuse(node, "not a finite number: JSON has no NaN or infinity")
        else:
            raise self.refuse(node, f"{_tag_name(tag)} is not allowed: a template holds plain JSON values")
        self.spend(node, len(json.dumps(value)) + 1)
        return value

    def substitute(self, node: ScalarNode) -> Parameter:
        text = str(node.value)
        if _OPEN not in text:
            return text
        names = _MARKED.findall(text)
        self.missing.update(n for n in names if n not in self.parameters)
        whole = _MARKED.fullmatch(text)
        if whole and node.style is None and whole.group(1) in self.parameters:
            return self.parameters[whole.group(1)]  # unquoted and alone: the parameter's own JSON type
        return _MARKED.sub(lambda m: _text(self.parameters[m.group(1)]) if m.group(1) in self.parameters else "", text)


def _text(value: Parameter) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _where(mark: Any) -> str:
    """``line L, column C: `` from a PyYAML mark, never the snippet of text it carries."""
    if mark is None:
        return ""
    return f"line {mark.line + 1}, column {mark.column + 1}: "


def _redacted(problem: str | None) -> str:
    """PyYAML's description of a problem, with anything it quotes from the template cut out.

    Short quotes stay (``found character '\\t' that cannot start any token``);
    a longer one (a tag, an anchor name, an escape sequence) could be part of a secret.
    """
    if not problem:
        return "syntax error"
    return re.sub(r"'((?:\\.|[^'\\])*)'|\"((?:\\.|[^\"\\])*)\"", _short_quote_only, problem)


def _short_quote_only(match: re.Match[str]) -> str:
    quoted = match.group(1) if match.group(1) is not None else match.group(2)
    return match.group(0) if len(quoted) <= 4 else "(text withheld)"


_KNOWN_TAGS = frozenset({"binary", "set", "omap", "pairs", "timestamp", "seq", "map", "str", "int", "float", "bool"})


def _tag_name(tag: str) -> str:
    """A tag as the error names it: YAML's own by name, any other only by its sort (it is template text)."""
    name = tag.removeprefix(_TAG) if tag.startswith(_TAG) else None
    if name in _KNOWN_TAGS:
        return f"the tag !!{name}"
    if name is not None and name.startswith("python/"):
        return "a python tag"
    return "a local or unknown tag"


def _json_type(value: Any) -> str:
    return {list: "list", str: "str", int: "int", float: "float", bool: "bool", type(None): "NoneType"}.get(
        type(value), type(value).__name__
    )
