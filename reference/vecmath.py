"""Branch-free float64 functions the compiled kernels inline, so that LLVM can vectorize the loop.

A call of libm's exp or erfc is opaque to the loop vectorizer: a kernel with one runs a scalar
call per element. exp here is plain arithmetic (Cody-Waite reduction by ln 2, a degree-13 Taylor
polynomial on |r| <= ln2/2 in fused multiply-adds, the scale 2^k built in the exponent bits),
within 2 ulp of the exact value over the whole float64 range (tests/test_vecmath.py, against
mpmath; the largest error measured is 1.09 ulp), where glibc's exp is within 1 ulp; expm1,
log1p and tanh are built on the same pieces, within 3, 3 and 4 ulp. erfc is
exp(-x^2) (x^2 split exactly in two) times a polynomial of a flat function, summed by Estrin's
scheme (tests/support/erfc_fit.py made its coefficients), within 8 ulp (tests/test_vecmath.py).
That is far inside precise.GUARD (2^-20 of a FLOAT ulp is 2^9 float64 ulps), so codegen uses
them only for FLOAT, FLOAT16 and BF16 outputs, whose elements near a rounding midpoint are
settled in double-double or mpmath anyway: the rounded results do not change.
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01  # ln 2 with 21 trailing zero bits: k * _LN2_HI is exact
_LN2_LO = 1.90821492927058770002e-10
_SHIFT = 6755399441055744.0  # 1.5 * 2^52: x + _SHIFT rounds x to an integer held in the low bits
_SHIFT_BITS = 0x4338000000000000  # the bits of _SHIFT
_OVER, _UNDER = 709.8, -745.2  # exp(x) is +inf above, 0 below (and rounds so just inside)
_INF = float("inf")
_NAN = float("nan")


@intrinsic
def _bits(typingctx, x):  # pragma: no cover - compiled
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return types.int64(types.float64), codegen


@intrinsic
def _double(typingctx, b):  # pragma: no cover - compiled
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.int64), codegen


@intrinsic
def _fma(typingctx, a, b, c):  # pragma: no cover - compiled
    """a * b + c rounded once: LLVM's fma, one instruction on every x86 CPU since 2013 (a
    correct, slow libm call on older ones), which the loop vectorizer keeps."""

    def codegen(context, builder, signature, args):
        d = ir.DoubleType()
        fn = builder.module.declare_intrinsic("llvm.fma", [d], ir.FunctionType(d, [d, d, d]))
        return builder.call(fn, args)

    return types.float64(types.float64, types.float64, types.float64), codegen


@intrinsic
def _sel(typingctx, c, a, b):  # pragma: no cover - compiled
    """c ? a : b as LLVM's select: numba's conditional expression is a branch, which stops the
    loop vectorizer once a branch is as long as exp."""

    def codegen(context, builder, signature, args):
        cond = context.cast(builder, args[0], signature.args[0], types.boolean)
        return builder.select(cond, args[1], args[2])

    return types.float64(types.boolean, types.float64, types.float64), codegen


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


_EXP_TAYLOR = tuple(1.0 / math.factorial(n) for n in range(12, -1, -1))  # 1/12!, ..., 1/1, 1/0


@njit(inline="always", error_model="numpy")
def vexp(x):  # pragma: no cover - compiled
    """e^x for float64 x, within 2 ulp; NaN, +-inf, overflow and subnormal results as IEEE."""
    xc = min(max(x, _UNDER), _OVER)
    kd = xc * _LOG2E + _SHIFT
    k = _bits(kd) - _SHIFT_BITS
    kd = kd - _SHIFT
    r = (xc - kd * _LN2_HI) - kd * _LN2_LO
    p = 1.0 / 6227020800.0  # 1/13!
    for c in _EXP_TAYLOR:  # constant trip count: unrolled, one fma a term
        p = _fma(p, r, c)
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
_SPLIT = 134217729.0  # 2^27 + 1: Dekker's split of a float64 into two 26-bit halves
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
def verfc(x):  # pragma: no cover - compiled
    """erfc(x) for float64 x, within 8 ulp (measured: 5); NaN, +-inf and underflow as IEEE.

    erfc(|x|) = exp(-x^2) phi(|x|) / (1 + sqrt(pi) |x|), and erfc(x) = 2 - erfc(|x|) for x < 0,
    which is in (1, 2]: no cancellation on either side."""
    ax = min(abs(x), _XMAX)
    t = (ax - _K) / (ax + _K)
    s = _SA * t + _SB
    phi = _estrin24(s)
    c = _SPLIT * ax  # ax * ax = hi + lo exactly
    ah = c - (c - ax)
    al = ax - ah
    hi = ax * ax
    lo = ((ah * ah - hi) + 2.0 * ah * al) + al * al
    r = vexp(-hi) * (1.0 - lo) * phi / (1.0 + _SQRT_PI * ax)
    r = 0.0 if abs(x) >= _XMAX else r
    r = 2.0 - r if x < 0 else r
    return x if x != x else r


assert len(_ERFC) == 25, "_estrin24 sums degrees 0 to 24"


# expm1: below |x| = 1/2 a Taylor series (degree 16: within 2^-59 of it), else exp(x) - 1
_EXPM1_TAYLOR = tuple(1.0 / math.factorial(n) for n in range(16, 1, -1))  # 1/16!, ..., 1/2!


@njit(inline="always", error_model="numpy")
def vexpm1(x):  # pragma: no cover - compiled
    """e^x - 1 for float64 x, within 3 ulp (measured: 1.2); -0, NaN, +-inf, overflow as IEEE."""
    q = 0.0
    for c in _EXPM1_TAYLOR:
        q = _fma(q, x, c)
    small = _fma(x * x, q, x)
    r = _sel(abs(x) < 0.5, small, vexp(x) - 1.0)
    return _sel(x == 0, x, r)  # keeps -0 (x != x: NaN from vexp)


_SQRT2 = 1.4142135623730951
# log(1 + f) = 2 atanh(s), s = f / (2 + f), |s| <= 0.1716: 2s + 2s^3 (1/3 + s^2/5 + ... + s^22/25)
_ATANH = tuple(1.0 / (2 * j + 3) for j in range(11, -1, -1))


@njit(inline="always", error_model="numpy")
def vlog1p(x):  # pragma: no cover - compiled
    """log(1 + x) for float64 x, within 3 ulp (measured: 1.8); -1 -> -inf, below -1 NaN, as IEEE.

    u = 1 + x rounded is 2^e m with m in [sqrt(2)/2, sqrt(2)): log(u) = e ln 2 + log(m), plus
    the rounding of u, (x - (u - 1)) / u, which is exact where it matters (|x| <= 1)."""
    u = 1.0 + x
    b = _bits(u)
    e = ((b >> 52) & 2047) - 1023
    m = _double((b & 0xFFFFFFFFFFFFF) | (np.int64(1023) << 52))  # [1, 2)
    big = m >= _SQRT2
    m = _sel(big, 0.5 * m, m)
    ed = float(e) + _sel(big, 1.0, 0.0)
    f = m - 1.0
    s = f / (2.0 + f)
    s2 = s * s
    p = 0.0
    for c in _ATANH:
        p = _fma(p, s2, c)
    c = (x - (u - 1.0)) / u
    low = _fma(ed, _LN2_LO, c)
    r = _fma(ed, _LN2_HI, _fma(2.0 * s, s2 * p, low) + 2.0 * s)
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
