"""Which formulas float64 evaluates correctly rounded: at most one rounding per branch value.

IEEE 754 rounds each +, -, *, / and sqrt correctly. A branch value that makes one such rounding
on exact operands (the inputs and scalars, which float64 holds exactly, and literals that are
binary fractions), and then only exact steps (negation, abs, min, max, where: rounding is
monotonic, so they commute with it), is the exact value correctly rounded; a condition that
compares exact operands decides as the exact values do. Such a formula's DOUBLE output needs
neither long double nor mpmath: the compiled float64 kernel is correctly rounded, faithful a
fortiori. Anything else (library functions, two chained roundings, a literal such as 0.1) counts
as more than one and keeps the faithful paths of errbound.py.
"""

from __future__ import annotations

import ast
from fractions import Fraction
from typing import Any

from ..conformance.spec.model import OpSpec

MANY = 2  # two or more roundings: not correctly rounded by construction
_EXACT_FUNCTIONS = frozenset({"abs", "minimum", "maximum", "where", "conj"})
_ROUNDED_ONCE = frozenset({"sqrt"})
_EXACT_CONSTANTS = frozenset({"inf", "nan"})


def correctly_rounded(spec: OpSpec) -> bool:
    """Whether every branch of spec's formula is correctly rounded in float64 (see above)."""
    counter = _Counter(spec)
    for br in spec.formula.branches:
        if br.when is not None and counter.count(br.when._tree) != 0:
            return False
        if counter.count(br.value._tree) >= MANY:
            return False
    return True


class _Counter:
    def __init__(self, spec: OpSpec):
        self.lets = {x.name: x.value._tree for x in spec.formula.lets}
        self.strings = {p.name for p in spec.attributes if p.kind == "string"}
        self.memo: dict[str, int] = {}

    def count(self, node: ast.AST) -> int:
        method = getattr(self, "_" + type(node).__name__, None)
        return MANY if method is None else min(method(node), MANY)

    def _Constant(self, node: ast.Constant) -> int:
        v: Any = node.value
        if isinstance(v, bool | str | int):
            return 0
        return 0 if Fraction(repr(v)) == Fraction(float(v)) else 1

    def _Name(self, node: ast.Name) -> int:
        if node.id in self.lets:
            if node.id not in self.memo:
                self.memo[node.id] = self.count(self.lets[node.id])
            return self.memo[node.id]
        if node.id in ("pi", "e"):
            return 1
        return 0  # an input, a scalar or bool parameter, a string parameter, inf, nan

    def _BinOp(self, node: ast.BinOp) -> int:
        if isinstance(node.op, ast.Pow):
            return MANY
        return self.count(node.left) + self.count(node.right) + 1

    def _UnaryOp(self, node: ast.UnaryOp) -> int:
        return self.count(node.operand)

    def _BoolOp(self, node: ast.BoolOp) -> int:
        return max(self.count(v) for v in node.values)

    def _Compare(self, node: ast.Compare) -> int:
        # a comparison of rounded operands may decide otherwise than the exact values
        parts = [self.count(node.left), *(self.count(c) for c in node.comparators)]
        return MANY if any(parts) else 0

    def _Tuple(self, node: ast.Tuple) -> int:  # the choices of a string parameter's `in`
        return max((self.count(e) for e in node.elts), default=0)

    def _List(self, node: ast.List) -> int:
        return max((self.count(e) for e in node.elts), default=0)

    def _Call(self, node: ast.Call) -> int:
        name = node.func.id  # type: ignore[attr-defined]
        counts = [self.count(a) for a in node.args]
        if name == "where":
            return MANY if counts[0] else max(counts[1:])
        if name in _EXACT_FUNCTIONS:
            return max(counts)
        if name in _ROUNDED_ONCE:
            return counts[0] + 1
        return MANY
