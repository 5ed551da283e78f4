"""One spec per combination of language concepts: the fast tier's sample of the registry.

The per-op generation tests run for every spec in the `registry` tier (CI); the fast tier runs
them for one spec of each combination of the concepts a spec uses (reductions, halves, gathers,
shape rules, an in-place variant, several outputs, the nulls its parameters accept, its
parameter kinds, empty_success, its layout properties) and for every spec with an oracle of
its own. A new concept gets its spec into the fast tier; a new spec of a known kind does not
make it slower.
"""

from __future__ import annotations

from typing import Any

import pytest
from aclnn_conformance.conformance.spec.elements import gathers
from aclnn_conformance.conformance.spec.expr import ir
from aclnn_conformance.conformance.spec.expr.walk import Formula
from aclnn_conformance.conformance.spec.split import splits
from aclnn_conformance.reference import rows


def signature(spec: Any) -> tuple:
    """The concepts `spec` uses, as a hashable key."""
    return (
        bool(rows.reductions(spec)),
        bool(splits(spec)),
        bool(gathers(spec)),
        any(p.shape is not None for p in spec.params),
        bool(spec.inplace_of),
        len(spec.formulas) > 1,
        tuple(sorted({str(p.null) for p in spec.params if p.nullable})),
        tuple(sorted({p.kind for p in spec.params})),
        any(c.kind == "empty_success" for c in spec.checks),
        tuple(sorted({pr.kind for pr in spec.properties})),
    )


def _positions(spec: Any) -> bool:
    """Whether spec's formula reads `position(dim)`: planning its cases walks the numpy rows
    (86-111 s per per-op test on 2 cores), so its specs run in the registry tier only."""
    return any(
        isinstance(n, ir.Position)
        for e in Formula.of(spec.formula).expressions()
        for n in ir.walk(e.ir)
    )


def representatives(registry: Any, keep: set[str] | frozenset[str] = frozenset()) -> set[str]:
    """The first spec (by name) of each signature, plus the names in `keep`; a spec reading
    `position(dim)` is left to the registry tier (see _positions)."""
    first: dict[tuple, str] = {}
    for spec in sorted(registry, key=lambda s: s.name):
        if _positions(spec):
            continue
        first.setdefault(signature(spec), spec.name)
    return set(first.values()) | set(keep)


def op_params(ops: list[str], fast: set[str]) -> list[Any]:
    """`ops` as pytest params: those outside `fast` marked for the registry tier."""
    return [
        pytest.param(op, id=op, marks=() if op in fast else (pytest.mark.registry,)) for op in ops
    ]
