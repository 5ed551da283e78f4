"""Exactness pairs for a compiled test of "float64 computed this element without any rounding".

ddgen.py writes a formula once more over these functions (the names of ddmath.py's): each value
is a pair (v, flag) where v is the float64 result and flag is 0.0 when v is the exact value of
the formula so far, NaN when some operation rounded (or was not checked). An operation is exact
when its error term, computed exactly by an fma or by TwoSum, is zero, its operands are exact,
and nothing underflowed; library functions and pi, e are never exact. The NaN propagates like
ddmath's poison, a comparison of an inexact operand flags the element, and dresult turns the
pair into (v, not exact). It is errbound.exact_mask's question, answered by one vectorized pass:
a rational formula (x / 6 + 0.5) hits exact rounding ties on some percent of its
elements, and numpy's error-free transformations cost more than the rest of the evaluation.
"""

from __future__ import annotations

import math

from numba import njit

# the pair-generic operations are ddmath's own, re-exported for the generated kernels
from .ddmath import TINY, dabs, deq, dle, dlt, dmax, dmin, dneg, dresult, dsel
from .intrinsics import fma as _fma
from .intrinsics import select as _sel

_NAN = math.nan
PI = (math.pi, _NAN)
E = (math.e, _NAN)

__all__ = ["E", "PI", "dabs", "dadd", "ddiv", "deq", "derfc", "dexp", "dexpm1", "dle", "dlog1p",
           "dlt", "dmax", "dmin", "dmul", "dneg", "dresult", "dsel", "dsqrt", "dsub", "dtanh"]  # fmt: skip


@njit(inline="always")
def _flag(a, b, exact):  # pragma: no cover - compiled
    return _sel(exact, a[1] + b[1], _NAN)


@njit(inline="always")
def dadd(a, b):  # pragma: no cover - compiled
    s = a[0] + b[0]
    bb = s - a[0]
    e = (a[0] - (s - bb)) + (b[0] - bb)  # TwoSum: NaN where s is not finite
    return s, _flag(a, b, e == 0)


@njit(inline="always")
def dsub(a, b):  # pragma: no cover - compiled
    return dadd(a, dneg(b))


@njit(inline="always")
def dmul(a, b):  # pragma: no cover - compiled
    p = a[0] * b[0]
    e = _fma(a[0], b[0], -p)
    normal = (abs(p) > TINY) | ((a[0] == 0) | (b[0] == 0))  # no underflow hides an error
    return p, _flag(a, b, (e == 0) & normal)


@njit(inline="always")
def ddiv(a, b):  # pragma: no cover - compiled
    q = a[0] / b[0]
    r = _fma(-q, b[0], a[0])  # the remainder: zero iff the quotient is exact
    normal = (abs(q) > TINY) | (a[0] == 0)
    return q, _flag(a, b, (r == 0) & normal & (b[0] != 0))


@njit(inline="always")
def dsqrt(a):  # pragma: no cover - compiled
    s = math.sqrt(a[0])  # NaN below zero (the kernels use numpy's error model)
    r = _fma(-s, s, a[0])
    return s, _flag(a, (0.0, 0.0), (r == 0) & ((a[0] == 0) | (a[0] > TINY)))


@njit(inline="always")
def _never(a):  # pragma: no cover - compiled
    return a[0], _NAN  # a library function: never taken as exact (its value is not needed)


dexp = dexpm1 = derfc = dtanh = dlog1p = _never
