"""A spec's formula as a fused, parallel loop in double-double (conformance/compiled/ddmath.py) for DOUBLE.

Like codegen.py (an arithmetic of the expression walker, conformance/spec/expr/walk.py, whose
values are source text; same generated names, strings decided at generation, no spec text in
the source), but every value is a (hi, lo) pair and the branches are selects: every
branch and condition is evaluated for every element and the first true branch's value kept, so
the loop has no control flow and vectorizes. Each element gets a flag: 1 when its pair is
poisoned (ddmath's range limits), not finite, tiny, or when a condition compared a poisoned
value; the engine recomputes those in long double. Formulas with a function ddmath lacks raise
codegen.Unsupported (long double runs them). A second function, pairs, writes each element's
(hi, lo) without rounding: reference/ddtier.py decides near-midpoint elements of narrower
outputs with it.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from typing import Any

from ..conformance.spec.expr.walk import Arithmetic, Formula, tensors_read
from ..conformance.spec.model import OpSpec
from .kernelsource import COMPILED, VECMATH, Source, Unsupported, number

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
_DIGEST = hashlib.sha256(
    b"".join((COMPILED / f).read_bytes() for f in ("ddmath.py", "exactmath.py")) + VECMATH.encode()
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
    tensors = tensors_read(spec)
    strings = {p.name: env.get(p.name) for p in spec.attributes if p.kind == "string"}
    attrs = tuple(p.name for p in spec.attributes if p.kind in ("scalar", "bool", "int", "float"))
    bools = {p.name for p in spec.attributes if p.kind == "bool"}
    names = {n: f"v{i}" for i, n in enumerate((*tensors, *attrs))}
    for i, x in enumerate(spec.formula.lets):
        names[x.name] = f"t{i}"
    pad = "        "
    lines = [f"{pad}{names[n]} = (np.float64(a{i}[k]), 0.0)" for i, n in enumerate(tensors)]
    lines += [
        f"{pad}{names[n]} = p{i}" if n in bools else f"{pad}{names[n]} = (p{i}, 0.0)"
        for i, n in enumerate(attrs)
    ]
    lines += [pad + line for line in EMIT.body(spec, names, strings, (*tensors, *attrs))]
    args = [f"a{i}" for i in range(len(tensors))] + [f"p{i}" for i in range(len(attrs))]
    text = HEADER.format(
        args=", ".join(args),
        digest=_DIGEST,
        body="\n".join(lines),
        module="exactmath" if exact else "ddmath",
    )
    return Source(text, tensors, attrs)


class Code(str):
    """Source of a value: kind "pair" (a double-double), "bool" (a condition) or "name" (a
    parameter or let, usable as either, as a bool parameter is)."""

    kind = "pair"


def _code(text: str, kind: str = "pair") -> Code:
    c = Code(text)
    c.kind = kind
    return c


def _pair(x: Any) -> Code:
    if not isinstance(x, Code) or x.kind == "bool":
        raise Unsupported(f"no double-double form for {x!r} as a value")
    return x


def _cond(x: Any) -> str:
    if isinstance(x, bool):  # a string parameter's comparison, decided at generation
        return str(x)
    if x.kind == "pair":
        raise Unsupported(f"no double-double form for the condition {x}")
    return x


class _Names(dict):
    """The walk's environment: the parameters' variables, the string parameters' values and the
    lets bound so far; any other name has no double-double form."""

    def __missing__(self, name: str) -> Any:
        raise Unsupported(f"no double-double form for the name {name}")


class DoubleDouble(Arithmetic):
    """The walker's arithmetic whose values are the double-double source computing them (see
    the module docstring); the generator it writes for is `state.gen` (one walk at a time per
    thread). Comparison operands become temporaries whose poison flags the element."""

    name = "numba double-double"

    def __init__(self) -> None:
        self.state = threading.local()
        for fn, target in FUNCTIONS.items():
            setattr(self, "f_" + fn, self._call(target))

    def body(
        self, spec: OpSpec, names: dict[str, str], strings: dict[str, Any], params: tuple[str, ...]
    ) -> list[str]:
        """The loop body's statements computing the pair `r` (and the poison `q`) for one
        element, unindented: the formula walked with each name's variable (`names`)."""
        st = self.state
        st.names, st.lines, st.count = names, [], 0
        env = _Names({n: _code(names[n], "name") for n in params})
        env.update(strings)
        chain = Formula.of(spec.formula).evaluate(env, self)
        if not isinstance(chain, list):
            chain = [(None, chain)]
        selects = [f"r = dsel({c}, {v}, r)" for c, v in reversed(chain[:-1])]
        return [*st.lines, f"r = {chain[-1][1]}", *selects]

    # the formula walk (walk.Formula): every statement in the loop body (no control flow), a
    # let assigned where first needed, a branch some elements take a select of the pairs

    def decide(self, cond: Any) -> bool | None:
        c = _cond(cond)
        return True if c == "True" else False if c == "False" else None

    def select(self, cond: Any, then: Callable[[], Any], other: Callable[[], Any]) -> list:
        """[(condition, value), ..., (None, value)]: `r` written as a select per branch."""
        c, yes, no = _cond(cond), _pair(then()), other()
        return [(c, yes), *(no if isinstance(no, list) else [(None, _pair(no))])]

    def nothing(self) -> Code:
        return _code("(_NAN, _NAN)")  # a last guarded branch that is false

    def result(self, value: Any) -> Code:
        return _pair(value)

    def let(self, name: str, value: Any) -> Code:
        var = self.state.names[name]
        self.state.lines.append(f"{var} = {_pair(value)}")
        return _code(var, "name")

    def lacks(self, fn: str) -> Exception:
        return Unsupported(f"no double-double form for {fn}()")

    @staticmethod
    def _call(target: str) -> Any:
        return lambda *args: _code(f"{target}(" + ", ".join(_pair(a) for a in args) + ")")

    def number(self, value: bool | int | float) -> Code:
        if isinstance(value, bool):
            return _code(str(value), "bool")
        return _code(f"({number(float(value))}, 0.0)")

    def constant(self, name: str, value: float) -> Code:
        return _code(name.upper() if name in ("pi", "e") else f"({number(value)}, 0.0)")

    def add(self, a: Any, b: Any) -> Code:
        return _code(f"dadd({_pair(a)}, {_pair(b)})")

    def sub(self, a: Any, b: Any) -> Code:
        return _code(f"dsub({_pair(a)}, {_pair(b)})")

    def mul(self, a: Any, b: Any) -> Code:
        return _code(f"dmul({_pair(a)}, {_pair(b)})")

    def div(self, a: Any, b: Any) -> Code:
        return _code(f"ddiv({_pair(a)}, {_pair(b)})")

    def pow(self, a: Any, b: Any) -> Code:
        raise Unsupported("no double-double form for a power")

    def neg(self, x: Any) -> Code:
        return _code(f"dneg({_pair(x)})")

    def not_(self, x: Any) -> Code:
        return _code(f"(not {_cond(x)})", "bool")

    def operand(self, x: Any) -> Code:
        """A comparison's operand as a temporary whose poison flags the element."""
        st = self.state
        name = f"c{st.count}"
        st.count += 1
        st.lines.append(f"{name} = {_pair(x)}")
        st.lines.append(f"q = q | ({name}[1] != {name}[1])")
        return _code(name)

    def lt(self, a: Any, b: Any) -> Code:
        return _code(f"dlt({a}, {b})", "bool")

    def le(self, a: Any, b: Any) -> Code:
        return _code(f"dle({a}, {b})", "bool")

    def gt(self, a: Any, b: Any) -> Code:
        return _code(f"dlt({b}, {a})", "bool")

    def ge(self, a: Any, b: Any) -> Code:
        return _code(f"dle({b}, {a})", "bool")

    def eq(self, a: Any, b: Any) -> Code:
        return _code(f"deq({a}, {b})", "bool")

    def ne(self, a: Any, b: Any) -> Code:
        return _code(f"(not deq({a}, {b}))", "bool")

    def chain(self, links: list[Any]) -> Code:
        return _code("(" + " & ".join(links) + ")", "bool")

    def logic(self, op: str, parts: list[Any]) -> Code:
        sep = " & " if op == "and" else " | "
        return _code("(" + sep.join(_cond(p) for p in parts) + ")", "bool")

    def where(self, cond: Any, a: Any, b: Any) -> Code:
        return _code(f"dsel({_cond(cond)}, {_pair(a)}, {_pair(b)})")


EMIT = DoubleDouble()
