"""A spec's formula as the source of one fused, parallel loop (compiled by numba in kernel.py).

The input is the formula's syntax trees, already checked against the expression whitelist by
conformance.spec.expr.language; the output is Python source in which every element of the output is computed
in float64 by scalar code: lets where a branch needs them, branches as an if/else chain (first true
wins, as in the numpy evaluator), the whitelisted functions as `math` functions. No text of the
spec reaches the source: parameters and lets become v0, v1, ..., numbers are written from their
float values, string comparisons are decided here (a string parameter is one value per call).
A second function of the module, near_midpoint, is precise.near_midpoint's bit test on the
float64 values (1: within the guard of a rounding midpoint, 2: in the output's subnormal range,
left to the arithmetic test); it reads the values' bits in a call of its own, after the kernel
has written them, so no store and load of the same memory under two types meet in one loop.
The fused kernels (kernel_flags, kernel_narrow) test in the loop itself, and add 4: exactly on
a midpoint, a likely tie. Where the midpoints are settled anyway (approx: FLOAT, FLOAT16, BF16
outputs), the functions are vecmath's vectorizable forms and a division by an irrational
constant is a product by its reciprocal.
"""

from __future__ import annotations

import ast
import hashlib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..conformance import compiled
from ..conformance.spec.expr.language import CONSTANTS
from ..conformance.spec.model import OpSpec

MATH = {"exp": "math.exp", "expm1": "math.expm1", "log1p": "math.log1p", "log": "math.log",
        "erf": "math.erf", "erfc": "math.erfc", "tanh": "math.tanh", "sqrt": "math.sqrt",
        "abs": "abs", "minimum": "_minimum", "maximum": "_maximum"}  # fmt: skip
# FLOAT, FLOAT16 and BF16 outputs: the vectorizable forms of conformance/compiled/vecmath.py
APPROX = {**MATH, "exp": "_vexp", "erfc": "_verfc", "expm1": "_vexpm1", "log1p": "_vlog1p",
          "tanh": "_vtanh", "erfinv": "_verfinv"}  # fmt: skip
COMPILED = Path(compiled.__file__).parent  # the compiled functions the kernels import
_BIN = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
_CMP = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}

HEADER = """\
# vecmath {digest}
import math

import numpy as np
from numba import njit, prange

from aclnn_conformance.conformance.compiled.intrinsics import as_bits as _bits
from aclnn_conformance.conformance.compiled.measure import narrow_bits as _narrow
from aclnn_conformance.conformance.compiled.vecmath import half_to_double as _h2d
from aclnn_conformance.conformance.compiled.vecmath import verfc as _verfc
from aclnn_conformance.conformance.compiled.vecmath import verfinv as _verfinv
from aclnn_conformance.conformance.compiled.vecmath import vexp as _vexp
from aclnn_conformance.conformance.compiled.vecmath import vexpm1 as _vexpm1
from aclnn_conformance.conformance.compiled.vecmath import vlog1p as _vlog1p
from aclnn_conformance.conformance.compiled.vecmath import vtanh as _vtanh

_INF = math.inf
_NAN = math.nan
BLOCK = {block}


@njit(inline="always", error_model="numpy")
def _minimum(a, b):
    return a if (a < b or a != a) else b


@njit(inline="always", error_model="numpy")
def _maximum(a, b):
    return a if (a > b or a != a) else b


@njit(inline="always", error_model="numpy")
def _pow(a, b):
    return a ** b


@njit(inline="always")
def _flag(r, drop, guard, emin):
    b = _bits(r) & 0x7FFFFFFFFFFFFFFF
    e = b >> 52
    low = (b & ((1 << drop) - 1)) - (1 << (drop - 1))
    near = (e >= emin) & (e < 2047) & (low < guard) & (low > -guard)
    tie = near & (low == 0)
    return (np.uint8(near) | (np.uint8((e < emin) & (b != 0)) << np.uint8(1))
            | (np.uint8(tie) << np.uint8(2)))


@njit(parallel=True, cache=True, error_model="numpy")
def kernel({args}, y, out):
    for k in prange(y.shape[0]):
{body}
        y[k] = r
        out[k] = r


@njit(parallel=True, cache=True, error_model="numpy")
def kernel_flags({args}, out, flags, drop, guard, emin):
    for k in prange(out.shape[0]):
{body}
        out[k] = r
        flags[k] = _flag(r, drop, guard, emin)


@njit(parallel=True, cache=True, error_model="numpy")
def kernel_narrow({args}, out, flags, drop, guard, emin, p, femin, all_ones, nbits):
    for k in prange(out.shape[0]):
{body}
        out[k] = _narrow(r, p, femin, all_ones, nbits)
        flags[k] = _flag(r, drop, guard, emin)


@njit(parallel=True, cache=True)
def block_counts(flags, counts):
    n = flags.shape[0]
    for blk in prange(counts.shape[0]):
        c = 0
        for k in range(np.uint64(blk * BLOCK), np.uint64(min(blk * BLOCK + BLOCK, n))):
            c += flags[k] != 0
        counts[blk] = c


@njit(parallel=True, cache=True)
def flag_indices(flags, starts, out):
    n = flags.shape[0]
    for blk in prange(starts.shape[0] - 1):
        c = starts[blk]
        if starts[blk + 1] > c:
            for k in range(blk * BLOCK, min(blk * BLOCK + BLOCK, n)):
                if flags[k] != 0:
                    out[c] = k
                    c += 1
"""

FLAGS = """\

@njit(parallel=True, cache=True)
def near_midpoint(yb, flags, drop, guard, emin):
    mask = (1 << drop) - 1
    half = 1 << (drop - 1)
    for k in prange(yb.shape[0]):
        b = yb[k] & 0x7FFFFFFFFFFFFFFF
        e = b >> 52
        f = 0
        if e < emin:
            if b != 0:
                f = 2
        elif e < 2047:
            low = (b & mask) - half
            if low < 0:
                low = -low
            if low < guard:
                f = 1
        flags[k] = f
"""


# numba's cache follows the kernel file only: vecmath's own text (and its intrinsics' and the
# narrow rounding's) is part
# of every kernel's key
_VECMATH = hashlib.sha256(
    b"".join((COMPILED / f).read_bytes() for f in ("vecmath.py", "intrinsics.py", "measure.py"))
).hexdigest()[:16]


# the flagged elements are found a block of this many flags at a time: counted in parallel, then
# listed from the blocks that have any
FLAG_BLOCK = 1024


class Unsupported(ValueError):
    """A formula the compiled path cannot express (the numpy evaluator runs it instead)."""


@dataclass(frozen=True)
class Source:
    text: str
    tensors: tuple[str, ...]  # argument order: the spec's tensor inputs, then the attributes
    attrs: tuple[str, ...]
    half: frozenset[str] = frozenset()  # FLOAT16 tensors, passed as their bits (uint16)


def generate(
    spec: OpSpec, env: dict[str, Any], approx: bool = False, half: frozenset[str] = frozenset()
) -> Source:
    """The kernel's source for `spec` with the string parameters of `env` decided; approx: exp
    by vecmath's inlined, vectorizable form (for outputs whose midpoints mpmath settles); half:
    the FLOAT16 tensors, read from their bits in the loop."""
    tensors = tuple(p.name for p in spec.tensor_inputs)
    strings = {p.name: env.get(p.name) for p in spec.attributes if p.kind == "string"}
    attrs = tuple(p.name for p in spec.attributes if p.kind in ("scalar", "bool"))
    names = {n: f"v{i}" for i, n in enumerate((*tensors, *attrs))}
    lets = {x.name: x for x in spec.formula.lets}
    for i, n in enumerate(lets):
        names[n] = f"t{i}"
    gen = _Gen(names, strings, APPROX if approx else MATH)
    half = half & frozenset(tensors)
    lines = [
        f"        {names[n]} = " + (f"_h2d(a{i}[k])" if n in half else f"np.float64(a{i}[k])")
        for i, n in enumerate(tensors)
    ]
    lines += [f"        {names[n]} = p{i}" for i, n in enumerate(attrs)]
    lines += _chain(gen, lets, list(spec.formula.branches), set(), 2)
    args = [f"a{i}" for i in range(len(tensors))] + [f"p{i}" for i in range(len(attrs))]
    body = "\n".join(lines)
    text = HEADER.format(args=", ".join(args), digest=_VECMATH, body=body, block=FLAG_BLOCK)
    text += FLAGS
    return Source(text, tensors, attrs, half)


def _chain(gen: _Gen, lets: dict, branches: list, done: set[str], depth: int) -> list[str]:
    """The if/else chain of `branches` (lets bound on first need), indented `depth` levels."""
    pad = "    " * depth
    br, rest = branches[0], branches[1:]
    if br.when is None or not rest:
        # the last branch, or an otherwise: a last guarded branch that is false leaves NaN
        out = _bind(gen, lets, br.value.names, done, pad)
        value = f"{pad}r = float({gen.expr(br.value._tree)})"
        if br.when is None:
            return [*out, value]
        out += _bind(gen, lets, br.when.names, set(done), pad)
        return [
            *out,
            f"{pad}if {gen.cond(br.when._tree)}:",
            "    " + value,
            f"{pad}else:",
            f"{pad}    r = _NAN",
        ]
    out = _bind(gen, lets, br.when.names, done, pad)
    out.append(f"{pad}if {gen.cond(br.when._tree)}:")
    inner = set(done)
    out += _bind(gen, lets, br.value.names, inner, pad + "    ")
    out.append(f"{pad}    r = float({gen.expr(br.value._tree)})")
    out.append(f"{pad}else:")
    out += _chain(gen, lets, rest, set(done), depth + 1)
    return out


def _bind(gen: _Gen, lets: dict, names: frozenset[str], done: set[str], pad: str) -> list[str]:
    out: list[str] = []
    for name in sorted(names):
        if name in lets and name not in done:
            out += _bind(gen, lets, lets[name].value.names, done, pad)
            done.add(name)
            out.append(f"{pad}{gen.names[name]} = {gen.expr(lets[name].value._tree)}")
    return out


class _Gen:
    def __init__(self, names: dict[str, str], strings: dict[str, Any], functions: dict[str, str]):
        self.names = names
        self.strings = strings
        self.functions = functions

    def cond(self, node: ast.AST) -> str:
        return f"bool({self.expr(node)})"

    def expr(self, node: ast.AST) -> str:
        method = getattr(self, "_" + type(node).__name__, None)
        if method is None:
            raise Unsupported(f"no compiled form for {type(node).__name__}")
        return method(node)

    def _Constant(self, node: ast.Constant) -> str:
        v = node.value
        if isinstance(v, bool):
            return "True" if v else "False"
        return _number(float(v))

    def _Name(self, node: ast.Name) -> str:
        if node.id in self.names:
            return self.names[node.id]
        if node.id in CONSTANTS:
            return _number(CONSTANTS[node.id])
        raise Unsupported(f"unknown name {node.id}")

    def _BinOp(self, node: ast.BinOp) -> str:
        a, b = self.expr(node.left), self.expr(node.right)
        if isinstance(node.op, ast.Pow):
            return f"_pow(float({a}), float({b}))"
        if isinstance(node.op, ast.Div) and self.functions is APPROX and _irrational(node.right):
            # a product by the reciprocal (folded to one constant): within 1 ulp of the quotient,
            # which is never exact anyway, and a division costs 4-8 products in a vector loop
            return f"({a} * (1.0 / {b}))"
        return f"({a} {_BIN[type(node.op)]} {b})"

    def _UnaryOp(self, node: ast.UnaryOp) -> str:
        x = self.expr(node.operand)
        if isinstance(node.op, ast.USub):
            return f"(-{x})"
        if isinstance(node.op, ast.UAdd):
            return x
        return f"(not {x})"

    def _BoolOp(self, node: ast.BoolOp) -> str:
        op = " and " if isinstance(node.op, ast.And) else " or "
        return "(" + op.join(f"bool({self.expr(v)})" for v in node.values) + ")"

    def _Compare(self, node: ast.Compare) -> str:
        left = node.left
        if isinstance(left, ast.Name) and left.id in self.strings:
            return "True" if self._string(node) else "False"
        parts, prev = [], self.expr(left)
        for op, comp in zip(node.ops, node.comparators, strict=True):
            cur = self.expr(comp)
            parts.append(f"({prev} {_CMP[type(op)]} {cur})")
            prev = cur
        return "(" + " and ".join(parts) + ")"

    def _string(self, node: ast.Compare) -> bool:
        return string_test(self.strings[node.left.id], node)  # type: ignore[attr-defined]

    def _Call(self, node: ast.Call) -> str:
        name = node.func.id  # type: ignore[attr-defined]
        args = [self.expr(a) for a in node.args]
        if name == "where":
            return f"(float({args[1]}) if bool({args[0]}) else float({args[2]}))"
        if name not in self.functions:
            raise Unsupported(f"no compiled form for {name}()")
        return f"{self.functions[name]}(" + ", ".join(f"float({a})" for a in args) + ")"


def _irrational(node: ast.AST) -> bool:
    """A constant expression with pi, e or a function call in it (sqrt(2 * pi)): its value is a
    rounded irrational number. Rational constants (6, 3) keep their division, whose quotient
    can be exact."""
    names = [n for n in ast.walk(node) if isinstance(n, ast.Name)]
    funcs = {n.func for n in ast.walk(node) if isinstance(n, ast.Call)}
    if any(n.id not in CONSTANTS for n in names if n not in funcs):
        return False
    return bool(funcs) or any(n.id in ("pi", "e") for n in names)


def string_test(value: Any, node: ast.Compare) -> bool:
    """A comparison of a string parameter holding `value` with a literal or a tuple of them."""
    op, comp = node.ops[0], node.comparators[0]
    if isinstance(op, ast.Eq | ast.NotEq):
        return (value == comp.value) == isinstance(op, ast.Eq)  # type: ignore[attr-defined]
    choices = {e.value for e in comp.elts}  # type: ignore[attr-defined]
    return (value in choices) == isinstance(op, ast.In)


def _number(v: float) -> str:
    if math.isnan(v):
        return "_NAN"
    if math.isinf(v):
        return "_INF" if v > 0 else "(-_INF)"
    return repr(v)
