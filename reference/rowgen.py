"""A formula with reductions as one compiled pass per block of rows (numba), generated from its IR.

rows.py lays a chunk out as rows (the reduced dims last); the kernel written here walks each
row once per reduction, in dependency order (a normalisation: its amax, then the sum of exp(x - amax)),
then once more for the elements, every value carried with a first-order bound on its absolute
error (as reference/errbound.py: inputs and literals exact, each operation adds its own rounding
and propagates its operands' bounds through its derivative, each library function within
`ULPS` ulps). The reductions: `sum` and `mean` by a cascade of TwoSums (Ogita, Rump and Oishi's
Sum2: within u|S| + g^2 sum |x| of the exact sum of the terms; that, the terms' bounds and
the final rounding are the sum's bound), `amax`/`amin` exact (their bound the largest of the
terms'), `prod` with its relative bound, `logsumexp` as m + log(sum(exp(x - m))) for the row's
computed maximum m (exact for any m), `any`/`all` of conditions; a `gather` of an input by an
exact index is read inline (Bounded.gather), and an output of one value per row is the row's
first element. Rows of LONG elements and more take the long-row kernel (`generate(long=True)`:
segments in parallel, partial states joined error-free; Bounded._long). An element's flag says whether
the bound decides its rounding to the output (conformance/compiled/rowmath.py); a row whose
reductions are not finite (a NaN, an infinity) is marked for the numpy tier, which follows IEEE.

Two arithmetics write the same walk: float64 (`Bounded`, tier 1, vecmath's inlined functions)
and double-double (`Bounded(dd=True)`, conformance/compiled/ddmath.py: the row tier before
mpmath, its bound from the pair functions' accuracy). The source is generated from the checked
IR as codegen.py's is: names become v0, v1, ..., numbers are re-rendered, string comparisons are
decided at generation; no spec text reaches it. A formula the generator cannot express raises
codegen.Unsupported (the numpy tiers run it).
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..conformance.spec.expr import ir
from ..conformance.spec.expr.walk import GATHER, Arithmetic, Formula, stage, tensors_read
from ..conformance.spec.model import OpSpec
from .errbound import EXACT_AT, OVERFLOW, POLE
from .kernelsource import COMPILED, PRELUDE, VECMATH, Source, Unsupported, number

U = 2.0**-53
TINY_NORMAL = 2.0**-1022  # float64's smallest normal
UD = 2.0**-102  # a double-double operation's relative error, generously
RECIP_U = 2.0**-52 * (1.0 + 2.0**-50)  # x * (1 / d): two roundings, relative to the result
# float64 functions: (source, ulps of their own error)
F64 = {"exp": ("_vexp", 2), "expm1": ("_vexpm1", 3), "log1p": ("_vlog1p", 3),
       "log": ("math.log", 1), "erf": ("math.erf", 4), "erfc": ("_verfc", 8),
       "erfinv": ("_verfinv", 4), "tanh": ("_vtanh", 4), "sqrt": ("math.sqrt", 0.5)}  # fmt: skip
# double-double functions: (source, relative error) (ddmath.py's measured accuracy, doubled)
DD = {"exp": ("dexp_low", 2.0**-62), "expm1": ("dexpm1", 2.0**-56), "log1p": ("dlog1p", 2.0**-54),
      "log": ("dlog", 2.0**-54), "erfc": ("derfc", 2.0**-60), "tanh": ("dtanh", 2.0**-55),
      "sqrt": ("dsqrt", UD)}  # fmt: skip
# |derivative| of each function, as source over its argument {a} and value {v} (float64)
SLOPE = {"exp": "abs({v})", "expm1": "abs({v} + 1.0)", "log": "abs(1.0 / {a})",
         "log1p": "abs(1.0 / (1.0 + {a}))", "erf": "1.1283791670955126 * _vexp(-{a} * {a})",
         "erfc": "1.1283791670955126 * _vexp(-{a} * {a})",
         "erfinv": "0.886226925452758 * _vexp({v} * {v})", "tanh": "abs(1.0 - {v} * {v})",
         "sqrt": "abs(0.5 / {v})"}  # fmt: skip

_DIGEST = hashlib.sha256(
    b"".join((COMPILED / f).read_bytes() for f in ("rowmath.py", "ddmath.py")) + VECMATH.encode()
).hexdigest()[:16]

HEADER = """\
# rows {digest}
import math

import numpy as np
from numba import njit, prange

from aclnn_conformance.conformance.compiled.ddmath import E, PI, dabs, dadd, dadd_err, ddiv, deq, derfc, dexp, dexpm1, dle, dlog, dlog1p
from aclnn_conformance.conformance.compiled.ddmath import dlt, dmax, dmin, dmul, dneg, dsel, dsqrt, dsub, dtanh
from aclnn_conformance.conformance.compiled.intrinsics import select as _sel
from aclnn_conformance.conformance.compiled.rowmath import decide_dd, dexp_low, div_err, flag_f64, prod_err, sum_err
from aclnn_conformance.conformance.compiled.vecmath import half_to_double as _h2d
from aclnn_conformance.conformance.compiled.vecmath import verfc as _verfc
from aclnn_conformance.conformance.compiled.vecmath import verfinv as _verfinv
from aclnn_conformance.conformance.compiled.vecmath import vexp as _vexp
from aclnn_conformance.conformance.compiled.vecmath import vexpm1 as _vexpm1
from aclnn_conformance.conformance.compiled.vecmath import vlog1p as _vlog1p
from aclnn_conformance.conformance.compiled.vecmath import vtanh as _vtanh

_INF = math.inf
_NAN = math.nan

{prelude}

@njit(parallel={parallel}, cache=True, error_model="numpy")
def kernel({args}, y, flags, bad, drop, guard, emin):
    for r in {loop}(y.shape[0]):
        n = {length}.shape[1]
        qr = False
        badr = False
{body}
        bad[r] = badr


@njit(parallel=True, cache=True)
def store(y, out):  # the values into a FLOAT or DOUBLE output: the machine's cast (RNE)
    for k in prange(out.shape[0]):
        out[k] = y[k]
"""


@dataclass(frozen=True)
class Val:
    """A value of the generated code: source of its value (a float64, or a pair in dd) and of
    its error bound, or a condition (`cond`: source of a bool, no bound)."""

    v: str
    e: str = "0.0"
    cond: bool = False


def generate(
    spec: OpSpec,
    env: dict[str, Any],
    dd: bool = False,
    half: frozenset = frozenset(),
    length: int | None = None,
    long: bool = False,
    live: frozenset[ir.Reduce] | None = None,
    shared: tuple[ir.Reduce, ...] = (),
    given: frozenset[ir.Reduce] = frozenset(),
) -> Source:
    """The row kernel's source for `spec`, the string parameters of `env` decided; dd: the
    double-double tier's; half: the FLOAT16 tensors (read from their bits); length: the rows'
    length (env[GATHER]'s dims that span a whole row read it from the kernel's arguments). The
    kernel writes y's columns: a row's every element, or its first (an output of one value per
    row, the reduced dims dropped). long: the long-row kernel (float64 only; rows of LONG and
    more): each reduction's row in segments of SEG terms, reduced in parallel, their partial
    states combined error-free, so that no buffer holds a whole row. live: the reductions the
    call's branches can reach (rows.live; None: all): the others are not computed (NaN). Rows
    run in parallel (a long row's segments). shared: the reductions another output of the call
    computes alike (rows.Shared), a column each of the kernel's arrays sv, se (value and bound
    per row) and sf (the row's undecided and bad flags after it, two columns): those in `given`
    are read from them, the others written there (float64 tier only)."""
    _expressible(spec)
    tensors = tensors_read(spec)
    strings = {p.name: env.get(p.name) for p in spec.attributes if p.kind == "string"}
    attrs = tuple(p.name for p in spec.attributes if p.kind in ("scalar", "bool", "int", "float"))
    attrs += sizes(spec)  # a tensor's element count or dim size: a number of the call
    bools = {p.name for p in spec.attributes if p.kind == "bool"}
    half = frozenset(half) & frozenset(tensors) if not dd else frozenset()
    places = _places(env.get(GATHER, {}), length)
    long = long and not dd
    shared = () if dd or long else shared
    body = Bounded(dd, long).body(
        spec, tensors, attrs, bools, strings, half, places, live, shared, given
    )
    args = [f"a{i}" for i in range(len(tensors))] + [f"p{i}" for i in range(len(attrs))]
    args += ["sv", "se", "sf"] if shared else []
    # rows in parallel (the double-double tier's flagged rows too: a row of 8192 terms in pairs
    # costs 1.5 ms); a long row's kernel takes its rows one by one, each row's segments in
    # parallel
    text = HEADER.format(digest=_DIGEST, prelude=PRELUDE, args=", ".join(args), body="\n".join(body),
                         parallel=True, loop="range" if long else "prange",
                         length="a0" if tensors else "y")  # fmt: skip
    return Source(text, tensors, attrs, half)


# the IR node kinds the generator writes: any other (a kind added to the language later) sends
# the formula to the numpy tiers, whatever its op
KINDS = (ir.Num, ir.Const, ir.Var, ir.Text, ir.Unary, ir.Binary, ir.Compare, ir.Logic, ir.Where,
         ir.Call, ir.Reduce, ir.Gather)  # fmt: skip


def expressible(spec: OpSpec) -> bool:
    """Whether every node of spec's formula is of a kind the generator writes (KINDS)."""
    return _unknown(spec) is None


def _unknown(spec: OpSpec) -> str | None:
    for e in Formula.of(spec.formula).expressions():
        for node in ir.walk(e.ir):
            if type(node) not in KINDS:
                return type(node).__name__
    return None


def _expressible(spec: OpSpec) -> None:
    """Raise Unsupported where spec's formula holds a node kind the generator has no form for."""
    kind = _unknown(spec)
    if kind is not None:
        raise Unsupported(f"no row-kernel form for a {kind} node")


def sizes(spec: OpSpec) -> tuple[str, ...]:
    """The `numel(x)` and `size(x, k)` names spec's formula reads (sorted): numbers of the call,
    kernel parameters like attributes."""
    return tuple(sorted({n.name for e in Formula.of(spec.formula).expressions()
                         for n in ir.walk(e.ir)
                         if isinstance(n, ir.Var) and n.name.startswith(("numel(", "size("))}))  # fmt: skip


def _places(geometry: dict, length: int | None) -> dict[ir.Gather, tuple[str, str]]:
    """Each gather's dim inside a row as source (stride, size): "1", "n" where the dim is the
    whole row (the kernel's row length, so one kernel serves every shape), else the call's
    numbers."""
    out = {}
    for node, (stride, size) in geometry.items():
        if not isinstance(node, ir.Along):
            raise Unsupported("no row-kernel form for a reduction over part of a row")
        whole = stride == 1 and (length is None or size == length)
        out[node] = ("1", "n") if whole else (str(int(stride)), str(int(size)))
    return out


LANES = 4  # independent chains of a reduction over buffered terms
LOOP = "for j in range(0, {n} - {n} % 4, 4):"  # the lanes' loop over `n` buffered terms
SEG = 1 << 14  # a long row's segment: its terms buffered, its partial reduction on one thread
LONG = 1 << 18  # rows this long take the long-row kernel (rowgen.generate(long=True))


def _lane(src: str, k: int) -> str:
    """A buffered term's source (tb[j], or an input's a0[r, j]) at lane k (tb[j + k])."""
    return src.replace("[j]", f"[j + {k}]").replace("[r, j]", f"[r, j + {k}]") if k else src


def _segment_read(read: str, tensors: list[str]) -> str:
    """An element's read of an input (`a0[r, j]`) as a read of its segment's view (`sa0[jj]`)."""
    for a in tensors:
        read = read.replace(f"{a}[r, j]", f"s{a}[jj]")
    return read


class _Env(dict):
    def __missing__(self, name: str) -> Any:
        raise Unsupported(f"no row-kernel form for the name {name}")


def _b(x: Any) -> str:
    """A condition's source (a string parameter's comparison is a Python bool here)."""
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, Val) and x.cond:
        return x.v
    raise Unsupported(f"no row-kernel form for the condition {x!r}")


def _n(x: Any) -> Val:
    """A number's Val (a condition read as a number is 0 or 1, exactly)."""
    if isinstance(x, bool) or (isinstance(x, Val) and x.cond):
        raise Unsupported("a condition used as a number")
    return x


def _two_sum(p: str, k: str, x: str, pad: str) -> list[str]:
    """Sum2's step: {p}s{k} += x by Knuth's TwoSum, its error (exact) added to {p}c{k} and its
    magnitude to {p}z{k} (0 after the row: every addition was exact, the sum is)."""
    s, t, b, d = f"{p}s{k}", f"{p}t{k}", f"{p}b{k}", f"{p}d{k}"
    return [f"{pad}{t} = {s} + {x}", f"{pad}{b} = {t} - {s}",
            f"{pad}{d} = ({s} - ({t} - {b})) + ({x} - {b})", f"{pad}{p}c{k} += {d}",
            f"{pad}{p}z{k} += abs({d})", f"{pad}{s} = {t}"]  # fmt: skip


def _sum_bound(rv: str, re: str, g: str, p: str) -> str:
    """The bound of Sum2's result rv = s + c: its terms' bounds, and its own (u|rv| + g^2
    sum|x|, {p}a) unless every TwoSum was exact ({p}z 0: s is the exact sum, c is 0)."""
    return (
        f"{re} = {re} * (1.0 + n * 2.0**-52) + ((n > 1) & ({p}z > 0.0)) * "
        f"(2.0**-52 * abs({rv}) + {g} * {g} * {p}a)"
    )


class Bounded(Arithmetic):
    """The walker's arithmetic whose values are the source of (value, bound) pairs: statements
    appended to `state.lines`, each value in a temporary. dd: values are double-double pairs."""

    def __init__(self, dd: bool = False, long: bool = False):
        self.dd = dd
        self.long = long
        self.name = "numba rows " + ("double-double" if dd else "float64")
        self.state = threading.local()
        for fn in DD if dd else F64:
            setattr(self, "f_" + fn, self._function(fn))

    # -- the kernel's body

    def body(
        self,
        spec: OpSpec,
        tensors: tuple[str, ...],
        attrs: tuple[str, ...],
        bools: set[str],
        strings: dict[str, Any],
        half: frozenset[str],
        places: dict[ir.Gather, tuple[str, str]] | None = None,
        live: frozenset[ir.Reduce] | None = None,
        shared: tuple[ir.Reduce, ...] = (),
        given: frozenset[ir.Reduce] = frozenset(),
    ) -> list[str]:
        st = self.state
        st.count, st.reduced, st.q, st.kept = 0, {}, "q", {}
        st.places = places or {}
        st.sources = {n: (f"a{i}", n in half) for i, n in enumerate(tensors)}
        names = {n: f"v{i}" for i, n in enumerate((*tensors, *attrs))}
        walk = Formula.of(spec.formula)
        pad = " " * 8
        head = []
        for i, n in enumerate(attrs):
            head.append(f"{pad}{names[n]} = p{i}" if n in bools else
                        f"{pad}{names[n]} = {self._lift(f'float(p{i})')}")  # fmt: skip
        reads = []
        for i, n in enumerate(tensors):
            x = f"_h2d(a{i}[r, j])" if n in half else f"np.float64(a{i}[r, j])"
            reads.append(f"{names[n]} = {self._lift(x)}")

        def env() -> _Env:
            e = _Env({n: Val(names[n], "0.0", n in bools) for n in (*tensors, *attrs)})
            for n in bools:
                e[n] = Val(names[n], "0.0", True)
            e.update(strings)
            return e

        out = list(head)
        if self.long:
            out.append(f"{pad}nseg = (n + {SEG} - 1) // {SEG}")
        elif not self.dd:  # a row's buffered terms
            out += [f"{pad}tb = np.empty(n)", f"{pad}te = np.empty(n)"]
        for node in self._order(spec, walk):
            if live is not None and node not in live:  # a branch this call never takes
                st.reduced[node] = Val(self._lift("_NAN"))
                continue
            c = shared.index(node) if node in shared else -1
            if node in given and c >= 0:  # computed by another output's kernel: read
                k = len(st.reduced)
                out += [f"{pad}R{k}v = sv[r, {c}]", f"{pad}R{k}e = se[r, {c}]",
                        f"{pad}qr = qr or sf[r, {2 * c}]", f"{pad}badr = badr or sf[r, {2 * c + 1}]"]  # fmt: skip
                st.reduced[node] = Val(f"R{k}v", f"R{k}e")
                continue
            st.lines, st.q = [], "qr"
            e = env()
            walk.bind(e, ir.names_read(node.x), self)
            out += [pad + line for line in self._reduction(node, e, walk, reads)]
            if c >= 0:  # for the outputs after this one
                v = _n(st.reduced[node])
                out += [f"{pad}sv[r, {c}] = {v.v}", f"{pad}se[r, {c}] = {v.e}",
                        f"{pad}sf[r, {2 * c}] = qr", f"{pad}sf[r, {2 * c + 1}] = badr"]  # fmt: skip
        st.lines, st.q = [], "q"
        final = env()
        for let, k in st.kept.items():  # a let a sum's terms kept: read, not computed again
            final[let] = Val(f"tb{k}[j]", f"te{k}[j]")
        lines = self._value(walk.evaluate(final, self))
        inner = ["q = False", *reads, *lines, *self._store()]
        if self.dd:  # only the elements asked for (flags nonzero on entry)
            inner = ["if flags[r, j] != 0:", *("    " + s for s in inner)]
        each = "prange" if self.long else "range"
        loop = [f"for j in {each}(y.shape[1]):", *("    " + s for s in inner)]
        return out + [pad + line for line in loop]

    def element(
        self, spec: OpSpec, names: dict[str, str], bools: set[str], strings: dict[str, Any]
    ) -> list[str]:
        """The statements of one element of a formula without reductions (float64): its value
        `rv`, its bound `re` and `q` (a comparison its bounds left undecided), the variables of
        `names` read (codegen.py's flagging kernels)."""
        st = self.state
        st.count, st.reduced, st.q, st.kept, st.places, st.sources = 0, {}, "q", {}, {}, {}
        st.lines = []
        env = _Env({n: Val(v, "0.0", n in bools) for n, v in names.items()})
        env.update(strings)
        return ["q = False", *self._value(Formula.of(spec.formula).evaluate(env, self))]

    def _value(self, chain: Any) -> list[str]:
        """The walk's statements, then `rv` and `re` from its branches' chain (the first branch
        whose condition holds; each branch computed, selected without a jump)."""
        if not isinstance(chain, list):
            chain = [(None, chain)]
        res = _n(chain[-1][1])
        lines = [*self.state.lines, f"rv = {res.v}", f"re = {res.e}"]
        for c, v in reversed(chain[:-1]):
            lines += [f"rv = {self._select(c, v.v, 'rv')}", f"re = _sel({c}, {v.e}, re)"]
        return lines

    def _store(self) -> list[str]:
        if self.dd:
            return ["yv, ok = decide_dd(rv[0], rv[1], re, drop, emin)",
                    "y[r, j] = yv", "flags[r, j] = not (ok and not q and not qr)"]  # fmt: skip
        return ["y[r, j] = rv", "flags[r, j] = flag_f64(rv, re, q | qr, drop, guard, emin)"]

    def _lift(self, x: str) -> str:
        return f"({x}, 0.0)" if self.dd else x

    def _order(self, spec: OpSpec, walk: Formula) -> list[ir.Reduce]:
        """The formula's distinct reductions, each after those its argument reads (through lets)."""
        order: list[ir.Reduce] = []

        def visit(node: ir.Node, seen: frozenset[str]) -> None:
            for n in ir.walk(node):
                if isinstance(n, ir.Var) and n.name in walk.lets and n.name not in seen:
                    visit(walk.lets[n.name].ir, seen | {n.name})
            for r in reversed(ir.reductions(node)):  # innermost first
                if isinstance(r, ir.Gather):  # an element's pick: inline (Bounded.gather)
                    continue
                if r not in order:
                    visit(r.x, seen)
                    if r not in order:
                        order.append(r)

        for x in walk.expressions():
            visit(x.ir, frozenset())
        return order

    def _reduction(self, node: ir.Reduce, env: _Env, walk: Formula, reads: list[str]) -> list[str]:
        """The loops over a row computing `node`; its value and bound are then R{k}v, R{k}e."""
        if self.long:
            return self._long(node, env, reads)
        st = self.state
        k = len(st.reduced)
        val = stage(node.x, self)(env)
        body = ["    " + s for s in (*reads, *st.lines)]
        rv, re = f"R{k}v", f"R{k}e"
        fn = node.fn
        if fn in ("any", "all"):
            c = _b(val)
            op, init = ("or", "False") if fn == "any" else ("and", "True")
            lines = [f"{rv} = {init}", "for j in range(n):", *body, f"    {rv} = {rv} {op} {c}"]
            st.reduced[node] = Val(rv, "0.0", True)
            return lines
        x = _n(val)
        if not self.dd and isinstance(node.x, ir.Var) and node.x.name in st.sources:
            # the terms are an input's elements, exact: reduced straight from the input
            arr, half = st.sources[node.x.name]
            x = Val(f"_h2d({arr}[r, j])" if half else f"np.float64({arr}[r, j])")
            body, lines = [], []
        elif not self.dd:  # the terms first, in a loop that vectorizes, then their reduction
            buf = "tb", "te"
            if isinstance(node.x, ir.Var) and node.x.name in walk.lets and fn != "logsumexp":
                # the terms are a let's values: kept for the elements' loop (an exp(x - amax) let)
                st.kept[node.x.name] = k
                buf = f"tb{k}", f"te{k}"
            lines = [f"{buf[0]} = np.empty(n)", f"{buf[1]} = np.empty(n)"] if buf[0] != "tb" else []
            lines += ["for j in range(n):", *body, f"    {buf[0]}[j] = {x.v}",
                      f"    {buf[1]}[j] = {x.e}"]  # fmt: skip
            x = Val(f"{buf[0]}[j]", f"{buf[1]}[j]")
            body = []
        else:
            lines = []
        if fn in ("amax", "amin", "logsumexp"):
            lines += self._extreme("amin" if fn == "amin" else "amax", x, rv, re, body)
            if fn != "logsumexp":
                st.reduced[node] = Val(rv, re)
                return lines
            # logsumexp = m + log(sum(exp(x - m))) for the computed maximum m, exact for any m
            again = st.lines  # the argument's statements, for a second loop
            st.lines = []
            m = Val(rv, "0.0")
            term = self.f_exp(self.sub(x, m))
            body2 = ["    " + s for s in (*reads, *again, *st.lines)]
            if not self.dd:
                lines += ["for j in range(n):", *body2, f"    tb[j] = {term.v}",
                          f"    te[j] = {term.e}"]  # fmt: skip
                term, body2 = Val("tb[j]", "te[j]"), []
            lines += self._sum(term, f"S{k}v", f"S{k}e", body2)
            st.lines = []
            out = self.add(m, self.f_log(Val(f"S{k}v", f"S{k}e")))
            lines += st.lines
            st.reduced[node] = out
            return lines
        if fn in ("sum", "mean"):
            lines += self._sum(x, rv, re, body)
            if fn == "mean":
                st.lines = []
                out = self.div(Val(rv, re), Val(self._lift("float(n)")))
                lines += st.lines
                st.reduced[node] = out
                return lines
            st.reduced[node] = Val(rv, re)
            return lines
        if fn == "prod":
            return lines + self._prod(node, x, rv, re, body)
        raise Unsupported(f"no row-kernel form for {fn}()")

    def _long(self, node: ir.Reduce, env: _Env, reads: list[str]) -> list[str]:
        """A reduction over a long row: its terms in segments (prange), each segment's partial
        state (a maximum, or Sum2's sum, error sum, sum of magnitudes and bound) in arrays of
        one entry per segment, then combined in order: the maximum exactly, the sums by TwoSum
        (every addition error-free, the errors summed in float64: Sum2's bound over the whole
        row holds, whatever the order). Comparisons in the terms flag through `qg`."""
        st = self.state
        k = len(st.reduced)
        fn = node.fn
        if fn not in ("sum", "mean", "amax", "amin", "logsumexp"):
            raise Unsupported(f"no long-row form for {fn}()")
        st.q = "qg"
        x = _n(stage(node.x, self)(env))
        arg = list(st.lines)
        rv, re = f"R{k}v", f"R{k}e"
        if fn in ("sum", "mean"):
            lines = self._segments(f"S{k}", arg, reads, x, "sum")
            lines += self._joined_sum(f"S{k}", rv, re)
            if fn == "mean":
                st.lines = []
                out = self.div(Val(rv, re), Val("float(n)"))
                lines += st.lines
                st.reduced[node] = out
                return lines
            st.reduced[node] = Val(rv, re)
            return lines
        f = "amin" if fn == "amin" else "amax"
        op, init = ("_minimum", "_INF") if f == "amin" else ("_maximum", "-_INF")
        p = f"M{k}"
        lines = self._segments(p, arg, reads, x, f)
        lines += [f"{rv} = {init}", f"{re} = 0.0", "for g in range(nseg):",
                  f"    {rv} = {op}({rv}, {p}_0[g])", f"    {re} = max({re}, {p}_1[g])",
                  f"    qr = qr | {p}_q[g]", f"badr = badr or not (abs({rv}) < _INF)"]  # fmt: skip
        if fn != "logsumexp":
            st.reduced[node] = Val(rv, re)
            return lines
        # logsumexp = m + log(sum(exp(x - m))) for the computed maximum m, exact for any m
        st.lines = []
        term = self.f_exp(self.sub(x, Val(rv, "0.0")))
        lines += self._segments(f"S{k}", arg + st.lines, reads, term, "sum")
        lines += self._joined_sum(f"S{k}", f"S{k}v", f"S{k}e")
        st.lines = []
        out = self.add(Val(rv, "0.0"), self.f_log(Val(f"S{k}v", f"S{k}e")))
        lines += st.lines
        st.reduced[node] = out
        return lines

    def _segments(self, p: str, arg: list[str], reads: list[str], x: Val, fn: str) -> list[str]:
        """The prange over a long row's segments: each buffers its terms (x, computed by the
        statements `arg` from `reads`) and stores its partial state in {p}_0, {p}_1, ... and
        whether a comparison was undecided in {p}_q."""
        term = Val("tb[j]", "te[j]")
        if fn == "sum":
            part = self._sum(term, "G", "Ge", [], "mg", part=True)
            outs = ["Gs", "Gc", "Ga", "Ge", "Gz"]
        else:
            part = self._extreme(fn, term, "G", "Ge", [], "mg", part=True)
            outs = ["G", "Ge"]
        # the inputs' segments as 1-D views, read at jj (a loop LLVM vectorizes)
        tensors = [a for a, _ in self.state.sources.values()]
        views = [f"    s{a} = {a}[r, lo : lo + mg]" for a in tensors]
        local = [_segment_read(s, tensors) for s in reads]
        lines = [f"{p}_{i} = np.empty(nseg)" for i in range(len(outs))]
        lines += [f"{p}_q = np.zeros(nseg, np.bool_)", "for g in prange(nseg):",
                  f"    lo = g * {SEG}", f"    mg = min(n, lo + {SEG}) - lo", "    qg = False",
                  *views, "    tb = np.empty(mg)", "    te = np.empty(mg)", "    for jj in range(mg):",
                  "        j = lo + jj", *("        " + s for s in (*local, *arg)),
                  f"        tb[jj] = {x.v}", f"        te[jj] = {x.e}",
                  *("    " + s for s in part)]  # fmt: skip
        lines += [f"    {p}_{i}[g] = {o}" for i, o in enumerate(outs)] + [f"    {p}_q[g] = qg"]
        return lines

    def _joined_sum(self, p: str, rv: str, re: str) -> list[str]:
        """The segments' partial sums {p}_0..4 joined into the row's sum and its bound."""
        g = "(n * 2.0**-53 / (1.0 - n * 2.0**-53))"
        return [f"{p}s = 0.0", f"{p}c = 0.0", f"{p}a = 0.0", f"{re} = 0.0", f"{p}z = 0.0",
                "for g in range(nseg):", f"    {p}x = {p}_0[g]", *_two_sum(p, "", f"{p}x", "    "),
                f"    {p}c += {p}_1[g]", f"    {p}z += {p}_4[g]", f"    {p}a += {p}_2[g]",
                f"    {re} += {p}_3[g]", f"    qr = qr | {p}_q[g]", f"{rv} = {p}s + {p}c",
                _sum_bound(rv, re, g, p),
                f"badr = badr or not (abs({p}a) < _INF) or not (abs({rv}) < _INF)"]  # fmt: skip

    def _extreme(
        self, fn: str, x: Val, rv: str, re: str, body: list[str], n: str = "n", part: bool = False
    ) -> list[str]:
        """The loops of amax/amin; over buffered terms (no body), `n` of them; part: without the
        row's final check (a long row's segment)."""
        if self.dd:
            f, init = ("dmax", "(-_INF, 0.0)") if fn == "amax" else ("dmin", "(_INF, 0.0)")
            fin = f"{rv}[0]"
        else:
            f, init = ("_maximum", "-_INF") if fn == "amax" else ("_minimum", "_INF")
            fin = rv
            if not body:  # over buffered terms: four independent chains, then the tail
                lines = [f"{rv}{k} = {init}" for k in range(LANES)]
                lines += [f"{re} = 0.0", LOOP.format(n=n)]
                for k in range(LANES):
                    xv, xe = _lane(x.v, k), _lane(x.e, k)
                    lines += [f"    {rv}{k} = {f}({rv}{k}, {xv})", f"    {re} = max({re}, {xe})"]
                lines += [f"{rv} = {rv}0"] + [f"{rv} = {f}({rv}, {rv}{k})" for k in range(1, LANES)]
                lines += [f"for j in range({n} - {n} % 4, {n}):", f"    {rv} = {f}({rv}, {x.v})",
                          f"    {re} = max({re}, {x.e})", f"badr = badr or not (abs({fin}) < _INF)"]  # fmt: skip
                return lines[:-1] if part else lines
        return [f"{rv} = {init}", f"{re} = 0.0", "for j in range(n):", *body,
                f"    {rv} = {f}({rv}, {x.v})", f"    {re} = max({re}, {x.e})",
                f"badr = badr or not (abs({fin}) < _INF)"]  # fmt: skip

    def _sum(
        self, x: Val, rv: str, re: str, body: list[str], n: str = "n", part: bool = False
    ) -> list[str]:
        """The loops of a sum; over buffered terms (no body), `n` of them; part: a long row's
        segment, ending with its partial state ({rv}s, {rv}c, {rv}a, {re}), unrounded."""
        if self.dd:
            # each addition's own error as dadd_err bounds it (tight where a tiny term meets a
            # large sum), the terms' bounds added; the float64 sum of bounds rounded up
            return [f"{rv} = (0.0, 0.0)", f"{re} = 0.0", f"{rv}a = 0.0", "for j in range(n):",
                    *body, f"    {rv}t = {x.v}", f"    {re} += {x.e} + dadd_err({rv}, {rv}t)",
                    f"    {rv} = dadd({rv}, {rv}t)", f"    {rv}a += abs({rv}t[0])",
                    f"{re} = {re} * (1.0 + n * 2.0**-52)",
                    f"badr = badr or not (abs({rv}a) < _INF) or ({rv}[1] != {rv}[1])"]  # fmt: skip
        g = "(n * 2.0**-53 / (1.0 - n * 2.0**-53))"
        if not body:  # over buffered terms: four TwoSum cascades, their sums joined by TwoSums
            # (every addition error-free, the errors summed in float64: Sum2's bound holds)
            lines = []
            for k in range(LANES):
                lines += [f"{rv}s{k} = 0.0", f"{rv}c{k} = 0.0", f"{rv}a{k} = 0.0", f"{re}{k} = 0.0",
                          f"{rv}z{k} = 0.0"]  # fmt: skip
            lines.append(LOOP.format(n=n))
            for k in range(LANES):
                xv, xe = _lane(x.v, k), _lane(x.e, k)
                lines += [f"    {rv}x{k} = {xv}", *_two_sum(f"{rv}", f"{k}", f"{rv}x{k}", "    "),
                          f"    {rv}a{k} += abs({rv}x{k})", f"    {re}{k} += {xe}"]  # fmt: skip
            lines += [f"for j in range({n} - {n} % 4, {n}):", f"    {rv}x0 = {x.v}",
                      *_two_sum(f"{rv}", "0", f"{rv}x0", "    "), f"    {rv}a0 += abs({rv}x0)",
                      f"    {re}0 += {x.e}"]  # fmt: skip
            lines += [f"{rv}s = {rv}s0", f"{rv}c = {' + '.join(f'{rv}c{k}' for k in range(LANES))}",
                      f"{rv}z = {' + '.join(f'{rv}z{k}' for k in range(LANES))}"]  # fmt: skip
            for k in range(1, LANES):
                lines += _two_sum(rv, "", f"{rv}s{k}", "")
            lines += [f"{rv}a = {' + '.join(f'{rv}a{k}' for k in range(LANES))}",
                      f"{re} = {' + '.join(f'{re}{k}' for k in range(LANES))}",
                      f"{rv} = {rv}s + {rv}c", _sum_bound(rv, re, g, rv),
                      f"badr = badr or not (abs({rv}a) < _INF) or not (abs({rv}) < _INF)"]  # fmt: skip
            return lines[:-3] if part else lines
        return [f"{rv}s = 0.0", f"{rv}c = 0.0", f"{rv}a = 0.0", f"{re} = 0.0", f"{rv}z = 0.0",
                "for j in range(n):", *body, f"    {rv}x = {x.v}",
                *_two_sum(rv, "", f"{rv}x", "    "), f"    {rv}a += abs({rv}x)",
                f"    {re} += {x.e}", f"{rv} = {rv}s + {rv}c", _sum_bound(rv, re, g, rv),
                f"badr = badr or not (abs({rv}a) < _INF) or not (abs({rv}) < _INF)"]  # fmt: skip

    def _prod(self, node: ir.Reduce, x: Val, rv: str, re: str, body: list[str]) -> list[str]:
        if self.dd:
            lines = [f"{rv} = (1.0, 0.0)", f"{re}r = 0.0", "for j in range(n):", *body,
                     f"    {rv} = dmul({rv}, {x.v})",
                     f"    {re}r += ({x.e}) / abs({x.v}[0]) if ({x.e}) > 0.0 else 0.0",
                     f"{re} = abs({rv}[0]) * ({re}r + n * {UD!r})",
                     f"badr = badr or not (abs({rv}[0]) < _INF) or ({rv}[1] != {rv}[1])"]  # fmt: skip
        else:
            lines = [f"{rv} = 1.0", f"{re}r = 0.0", "for j in range(n):", *body,
                     f"    {rv} = {rv} * {x.v}",
                     f"    {re}r += ({x.e}) / abs({x.v}) if ({x.e}) > 0.0 else 0.0",
                     f"{re} = abs({rv}) * ({re}r * (1.0 + n * 2.0**-52) + n * 2.0**-53)",
                     f"badr = badr or not (abs({rv}) < _INF)"]  # fmt: skip
        self.state.reduced[node] = Val(rv, re)
        return lines

    # -- the walk's hooks

    def reduce(self, node: ir.Reduce, x: Any, env: Any) -> Any:
        hit = self.state.reduced.get(node)
        if hit is None:
            raise Unsupported(f"{node.fn}() read before it is computed")
        return hit

    def gather(self, node: ir.Gather, x: Any, index: Any, env: Any) -> Val:
        """x (a tensor input, exact) at the position along the gather's dim that the index
        (exact) gives at this element; NaN where the index is not an integer in [0, size)."""
        st = self.state
        if not isinstance(node.x, ir.Var) or node.x.name not in st.sources:
            raise Unsupported("no row-kernel form for a gather from an expression")
        t = _n(index(env))
        if t.e != "0.0":
            raise Unsupported("no row-kernel form for a gather by a computed index")
        stride, size = st.places.get(node, ("1", "n"))
        arr, half = st.sources[node.x.name]
        k = st.count
        st.count += 1
        i, ok, at = f"g{k}i", f"g{k}ok", f"g{k}p"
        st.lines += [
            f"{i} = {self._h(t)}",
            f"{ok} = ({i} >= 0.0) & ({i} < {size}) & (math.floor({i}) == {i})",
            f"{at} = j - (j // {stride}) % {size} * {stride} + int(_sel({ok}, {i}, 0.0)) * {stride}",
        ]  # fmt: skip
        read = f"_h2d({arr}[r, {at}])" if half else f"np.float64({arr}[r, {at}])"
        return self._tmp(self._select(ok, self._lift(read), self._lift("_NAN")), "0.0")

    def _tmp(self, value: str, err: str, cond: bool = False) -> Val:
        st = self.state
        k = st.count
        st.count += 1
        st.lines.append(f"w{k} = {value}")
        if cond:
            return Val(f"w{k}", "0.0", True)
        if err == "0.0":
            return Val(f"w{k}")
        st.lines.append(f"x{k} = {err}")
        return Val(f"w{k}", f"x{k}")

    def _h(self, x: Val) -> str:
        """The float64 (hi) part of a value's source."""
        return f"{x.v}[0]" if self.dd else x.v

    def _select(self, c: str, a: str, b: str) -> str:
        if self.dd:
            return f"dsel({c}, {a}, {b})"
        return f"_sel({c}, {a}, {b})"

    def number(self, value: bool | int | float) -> Any:
        if isinstance(value, bool):
            return value
        return Val(self._lift(number(float(value))))

    def constant(self, name: str, value: float) -> Val:
        if self.dd and name in ("pi", "e"):
            return Val(name.upper(), f"{abs(value) * UD!r}")
        err = f"{abs(value) * U!r}" if name in ("pi", "e") else "0.0"
        return Val(self._lift(number(value)), err)

    def _err(self, *parts: str) -> str:
        kept = [p for p in parts if p != "0.0"]
        return " + ".join(kept) if kept else "0.0"

    def add(self, a: Any, b: Any) -> Val:
        a, b = _n(a), _n(b)
        if self.dd:
            own = f"dadd_err({a.v}, {b.v})"  # exact terms and tiny ones keep a tight bound
            return self._tmp(f"dadd({a.v}, {b.v})", self._err(a.e, b.e, own))
        k = self.state.count
        return self._tmp(f"{a.v} + {b.v}", self._err(a.e, b.e, f"sum_err({a.v}, {b.v}, w{k})"))

    def sub(self, a: Any, b: Any) -> Val:
        return self.add(a, self.neg(b))

    def neg(self, x: Any) -> Val:
        x = _n(x)
        return Val(f"dneg({x.v})" if self.dd else f"(-{x.v})", x.e)

    def mul(self, a: Any, b: Any) -> Val:
        a, b = _n(a), _n(b)
        ah, bh = self._h(a), self._h(b)
        prop = []
        if a.e != "0.0":
            prop.append(f"abs({bh}) * {a.e}")
        if b.e != "0.0":
            prop.append(f"abs({ah}) * {b.e}")
        if a.e != "0.0" and b.e != "0.0":
            prop.append(f"{a.e} * {b.e}")
        k = self.state.count
        if self.dd:
            own = f"{UD!r} * abs(w{k}[0]) + 5e-324"
            return self._tmp(f"dmul({a.v}, {b.v})", self._err(*prop, own))
        return self._tmp(f"{a.v} * {b.v}", self._err(*prop, f"prod_err({a.v}, {b.v}, w{k})"))

    def div(self, a: Any, b: Any) -> Val:
        a, b = _n(a), _n(b)
        k = self.state.count
        if self.dd:
            err = f"div_err({a.v}[0], {a.e}, {b.v}[0], {b.e}, w{k}[0], {UD!r})"
            return self._tmp(f"ddiv({a.v}, {b.v})", err)
        if b.v in {r.v for r in self.state.reduced.values()}:
            # by a row's value (a normalisation's sum): times its reciprocal, a loop invariant,
            # where that is a normal number (two roundings: RECIP_U); else the quotient
            ok = f"(abs({b.v}) >= {TINY_NORMAL!r}) & (abs({b.v}) < 2.0**1020)"
            value = f"{a.v} * (1.0 / {b.v}) if {ok} else {a.v} / {b.v}"
            err = f"div_err({a.v}, {a.e}, {b.v}, {b.e}, w{k}, _sel({ok}, {RECIP_U!r}, {U!r}))"
            return self._tmp(value, err)
        return self._tmp(f"{a.v} / {b.v}", f"div_err({a.v}, {a.e}, {b.v}, {b.e}, w{k}, 0.0)")

    def pow(self, a: Any, b: Any) -> Val:
        if self.dd:
            raise Unsupported("no double-double form for a power")
        a, b = _n(a), _n(b)
        k = self.state.count
        v = f"w{k}"
        prop = "0.0"
        if a.e != "0.0" or b.e != "0.0":
            prop = (f"abs({v}) * (abs({b.v} / {a.v}) * {a.e} + "
                    f"abs(math.log(abs({a.v}))) * {b.e})")  # fmt: skip
        return self._tmp(
            f"float({a.v}) ** float({b.v})", self._err(prop, f"4 * 2.0**-53 * abs({v})")
        )

    def _function(self, fn: str) -> Callable[[Any], Val]:
        def call(x: Any) -> Val:
            x = _n(x)
            k = self.state.count
            if self.dd:
                target, rel = DD[fn]
                v, xh = f"w{k}[0]", f"{x.v}[0]"
                own = f"{rel!r} * abs({v})"
                if fn == "exp":  # dexp_low's 0 below -700: e^x is under 2^-1009 there
                    own += f" + 2.0**-1009 * ({xh} < -700.0)"
            else:
                target, ulps = F64[fn]
                v, xh = f"w{k}", x.v
                # a value below the normals is off by up to the smallest subnormal besides
                # (exp(-825) is 0: without it, an exact 0 that decides a tie wrongly)
                own = f"{ulps * 2 * U!r} * abs({v}) + _sel(abs({v}) < {TINY_NORMAL!r}, 5e-324, 0.0)"
            exact = f" & ({x.v}[1] == 0.0)" if self.dd else ""  # the pair's low part 0
            point, pole = EXACT_AT.get(fn), POLE.get(fn)
            if point is not None:  # exp(0) is 1, log(1) is 0: no error of the function's own
                own = f"_sel(({xh} == {point!r}){exact}, 0.0, {own})"
            if pole is not None:  # log(0) is -inf exactly
                own = f"_sel(({xh} == {pole!r}){exact}, 0.0, {own})"
            prop = "0.0"
            if x.e != "0.0":  # an exact argument propagates nothing (nor an infinite slope)
                prop = f"_sel({x.e} > 0.0, {SLOPE[fn].format(a=xh, v=v)} * {x.e}, 0.0)"
            arg = x.v if self.dd else f"float({x.v})"
            value = f"{target}({arg})"
            if self.dd and pole is not None:  # the pair functions poison their pole
                value = f"dsel(({xh} == {pole!r}){exact}, (-_INF, 0.0), {value})"
            err = self._err(prop, own)
            limit = OVERFLOW.get(fn)
            if limit is not None and not self.dd:  # exp(3000): an exact overflow
                err = f"_sel(({xh} - {x.e}) > {limit!r}, 0.0, {err})"
            return self._tmp(value, err)

        return call

    def f_abs(self, x: Any) -> Val:
        x = _n(x)
        return self._tmp(f"dabs({x.v})" if self.dd else f"abs({x.v})", x.e)

    def f_sign(self, x: Any) -> Val:
        x = _n(x)
        h = self._h(x)
        s = f"_sign({h})"  # numpy's sign: +0 for either zero
        err = "0.0" if x.e == "0.0" else f"(0.0 if (abs({h}) > {x.e}) else 2.0)"
        return self._tmp(self._lift(s) if self.dd else s, err)

    def f_minimum(self, a: Any, b: Any) -> Val:
        a, b = _n(a), _n(b)
        f = "dmin" if self.dd else "_minimum"
        return self._tmp(f"{f}({a.v}, {b.v})", f"max({a.e}, {b.e})")

    def f_maximum(self, a: Any, b: Any) -> Val:
        a, b = _n(a), _n(b)
        f = "dmax" if self.dd else "_maximum"
        return self._tmp(f"{f}({a.v}, {b.v})", f"max({a.e}, {b.e})")

    def _compare(self, op: str, a: Any, b: Any) -> Val:
        a, b = _n(a), _n(b)
        st = self.state
        if self.dd:
            f = {"<": "dlt({a}, {b})", "<=": "dle({a}, {b})", ">": "dlt({b}, {a})",
                 ">=": "dle({b}, {a})", "==": "deq({a}, {b})", "!=": "(not deq({a}, {b}))"}[op]  # fmt: skip
            text = f.format(a=a.v, b=b.v)
            st.lines.append(f"{st.q} = {st.q} | ({a.v}[1] != {a.v}[1]) | ({b.v}[1] != {b.v}[1])")
            diff = f"abs(dsub({a.v}, {b.v})[0])"
        else:
            text = f"({a.v} {op} {b.v})"
            diff = f"abs({a.v} - {b.v})"
        if a.e != "0.0" or b.e != "0.0":
            tol = self._err(a.e, b.e)
            st.lines.append(f"{st.q} = {st.q} | ({diff} <= {tol})")
        return self._tmp(text, "0.0", cond=True)

    def lt(self, a: Any, b: Any) -> Val:
        return self._compare("<", a, b)

    def le(self, a: Any, b: Any) -> Val:
        return self._compare("<=", a, b)

    def gt(self, a: Any, b: Any) -> Val:
        return self._compare(">", a, b)

    def ge(self, a: Any, b: Any) -> Val:
        return self._compare(">=", a, b)

    def eq(self, a: Any, b: Any) -> Val:
        return self._compare("==", a, b)

    def ne(self, a: Any, b: Any) -> Val:
        return self._compare("!=", a, b)

    def _logic(self, op: str, a: Any, b: Any) -> Any:
        if isinstance(a, bool) and isinstance(b, bool):
            return (a and b) if op == "and" else (a or b)
        sym = "&" if op == "and" else "|"
        return self._tmp(f"({_b(a)} {sym} {_b(b)})", "0.0", cond=True)

    def and_(self, a: Any, b: Any) -> Any:
        return self._logic("and", a, b)

    def or_(self, a: Any, b: Any) -> Any:
        return self._logic("or", a, b)

    def not_(self, x: Any) -> Any:
        if isinstance(x, bool):
            return not x
        return self._tmp(f"(not {_b(x)})", "0.0", cond=True)

    def where(self, cond: Any, a: Any, b: Any) -> Val:
        if isinstance(cond, bool):
            return a if cond else b
        c, a, b = _b(cond), _n(a), _n(b)
        return self._tmp(self._select(c, a.v, b.v), f"_sel({c}, {a.e}, {b.e})")

    def choose(self, cond: Any) -> bool | None:
        return cond if isinstance(cond, bool) else None

    def decide(self, cond: Any) -> bool | None:
        return cond if isinstance(cond, bool) else None

    def select(self, cond: Any, then: Callable[[], Any], other: Callable[[], Any]) -> list:
        c, yes, no = _b(cond), _n(then()), other()
        return [(c, yes), *(no if isinstance(no, list) else [(None, _n(no))])]

    def nothing(self) -> Val:
        return Val(self._lift("_NAN"))

    def result(self, value: Any) -> Any:
        if isinstance(value, bool) or (isinstance(value, Val) and value.cond):
            c = _b(value)
            return self._tmp(self._lift(f"(1.0 if {c} else 0.0)"), "0.0")
        return value

    def lacks(self, fn: str) -> Exception:
        return Unsupported(f"no row-kernel form for {fn}()")


_ = math  # the generated source imports math itself
