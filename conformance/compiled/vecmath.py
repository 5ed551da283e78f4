"""Branch-free float64 functions the compiled kernels inline, so that LLVM can vectorize the loop.

A call of libm's exp or erfc is opaque to the loop vectorizer: a kernel with one runs a scalar
call per element. exp here is plain arithmetic (Cody-Waite reduction by ln 2, a degree-13 Taylor
polynomial on |r| <= ln2/2 in fused multiply-adds, the scale 2^k built in the exponent bits),
within 2 ulp of the exact value over the whole float64 range (tests/test_vecmath.py, against
mpmath; the largest error measured is 0.8 ulp), where glibc's exp is within 1 ulp; expm1,
log1p and tanh are built on the same pieces, within 3, 3 and 4 ulp. erfc is
exp(-x^2) (x^2 split exactly in two) times a polynomial of a flat function, summed by Estrin's
scheme (tests/support/erfc_fit.py made its coefficients), within 8 ulp; erfinv is a polynomial
first guess and one Halley step on erf or erfc, within 4 ulp (tests/test_vecmath.py).
That is far inside precise.GUARD (2^-20 of a FLOAT ulp is 2^9 float64 ulps), so codegen uses
them only for FLOAT, FLOAT16 and BF16 outputs, whose elements near a rounding midpoint are
settled in double-double or mpmath anyway: the rounded results do not change.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .intrinsics import as_bits as _bits
from .intrinsics import as_double as _double
from .intrinsics import fma as _fma
from .intrinsics import select as _sel
from .intrinsics import small_to_double

_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01  # ln 2 with 21 trailing zero bits: k * _LN2_HI is exact
_LN2_LO = 1.90821492927058770002e-10
_SHIFT = 6755399441055744.0  # 1.5 * 2^52: x + _SHIFT rounds x to an integer held in the low bits
_SHIFT_BITS = 0x4338000000000000  # the bits of _SHIFT
_OVER, _UNDER = 709.8, -745.2  # exp(x) is +inf above, 0 below (and rounds so just inside)
_INF = float("inf")
_NAN = float("nan")


_TWO_M24 = 2.0**-24  # FLOAT16's smallest subnormal


@njit(inline="always")
def half_to_double(h):  # pragma: no cover - compiled
    """The FLOAT16 value of the bits h (uint16), exactly as numpy's cast gives it (NaN payloads
    too), in integer arithmetic the loop vectorizer takes: numpy's own cast runs one thread at
    about 2 ns an element, more than the cheap formulas' whole kernel."""
    b = np.int64(h)
    e = (b >> 10) & 31
    m = b & 1023
    sign = (b >> 15) << 63
    normal = _double(sign | ((e + 1008) << 52) | (m << 42))  # rebias: 1023 - 15
    special = _double(sign | (np.int64(2047) << 52) | (m << 42))
    sub = _sel((b >> 15) != 0, -(m * _TWO_M24), m * _TWO_M24)
    return _sel(e == 0, sub, _sel(e == 31, special, normal))


_EXP_TAYLOR = tuple(1.0 / math.factorial(n) for n in range(14))  # 1/0!, ..., 1/13!


@njit(inline="always", error_model="numpy")
def vexp(x):  # pragma: no cover - compiled
    """e^x for float64 x, within 2 ulp; NaN, +-inf, overflow and subnormal results as IEEE."""
    xc = min(max(x, _UNDER), _OVER)
    kd = xc * _LOG2E + _SHIFT
    k = _bits(kd) - _SHIFT_BITS
    kd = kd - _SHIFT
    r = (xc - kd * _LN2_HI) - kd * _LN2_LO
    t = _EXP_TAYLOR  # 1/0!, ..., 1/13!: the terms of degree 3-13 by Estrin's scheme (depth 4),
    r2 = r * r  # the last three by Horner's, which keeps the error of the sum within 1 ulp
    r4 = r2 * r2
    q0 = _fma(_fma(t[6], r, t[5]), r2, _fma(t[4], r, t[3]))
    q1 = _fma(_fma(t[10], r, t[9]), r2, _fma(t[8], r, t[7]))
    q2 = _fma(_fma(t[13], r, t[12]), r, t[11])
    h = _fma(q2, r4 * r4, _fma(q1, r4, q0))
    p = _fma(_fma(_fma(h, r, t[2]), r, t[1]), r, t[0])
    half = k >> 1  # 2^k in two factors: k reaches 1024 and -1075, past the normal exponents
    res = p * _double((half + 1023) << 52) * _double((k - half + 1023) << 52)
    res = 0.0 if x < _UNDER else res
    res = _INF if x > _OVER else res
    return x if x != x else res


# erfc: see tests/support/erfc_fit.py (K, XMAX and phi's series in powers of s, degree 24)
_K, _XMAX = 4.0, 27.3
_TB = (_XMAX - _K) / (_XMAX + _K)  # t's range is [-1, _TB]; s = _SA * t + _SB maps it on [-1, 1]
_SA, _SB = 2.0 / (_TB + 1.0), (1.0 - _TB) / (_TB + 1.0)
_SQRT_PI = 1.7724538509055159
_ERFC = (
    1.1283986268002375,
    -0.13977607348618495,
    0.010006130801230589,
    0.06377651925874114,
    -0.08203095077740664,
    0.06602545133273004,
    -0.03985904792336372,
    0.018585475376200727,
    -0.006476427323050092,
    0.001465248518341411,
    -7.321172210293173e-05,
    -8.603357212027852e-05,
    2.8768959466944205e-05,
    5.443104557788378e-07,
    -2.615238157560761e-06,
    3.7728214985815424e-07,
    1.9770098180061344e-07,
    -5.809177598867143e-08,
    -1.540116200433797e-08,
    6.855158261178698e-09,
    1.383486578189421e-09,
    -6.954340883063878e-10,
    -1.3511486304582204e-10,
    4.6275867993000036e-11,
    9.492136763215243e-12,
)


@njit(inline="always")
def _estrin24(s):  # pragma: no cover - compiled
    """Sum of _ERFC[k] s^k by Estrin's scheme: pairs, then pairs of pairs, ... (depth 6, not 24)."""
    c = _ERFC
    s2 = s * s
    s4 = s2 * s2
    s8 = s4 * s4
    q0 = _fma(_fma(c[3], s, c[2]), s2, _fma(c[1], s, c[0]))
    q1 = _fma(_fma(c[7], s, c[6]), s2, _fma(c[5], s, c[4]))
    q2 = _fma(_fma(c[11], s, c[10]), s2, _fma(c[9], s, c[8]))
    q3 = _fma(_fma(c[15], s, c[14]), s2, _fma(c[13], s, c[12]))
    q4 = _fma(_fma(c[19], s, c[18]), s2, _fma(c[17], s, c[16]))
    q5 = _fma(_fma(c[23], s, c[22]), s2, _fma(c[21], s, c[20]))
    low = _fma(_fma(q3, s4, q2), s8, _fma(q1, s4, q0))  # degrees 0-15
    high = _fma(c[24], s8, _fma(q5, s4, q4))  # degrees 16-24, over s^16
    return _fma(high, s8 * s8, low)


@njit(inline="always", error_model="numpy")
def _phi(ax):  # pragma: no cover - compiled
    """erfc(ax) exp(ax^2) (1 + sqrt(pi) ax), for 0 <= ax <= _XMAX."""
    return _estrin24(_SA * ((ax - _K) / (ax + _K)) + _SB)


@njit(inline="always", error_model="numpy")
def verfc(x):  # pragma: no cover - compiled
    """erfc(x) for float64 x, within 8 ulp (measured: 5); NaN, +-inf and underflow as IEEE.

    erfc(|x|) = exp(-x^2) phi(|x|) / (1 + sqrt(pi) |x|), and erfc(x) = 2 - erfc(|x|) for x < 0,
    which is in (1, 2]: no cancellation on either side."""
    ax = min(abs(x), _XMAX)
    phi = _phi(ax)
    hi = ax * ax
    lo = _fma(ax, ax, -hi)  # ax * ax = hi + lo exactly
    r = vexp(-hi) * (1.0 - lo) * phi / (1.0 + _SQRT_PI * ax)
    r = 0.0 if abs(x) >= _XMAX else r
    r = 2.0 - r if x < 0 else r
    return x if x != x else r


assert len(_ERFC) == 25, "_estrin24 sums degrees 0 to 24"


# expm1: below |x| = 1/2 a Taylor series (degree 16: within 2^-59 of it), else exp(x) - 1
_EXPM1_TAYLOR = tuple(1.0 / math.factorial(n) for n in range(2, 17))  # 1/2!, ..., 1/16!


@njit(inline="always", error_model="numpy")
def vexpm1(x):  # pragma: no cover - compiled
    """e^x - 1 for float64 x, within 3 ulp (measured: 1.2); -0, NaN, +-inf, overflow as IEEE."""
    c = _EXPM1_TAYLOR  # Estrin's scheme (depth 5, not Horner's 15: see _log)
    x2 = x * x
    x4 = x2 * x2
    q0 = _fma(_fma(c[3], x, c[2]), x2, _fma(c[1], x, c[0]))
    q1 = _fma(_fma(c[7], x, c[6]), x2, _fma(c[5], x, c[4]))
    q2 = _fma(_fma(c[11], x, c[10]), x2, _fma(c[9], x, c[8]))
    q3 = _fma(c[14], x2, _fma(c[13], x, c[12]))
    q = _fma(_fma(q3, x4, q2), x4 * x4, _fma(q1, x4, q0))
    small = _fma(x2, q, x)
    r = _sel(abs(x) < 0.5, small, vexp(x) - 1.0)
    return _sel(x == 0, x, r)  # keeps -0 (x != x: NaN from vexp)


_SQRT2 = 1.4142135623730951
# log(1 + f) = 2 atanh(s), s = f / (2 + f), |s| <= 0.1716: 2s + 2s^3 (1/3 + s^2/5 + ... + s^22/25)
_ATANH = tuple(1.0 / (2 * j + 3) for j in range(12))  # 1/3, 1/5, ..., 1/25


@njit(inline="always", error_model="numpy")
def _log(u, c):  # pragma: no cover - compiled
    """log(u) + c for a positive normal u, with c a small correction (not for inf, 0, NaN).

    u = 2^e m with m in [sqrt(2)/2, sqrt(2)): log(u) = e ln 2 + 2 atanh((m - 1) / (m + 1))."""
    b = _bits(u)
    ed = small_to_double((b >> 52) & 2047) - 1023.0  # not float(e): that stops the vectorizer
    m = _double((b & 0xFFFFFFFFFFFFF) | (np.int64(1023) << 52))  # [1, 2)
    big = m >= _SQRT2
    m = _sel(big, 0.5 * m, m)
    ed = ed + _sel(big, 1.0, 0.0)
    f = m - 1.0
    s = f / (2.0 + f)
    z = s * s
    z2 = z * z
    z4 = z2 * z2
    a = _ATANH  # Estrin's scheme, depth 5: Horner's 12 dependent fmas made this latency-bound
    q0 = _fma(_fma(a[3], z, a[2]), z2, _fma(a[1], z, a[0]))
    q1 = _fma(_fma(a[7], z, a[6]), z2, _fma(a[5], z, a[4]))
    q2 = _fma(_fma(a[11], z, a[10]), z2, _fma(a[9], z, a[8]))
    p = _fma(_fma(q2, z4, q1), z4, q0)
    low = _fma(ed, _LN2_LO, c)
    return _fma(ed, _LN2_HI, _fma(2.0 * s, z * p, low) + 2.0 * s)


@njit(inline="always", error_model="numpy")
def vlog1p(x):  # pragma: no cover - compiled
    """log(1 + x) for float64 x, within 3 ulp (measured: 1.8); -1 -> -inf, below -1 NaN, as IEEE.

    log of u = 1 + x rounded, plus the rounding of u, (x - (u - 1)) / u, which is exact where it
    matters (|x| <= 1)."""
    u = 1.0 + x
    r = _log(u, (x - (u - 1.0)) / u)
    r = _sel(x == 0, x, r)
    r = _sel(u == 0, -_INF, r)
    r = _sel(u == _INF, _INF, r)
    return _sel(u < 0, _NAN, _sel(x != x, x, r))


@njit(inline="always", error_model="numpy")
def vtanh(x):  # pragma: no cover - compiled
    """tanh(x) for float64 x, within 4 ulp (measured: 2.1): t / (t + 2), t = expm1(2|x|), no cancellation;
    1 beyond |x| = 20 (tanh(20) rounds to 1); -0 and NaN as IEEE."""
    ax = min(abs(x), 20.0)
    t = vexpm1(2.0 * ax)
    r = t / (t + 2.0)
    r = _sel(x < 0, -r, r)
    return _sel((x == 0) | (x != x), x, r)


# erfinv: see tests/support/erfinv_fit.py (W_SPLIT, R_LOW, R_MAX and the two first guesses)
_W_SPLIT, _R_LOW, _R_MAX = 5.0, 2.2, 6.1
_ERFINV_CENTRAL = (
    1.5014093517282388,
    0.6166007234735246,
    -0.026108280762080514,
    -0.019574194007122948,
    0.008525934497817092,
    -0.0004843499507017,
    -0.0008364687382200096,
    0.00028407515288397475,
    2.5157435365049296e-05,
    -3.3339809314926145e-05,
    4.149577433493437e-06,
)
_ERFINV_TAIL = (
    3.9912332902209253,
    1.9691434986958818,
    0.0034464922592203234,
    -0.005151546249010484,
    0.003456264803378606,
    -0.001879671577708613,
    0.0009028076851011366,
    -0.00044964540774636004,
    0.00021559521009377296,
    4.218047353420413e-05,
    -0.0001551010137335591,
    6.405566115151636e-05,
    6.704606879832683e-07,
)
# erf(y) = 2/sqrt(pi) y sum (-y^2)^n / (n! (2n + 1)), for |y| < 0.82 (17 terms: within 2^-58)
_ERF_SPLIT = 0.75  # erfinv(0.75) = 0.8134
_CENTRAL_DOWN, _TAIL_DOWN = _ERFINV_CENTRAL[::-1], _ERFINV_TAIL[::-1]  # Horner's order
_ERF_TAYLOR = tuple(1.0 / (math.factorial(n) * (2 * n + 1)) for n in range(16, -1, -1))  # in -y^2
_ERF_HIGH, _ERF_LOW = _ERF_TAYLOR[:9], _ERF_TAYLOR[9:]  # degrees 16-8 and 7-0
_TWO_OVER_SQRT_PI = 1.1283791670955126
_HALF_SQRT_PI = 0.886226925452758


@njit(inline="always", error_model="numpy")
def _poly(c, s):  # pragma: no cover - compiled
    p = 0.0
    for k in c:  # highest degree first (LLVM unrolls up to 16 terms, not past: a loop that
        p = _fma(p, s, k)  # does not vectorize)
    return p


@njit(inline="always", error_model="numpy")
def verfinv(x):  # pragma: no cover - compiled
    """erfinv(x) for float64 x, within 4 ulp (tests/test_vecmath.py); +-1 -> +-inf, NaN outside
    [-1, 1], -0 as IEEE.

    A first guess y (erfinv_fit's polynomials in w = -log(1 - a^2), a = |x|, good to 4e-9), then
    one Halley step on f(y) = erf(y) - a, whose error is cubic in the guess's. The residual is
    erf's series below a = 3/4 and erfc(y) - (1 - a) above it, where 1 - a is exact: neither
    cancels more than the bits the guess already has. It is scaled by e^(y^2), which cancels
    erfc's own exp(-y^2): one exp in all."""
    a = abs(x)
    w = -_log((1.0 - a) * (1.0 + a), 0.0)
    central = a * _poly(_CENTRAL_DOWN, w * (2.0 / _W_SPLIT) - 1.0)
    r = math.sqrt(w)
    tail = _poly(_TAIL_DOWN, (2.0 * r - (_R_LOW + _R_MAX)) * (1.0 / (_R_MAX - _R_LOW)))
    y = _sel(w < _W_SPLIT, central, tail)
    hi = y * y
    e = vexp(hi) * (1.0 + _fma(y, y, -hi))  # e^(y^2), y^2 = hi + lo exactly
    z2 = hi * hi
    q = _fma(_poly(_ERF_HIGH, -hi), z2 * z2 * z2 * z2, _poly(_ERF_LOW, -hi))
    central = (a - _TWO_OVER_SQRT_PI * y * q) * e  # (a - erf(y)) e^(y^2)
    tail = _phi(y) / (1.0 + _SQRT_PI * y) - (1.0 - a) * e  # (erfc(y) - (1 - a)) e^(y^2)
    t = _HALF_SQRT_PI * _sel(a < _ERF_SPLIT, central, tail)  # -f(y) / f'(y)
    y = y + t * _fma(y, t, 1.0)  # t / (1 - y t) to within (y t)^2: below 2^-50 relative
    y = _sel(a == 1.0, _INF, y)
    y = _sel((a > 1.0) | (x != x), _NAN, y)
    return _sel(x < 0, -y, _sel(x == 0, x, y))
