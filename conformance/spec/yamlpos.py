"""YAML loading that remembers where every value came from, so errors can say `file:line`.

Anchors and aliases are refused (a spec never needs them, and they are how "billion laughs"
documents blow up), as are duplicate keys, which plain PyYAML silently overwrites. The file is
opened through conformance.files.safeio: a FIFO, a device or a file above MAX_BYTES is refused before
anything is read.

Numbers follow YAML 1.2 where PyYAML's YAML 1.1 rules surprise: `1e308` and `-2E-5` (an exponent
without a dot) are floats, not strings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..files import safeio

MAX_BYTES = 2_000_000
MAX_NODES = 200_000

Path_ = tuple[Any, ...]


@dataclass
class Located:
    """A parsed document plus the line (1-based) of each value, keyed by its path of keys/indices."""

    data: Any
    lines: dict[Path_, int] = field(default_factory=dict)
    file: str = ""
    literal: dict[Path_, bool] = field(default_factory=dict)  # values written as `|` blocks
    source: str = ""  # the text parsed (what a spec's hash is taken of)
    numbers: dict[Path_, str] = field(default_factory=dict)  # each number as written (6e-8)

    def line(self, path: Path_) -> int:
        """Line of `path`, or of its nearest ancestor that has one."""
        path = tuple(path)
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get((), 1)


class YamlError(ValueError):
    def __init__(self, file: str, line: int, message: str):
        super().__init__(f"{file}:{line}: {message}")
        self.file, self.line, self.message = file, line, message


class _Loader(yaml.SafeLoader):
    """SafeLoader that also reads `1e308`, `1.5e3`, `+2E-5` as floats (YAML 1.1, which PyYAML
    follows, wants a dot and a signed exponent; YAML 1.2 and every JSON writer do not)."""


_FLOAT = re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+|\.[0-9]+[eE][-+]?[0-9]+)$")
_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789."))

# libyaml's parser, where PyYAML was built with it, composes the same nodes (marks included)
# ten times faster: loading the registry is most of a small run's start. A document it refuses
# is parsed again by the pure-Python loader, whose messages the errors quote.
_Fast: Any = None
if getattr(yaml, "CSafeLoader", None) is not None:

    class _Fast(yaml.CSafeLoader):  # type: ignore[no-redef]
        """_Loader's resolvers over libyaml's parser."""

    _Fast.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789."))


def _fast_node(text: str) -> tuple[Any, Any] | None:
    """(the document's node, its loader) by libyaml; None where it is absent or refuses."""
    if _Fast is None:
        return None
    try:
        loader = _Fast(text)
        try:
            return loader.get_single_node(), loader
        finally:
            loader.dispose()
    except yaml.YAMLError:
        return None


def load(path: str | Path, text: str | None = None) -> Located:
    """Parse one YAML document from `path` (or from `text`, reported as `path`)."""
    name = str(path)
    if text is None:
        try:
            raw = safeio.read_bytes(path, MAX_BYTES)
        except OSError as exc:
            raise YamlError(name, 1, f"cannot read file: {exc.strerror or exc}") from None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = raw[: exc.start].count(b"\n") + 1
            raise YamlError(name, line, "file is not valid UTF-8") from None
    fast = _fast_node(text)
    if fast is not None and fast[0] is not None:
        return _located(fast[0], fast[1], name, text)
    try:
        loader = _Loader(text)
    except yaml.YAMLError as exc:  # e.g. a control character, found while reading the stream
        line = text[: getattr(exc, "position", 0) or 0].count("\n") + 1
        problem = getattr(exc, "reason", None) or str(exc).splitlines()[0]
        raise YamlError(name, line, f"invalid YAML: {problem}") from None
    try:
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        raise YamlError(name, line, f"invalid YAML: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise YamlError(name, 1, f"invalid YAML: {exc}") from None
    finally:
        loader.dispose()
    if node is None:
        raise YamlError(name, 1, "empty document")
    return _located(node, loader, name, text)


def _located(node: yaml.Node, loader: Any, name: str, text: str) -> Located:
    out = Located(None, {}, name, source=text)
    seen: set[int] = set()
    out.data = _build(node, (), out, seen, loader, name)
    return out


def _build(
    node: yaml.Node, path: Path_, out: Located, seen: set[int], loader: Any, name: str
) -> Any:
    line = node.start_mark.line + 1
    if id(node) in seen:
        raise YamlError(name, line, "YAML anchors/aliases are not allowed in a spec")
    seen.add(id(node))
    if len(seen) > MAX_NODES:
        raise YamlError(name, line, f"document has more than {MAX_NODES} values")
    if getattr(node, "anchor", None):
        raise YamlError(name, line, "YAML anchors/aliases are not allowed in a spec")
    out.lines[path] = line
    tag = getattr(node, "tag", "") or ""
    if tag.startswith("tag:yaml.org,2002:python") or not (
        tag.startswith("tag:yaml.org,2002:") or tag == "!"
    ):
        raise YamlError(name, line, f"YAML tag {tag!r} is not allowed in a spec")
    if isinstance(node, yaml.MappingNode):
        result: dict[Any, Any] = {}
        for knode, vnode in node.value:
            if not isinstance(knode, yaml.ScalarNode):
                raise YamlError(name, knode.start_mark.line + 1, "mapping keys must be plain text")
            if knode.tag == "tag:yaml.org,2002:merge":
                raise YamlError(name, knode.start_mark.line + 1, "YAML merge keys are not allowed")
            key = loader.construct_object(knode, deep=True)
            if not isinstance(key, str | int | float | bool):
                raise YamlError(name, knode.start_mark.line + 1, "mapping keys must be plain text")
            if key in result:
                raise YamlError(name, knode.start_mark.line + 1, f"duplicate key {key!r}")
            result[key] = _build(vnode, (*path, key), out, seen, loader, name)
            out.lines[(*path, key)] = knode.start_mark.line + 1
        return result
    if isinstance(node, yaml.SequenceNode):
        return [
            _build(item, (*path, i), out, seen, loader, name) for i, item in enumerate(node.value)
        ]
    if getattr(node, "style", None) == "|":
        out.literal[path] = True
    try:
        value = loader.construct_object(node, deep=True)
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise YamlError(name, line, f"invalid value: {problem}") from None
    if isinstance(value, int | float) and not isinstance(value, bool):
        out.numbers[path] = node.value
    return value
