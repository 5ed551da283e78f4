"""A spec's formula as the source of one fused, parallel loop (compiled by numba in kernel.py).

The input is the formula's syntax trees, already checked against the expression whitelist by
conformance.spec.expr.language; the output is Python source in which every element of the output is computed
in float64 by scalar code: lets where a branch needs them, branches as an if/else chain (first true
wins, as in the numpy evaluator), the whitelisted functions as `math` functions. No text of the
spec reaches the source: parameters and lets become v0, v1, ..., numbers are written from their
float values, string comparisons are decided here (a string parameter is one value per call).
The flagging kernels (kernel_flags, kernel_narrow) apply precise.near_midpoint's bit test in
the loop (1: within the guard of a rounding midpoint, 2: in the output's subnormal range, left
to the arithmetic test, 4: exactly on a midpoint, a likely tie). Where the midpoints are settled
anyway (approx: FLOAT, FLOAT16, BF16 outputs), the functions are vecmath's vectorizable forms, a
division by an irrational constant is a product by its reciprocal, and the flagging kernels
evaluate the formula with its error bound (rowgen.Bounded.element: the row kernels' float64
arithmetic), flagging 8 where the bound reaches a rounding boundary (cancellation).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ..conformance.spec.expr.walk import Arithmetic, Formula, tensors_read
from ..conformance.spec.model import OpSpec
from . import rowgen
from .kernelsource import PRELUDE, VECMATH, Source, Unsupported, number

MATH = {"exp": "math.exp", "expm1": "math.expm1", "log1p": "math.log1p", "log": "math.log",
        "erf": "math.erf", "erfc": "math.erfc", "tanh": "math.tanh", "sqrt": "math.sqrt",
        "abs": "abs", "sign": "_sign", "minimum": "_minimum", "maximum": "_maximum"}  # fmt: skip
# FLOAT, FLOAT16 and BF16 outputs: the vectorizable forms of conformance/compiled/vecmath.py
APPROX = {**MATH, "exp": "_vexp", "erfc": "_verfc", "expm1": "_vexpm1", "log1p": "_vlog1p",
          "tanh": "_vtanh", "erfinv": "_verfinv"}  # fmt: skip


HEADER = """\
# vecmath {digest}
import math

import numpy as np
from numba import njit, prange

from aclnn_conformance.conformance.compiled.intrinsics import as_bits as _bits
from aclnn_conformance.conformance.compiled.intrinsics import select as _sel
from aclnn_conformance.conformance.compiled.measure import narrow_bits as _narrow
from aclnn_conformance.conformance.compiled.rowmath import div_err, flag_far, prod_err, sum_err
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

{prelude}

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
{fbody}
        out[k] = r
        flags[k] = _flag(r, drop, guard, emin){far}


@njit(parallel=True, cache=True, error_model="numpy")
def kernel_narrow({args}, out, flags, drop, guard, emin, p, femin, all_ones, nbits):
    for k in prange(out.shape[0]):
{fbody}
        out[k] = _narrow(r, p, femin, all_ones, nbits)
        flags[k] = _flag(r, drop, guard, emin){far}


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


# the flagged elements are found a block of this many flags at a time: counted in parallel, then
# listed from the blocks that have any
FLAG_BLOCK = 1024
FAR = 3  # the flag's bit where the bound reaches a rounding boundary (settle.FAR is 1 << FAR)


def generate(
    spec: OpSpec, env: dict[str, Any], approx: bool = False, half: frozenset[str] = frozenset()
) -> Source:
    """The kernel's source for `spec` with the string parameters of `env` decided; approx: exp
    by vecmath's inlined, vectorizable form, and flagging kernels that carry the error bound
    (for outputs whose midpoints are settled); half: the FLOAT16 tensors, read from their bits
    in the loop."""
    tensors = tensors_read(spec)
    strings = {p.name: env.get(p.name) for p in spec.attributes if p.kind == "string"}
    attrs = tuple(p.name for p in spec.attributes if p.kind in ("scalar", "bool", "int", "float"))
    attrs += rowgen.sizes(spec)  # a tensor's element count or dim size: a number of the call
    bools = {p.name for p in spec.attributes if p.kind == "bool"}
    names = {n: f"v{i}" for i, n in enumerate((*tensors, *attrs))}
    half = half & frozenset(tensors)
    reads = [
        f"        {names[n]} = " + (f"_h2d(a{i}[k])" if n in half else f"np.float64(a{i}[k])")
        for i, n in enumerate(tensors)
    ]
    reads += [f"        {names[n]} = p{i}" for i, n in enumerate(attrs)]
    lets = {x.name: f"t{i}" for i, x in enumerate(spec.formula.lets)}
    emit = EMIT_APPROX if approx else EMIT_MATH
    body = ["        " + line for line in emit.body(spec, {**names, **lets}, strings)]
    flagged, far = body, ""
    if approx:  # the flagging kernels: the formula with its error bound (rowgen.Bounded)
        element = rowgen.Bounded().element(spec, names, bools, strings)
        flagged = ["        " + line for line in (*element, "r = rv")]
        # q (a comparison within its bounds) is not flagged: see evaluate_numpy._narrow
        far = f" | (flag_far(rv, re, False, drop, emin) << np.uint8({FAR}))"
    args = [f"a{i}" for i in range(len(tensors))] + [f"p{i}" for i in range(len(attrs))]
    text = HEADER.format(
        args=", ".join(args),
        digest=VECMATH,
        body="\n".join(reads + body),
        fbody="\n".join(reads + flagged),
        far=far,
        block=FLAG_BLOCK,
        prelude=PRELUDE,
    )
    return Source(text, tensors, attrs, half)


class _Names(dict):
    """The walk's environment: each name's variable in the kernel, each string parameter's
    value; any other name has no compiled form."""

    def __missing__(self, name: str) -> Any:
        raise Unsupported(f"unknown name {name}")


class Code(str):
    """Python source of a value, knowing whether it is a constant (no name in it) and an
    irrational one (pi, e or a function call in it: sqrt(2 * pi))."""

    const: bool = False
    irrational: bool = False


def _code(text: str, const: bool = False, irrational: bool = False) -> Code:
    c = Code(text)
    c.const, c.irrational = const, const and irrational
    return c


def _const(*xs: Any) -> bool:
    return all(getattr(x, "const", False) for x in xs)


def _irr(*xs: Any) -> bool:
    return any(getattr(x, "irrational", False) for x in xs)


class Emitter(Arithmetic):
    """The walker's arithmetic whose values are the numba float64 source computing them (the
    kernel's `r = float(...)` lines): an emitter that writes source from the same walk."""

    def __init__(self, name: str, functions: dict[str, str]):
        self.name = name
        self.functions = functions
        self.state = threading.local()  # the walk under way: its names and current block
        for fn, target in functions.items():
            setattr(self, "f_" + fn, self._call(target))

    def body(self, spec: OpSpec, names: dict[str, str], strings: dict[str, Any]) -> list[str]:
        """The loop body's statements computing `r` for one element, unindented: the formula
        walked with each name's variable (`names`) and the string parameters decided."""
        st = self.state
        st.names, st.lines = names, []
        lets = {x.name for x in spec.formula.lets}
        env = _Names({n: _code(v) for n, v in names.items() if n not in lets})
        env.update(strings)
        return Formula.of(spec.formula).evaluate(env, self)

    # the formula walk (walk.Formula): lets are assignments in the block that first needs them,
    # a branch some elements take an if/else, the value `r = float(...)`

    def decide(self, cond: Any) -> bool | None:
        return None  # an if for every guarded branch

    def select(self, cond: Any, then: Callable[[], Any], other: Callable[[], Any]) -> list[str]:
        st = self.state
        outer, st.lines = st.lines, []
        yes = then()
        yes, st.lines = st.lines + yes, []
        no = other()
        no, st.lines = st.lines + no, outer
        return [f"if bool({cond}):", *_indent(yes), "else:", *_indent(no)]

    def nothing(self) -> list[str]:
        return ["r = _NAN"]  # a last guarded branch that is false

    def result(self, value: Any) -> list[str]:
        return [f"r = float({value})"]

    def finish(self, value: Any, n: int | None) -> list[str]:
        return self.state.lines + value

    def let(self, name: str, value: Any) -> Code:
        var = self.state.names[name]
        self.state.lines.append(f"{var} = {value}")
        return _code(var)

    def scope(self, env: Any) -> Any:
        return _Names(env)  # a branch's block: the lets it binds stay in it

    def lacks(self, fn: str) -> Exception:
        return Unsupported(f"no compiled form for {fn}()")

    @staticmethod
    def _call(target: str) -> Any:
        def call(*args: Any) -> Code:
            text = f"{target}(" + ", ".join(f"float({a})" for a in args) + ")"
            return _code(text, _const(*args), True)

        return call

    def number(self, value: bool | int | float) -> Code:
        if isinstance(value, bool):
            return _code("True" if value else "False", True)
        return _code(number(float(value)), True)

    def constant(self, name: str, value: float) -> Code:
        return _code(number(value), True, name in ("pi", "e"))

    def _bin(self, op: str, a: Any, b: Any) -> Code:
        return _code(f"({a} {op} {b})", _const(a, b), _irr(a, b))

    def add(self, a: Any, b: Any) -> Code:
        return self._bin("+", a, b)

    def sub(self, a: Any, b: Any) -> Code:
        return self._bin("-", a, b)

    def mul(self, a: Any, b: Any) -> Code:
        return self._bin("*", a, b)

    def div(self, a: Any, b: Any) -> Code:
        if self.functions is APPROX and getattr(b, "irrational", False):
            # a product by the reciprocal (folded to one constant): within 1 ulp of the quotient,
            # which is never exact anyway, and a division costs 4-8 products in a vector loop
            return _code(f"({a} * (1.0 / {b}))", _const(a, b), True)
        return self._bin("/", a, b)

    def pow(self, a: Any, b: Any) -> Code:
        return _code(f"_pow(float({a}), float({b}))", _const(a, b), _irr(a, b))

    def lt(self, a: Any, b: Any) -> Code:
        return self._bin("<", a, b)

    def le(self, a: Any, b: Any) -> Code:
        return self._bin("<=", a, b)

    def gt(self, a: Any, b: Any) -> Code:
        return self._bin(">", a, b)

    def ge(self, a: Any, b: Any) -> Code:
        return self._bin(">=", a, b)

    def eq(self, a: Any, b: Any) -> Code:
        return self._bin("==", a, b)

    def ne(self, a: Any, b: Any) -> Code:
        return self._bin("!=", a, b)

    def neg(self, x: Any) -> Code:
        return _code(f"(-{x})", _const(x), _irr(x))

    def not_(self, x: Any) -> Code:
        return _code(f"(not {x})", _const(x), _irr(x))

    def chain(self, links: list[Any]) -> Code:
        return _code("(" + " and ".join(links) + ")", _const(*links), _irr(*links))

    def logic(self, op: str, parts: list[Any]) -> Code:
        text = "(" + f" {op} ".join(f"bool({x})" for x in parts) + ")"
        return _code(text, _const(*parts), _irr(*parts))

    def where(self, cond: Any, a: Any, b: Any) -> Code:
        text = f"(float({a}) if bool({cond}) else float({b}))"
        return _code(text, _const(cond, a, b), True)


EMIT_MATH = Emitter("numba float64", MATH)
EMIT_APPROX = Emitter("numba float64 (vectorizable)", APPROX)


def _indent(lines: list[str]) -> list[str]:
    return ["    " + line for line in lines]
