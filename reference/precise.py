"""Correct rounding of the formula's result: float64 first, mpmath where float64 cannot decide.

Evaluating in float64 and rounding once to the output dtype is right for almost every element,
but not all: float64 carries its own rounding error, so a result lying within that error of a
midpoint between two output values can round the wrong way (a tie broken by a term float64
dropped). So, like TOSA's precise mode, each element whose float64 value lies within GUARD
output-ulps of a rounding midpoint is evaluated again in mpmath at 128 bits and rounded from
there; so is each element with a 64-bit integer input beyond 2^53 (float64 cannot hold it).
A DOUBLE output has no spare bits at all: by default it is faithful (errbound.py refines only the
elements whose float64 error bound reaches past the neighbouring values); in exact mode every
finite element is refined and correctly rounded.

A formula of + - * / alone (g (x/3 + 1/2), say) is refined in exact
rationals instead: its exact value can be a rounding tie that no binary evaluation shows (x/3
is never exact in binary, g (x/3 + 1/2) is whenever 3 divides g's significand times 2x + 3),
and mpmath's value beside the tie rounded the wrong way (0.6 % of random bf16 elements).

Only finite results of finite inputs are refined: NaN and infinities keep float64's IEEE
semantics (inf * 0 = NaN), which is what every float implementation of these formulas does.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import mpmath
import numpy as np
from mpmath.libmp import round_down, to_float

from ..conformance.acl import dtypes as dt
from ..conformance.spec.expr import ir
from ..conformance.spec.expr.mpeval import MpArithmetic, ScalarOperators, mp_arithmetic
from ..conformance.spec.expr.walk import Arithmetic, Formula, missing
from ..conformance.spec.model import OpSpec

GUARD = 2.0**-20  # in units of the output dtype's ulp
PRECISION = 128  # bits of the first mpmath evaluation
MAX_PRECISION = 4096  # enough for any term of a float64 input (2**-1074 next to 1)
# an exact tie of two successive precisions goes on to this precision before it is taken (a
# term of 2^-500 relative shows there: erfc(-17) = 2 - 2^-419); further, mpmath's erf of an
# argument of 20-30 costs 10-35 ms an element (the vendor's gated-GELU cases hold hundreds)
TIE_PRECISION = 512


def narrow_format(out_dtype: str) -> dt.FloatFormat | None:
    """The format of a float output float64 rounds correctly (FLOAT, FLOAT16, BF16), else None."""
    return dt.float_format(out_dtype) if out_dtype in dt.NARROW_FLOATS else None


def needs_all(scalars: dict[str, Any], out_dtype: str, exact: bool) -> bool:
    """True when every finite element is refined: a DOUBLE output in exact mode, or a 64-bit
    integer scalar float64 cannot hold (DOUBLE values, tensors or scalars, float64 holds
    exactly; 64-bit integer tensor elements beyond 2^53 are refined one by one)."""
    if out_dtype == "DOUBLE" and exact:
        return True
    return any(isinstance(v, int | np.integer) and abs(int(v)) > 2**53 for v in scalars.values())


def near_midpoint(y: np.ndarray, out_dtype: str) -> np.ndarray:
    """Mask of finite y within GUARD ulps of a round-to-nearest midpoint of `out_dtype`.

    Where y is a normal number of the output format, the test is on float64's bits: the
    53 - p fraction bits the output drops are, as an integer, within GUARD * 2**(53 - p) of
    their half-way value. The output's subnormal range keeps the arithmetic test."""
    fmt = narrow_format(out_dtype)
    if fmt is None:
        return np.zeros(y.shape, dtype=bool)
    p, emin = fmt.p, fmt.emin
    drop = 53 - p
    bits = np.abs(np.asarray(y, dtype=np.float64)).view(np.int64)
    low = bits & ((1 << drop) - 1)
    low -= 1 << (drop - 1)
    np.abs(low, out=low)
    expo = bits >> 52
    mask = (low < int(GUARD * 2**drop)) & (expo >= emin + 1023) & (expo < 2047)
    sub = np.flatnonzero((expo < emin + 1023) & (bits != 0))
    if sub.size:
        mask.reshape(-1)[sub] = _near_midpoint_float(np.asarray(y).reshape(-1)[sub], p, emin)
    return mask


def _near_midpoint_float(y: np.ndarray, p: int, emin: int) -> np.ndarray:
    """The arithmetic form of near_midpoint (any range; used below the output's normals)."""
    finite = np.isfinite(y)
    a = np.where(finite, np.abs(y), 0.0)
    _, e = np.frexp(a)  # a = f * 2**e with f in [0.5, 1)
    e = np.maximum(e - 1, emin)
    ulp = np.ldexp(1.0, e - p + 1)
    q = a / ulp
    dist = np.abs(q - (np.floor(q) + 0.5))
    return finite & (a > 0) & (dist < GUARD)


def next_precision(bits: int, now: float, last: float | None, out_dtype: str) -> int | None:
    """The precision of a refinement's next evaluation, or None where `now` (the value rounded
    at `bits`) settles it: it rounds as the previous evaluation did (`last`) and is neither an
    exact tie of the output nor zero below TIE_PRECISION, or bits reached MAX_PRECISION. A zero
    may be a cancellation whose term fell below the precision as a tie's perturbation does: a
    log-normalisation's x - (m + log(1 + e^-186)) at its row's maximum is 0 at 128 and 256
    bits and -1.07e-81 at 512."""
    if bits >= MAX_PRECISION:
        return None
    if now == last:
        if not (is_tie(now, out_dtype) or now == 0) or bits >= TIE_PRECISION:
            return None
        return min(bits * 2, TIE_PRECISION)
    return bits * 2


def is_tie(v: float, out_dtype: str) -> bool:
    """Whether float64 v lies exactly half-way between two values of the narrow `out_dtype`.
    An mpmath value there may be one whose perturbation fell below the working precision
    (x - m - log(1 + e^-800) at 128 bits is x - m): the refinement does not stop on it before
    TIE_PRECISION."""
    fmt = narrow_format(out_dtype)
    if fmt is None or not math.isfinite(v) or v == 0:
        return False
    e = max(math.frexp(abs(v))[1] - 1, fmt.emin)
    q = abs(v) / math.ldexp(1.0, e - fmt.p + 1)  # exact: a power of two
    return q - math.floor(q) == 0.5


def _odd(x: Any) -> float:
    """mpf -> float64 rounded to odd: exact for one more correct rounding to a narrower float."""
    t = to_float(x._mpf_, rnd=round_down)
    return _sticky(t) if mpmath.mpf(t) != x and np.isfinite(t) else t


round_to_odd = _odd  # the public name (reference/rows.py refines rows)


def _sticky(t: float) -> float:
    """t (truncated toward zero) with its last bit set: the round-to-odd of an inexact value."""
    bits = np.array([t]).view(np.int64)
    bits |= 1
    return float(bits.view(np.float64)[0])


def _formula_at(spec: OpSpec, e: dict[str, Any], m: Any) -> Any:
    """The formula's value at one element bound in e, with the library m (None: no branch)."""
    return Formula.of(spec.formula).evaluate(e, mp_arithmetic(m))


def _value_at(spec: OpSpec, attrs: dict[str, Any], inputs: dict[str, Any], bits: int) -> Any:
    """The formula at one element, evaluated with `bits` of precision (None if not finite)."""
    m = mpmath.mp
    with mpmath.workprec(bits):
        e = {k: (m.mpf(v) if isinstance(v, float) else v) for k, v in attrs.items()}
        for name, v in inputs.items():
            e[name] = m.mpf(int(v)) if isinstance(v, np.integer | int) else m.mpf(float(v))
        if not all(m.isfinite(v) for v in e.values() if isinstance(v, mpmath.mpf)):
            return None
        value = _formula_at(spec, e, m)
        if value is None:
            return None
        value = m.mpf(value)
        return value if m.isfinite(value) else None


class RationalArithmetic(ScalarOperators, Arithmetic):
    """Exact rationals (Fraction) as an arithmetic of the walker: for formulas of + - * / alone,
    one exact evaluation replaces mpmath's two or more at growing precision. A division by zero
    gives a float NaN or infinity (as the mpmath arithmetic does), which leaves the Fraction type,
    and the element goes to mpmath; so does a power (never taken as rational)."""

    name = "rational"

    f_sign = staticmethod(MpArithmetic.f_sign)
    not_ = staticmethod(MpArithmetic.not_)
    and_ = staticmethod(MpArithmetic.and_)
    or_ = staticmethod(MpArithmetic.or_)
    choose = staticmethod(MpArithmetic.choose)
    f_minimum = staticmethod(MpArithmetic.f_minimum)
    f_maximum = staticmethod(MpArithmetic.f_maximum)

    def number(self, value: bool | int | float) -> Any:
        return value if isinstance(value, bool) else Fraction(value)

    @staticmethod
    def div(a: Any, b: Any) -> Any:
        if b == 0:
            if a != a or a == 0:
                return math.nan
            return -math.inf if a < 0 else math.inf
        return a / b

    @staticmethod
    def pow(a: Any, b: Any) -> Any:
        raise _NotRational("pow")


class _NotRational(Exception):
    pass


RATIONAL = RationalArithmetic()


def rational(spec: OpSpec) -> bool:
    """Whether every expression of spec's formula is rational: + - * /, comparisons, where,
    abs, sign, minimum and maximum over its inputs and literals (no power, function or pi/e): the
    functions RationalArithmetic has."""
    for e in Formula.of(spec.formula).expressions():
        if missing(RATIONAL, e.functions - {"where"}):
            return False
        for node in ir.walk(e.ir):
            if isinstance(node, ir.Binary) and node.op == "pow":
                return False
            if isinstance(node, ir.Const) and node.name in ("pi", "e"):
                return False
    return True


def _value_rational(spec: OpSpec, attrs: dict[str, Any], inputs: dict[str, Any]) -> Any:
    """The formula at one element in exact rationals (None if not finite or not rational)."""
    e = {
        k: (Fraction(v) if isinstance(v, float) and math.isfinite(v) else v)
        for k, v in attrs.items()
    }
    for name, v in inputs.items():
        v = int(v) if isinstance(v, np.integer | int) else float(v)
        if isinstance(v, float) and not math.isfinite(v):
            return None
        e[name] = Fraction(v)
    try:
        value = Formula.of(spec.formula).evaluate(e, RATIONAL)
    except (_NotRational, TypeError):
        return None
    return value if isinstance(value, Fraction) else None


def _from_fraction(v: Fraction, out_dtype: str) -> float | None:
    """v as float64: nearest for DOUBLE, else rounded to odd (see _odd); None past float64."""
    try:
        t = float(v)
    except OverflowError:
        return None
    if out_dtype == "DOUBLE" or Fraction(t) == v or not math.isfinite(t):
        return t if math.isfinite(t) else None
    if abs(Fraction(t)) > abs(v):  # round toward zero first
        t = math.nextafter(t, 0.0)
    return _sticky(t)


def refine(
    spec: OpSpec,
    env: dict[str, Any],
    y: np.ndarray,
    idx: np.ndarray,
    exact_inputs: dict[str, np.ndarray],
    out_dtype: str,
    deadline: Callable[[], None] | None = None,
) -> np.ndarray:
    """y with the elements idx recomputed in mpmath (as float64: nearest for DOUBLE, else
    rounded to odd so that the final rounding to the output dtype is correct); exact_inputs
    holds those elements' inputs only, in idx's order. y is updated in place where it owns
    its memory (a chunk's own values: no copy of a whole chunk for a handful of elements).

    The precision doubles from PRECISION until two successive evaluations round alike and
    are not an exact tie of the output (next_precision): a term far below 128 bits (x - m -
    log(1 + e^-800)) is lost at both of two low precisions alike, so a tie goes on to
    TIE_PRECISION, where such a term shows; an exact tie stays a tie and is then broken to
    even by the final rounding, as it should be (and so is one whose perturbation lies below
    about 2^-500 relative: erfc(-30) = 2 - 2^-1300, a log-sum-exp's terms below e^-700 that
    the double-double tier drops: not certified)."""
    if idx.size == 0:
        return y
    if not (y.flags.writeable and y.flags.owndata):
        y = y.copy()
    attrs = attributes_of(spec, env)
    convert = float if out_dtype == "DOUBLE" else _odd
    exact = rational(spec)
    if not exact and not all(math.isfinite(v) for v in attrs.values() if isinstance(v, float)):
        return y  # mpmath gives no element a value (_value_at): a beta of inf, say
    first, inverse = unique_elements(exact_inputs, idx.size)
    values = np.full(first.size, np.nan)
    for j, k in enumerate(first):
        if deadline is not None and j % 64 == 63:
            deadline()
        inputs = {name: arr[k] for name, arr in exact_inputs.items()}
        t = _refined(spec, attrs, inputs, out_dtype, convert, exact)
        if t is not None:
            values[j] = t
    now = values[inverse]
    old = y[idx]
    # keep float64's value where mpmath gives none, and its zero (mpmath has no sign of zero)
    keep = np.isnan(now) | ((now == 0) & (old == 0))
    y[idx] = np.where(keep, old, now)
    return y


UNIQUE_MIN = 64  # flagged elements from which repeats are looked for


def unique_elements(exact_inputs: dict[str, np.ndarray], n: int) -> tuple[np.ndarray, np.ndarray]:
    """(first, inverse): the position of the first of each distinct tuple of inputs among n
    elements, and each element's tuple number -- one evaluation serves every repeat (a vendor
    case fills 1.7 M elements with one value). Tuples compare by their bits (64-bit values)."""
    if not exact_inputs or n < 2:
        return np.zeros(min(n, 1), np.intp), np.zeros(n, np.intp)
    if n < UNIQUE_MIN:  # a handful: each its own (np.unique's sort costs more than it saves)
        return np.arange(n), np.arange(n)
    keys = np.stack(
        [
            np.ascontiguousarray(a if a.itemsize == 8 else a.astype(np.float64)).view(np.uint64)
            for a in exact_inputs.values()
        ],
        axis=1,
    )
    _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    return first, inverse.reshape(-1)


def _refined(
    spec: OpSpec,
    attrs: dict[str, Any],
    inputs: dict[str, Any],
    out_dtype: str,
    convert: Callable[[Any], float],
    exact: bool,
) -> float | None:
    """One element's refined float64 (None: the formula has no finite value there)."""
    if exact:
        v = _value_rational(spec, attrs, inputs)
        t = None if v is None else _from_fraction(v, out_dtype)
        if t is not None:
            return t
    bits: int | None = PRECISION
    last = None
    while bits is not None:
        value = _value_at(spec, attrs, inputs, bits)
        if value is None:
            return None
        now = 0.0 if value == 0 else convert(value)
        bits, last = next_precision(bits, now, last, out_dtype), now
    return now


def beyond_float64(exact_inputs: dict[str, np.ndarray], n: int) -> np.ndarray:
    """Mask of the elements with a 64-bit integer input float64 cannot hold (|v| > 2^53)."""
    mask = np.zeros(n, dtype=bool)
    for arr in exact_inputs.values():
        if arr.dtype.kind in "iu" and arr.dtype.itemsize == 8:
            with np.errstate(over="ignore"):
                mask |= (arr > 2**53) | ((arr < -(2**53)) if arr.dtype.kind == "i" else False)
    return mask


def refine_integers(
    spec: OpSpec,
    env: dict[str, Any],
    out: np.ndarray,
    mask: np.ndarray,
    exact_inputs: dict[str, np.ndarray],
) -> None:
    """Store into the integer output `out` the masked elements computed exactly in mpmath
    (truncated toward zero, as the float64 path's conversion does): a 64-bit integer input
    beyond 2^53 would lose its low bits in float64."""
    attrs = attributes_of(spec, env)
    info = np.iinfo(out.dtype)
    for i in np.flatnonzero(mask):
        value = _value_at(spec, attrs, {k: a[i] for k, a in exact_inputs.items()}, PRECISION)
        if value is not None:
            out[i] = min(max(int(value), int(info.min)), int(info.max))


def is_float_output(out_dtype: str) -> bool:
    return out_dtype in dt.NARROW_FLOATS or out_dtype == "DOUBLE"


def exact_values(arr: np.ndarray, dtype: str) -> np.ndarray:
    """Input elements as exact Python-convertible values (64-bit integers stay integers)."""
    if dt.get(dtype).category == "int" and arr.dtype.itemsize == 8:
        return arr
    return arr.astype(np.float64)


def attributes_of(spec: OpSpec, env: dict[str, Any]) -> dict[str, Any]:
    """The attributes of `env` a formula reads besides its tensors: every non-tensor parameter
    and each tensor's numel(x) (its own element count)."""
    out = {p.name: env[p.name] for p in spec.attributes}
    out.update(
        {k: v for k, v in env.items() if isinstance(k, str) and k.startswith(("numel(", "size("))}
    )
    return out
