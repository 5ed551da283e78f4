"""Double-double arithmetic the compiled DOUBLE kernels inline: (hi, lo) pairs, branch-free.

A DOUBLE output must be within 1 ulp of the exact value (errbound.py); float64 alone is not, and
long double (numpy, one pass per operation, x87 without SIMD) is slow. A pair hi + lo carries
about 106 bits: + - * / and sqrt here are within a few 2^-104 of their operands' exact result,
exp within 2^-64 relative (a 32-entry table of 2^(j/32) as pairs, a degree-7 polynomial on
|r| <= ln2/64, the scale 2^m in the exponent bits) and expm1 within 2^-58: far more than the 11 extra bits of long
double, so a formula's pair, rounded once to float64, is faithful wherever long double's is.

The error term of a product (an fma) is exact only inside a range, exp only for a
normal result: an operation outside it makes its lo a NaN (poison), which every later
operation carries, and the kernel sends the element to long double instead. So do non-finite
values and results below 2^-969. IEEE specials therefore never take this path.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
from numba import njit

from .intrinsics import as_bits as _bits
from .intrinsics import as_double as _double
from .intrinsics import fma as _fma
from .intrinsics import select as _sel
from .ranges import BIG, TINY
from .vecmath import _K, _XMAX

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

# erfc: tests/support/erfc_fit.py made these (phi's series in powers of s, degree 28: the first 12
# as pairs, the rest, whose magnitudes sum below 2^-14, as float64; within 2^-71 of phi)
_ERFC_HEAD = (
    (1.1283986268002375, 5.2706875612787114e-17),
    (-0.13977607348618495, 1.4872814908699359e-18),
    (0.010006130801230575, -6.10776416236786e-19),
    (0.06377651925874193, -8.618927949944864e-19),
    (-0.08203095077740585, 2.961404497625903e-18),
    (0.0660254513327056, -4.7831149246535846e-18),
    (-0.03985904792338132, 9.715681807244788e-19),
    (0.018585475376552175, -1.2519744559599338e-18),
    (-0.0064764273228471, -3.512921650742491e-19),
    (0.0014652485155084627, -1.0099875827837871e-19),
    (-7.321172349888178e-05, -5.132696264073529e-21),
    (-8.603355797790824e-05, -5.036159130112405e-21),
)
_ERFC_TAIL = (
    2.8768965643492976e-05,
    5.442642161035979e-07,
    -2.615256532028529e-06,
    3.7738414532365246e-07,
    1.9773858391105685e-07,
    -5.8245041436415865e-08,
    -1.5454412178297103e-08,
    7.010556907293689e-09,
    1.4350910057073408e-09,
    -7.98164925352311e-10,
    -1.6821157141190246e-10,
    8.730649096195941e-11,
    2.258183659795693e-11,
    -8.3283980521183e-12,
    -2.742015946557228e-12,
    5.024211900526496e-13,
    2.0035571715895426e-13,
)
_HEAD_DOWN, _TAIL_DOWN = _ERFC_HEAD[::-1], _ERFC_TAIL[::-1]  # Horner's order: highest first


def _erfc_mapping() -> tuple[tuple[float, float], tuple[float, float]]:
    with mpmath.workprec(300):
        tb = (mpmath.mpf(_XMAX) - _K) / (mpmath.mpf(_XMAX) + _K)
        return _pair(2 / (tb + 1)), _pair((1 - tb) / (tb + 1))


_ERFC_SA, _ERFC_SB = _erfc_mapping()
with mpmath.workprec(300):
    SQRT_PI = _pair(mpmath.sqrt(mpmath.pi))


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
def two_prod(a, b):  # pragma: no cover - compiled
    """a * b = p + e exactly (fma's e is exact wherever the product's error does not underflow:
    dmul and ddiv poison those ranges)."""
    p = a * b
    return p, _fma(a, b, -p)


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
def dadd_err(a, b):  # pragma: no cover - compiled
    """|a + b - dadd(a, b)|, bounded from dadd's own steps: its TwoSums are exact, its two
    float64 additions and its two FastTwoSums (exact where their operands are ordered) each
    leave a residual that a TwoSum gives exactly; their magnitudes summed (that sum's own
    rounding covered). Relative to the operands' low parts, not to the sum: an exact double
    plus a tiny pair keeps a bound of the tiny pair's size."""
    s, e = two_sum(a[0], b[0])
    t, f = two_sum(a[1], b[1])
    c, r1 = two_sum(e, t)
    s2, e2 = fast_two_sum(s, c)
    e2x = two_sum(s, c)[1]
    w, r2 = two_sum(e2, f)
    hi, lo = fast_two_sum(s2, w)
    lox = two_sum(s2, w)[1]
    lost = _sel(hi != 0, 0.0, abs(s))  # dadd keeps s's zero (or s) where hi is 0
    return (abs(r1) + abs(e2x - e2) + abs(r2) + abs(lox - lo) + lost) * (1.0 + 2.0**-50)


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
    ok = (
        (abs(a[0]) < BIG)
        & (abs(b[0]) < BIG)
        & (abs(b[0]) > TINY)
        & (abs(q) < BIG)
        & ((abs(q) > TINY) | (a[0] == 0))
    )
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


@njit(inline="always")
def derfc(a):  # pragma: no cover - compiled
    """erfc(hi + lo) within 2^-62 relative: vecmath.verfc's form in pairs, erfc(|x|) =
    exp(-x^2) phi(|x|) / (1 + sqrt(pi) |x|) and 2 - erfc(|x|) below zero; poisoned where a
    product falls below TINY (|x| above about 25.9, where erfc is below 2^-969)."""
    ax = dabs(a)
    ax = dsel(ax[0] < 2.0**-300, (0.0, 0.0), ax)  # erfc is 1 within 2^-300: no tiny products
    t = ddiv(dsub(ax, (_K, 0.0)), dadd(ax, (_K, 0.0)))
    s = dadd(dmul(_ERFC_SA, t), _ERFC_SB)
    tail = _horner(_TAIL_DOWN, s[0])  # the degrees from 12 up: their sum is below 2^-14
    p = (tail, 0.0)
    for c in _HEAD_DOWN:
        p = dadd(dmul(p, s), c)
    e = dexp(dneg(dmul(ax, ax)))
    q = ddiv(dmul(e, p), dadd((1.0, 0.0), dmul(SQRT_PI, ax)))
    return dsel(a[0] < 0, dsub((2.0, 0.0), q), q)


@njit(inline="always")
def dtanh(a):  # pragma: no cover - compiled
    """tanh(hi + lo) within 2^-57 relative: t / (t + 2), t = expm1(2|x|) (no cancellation);
    beyond |x| = 40, tanh(40) (1 within 2^-113)."""
    ax = dabs(a)
    ax = dsel(ax[0] > 40.0, (40.0, 0.0), ax)
    t = dexpm1((2.0 * ax[0], 2.0 * ax[1]))
    r = ddiv(t, dadd(t, (2.0, 0.0)))
    return dsel(a[0] < 0, dneg(r), r)


@njit(inline="always")
def dlog1p(a):  # pragma: no cover - compiled
    """log(1 + hi + lo) within 2^-56 relative: a Newton step from float64's y0 = log(1 + x),
    y0 + (1 + x) e^-y0 - 1, written (1 + x) expm1(-y0) + x below x = 1 (no cancellation
    against 1 for small x); poisoned where exp(-y0) leaves its range or x <= -1."""
    w = dadd((1.0, 0.0), a)
    y0 = math.log(w[0]) + w[1] / w[0]  # 1 + x's pair: within a few ulps, a's lo included
    small = dadd(dmul(w, dexpm1((-y0, 0.0))), a)  # x < 1: (1 + x) expm1(-y0) + x
    big = dsub(dmul(w, dexp((-y0, 0.0))), (1.0, 0.0))  # x >= 1: y >= log 2, no small terms
    return dadd((y0, 0.0), dsel(a[0] < 1.0, small, big))


@njit(inline="always")
def dlog(a):  # pragma: no cover - compiled
    """log(hi + lo) within 2^-56 relative: log1p of the pair minus 1 (exact in pairs) for hi in
    [0.5, 2], else a Newton step from float64's y0 = log(hi), y0 + (a e^-y0 - 1) (|y| >= log 2,
    no cancellation); poisoned where e^-y0 leaves its range or hi <= 0."""
    near = dlog1p(dsub(a, (1.0, 0.0)))
    y0 = math.log(max(a[0], 2.0**-1000))
    far = dadd((y0, 0.0), dsub(dmul(a, dexp((-y0, 0.0))), (1.0, 0.0)))
    r = dsel((a[0] >= 0.5) & (a[0] <= 2.0), near, far)
    return r[0], _poison(r[1], a[0] > 0.0)
