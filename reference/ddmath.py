"""Double-double arithmetic the compiled DOUBLE kernels inline: (hi, lo) pairs, branch-free.

A DOUBLE output must be within 1 ulp of the exact value (errbound.py); float64 alone is not, and
long double (numpy, one pass per operation, x87 without SIMD) is slow. A pair hi + lo carries
about 106 bits: + - * / and sqrt here are within a few 2^-104 of their operands' exact result,
exp within 2^-64 relative (a 32-entry table of 2^(j/32) as pairs, a degree-7 polynomial on
|r| <= ln2/64, the scale 2^m in the exponent bits) and expm1 within 2^-58: far more than the 11 extra bits of long
double, so a formula's pair, rounded once to float64, is faithful wherever long double's is.

The splitting of products (Veltkamp, Dekker) is exact only inside a range, exp only for a
normal result: an operation outside it makes its lo a NaN (poison), which every later
operation carries, and the kernel sends the element to long double instead. So do non-finite
values and results below 2^-969. IEEE specials therefore never take this path.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
from numba import njit, types
from numba.extending import intrinsic

from reference.vecmath import _bits, _double

_SPLIT = 134217729.0  # 2^27 + 1
BIG = 2.0**995  # beyond it a split overflows
TINY = 2.0**-969  # below it a product's error term may underflow
_NAN = math.nan


def _pair(v) -> tuple[float, float]:
    hi = float(v)
    return hi, float(v - mpmath.mpf(hi))


def _tables() -> tuple[np.ndarray, np.ndarray, tuple[float, float, float]]:
    with mpmath.workprec(300):
        table = [_pair(mpmath.power(2, mpmath.mpf(j) / 32)) for j in range(32)]
        step = mpmath.log(2) / 32
        c1 = float(mpmath.mpf(int(step * 2**32)) / 2**32)  # 32 bits: k * c1 exact for |k| < 2^21
        c2 = float(step - c1)
        c3 = float(step - c1 - mpmath.mpf(c2))
    return (np.array([t[0] for t in table]), np.array([t[1] for t in table]), (c1, c2, c3))


_T_HI, _T_LO, (_C1, _C2, _C3) = _tables()
_INV_STEP = 32 / math.log(2)
_SHIFT = 6755399441055744.0  # 1.5 * 2^52: x + _SHIFT rounds x to an integer in the low bits
_SHIFT_BITS = 0x4338000000000000
# Taylor coefficients, highest first: e^r - 1 - r = r^2 (1/2 + r/6 + ... + r^5/7!)
_EXP_POLY = tuple(1.0 / math.factorial(n) for n in range(7, 1, -1))
# expm1(x) - x - x^2/2 = x^3 (1/6 + x/24 + ... + x^8/11!)
_EXPM1_POLY = tuple(1.0 / math.factorial(n) for n in range(11, 2, -1))
PI = _pair(mpmath.pi)
E = _pair(mpmath.e)


@intrinsic
def _sel(typingctx, c, a, b):  # pragma: no cover - compiled
    """c ? a : b as LLVM's select: numba's conditional expression is a branch, which stops the
    loop vectorizer once a branch is as long as exp."""

    def codegen(context, builder, signature, args):
        cond = context.cast(builder, args[0], signature.args[0], types.boolean)
        return builder.select(cond, args[1], args[2])

    return types.float64(types.boolean, types.float64, types.float64), codegen


@njit(inline="always")
def two_sum(a, b):  # pragma: no cover - compiled
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


@njit(inline="always")
def fast_two_sum(a, b):  # pragma: no cover - compiled
    s = a + b
    return s, b - (s - a)


@njit(inline="always")
def _renorm(s, e):  # pragma: no cover - compiled
    """fast_two_sum, keeping the IEEE sign of a zero sum s (-0 + 0 would give +0)."""
    hi, lo = fast_two_sum(s, e)
    return _sel(hi != 0, hi, s), lo


@njit(inline="always")
def _split(a):  # pragma: no cover - compiled
    c = _SPLIT * a
    hi = c - (c - a)
    return hi, a - hi


@njit(inline="always")
def two_prod(a, b):  # pragma: no cover - compiled
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


@njit(inline="always")
def _poison(lo, ok):  # pragma: no cover - compiled
    return _sel(ok, lo, _NAN)


@njit(inline="always")
def dadd(a, b):  # pragma: no cover - compiled
    s, e = two_sum(a[0], b[0])
    t, f = two_sum(a[1], b[1])
    s2, e = fast_two_sum(s, e + t)
    hi, lo = fast_two_sum(s2, e + f)
    return _sel(hi != 0, hi, s), lo


@njit(inline="always")
def dneg(a):  # pragma: no cover - compiled
    return -a[0], -a[1]


@njit(inline="always")
def dsub(a, b):  # pragma: no cover - compiled
    return dadd(a, (-b[0], -b[1]))


@njit(inline="always")
def dmul(a, b):  # pragma: no cover - compiled
    p, e = two_prod(a[0], b[0])
    hi, lo = _renorm(p, e + (a[0] * b[1] + a[1] * b[0]))
    ok = (abs(a[0]) < BIG) & (abs(b[0]) < BIG) & ((abs(p) > TINY) | (a[0] == 0) | (b[0] == 0))
    return hi, _poison(lo, ok)


@njit(inline="always")
def ddiv(a, b):  # pragma: no cover - compiled
    q = a[0] / b[0]
    p, e = two_prod(q, b[0])
    r = (((a[0] - p) - e) + a[1] - q * b[1]) / b[0]
    hi, lo = _renorm(q, r)
    ok = ((abs(a[0]) < BIG) & (abs(b[0]) < BIG) & (abs(b[0]) > TINY) & (abs(q) < BIG)
          & ((abs(q) > TINY) | (a[0] == 0)))  # fmt: skip
    return hi, _poison(lo, ok)


@njit(inline="always")
def dsqrt(a):  # pragma: no cover - compiled
    s = math.sqrt(a[0])  # NaN below zero (poisoned below), -0 at -0
    p, e = two_prod(s, s)
    r = _sel(s > 0, ((a[0] - p) - e + a[1]) / (2.0 * s), 0.0)
    hi, lo = _renorm(s, r)
    return hi, _poison(lo, (a[0] == 0) | ((a[0] > TINY) & (a[0] < BIG)))


@njit(inline="always")
def dexp(a):  # pragma: no cover - compiled
    """e^(hi + lo) within 2^-64 relative, for results in the normal range (else poisoned)."""
    x = min(max(a[0], -700.0), 700.0)
    kd = x * _INV_STEP + _SHIFT
    k = _bits(kd) - _SHIFT_BITS
    kd = kd - _SHIFT
    # r = x - k ln2/32: k * _C1 is exact, Sterbenz makes the first difference exact too
    r = dadd((x - kd * _C1, a[1]), dneg(two_prod(kd, _C2)))
    r = (r[0], r[1] - kd * _C3)
    h = r[0]
    p = _horner(_EXP_POLY, h)
    p = p * h * h  # e^r - 1 - r, from r^2 on: below 6e-5, so its rounding is below 2^-67
    s, e = two_sum(1.0, r[0])
    er = fast_two_sum(s, e + (r[1] + p))
    j = k & 31
    hi, lo = dmul(er, (_T_HI[j], _T_LO[j]))
    scale = _double(((k >> 5) + 1023) << 52)
    ok = (a[0] >= -700.0) & (a[0] <= 700.0)
    return hi * scale, _poison(lo * scale, ok)


@njit(inline="always")
def dexpm1(a):  # pragma: no cover - compiled
    """e^(hi + lo) - 1 within 2^-58 relative: below |x| = 2^-5 a degree-11 series (exp's pair
    minus 1 would cancel), above it exp's pair minus 1 (cancelling at most 5 bits)."""
    x = a[0]
    p = _horner(_EXPM1_POLY, x)
    s, e = two_prod(x, x)  # x^2 / 2 exactly; the rest, below x^3 / 5, in float64
    small = dadd((x, a[1]), (0.5 * s, 0.5 * e + p * x * s))
    return dsel(abs(x) < 0.03125, small, dsub(dexp(a), (1.0, 0.0)))


@njit(inline="always")
def _horner(coeffs, x):  # pragma: no cover - compiled
    p = 0.0
    for c in coeffs:
        p = p * x + c
    return p


@njit(inline="always")
def dlt(a, b):  # pragma: no cover - compiled
    return (a[0] < b[0]) | ((a[0] == b[0]) & (a[1] < b[1]))


@njit(inline="always")
def dle(a, b):  # pragma: no cover - compiled
    return (a[0] < b[0]) | ((a[0] == b[0]) & (a[1] <= b[1]))


@njit(inline="always")
def deq(a, b):  # pragma: no cover - compiled
    return (a[0] == b[0]) & (a[1] == b[1])


@njit(inline="always")
def dsel(c, a, b):  # pragma: no cover - compiled
    return _sel(c, a[0], b[0]), _sel(c, a[1], b[1])


@njit(inline="always")
def dabs(a):  # pragma: no cover - compiled
    return dsel(a[0] < 0, dneg(a), a)


@njit(inline="always")
def dmin(a, b):  # pragma: no cover - compiled
    return dsel(dlt(a, b) | (a[0] != a[0]), a, b)


@njit(inline="always")
def dmax(a, b):  # pragma: no cover - compiled
    return dsel(dlt(b, a) | (a[0] != a[0]), a, b)


@njit(inline="always")
def dresult(a):  # pragma: no cover - compiled
    """(the pair rounded to float64, 0 if it is certain, 1 if the element needs long double)."""
    hi, lo = a
    bad = (lo != lo) | (abs(hi) == math.inf) | (hi != hi) | ((abs(hi) < TINY) & (hi != 0))
    return _sel(lo != 0, hi + lo, hi), bad
