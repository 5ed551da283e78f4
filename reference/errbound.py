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

import contextlib
import math
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ..conformance.acl import dtypes as dt
from ..conformance.compiled.ranges import BIG as _BIG
from ..conformance.compiled.ranges import TINY as _TINY
from ..conformance.compiled.rowsum import row_exact
from ..conformance.spec.expr.ir import Reduce
from ..conformance.spec.expr.numpy_arith import (
    NUMPY,
    PairLayout,
    cut,
    paired_rows,
    uncut,
    uncut_rows,
)
from ..conformance.spec.expr.walk import Arithmetic, Env, Formula, Pairs, require
from ..conformance.spec.model import OpSpec
from .formula import evaluate_formula

U = 2.0**-53  # float64's unit roundoff
ETA = 5e-324  # the smallest subnormal: an operation whose result underflows is off by less
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
    used = {f for e in Formula.of(spec.formula).expressions() for f in e.functions}
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

    if isinstance(n, tuple):  # rows of a formula with reductions (reference/rows.py): whole
        ld = {
            k: v.astype(np.longdouble) if isinstance(v, np.ndarray) else v for k, v in env.items()
        }
        ld = {k: np.longdouble(v) if isinstance(v, float) else v for k, v in ld.items()}
        with np.errstate(all="ignore"):
            return evaluate_formula(spec, ld, n, np.longdouble).astype(np.float64)
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
    with np.errstate(all="ignore"):
        y, err, undecided = bounded(spec, env, n)
        shape = n if isinstance(n, tuple) else (n,)
        y = np.asarray(np.broadcast_to(y, shape), dtype=np.float64)
        err = np.broadcast_to(err, shape)
        gap = np.abs(y) - np.nextafter(np.abs(y), 0.0)  # the smaller gap, toward zero
        mask = np.isfinite(y) & ~(err * SAFETY < gap * 0.5)
        mask |= np.broadcast_to(undecided, shape) & np.isfinite(y)
    return y, mask


def bounded(spec: OpSpec, env: dict[str, Any], n: Any) -> tuple[Any, Any, Any]:
    """(value, error bound, undecided) of the formula over `n` elements, walked in BOUNDED."""
    pairs = as_pairs(env)
    BOUNDED.state.undecided = False
    y, e = Formula.of(spec.formula).evaluate(pairs, BOUNDED, n)
    return y, e, BOUNDED.state.undecided


def as_pairs(env: dict[str, Any]) -> dict[str, Any]:
    """An environment as BOUNDED reads it: each number or array an exact (value, 0) pair; strings
    and the walker's own entries (rows' shape, geometry) as they are."""
    return {k: v if isinstance(v, str | tuple | dict) else (v, 0.0) for k, v in env.items()}


def reaches(y: np.ndarray, err: Any, out_dtype: dt.DType, signed: bool = True) -> np.ndarray:
    """Mask of the finite y whose bound (SAFETY times) reaches a rounding boundary of the
    narrow output `out_dtype`: y - reach and y + reach round to different values (-0 and +0
    too where `signed`; else float64's zero keeps its sign, as the compiled flag_far does), so
    float64 alone does not decide the rounding. A rounding boundary is a midpoint, or the edge
    of the overflow to infinity; cancellation is where the bound grows past it."""
    with np.errstate(all="ignore"):
        reach = SAFETY * np.broadcast_to(err, y.shape)
        lo = dt.round_to(y - reach, out_dtype).astype(np.float64)
        hi = dt.round_to(y + reach, out_dtype).astype(np.float64)
        differ = lo != hi
        if signed:
            differ |= np.signbit(lo) != np.signbit(hi)
        differ &= reach != 0  # an exact value (-0.0 + 0 would be +0.0: a sign that is not open)
        # a bound of NaN (inf * 0 in the propagation) is no bound: refined
        differ |= np.isnan(reach)
    return differ & np.isfinite(y)


def exact_mask(spec: OpSpec, env: dict[str, Any], n: int) -> np.ndarray:
    """Mask of the elements whose float64 evaluation made no rounding error at all (every
    operation exact: float32 and narrower inputs often multiply, add and divide exactly): their
    float64 value is the exact value, so its rounding to the output needs no mpmath, tie or
    not. Library functions (exp, erf, ...) are never taken as exact."""
    with np.errstate(all="ignore"):
        y, err, undecided = bounded(spec, env, n)
        ok = np.broadcast_to(np.equal(err, 0.0), (n,)) & ~np.broadcast_to(undecided, (n,))
        return ok & np.isfinite(np.broadcast_to(y, (n,)))


def _p(x: Any) -> Pair:
    """A value as a (value, error) pair: a string comparison's bool is exact."""
    return x if isinstance(x, tuple) else (x, 0.0)


class ErrorBound(Arithmetic):
    """float64 values carrying a first-order bound on their absolute error, as an arithmetic of
    the walker: (value, error) pairs. Inputs and literals are exact; each operation adds its own
    rounding and propagates its operands' errors through its derivative. A comparison whose
    operands are closer than their error bounds marks its elements undecided (collected per
    thread in `state.undecided` during one walk)."""

    name = "float64 with error bound"

    def __init__(self) -> None:
        self.state = threading.local()

    def number(self, value: bool | int | float) -> Pair:
        return (value if isinstance(value, bool) else float(value)), 0.0

    def constant(self, name: str, value: float) -> Pair:
        return value, (abs(value) * U if name in ("pi", "e") else 0.0)

    def _compare(self, op: Any, a: Pair, b: Pair) -> Pair:
        (a, ea), (b, eb) = _p(a), _p(b)
        t = op(a, b)
        truth = t if isinstance(t, np.ndarray) else True & t
        reach = ea + eb
        if np.ndim(reach) == 0 and reach == 0:  # exact operands: decided
            return truth, 0.0
        und = (np.abs(a - b) <= reach) & (reach > 0)
        self.state.undecided = getattr(self.state, "undecided", False) | und
        return truth, 0.0

    def lt(self, a: Pair, b: Pair) -> Pair:
        return self._compare(np.less, a, b)

    def le(self, a: Pair, b: Pair) -> Pair:
        return self._compare(np.less_equal, a, b)

    def gt(self, a: Pair, b: Pair) -> Pair:
        return self._compare(np.greater, a, b)

    def ge(self, a: Pair, b: Pair) -> Pair:
        return self._compare(np.greater_equal, a, b)

    def eq(self, a: Pair, b: Pair) -> Pair:
        return self._compare(np.equal, a, b)

    def ne(self, a: Pair, b: Pair) -> Pair:
        return self._compare(np.not_equal, a, b)

    @staticmethod
    def and_(a: Pair, b: Pair) -> Pair:
        return np.logical_and(_p(a)[0], _p(b)[0]), 0.0

    @staticmethod
    def or_(a: Pair, b: Pair) -> Pair:
        return np.logical_or(_p(a)[0], _p(b)[0]), 0.0

    @staticmethod
    def not_(x: Pair) -> Pair:
        return np.logical_not(_p(x)[0]), 0.0

    @staticmethod
    def neg(x: Pair) -> Pair:
        return np.negative(x[0]), x[1]

    @staticmethod
    def add(a: Pair, b: Pair) -> Pair:
        (a, ea), (b, eb) = a, b
        v = np.add(a, b)
        return v, ea + eb + _sum_err(a, b, v)

    @staticmethod
    def sub(a: Pair, b: Pair) -> Pair:
        (a, ea), (b, eb) = a, b
        v = np.subtract(a, b)
        return v, ea + eb + _sum_err(a, np.negative(b), v)

    @staticmethod
    def mul(a: Pair, b: Pair) -> Pair:
        (a, ea), (b, eb) = a, b
        v = np.multiply(a, b)
        e = np.abs(a) * eb + np.abs(b) * ea + ea * eb + _prod_err(a, b, v)
        # a product by an exact zero is exactly zero, whatever the other factor's error (a
        # masked term: an ignored row's weight 0 times an inexact probability)
        zero = (np.equal(a, 0) & np.equal(ea, 0)) | (np.equal(b, 0) & np.equal(eb, 0))
        return v, np.where(zero, 0.0, _kept(e, ea, eb))

    @staticmethod
    def div(a: Pair, b: Pair) -> Pair:
        (a, ea), (b, eb) = a, b
        v = np.true_divide(a, b)
        den = np.abs(b) - eb
        e = np.where(den > 0, (ea + np.abs(v) * eb) / np.where(den > 0, den, 1.0), np.inf)
        p = np.multiply(v, b)
        resid = np.abs((np.subtract(a, p) - _prod_err(v, b, p, signed=True)) / b)
        ok = _safe(v) & _safe(b) & _safe(a) & _nonzero(v, a)
        own = np.where(ok, resid, np.abs(v) * U + ETA)
        # an infinite b (an overflow, its exact value beyond the range: OVERFLOW) leaves a
        # quotient below |a| / 2^1023 (a / (1 + exp(3000)) is -0, exactly tiny)
        over = np.where(np.isinf(b), (np.abs(a) + ea) * 2.0**-1022, 0.0)
        return v, _kept(e + own + over, ea, eb)

    @staticmethod
    def pow(a: Pair, b: Pair) -> Pair:
        (a, ea), (b, eb) = a, b
        v = np.power(a, b)
        la = np.log(np.abs(a))
        e = np.abs(v) * (np.abs(np.true_divide(b, a)) * ea + np.abs(la) * eb)
        exact = np.equal(ea, 0) & np.equal(eb, 0)  # x ** 2 of an input: one rounding
        e = np.where(exact, 0.0, e) + np.abs(v) * FUNC_ULPS * U + _underflow(v)
        return v, _kept(e, ea, eb)

    @staticmethod
    def choose(cond: Pair) -> bool | None:
        """One side for every element where the condition is one value (NumpyArithmetic's)."""
        c = _p(cond)[0]
        return bool(c) if np.ndim(c) == 0 else None

    @staticmethod
    def where(cond: Pair, a: Pair, b: Pair) -> Pair:
        c = _p(cond)[0]
        return np.where(c, a[0], b[0]), np.where(c, a[1], b[1])

    @staticmethod
    def f_minimum(a: Pair, b: Pair) -> Pair:
        return np.minimum(a[0], b[0]), np.maximum(a[1], b[1])

    @staticmethod
    def f_maximum(a: Pair, b: Pair) -> Pair:
        return np.maximum(a[0], b[0]), np.maximum(a[1], b[1])

    @staticmethod
    def f_abs(x: Pair) -> Pair:
        return np.abs(x[0]), x[1]

    @staticmethod
    def f_sign(x: Pair) -> Pair:  # exact unless the error bound reaches across zero
        a, ea = x
        return np.sign(a), np.where((np.abs(a) > ea) | (ea == 0), 0.0, 2.0)

    @staticmethod
    def f_conj(x: Pair) -> Pair:  # exact: the identity on real values
        return np.conj(x[0]), x[1]

    def decide(self, cond: Any) -> bool | None:
        return NUMPY.decide(_p(cond)[0])

    def select(self, cond: Any, then: Callable[[], Any], other: Callable[[], Any]) -> Any:
        c = _p(cond)[0]
        (v, ve), (o, oe) = then(), other()
        return np.where(c, v, o), np.where(c, ve, oe)

    def nothing(self) -> Any:
        return np.nan, 0.0

    def finish(self, value: Any, n: Any) -> Any:
        shape = n if isinstance(n, tuple) else (n,)
        return np.broadcast_to(value[0], shape), np.broadcast_to(value[1], shape)

    def context(self) -> contextlib.AbstractContextManager[Any]:
        return np.errstate(all="ignore")

    # reductions over rows (walk.py: Arithmetic.reduce): the value as the numpy arithmetic
    # computes it, the bound propagated (sum: its terms' errors plus 2 ulps of the row sum,
    # conformance/compiled/rowsum.py; amax/amin and logsumexp are 1-Lipschitz in the max norm)
    def rows_of(self, value: Any, rows: Any) -> Any:
        v, e = _p(value)
        return np.broadcast_to(v, rows), np.broadcast_to(e, rows)

    def segments(self, f: Callable[[Pair], Pair], value: Pair, stride: int, size: int) -> Pair:
        v, e = value
        rv, re = f((cut(v, stride, size), cut(np.broadcast_to(e, np.shape(v)), stride, size)))
        shape = np.shape(v)
        return uncut(rv, shape, stride, size), uncut(
            np.broadcast_to(re, np.shape(rv)), shape, stride, size
        )

    @staticmethod
    def r_sum(x: Pair) -> Pair:
        v = np.asarray(x[0], np.float64)
        s = NUMPY.r_sum(v)
        own = 0.0  # one term: exact
        if v.shape[-1] > 1:  # a row of terms on a common grid is summed exactly (a tie's row)
            own = np.where(exact_sum(v), 0.0, 2 * U * np.abs(s))
        return s, np.sum(x[1], axis=-1, keepdims=True) + own

    @classmethod
    def r_mean(cls, x: Pair) -> Pair:
        """The sum divided by the row's length as `div` divides: exact where it is (a mean over
        one element, or over a power of two)."""
        return cls.div(cls.r_sum(x), (float(np.shape(x[0])[-1]), 0.0))

    @staticmethod
    def r_amax(x: Pair) -> Pair:
        return NUMPY.r_amax(x[0]), np.max(x[1], axis=-1, keepdims=True, initial=0.0)

    @staticmethod
    def r_amin(x: Pair) -> Pair:
        return NUMPY.r_amin(x[0]), np.max(x[1], axis=-1, keepdims=True, initial=0.0)

    @staticmethod
    def r_prod(x: Pair) -> Pair:
        v, e = x
        p = NUMPY.r_prod(v)
        n = np.shape(v)[-1]
        rel = np.sum(np.where(e > 0, e / np.abs(v), 0.0), axis=-1, keepdims=True)
        return p, np.abs(p) * (rel + n * U)

    @staticmethod
    def r_logsumexp(x: Pair) -> Pair:
        v, e = x
        r = NUMPY.r_logsumexp(v)
        # one term: m + log(exp(0)) is the term itself (exp(0) and log(1) exact), no error of
        # its own (a cross entropy of one class: logProb exactly 0)
        own = 8 * U * (np.abs(r) + 1) if np.shape(v)[-1] > 1 else 0.0
        return r, np.max(e, axis=-1, keepdims=True, initial=0.0) + own

    @staticmethod
    def r_gather(x: Pair, index: Pair, *geometry: int) -> Pair:
        """The picked value and its own bound (a pick makes no rounding; the index is exact)."""
        v, e = x
        i = index[0]
        picked = NUMPY.r_gather(v, i, *geometry)
        if np.ndim(e) == 0 and e == 0:  # an exact argument: exact picks
            return picked, 0.0
        err = NUMPY.r_gather(np.broadcast_to(e, np.shape(v)), i, *geometry)
        return picked, np.where(np.isnan(err), 0.0, err)

    @staticmethod
    def r_cumsum(x: Pair, *geometry: int) -> Pair:
        """The prefix sums as numpy sums them (in order), each bound by its terms' bounds plus
        the roundings of the additions before it: an addition rounds by at most u |partial
        sum|, so the k-th prefix is off by at most u (|s_2| + ... + |s_k|); counted here from
        |s_1| and with 2u, for slack."""
        v = np.asarray(x[0], np.float64)
        s = NUMPY.r_cumsum(v, *geometry)
        e = NUMPY.r_cumsum(np.broadcast_to(np.asarray(x[1], np.float64), v.shape), *geometry)
        own = 2 * U * NUMPY.r_cumsum(np.abs(s), *geometry)
        if geometry:  # a prefix of terms on one grid is exact (a tie's prefix: exact_sum)
            stride, size = geometry
            exact = uncut_rows(exact_prefix(cut(v, stride, size)), v.shape, stride, size)
        else:
            exact = exact_prefix(v)
        return s, e + np.where(exact, 0.0, own)

    def paired(self, node: Reduce, x: Callable[[Env], Any], f: Callable[[Pair], Pair], env: Env,
               part: Any) -> Pair:  # fmt: skip
        """A paired reduction (its argument holds `outer`): numpy's pair rows, each value with
        its bound; a comparison left undecided anywhere in a pair row leaves that element's
        value undecided (`pair_reduced`)."""
        return paired_rows(self, node, x, f, env, part)

    @staticmethod
    def each(value: Any, fn: Callable[[Any], Any]) -> Pair:
        """`fn` of both parts of a (value, bound) pair (NumpyArithmetic.each); anything else
        (a string parameter's text) as it is."""
        if not isinstance(value, tuple):
            return value
        v, e = value
        return fn(v), fn(e)

    @staticmethod
    def r_outer(value: Pair, pairs: Pairs) -> Pair:
        """outer(x): x's value and bound at each pair row's element (exact: a pick)."""
        return pairs.take(value)

    def pair_reduced(self, f: Callable[[Pair], Pair], x: Callable[[Env], Any], env: Env,
                     shape: tuple[int, ...]) -> tuple[Any, Any, Any]:  # fmt: skip
        """One chunk of pair rows reduced (values and bounds, the pair rows' axis kept), with
        the undecided comparisons of each pair row folded into one flag for its element: the
        flags of the walk outside are kept aside meanwhile (their shapes differ) and the
        chunk's come back as a third part, for `joined`."""
        outside = getattr(self.state, "undecided", False)
        self.state.undecided = False
        try:
            v, e = f(self.rows_of(x(env), shape))
            und = np.broadcast_to(self.state.undecided, shape).any(axis=-1, keepdims=True)
        finally:
            self.state.undecided = outside
        return v, e, und

    def joined(self, parts: list[Any], layout: PairLayout) -> Pair:
        """The chunks' (value, bound, undecided) as one value and bound per element of the
        rows, (R, L); the undecided flags added to the walk's."""
        v = layout.assemble([(c, p[0]) for c, p in parts])
        e = layout.assemble([(c, np.broadcast_to(p[1], np.shape(p[0]))) for c, p in parts])
        und = layout.assemble([(c, p[2]) for c, p in parts]).astype(bool)
        self.state.undecided = getattr(self.state, "undecided", False) | und
        return v, e

    @staticmethod
    def r_position(*geometry: Any) -> Pair:
        """Each element's index along the dim: an exact integer, no error."""
        return NUMPY.r_position(*geometry), 0.0

    @staticmethod
    def r_any(x: Pair) -> Pair:
        return NUMPY.r_any(x[0]), 0.0

    @staticmethod
    def r_all(x: Pair) -> Pair:
        return NUMPY.r_all(x[0]), 0.0


def exact_sum(v: np.ndarray) -> np.ndarray:
    """Mask (rows, 1) of the rows of v (float64, last axis) whose exact sum float64 holds, and
    every partial sum in any order with it: their terms are multiples of one power of two 2^k
    (each term's lowest set bit; a zero is any multiple) and the sum of their magnitudes is
    below 2^(k + 53). Squares and sums of FLOAT16 / BF16 / FLOAT values often are: rounding
    such a sum needs no bound, a tie included. Compiled in one pass where row_sum is
    (rowsum.row_exact)."""
    fast = row_exact(v)
    if fast is not None:
        return fast[..., None]
    a, lsb, finite = _grid(v)
    k = lsb.min(axis=-1, keepdims=True)
    with np.errstate(all="ignore"):
        total = np.sum(a, axis=-1, keepdims=True) * (1.0 + 2 * a.shape[-1] * U)  # rounded up
        top = np.ldexp(1.0, np.minimum(k, 2000) + 53)
    return np.isfinite(total) & finite.all(axis=-1, keepdims=True) & (total < top)


def exact_prefix(v: np.ndarray) -> np.ndarray:
    """exact_sum for every prefix of each row (v's last axis; the mask has v's shape): the
    prefix's terms on one grid 2^k and the sum of their magnitudes below 2^(k + 53)."""
    a, lsb, finite = _grid(v)
    k = np.minimum.accumulate(lsb, axis=-1)
    with np.errstate(all="ignore"):
        total = np.cumsum(a, axis=-1) * (1.0 + 2 * a.shape[-1] * U)  # rounded up
        top = np.ldexp(1.0, np.minimum(k, 2000) + 53)
    return np.isfinite(total) & np.logical_and.accumulate(finite, axis=-1) & (total < top)


def _grid(v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(|v|, the position of each term's lowest set bit (a zero: far above any), finite)."""
    a = np.abs(np.asarray(v, np.float64))
    bits = a.view(np.int64)
    expo = bits >> 52
    sig = (bits & ((1 << 52) - 1)) | np.where(expo > 0, 1 << 52, 0)
    low = np.frexp((sig & -sig).astype(np.float64))[1] - 1  # the lowest set bit's position
    lsb = np.where(sig == 0, 1 << 20, low + np.maximum(expo, 1) - 1075)
    return a, lsb, expo < 2047


def _library(name: str) -> Callable[[Pair], Pair]:
    """A library function with its error: FUNC_ULPS ulps of its own (sqrt: correctly rounded)
    plus its operand's error times the function's slope."""
    fn, slope = NUMPY.function(name), _SLOPES[name]
    own = U if name == "sqrt" else FUNC_ULPS * U
    point, pole, limit = EXACT_AT.get(name), POLE.get(name), OVERFLOW.get(name)

    def call(x: Pair) -> Pair:
        a, ea = x
        v = fn(a)  # the numpy arithmetic's own function
        mine = np.abs(v) * own + _underflow(v)
        if point is not None:  # exp(0) is 1, log(1) is 0: no error of the function's own
            mine = np.where(np.equal(a, point), 0.0, mine)
        if pole is not None:  # log(0) is -inf exactly
            mine = np.where(np.equal(a, pole), 0.0, mine)
        # an exact argument propagates nothing (an infinite slope at a pole or at sqrt(0) too)
        prop = np.where(np.greater(ea, 0.0), np.abs(slope(a, v)) * ea, 0.0)
        e = _kept(prop + mine, ea, 0.0)
        if limit is not None:  # exp(3000): an exact overflow
            e = np.where(np.greater(np.subtract(a, ea), limit), 0.0, e)
        return v, e

    return call


_SPLIT = 134217729.0  # 2^27 + 1: Veltkamp's splitter for float64


def _safe(x: Any) -> Any:
    ax = np.abs(x)
    return np.isfinite(ax) & (ax < _BIG) & ((ax > _TINY) | (ax == 0))


def _nonzero(v: Any, a: Any) -> Any:
    """A result of 0 is exact only from an operand of 0 (else it underflowed)."""
    return np.not_equal(v, 0) | np.equal(a, 0)


def _kept(e: Any, ea: Any, eb: Any) -> Any:
    """A bound that was nonzero stays nonzero: scaled below the smallest subnormal (|a| eb for
    a tiny |a|), it would round to 0 and call an inexact element exact."""
    return np.where((np.greater(ea, 0) | np.greater(eb, 0)) & np.less(e, ETA), ETA, e)


def _underflow(v: Any) -> Any:
    """ETA where a result lies below the range where relative errors hold (0 included)."""
    return np.where(np.abs(v) < _TINY, ETA, 0.0)


def _split(a: Any) -> tuple[Any, Any]:
    c = _SPLIT * a
    hi = c - (c - a)
    return hi, a - hi


def _prod_err(a: Any, b: Any, p: Any, signed: bool = False) -> Any:
    """a * b - p exactly (Dekker), as |.| unless signed; a bound where the split is unsafe or
    the product underflowed."""
    ah, al = _split(a)
    bh, bl = _split(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    ok = _safe(a) & _safe(b) & _safe(p) & (_nonzero(p, a) | np.equal(b, 0))
    if signed:
        return np.where(ok, e, 0.0)
    return np.where(ok, np.abs(e), np.abs(p) * U + ETA)


def _sum_err(a: Any, b: Any, s: Any) -> Any:
    """|a + b - s| exactly (Knuth's TwoSum); a bound where a value is not finite."""
    bb = s - a
    e = np.abs((a - (s - bb)) + (b - bb))
    finite = np.isfinite(s)
    if np.all(finite):
        return e
    # an infinite sum with no operand of the other sign lies beyond the range as its exact
    # value does (1 + exp(3000)): IEEE's, as the compiled sum_err takes it; else no bound
    beyond = np.isinf(s) & (np.sign(a) != -np.sign(s)) & (np.sign(b) != -np.sign(s))
    return np.where(finite, e, np.where(beyond, 0.0, np.abs(s) * U))


# the argument where each function's value is exact (a library returns it exactly: exp(0) = 1)
# (not erfc: the compiled kernels' erfc(0) is 1 + 2^-52)
EXACT_AT = {"exp": 0.0, "expm1": 0.0, "log1p": 0.0, "log": 1.0, "tanh": 0.0, "erf": 0.0,
            "erfinv": 0.0}  # fmt: skip
# the argument where a function's value is exactly -inf (its pole): log(0), log1p(-1). An exact
# argument there gives an exact -inf, which a clamp (maximum(log(x), -100)) turns into an
# exact finite value; without it the bound is inf and every such row goes to mpmath.
POLE = {"log": 0.0, "log1p": -1.0}
# the argument beyond which an increasing function's value exceeds float64's range: an
# argument past it (its bound included) gives +inf, taken as an exact overflow (bound 0: the
# exact value lies beyond the range too), which a division turns into an exactly tiny value
OVERFLOW = {"exp": 709.782712893384, "expm1": 709.782712893384}

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

for _name in _SLOPES:
    setattr(ErrorBound, "f_" + _name, staticmethod(_library(_name)))
BOUNDED = require(ErrorBound())
