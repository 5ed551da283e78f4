"""`bindings:` of a spec: how each adapter family calls the operator, kept in the OpSpec.

    bindings:
      aten:                       # the torch and torch_npu adapters
        op: some_op_backward      # torch.ops.aten.<op>
        args: [gradOutput, self, alpha]
        kwargs: {}                # keyword -> spec parameter
        returns: [gradInput]      # optional: the outputs the op returns, in order
      jax:                        # the JAX adapter
        forward: "where(self <= 0, alpha * expm1(self), self)"  # expression language
        input: self               # the differentiated tensor
        grad: gradOutput          # the cotangent
        output: gradInput         # optional: default the formula's output
        unsupported_when: isResult          # optional: variants the adapter cannot express
        unsupported_reason: "..."

The structure of each family is checked by the spec's JSON Schema; what the names mean (the
parameters exist, the forward compiles, the ATen op exists) by `check(spec)`, which
asks the adapter registered for that family. A wrong binding makes that op's cases `skip` on
that backend with the reason, and `specs lint` reports it with the file and line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


class BindingError(ValueError):
    """A binding that does not fit its spec; the message names the file and line."""


@dataclass(frozen=True)
class Binding:
    family: str  # aten | jax | ...
    data: dict[str, Any]
    file: str = ""
    lines: dict[tuple, int] = field(default_factory=dict, compare=False, repr=False)

    def where(self, *key: Any) -> str:
        """`file:line: bindings.<family>.<key>` for messages."""
        path = (self.family, *key)
        line = 0
        while path and not line:
            line = self.lines.get(path, 0)
            path = path[:-1]
        dotted = ".".join(str(k) for k in ("bindings", self.family, *key))
        return f"{self.file}:{line}: {dotted}"

    def error(self, key: tuple, message: str) -> BindingError:
        return BindingError(f"{self.where(*key)}: {message}")


class BindingCache:
    """An adapter's checked bindings, one per spec version: the value (None when the spec has
    no entry for the adapter) or the BindingError, which is raised again on every use, so that
    a wrong binding costs only its own op's cases."""

    def __init__(self) -> None:
        self._found: dict[tuple[str, str], Any] = {}

    def get(self, spec: Any, load: Callable[[Any], Any]) -> Any:
        key = (spec.name, spec.sha256)
        if key not in self._found:
            try:
                self._found[key] = load(spec)
            except BindingError as exc:
                self._found[key] = exc
        found = self._found[key]
        if isinstance(found, BindingError):
            raise found
        return found


def from_document(raw: Any, doc: Any) -> dict[str, Binding]:
    """The bindings of a loaded spec document (already schema-checked) with their lines."""
    if not isinstance(raw, dict):
        return {}
    out = {}
    for family, data in raw.items():
        lines = {}
        for path, line in doc.lines.items():
            if len(path) >= 2 and path[0] == "bindings" and path[1] == family:
                lines[tuple(path[1:])] = line
        out[str(family)] = Binding(str(family), dict(data or {}), doc.file, lines)
    return out


def check(spec: Any) -> list[BindingError]:
    """Each binding of `spec` checked by the adapters of its family (the first installed
    backend class that declares `binding_family`); a family no installed backend uses is not
    checked (a vendor's adapter may live in a package that is not installed here)."""
    from ..run.backend import BackendError, backend_class, backend_names

    checkers: dict[str, Any] = {}
    for name in backend_names():
        try:
            cls = backend_class(name)
        except BackendError:
            continue
        family = getattr(cls, "binding_family", None)
        if family and family not in checkers:
            checkers[family] = cls
    problems = []
    for family in spec.bindings:
        cls = checkers.get(family)
        if cls is None:
            continue
        try:
            cls.check_binding(spec)
        except BindingError as exc:
            problems.append(exc)
    return problems


def binding_id(spec: Any, family: str | None) -> str | None:
    """What a backend of `family` calls for `spec`, as expectations name it: `aten::<op>` for
    the ATen adapters (torch, torch_npu), `jax::<name>` for JAX (the binding's `name`, else the
    spec's); None when the family has no binding in the spec. Every spec calling one kernel
    shares its id, so an entry about that kernel covers them all."""
    if not family:
        return None
    b = spec.bindings.get(family)
    if b is None:
        return None
    name = b.data.get("op") or b.data.get("name") or spec.name
    return f"{family}::{name}"
