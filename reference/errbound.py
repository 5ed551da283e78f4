"""DOUBLE outputs at float64 speed, faithful: within 1 ulp of the exact value.

A DOUBLE output has no spare bits, so the float64 evaluation of a formula of several operations
is not always within 1 ulp of the exact value (the sound float64 forms of two of the seed-family
backward formulas are 2 ulp off on about 1 % of random inputs), and refining every element in
mpmath is exact but slow (about 6 k elements/s). Two ways instead:

- evaluate_extended: the formula in long double (x87's 64-bit mantissa: 11 more bits), rounded
  once. Used wherever numpy has every function of the formula in long double.
- faithful_mask, the fallback (erf-family formulas, or a platform whose long double is float64):
  float64 values carrying a first-order bound on their absolute error (running error analysis:
  inputs and literals exact, each operation adds its rounding, FUNC_ULPS ulps for a library
  function, and propagates its operands' errors through its derivative). Elements whose bound,
  times SAFETY, does not fit inside the gap to the neighbouring doubles, and those whose branch
  cannot be decided within the bounds, are refined in mpmath. The bound is conservative: for a
  formula of several operations it certifies few elements, so this path is correct but slow.
"""

from __future__ import annotations

import ast
import math
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ..conformance.compiled.ranges import BIG as _BIG
from ..conformance.compiled.ranges import TINY as _TINY
from ..conformance.spec.expr.language import CONSTANTS as _CONSTANTS
from ..conformance.spec.expr.numpy_arith import NUMPY
from ..conformance.spec.model import OpSpec
from .formula import evaluate_formula

U = 2.0**-53  # float64's unit roundoff
FUNC_ULPS = 4.0  # error of a library function (exp, erf, ...) in ulps of its result
SAFETY = 4.0  # the bound must be this many times below the half gap
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)

EXTENDED = np.finfo(np.longdouble).nmant >= 63  # x87 80-bit (x86) or binary128
# functions numpy evaluates in long double (scipy's erf family would round to float64)
LONG_DOUBLE_FUNCTIONS = frozenset(
    {"exp", "expm1", "log1p", "log", "tanh", "sqrt", "abs", "minimum", "maximum", "where"}
)

Pair = tuple[Any, Any]


def extended(spec: OpSpec) -> bool:
    """Whether spec's DOUBLE outputs are evaluated in long double here."""
    used = {
        f
        for x in (*spec.formula.lets, *spec.formula.branches)
        for e in ((x.value, x.when) if hasattr(x, "when") else (x.value,))
        if e is not None
        for f in e.functions
    }
    return EXTENDED and used <= LONG_DOUBLE_FUNCTIONS


def evaluate_extended(spec: OpSpec, env: dict[str, Any], n: int) -> np.ndarray:
    """The formula in long double (11 more bits than float64), rounded once to float64.

    Each operation adds at most a few long-double ulps; rounding the result to float64 adds
    half an ulp, so the result is within 1 ulp of the exact value unless the formula amplifies
    its rounding errors 1000-fold (a cancellation the specs' numerically sound forms avoid;
    tests/test_double_faithful.py measures every op against mpmath)."""

    def part(lo: int, hi: int) -> np.ndarray:
        ld = {
            k: (v[lo:hi] if v.ndim else v).astype(np.longdouble)
            if isinstance(v, np.ndarray)
            else np.longdouble(v)
            if isinstance(v, float)
            else v
            for k, v in env.items()
        }
        with np.errstate(all="ignore"):
            return evaluate_formula(spec, ld, hi - lo, np.longdouble).astype(np.float64)

    # long double has no SIMD and numpy releases the GIL in its loops: a thread per core
    threads = min(_CORES, n // PARALLEL_MIN)
    if threads <= 1:
        return part(0, n)
    bounds = [n * i // threads for i in range(threads + 1)]
    return np.concatenate(list(_pool().map(part, bounds[:-1], bounds[1:])))


PARALLEL_MIN = 1 << 14  # elements per thread, at least, for evaluate_extended to split a chunk
_CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
_POOL: dict[int, ThreadPoolExecutor] = {}


def _pool() -> ThreadPoolExecutor:
    """This process's pool (a forked worker inherits its parent's pool but not its threads)."""
    pid = os.getpid()
    if pid not in _POOL:
        _POOL.clear()
        _POOL[pid] = ThreadPoolExecutor(_CORES, thread_name_prefix="long-double")
    return _POOL[pid]


def faithful_mask(spec: OpSpec, env: dict[str, Any], n: int) -> tuple[np.ndarray, np.ndarray]:
    """(y, mask): the formula's float64 value over `n` elements and the elements whose value may
    be more than 1 ulp from the exact one (finite values only: IEEE specials stay float64's)."""
    ev = _Eval(spec, env)
    with np.errstate(all="ignore"):
        y, err, undecided = ev.formula(n)
        y = np.asarray(np.broadcast_to(y, (n,)), dtype=np.float64)
        err = np.broadcast_to(err, (n,))
        gap = np.abs(y) - np.nextafter(np.abs(y), 0.0)  # the smaller gap, toward zero
        mask = np.isfinite(y) & ~(err * SAFETY < gap * 0.5)
        mask |= np.broadcast_to(undecided, (n,)) & np.isfinite(y)
    return y, mask


class _Eval:
    def __init__(self, spec: OpSpec, env: dict[str, Any]):
        self.spec = spec
        self.lets = {x.name: x for x in spec.formula.lets}
        self.vals: dict[str, Pair] = {}
        for k, v in env.items():
            self.vals[k] = (v, 0.0)
        self.undecided: Any = False

    def formula(self, n: int) -> tuple[Any, Any, Any]:
        base: Pair | None = None
        pending = []
        for br in self.spec.formula.branches:
            if br.when is None:
                base = self.expr(br.value._tree)
                break
            cond, und = self.cond(br.when._tree)
            self.undecided = self.undecided | und
            if np.ndim(cond) == 0:
                if bool(cond):
                    base = self.expr(br.value._tree)
                    break
                continue
            if np.all(cond):
                base = self.expr(br.value._tree)
                break
            if np.any(cond):
                pending.append((cond, br))
        y, e = base if base is not None else (np.nan, 0.0)
        y, e = np.broadcast_to(y, (n,)), np.broadcast_to(e, (n,))
        for cond, br in reversed(pending):
            v, ve = self.expr(br.value._tree)
            y, e = np.where(cond, v, y), np.where(cond, ve, e)
        return y, e, self.undecided

    def name(self, name: str) -> Pair:
        if name not in self.vals:
            self.vals[name] = self.expr(self.lets[name].value._tree)
        return self.vals[name]

    def cond(self, node: ast.AST) -> tuple[Any, Any]:
        """(truth value, undecided: a compared pair closer than its error bounds)."""
        if isinstance(node, ast.Compare):
            left = self.expr(node.left)
            if isinstance(left[0], str):
                return self._string(node, left[0]), False
            truth: Any = True
            und: Any = False
            for op, comp in zip(node.ops, node.comparators, strict=True):
                right = self.expr(comp)
                truth = truth & _COMPARE[type(op)](left[0], right[0])
                und = und | (
                    (np.abs(left[0] - right[0]) <= left[1] + right[1]) & (left[1] + right[1] > 0)
                )
                left = right
            return truth, und
        if isinstance(node, ast.BoolOp):
            parts = [self.cond(v) for v in node.values]
            op = np.logical_and if isinstance(node.op, ast.And) else np.logical_or
            truth, und = parts[0]
            for t, u in parts[1:]:
                truth, und = op(truth, t), und | u
            return truth, und
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            t, u = self.cond(node.operand)
            return np.logical_not(t), u
        v, e = self.expr(node)
        return v, False

    def _string(self, node: ast.Compare, value: str) -> bool:
        op, comp = node.ops[0], node.comparators[0]
        if isinstance(op, ast.Eq | ast.NotEq):
            return (value == comp.value) == isinstance(op, ast.Eq)  # type: ignore[attr-defined]
        return (value in {e.value for e in comp.elts}) == isinstance(op, ast.In)  # type: ignore[attr-defined]

    def expr(self, node: ast.AST) -> Pair:
        if isinstance(node, ast.Constant):
            return (float(node.value) if not isinstance(node.value, bool) else node.value), 0.0
        if isinstance(node, ast.Name):
            if node.id in _CONSTANTS:
                c = _CONSTANTS[node.id]
                return c, (abs(c) * U if node.id in ("pi", "e") else 0.0)
            return self.name(node.id)
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.Not):
                t, u = self.cond(node.operand)
                self.undecided = self.undecided | u
                return np.logical_not(t), 0.0
            v, e = self.expr(node.operand)
            return (np.negative(v) if isinstance(node.op, ast.USub) else v), e
        if isinstance(node, ast.Compare | ast.BoolOp):
            t, u = self.cond(node)
            self.undecided = self.undecided | u
            return t, 0.0
        if isinstance(node, ast.BinOp):
            return self._binop(node)
        if isinstance(node, ast.Call):
            return self._call(node)
        raise ValueError(f"no error bound for {type(node).__name__}")

    def _binop(self, node: ast.BinOp) -> Pair:
        (a, ea), (b, eb) = self.expr(node.left), self.expr(node.right)
        op = type(node.op)
        if op is ast.Add or op is ast.Sub:
            v = np.add(a, b) if op is ast.Add else np.subtract(a, b)
            own = _sum_err(a, b if op is ast.Add else np.negative(b), v)
            return v, ea + eb + own
        if op is ast.Mult:
            v = np.multiply(a, b)
            return v, np.abs(a) * eb + np.abs(b) * ea + ea * eb + _prod_err(a, b, v)
        if op is ast.Div:
            v = np.true_divide(a, b)
            den = np.abs(b) - eb
            e = np.where(den > 0, (ea + np.abs(v) * eb) / np.where(den > 0, den, 1.0), np.inf)
            p = np.multiply(v, b)
            resid = np.abs((np.subtract(a, p) - _prod_err(v, b, p, signed=True)) / b)
            own = np.where(_safe(v) & _safe(b) & _safe(a), resid, np.abs(v) * U)
            return v, e + own
        v = np.power(a, b)  # Pow
        la = np.log(np.abs(a))
        e = np.abs(v) * (np.abs(np.true_divide(b, a)) * ea + np.abs(la) * eb)
        exact = np.equal(ea, 0) & np.equal(eb, 0)  # x ** 2 of an input: one rounding
        return v, np.where(exact, 0.0, e) + np.abs(v) * FUNC_ULPS * U

    def _call(self, node: ast.Call) -> Pair:
        name = node.func.id  # type: ignore[attr-defined]
        if name == "where":
            c, und = self.cond(node.args[0])
            self.undecided = self.undecided | und
            (a, ea), (b, eb) = self.expr(node.args[1]), self.expr(node.args[2])
            return np.where(c, a, b), np.where(c, ea, eb)
        if name in ("minimum", "maximum"):
            (a, ea), (b, eb) = self.expr(node.args[0]), self.expr(node.args[1])
            return getattr(np, name)(a, b), np.maximum(ea, eb)
        a, ea = self.expr(node.args[0])
        if name == "abs":
            return np.abs(a), ea
        if name == "conj":  # exact: the identity on real values
            return np.conj(a), ea
        v = NUMPY.function(name)(a)  # the numpy arithmetic's own function
        slope = _SLOPES[name]
        own = U if name == "sqrt" else FUNC_ULPS * U
        return v, np.abs(slope(a, v)) * ea + np.abs(v) * own


def exact_mask(spec: OpSpec, env: dict[str, Any], n: int) -> np.ndarray:
    """Mask of the elements whose float64 evaluation made no rounding error at all (every
    operation exact: float32 and narrower inputs often multiply, add and divide exactly): their
    float64 value is the exact value, so its rounding to the output needs no mpmath, tie or
    not. Library functions (exp, erf, ...) are never taken as exact."""
    ev = _Eval(spec, env)
    with np.errstate(all="ignore"):
        y, err, undecided = ev.formula(n)
        ok = np.broadcast_to(np.equal(err, 0.0), (n,)) & ~np.broadcast_to(undecided, (n,))
        return ok & np.isfinite(np.broadcast_to(y, (n,)))


_SPLIT = 134217729.0  # 2^27 + 1: Veltkamp's splitter for float64


def _safe(x: Any) -> Any:
    ax = np.abs(x)
    return np.isfinite(ax) & (ax < _BIG) & ((ax > _TINY) | (ax == 0))


def _split(a: Any) -> tuple[Any, Any]:
    c = _SPLIT * a
    hi = c - (c - a)
    return hi, a - hi


def _prod_err(a: Any, b: Any, p: Any, signed: bool = False) -> Any:
    """a * b - p exactly (Dekker), as |.| unless signed; a bound where the split is unsafe."""
    ah, al = _split(a)
    bh, bl = _split(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    ok = _safe(a) & _safe(b) & _safe(p)
    if signed:
        return np.where(ok, e, 0.0)
    return np.where(ok, np.abs(e), np.abs(p) * U)


def _sum_err(a: Any, b: Any, s: Any) -> Any:
    """|a + b - s| exactly (Knuth's TwoSum); a bound where a value is not finite."""
    bb = s - a
    e = np.abs((a - (s - bb)) + (b - bb))
    return np.where(np.isfinite(s), e, np.abs(s) * U)


_COMPARE = {ast.Lt: np.less, ast.LtE: np.less_equal, ast.Gt: np.greater,
            ast.GtE: np.greater_equal, ast.Eq: np.equal, ast.NotEq: np.not_equal}  # fmt: skip
# |derivative| of each function as a function of (argument, value)
_SLOPES = {
    "exp": lambda a, v: v,
    "expm1": lambda a, v: v + 1.0,
    "log": lambda a, v: 1.0 / a,
    "log1p": lambda a, v: 1.0 / (1.0 + a),
    "erf": lambda a, v: _TWO_OVER_SQRT_PI * np.exp(-a * a),
    "erfc": lambda a, v: _TWO_OVER_SQRT_PI * np.exp(-a * a),
    "erfinv": lambda a, v: 0.5 * math.sqrt(math.pi) * np.exp(v * v),
    "tanh": lambda a, v: 1.0 - v * v,
    "sqrt": lambda a, v: 0.5 / v,
}
