"""A spec's formula as a fused, parallel loop in double-double (conformance/compiled/ddmath.py) for DOUBLE.

Like codegen.py (same whitelist, same generated names, strings decided at generation, no spec
text in the source), but every value is a (hi, lo) pair and the branches are selects: every
branch and condition is evaluated for every element and the first true branch's value kept, so
the loop has no control flow and vectorizes. Each element gets a flag: 1 when its pair is
poisoned (ddmath's range limits), not finite, tiny, or when a condition compared a poisoned
value; the engine recomputes those in long double. Formulas with a function ddmath lacks raise
codegen.Unsupported (long double runs them). A second function, pairs, writes each element's
(hi, lo) without rounding: reference/ddtier.py decides near-midpoint elements of narrower
outputs with it.
"""

from __future__ import annotations

import ast
import hashlib
from typing import Any

from ..conformance.spec.expr.language import CONSTANTS
from ..conformance.spec.model import OpSpec
from .codegen import _VECMATH, COMPILED, Source, Unsupported, _number, string_test

FUNCTIONS = {
    "exp": "dexp",
    "expm1": "dexpm1",
    "erfc": "derfc",
    "tanh": "dtanh",
    "log1p": "dlog1p",
    "sqrt": "dsqrt",
    "abs": "dabs",
    "minimum": "dmin",
    "maximum": "dmax",
}
_BIN = {ast.Add: "dadd", ast.Sub: "dsub", ast.Mult: "dmul", ast.Div: "ddiv"}
_DIGEST = hashlib.sha256(
    b"".join((COMPILED / f).read_bytes() for f in ("ddmath.py", "exactmath.py")) + _VECMATH.encode()
).hexdigest()[:16]

HEADER = """\
# ddmath {digest}
import numpy as np
from numba import njit, prange

from aclnn_conformance.conformance.compiled.{module} import E, PI, dabs, dadd, ddiv, deq, derfc, dexp, dexpm1, dle, dlog1p
from aclnn_conformance.conformance.compiled.{module} import dlt, dmax, dmin, dmul, dneg, dresult, dsel, dsqrt, dsub, dtanh

_NAN = np.nan
_INF = np.inf


@njit(parallel=True, cache=True, error_model="numpy")
def kernel({args}, out, flags):
    for k in prange(out.shape[0]):
        q = False
{body}
        o, bad = dresult(r)
        out[k] = o
        flags[k] = bad | q


@njit(cache=True, error_model="numpy")
def pairs({args}, hi, lo):
    for k in range(hi.shape[0]):
        q = False
{body}
        hi[k] = r[0]
        lo[k] = _NAN if q else r[1]
"""


def generate(spec: OpSpec, env: dict[str, Any], exact: bool = False) -> Source:
    """The double-double kernel's source for `spec`, string parameters of `env` decided; exact:
    the exactness kernel instead (exactmath.py: flags 0 where float64 makes no rounding)."""
    tensors = tuple(p.name for p in spec.tensor_inputs)
    strings = {p.name: env.get(p.name) for p in spec.attributes if p.kind == "string"}
    attrs = tuple(p.name for p in spec.attributes if p.kind in ("scalar", "bool"))
    bools = {p.name for p in spec.attributes if p.kind == "bool"}
    names = {n: f"v{i}" for i, n in enumerate((*tensors, *attrs))}
    lets = {x.name: x for x in spec.formula.lets}
    for i, n in enumerate(lets):
        names[n] = f"t{i}"
    gen = _Gen(names, strings, [0])
    pad = "        "
    lines = [f"{pad}{names[n]} = (np.float64(a{i}[k]), 0.0)" for i, n in enumerate(tensors)]
    lines += [
        f"{pad}{names[n]} = p{i}" if n in bools else f"{pad}{names[n]} = (p{i}, 0.0)"
        for i, n in enumerate(attrs)
    ]
    chosen: list[tuple[str | None, str]] = []  # (condition, value) of the branches that count
    for br in spec.formula.branches:
        if br.when is None:
            chosen.append((None, gen.expr(br.value._tree)))
            break
        cond = gen.cond(br.when._tree)
        if cond == "False":
            continue
        value = gen.expr(br.value._tree)
        if cond == "True":
            chosen.append((None, value))
            break
        chosen.append((cond, value))
    bound: set[str] = set()
    for name in gen.used:
        lines += _bind(gen, lets, name, bound, pad)
    lines += [f"{pad}{s}" for s in gen.pre]
    if not chosen or chosen[-1][0] is not None:
        chosen.append((None, "(_NAN, _NAN)"))  # a last guarded branch that is false: NaN
    lines.append(f"{pad}r = {chosen[-1][1]}")
    for cond, value in reversed(chosen[:-1]):
        lines.append(f"{pad}r = dsel({cond}, {value}, r)")
    args = [f"a{i}" for i in range(len(tensors))] + [f"p{i}" for i in range(len(attrs))]
    text = HEADER.format(
        args=", ".join(args),
        digest=_DIGEST,
        body="\n".join(lines),
        module="exactmath" if exact else "ddmath",
    )
    return Source(text, tensors, attrs)


def _bind(gen: _Gen, lets: dict, name: str, bound: set[str], pad: str) -> list[str]:
    if name not in lets or name in bound:
        return []
    bound.add(name)
    sub = _Gen(gen.names, gen.strings, gen._count)
    value = sub.expr(lets[name].value._tree)
    out: list[str] = []
    for dep in sub.used:
        out += _bind(gen, lets, dep, bound, pad)
    out += [f"{pad}{s}" for s in sub.pre]
    return [*out, f"{pad}{gen.names[name]} = {value}"]


class _Gen:
    def __init__(self, names: dict[str, str], strings: dict[str, Any], count: list[int]):
        self.names, self.strings = names, strings
        self.used: list[str] = []  # spec names read, in order (lets are bound before use)
        self.pre: list[str] = []  # statements a condition needs first (its operands, q)
        self._count = count  # shared by a kernel's generators: temporaries are c0, c1, ...

    def cond(self, node: ast.AST) -> str:
        if isinstance(node, ast.Compare):
            return self._compare(node)
        if isinstance(node, ast.BoolOp):
            op = " & " if isinstance(node.op, ast.And) else " | "
            return "(" + op.join(self.cond(v) for v in node.values) + ")"
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return f"(not {self.cond(node.operand)})"
        if isinstance(node, ast.Constant) and isinstance(node.value, bool):
            return str(node.value)
        if isinstance(node, ast.Name) and node.id in self.names:
            self.used.append(node.id)
            return self.names[node.id]  # a bool parameter
        raise Unsupported(f"no double-double form for the condition {type(node).__name__}")

    def _compare(self, node: ast.Compare) -> str:
        left = node.left
        if isinstance(left, ast.Name) and left.id in self.strings:
            return "True" if string_test(self.strings[left.id], node) else "False"
        parts, prev = [], self._operand(left)
        for op, comp in zip(node.ops, node.comparators, strict=True):
            cur = self._operand(comp)
            parts.append(_cmp(op, prev, cur))
            prev = cur
        return "(" + " & ".join(parts) + ")"

    def _operand(self, node: ast.AST) -> str:
        """A comparison's operand as a temporary whose poison flags the element."""
        name = f"c{self._count[0]}"
        self._count[0] += 1
        self.pre.append(f"{name} = {self.expr(node)}")
        self.pre.append(f"q = q | ({name}[1] != {name}[1])")
        return name

    def expr(self, node: ast.AST) -> str:
        if isinstance(node, ast.Constant) and not isinstance(node.value, bool | str):
            return f"({_number(float(node.value))}, 0.0)"
        if isinstance(node, ast.Name):
            if node.id in self.names:
                self.used.append(node.id)
                return self.names[node.id]
            if node.id in ("pi", "e"):
                return node.id.upper()
            if node.id in CONSTANTS:
                return f"({_number(CONSTANTS[node.id])}, 0.0)"
        if isinstance(node, ast.BinOp) and type(node.op) in _BIN:
            return f"{_BIN[type(node.op)]}({self.expr(node.left)}, {self.expr(node.right)})"
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            x = self.expr(node.operand)
            return f"dneg({x})" if isinstance(node.op, ast.USub) else x
        if isinstance(node, ast.Call):
            fn = node.func.id  # type: ignore[attr-defined]
            if fn == "where":
                c, a, b = node.args
                return f"dsel({self.cond(c)}, {self.expr(a)}, {self.expr(b)})"
            if fn in FUNCTIONS:
                return f"{FUNCTIONS[fn]}(" + ", ".join(self.expr(a) for a in node.args) + ")"
        raise Unsupported(f"no double-double form for {ast.dump(node)[:60]}")


# a comparison as (function, operands swapped)
_CMP = {ast.Lt: ("dlt", False), ast.LtE: ("dle", False), ast.Gt: ("dlt", True),
        ast.GtE: ("dle", True), ast.Eq: ("deq", False)}  # fmt: skip


def _cmp(op: ast.cmpop, a: str, b: str) -> str:
    if isinstance(op, ast.NotEq):
        return f"(not deq({a}, {b}))"
    if type(op) not in _CMP:
        raise Unsupported(f"no double-double form for {type(op).__name__}")
    fn, swap = _CMP[type(op)]
    return f"{fn}({b}, {a})" if swap else f"{fn}({a}, {b})"
