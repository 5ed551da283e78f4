"""Branch-free float64 functions the compiled kernels inline, so that LLVM can vectorize the loop.

A call of libm's exp or erfc is opaque to the loop vectorizer: a kernel with one runs a scalar
call per element. exp here is plain arithmetic (Cody-Waite reduction by ln 2, a degree-13 Taylor
polynomial on |r| <= ln2/2, the scale 2^k built in the exponent bits), within 2 ulp of the
exact value over the whole float64 range (tests/test_vecmath.py, against mpmath; the largest
error measured is 1.09 ulp), where glibc's exp is within 1 ulp. erfc is exp(-x^2) (x^2 split
exactly in two) times a Chebyshev series of a flat function (tests/support/erfc_fit.py made its
coefficients), within 8 ulp (tests/test_vecmath.py). That is far inside precise.GUARD (2^-20 of a FLOAT ulp is
2^9 float64 ulps), so codegen uses it only for FLOAT, FLOAT16 and BF16 outputs, whose elements
near a rounding midpoint are recomputed in mpmath anyway: the rounded results do not change.
"""

from __future__ import annotations

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


@njit(inline="always", error_model="numpy")
def vexp(x):  # pragma: no cover - compiled
    """e^x for float64 x, within 2 ulp; NaN, +-inf, overflow and subnormal results as IEEE."""
    xc = min(max(x, _UNDER), _OVER)
    kd = xc * _LOG2E + _SHIFT
    k = _bits(kd) - _SHIFT_BITS
    kd = kd - _SHIFT
    r = (xc - kd * _LN2_HI) - kd * _LN2_LO
    p = 1.0 / 6227020800.0  # 1/13!
    p = p * r + 1.0 / 479001600.0
    p = p * r + 1.0 / 39916800.0
    p = p * r + 1.0 / 3628800.0
    p = p * r + 1.0 / 362880.0
    p = p * r + 1.0 / 40320.0
    p = p * r + 1.0 / 5040.0
    p = p * r + 1.0 / 720.0
    p = p * r + 1.0 / 120.0
    p = p * r + 1.0 / 24.0
    p = p * r + 1.0 / 6.0
    p = p * r + 0.5
    p = p * r + 1.0
    p = p * r + 1.0
    half = k >> 1  # 2^k in two factors: k reaches 1024 and -1075, past the normal exponents
    res = p * _double((half + 1023) << 52) * _double((k - half + 1023) << 52)
    res = 0.0 if x < _UNDER else res
    res = _INF if x > _OVER else res
    return x if x != x else res


# erfc: see tests/support/erfc_fit.py (K, XMAX and the coefficients of phi's Chebyshev series)
_K, _XMAX = 4.0, 27.3
_TB = (_XMAX - _K) / (_XMAX + _K)  # t's range is [-1, _TB]; s = _SA * t + _SB maps it on [-1, 1]
_SA, _SB = 2.0 / (_TB + 1.0), (1.0 - _TB) / (_TB + 1.0)
_SQRT_PI = 1.7724538509055159
_SPLIT = 134217729.0  # 2^27 + 1: Dekker's split of a float64 into two 26-bit halves
_ERFC = (
    1.0884011963824496,
    -0.03983112716954642,
    -0.05754957280757091,
    0.0431287723061917,
    -0.01915495861810921,
    0.00635171920716218,
    -0.0016540113680898086,
    0.00033735434341273087,
    -5.120601859100245e-05,
    4.818442185991033e-06,
    -4.1900984351623833e-10,
    -8.038550976954769e-08,
    1.0217304307243815e-08,
    3.794902234689718e-10,
    -2.381019642542536e-10,
    1.1645830762835961e-11,
    4.332502817933464e-12,
    -5.092896518322014e-13,
    -7.731827639372437e-14,
    1.5014139023626236e-14,
    1.5336879550988437e-15,
    -4.0945801481879955e-16,
    -3.727056620909242e-17,
    1.1033026693582543e-17,
    1.1315508798617414e-18,
)
_NERFC = len(_ERFC)
_ERFC_ARRAY = np.array(_ERFC)  # a global array: a constant table in the compiled code


@njit(inline="always", error_model="numpy")
def verfc(x):  # pragma: no cover - compiled
    """erfc(x) for float64 x, within 8 ulp (measured: 5); NaN, +-inf and underflow as IEEE.

    erfc(|x|) = exp(-x^2) phi(|x|) / (1 + sqrt(pi) |x|), and erfc(x) = 2 - erfc(|x|) for x < 0,
    which is in (1, 2]: no cancellation on either side."""
    ax = min(abs(x), _XMAX)
    t = (ax - _K) / (ax + _K)
    s = _SA * t + _SB
    b1 = 0.0
    b2 = 0.0
    for j in range(_NERFC - 1, 0, -1):  # Clenshaw's recurrence, constant trip count: unrolled
        b0 = 2.0 * s * b1 - b2 + _ERFC_ARRAY[j]
        b2 = b1
        b1 = b0
    phi = s * b1 - b2 + _ERFC_ARRAY[0]
    c = _SPLIT * ax  # ax * ax = hi + lo exactly
    ah = c - (c - ax)
    al = ax - ah
    hi = ax * ax
    lo = ((ah * ah - hi) + 2.0 * ah * al) + al * al
    r = vexp(-hi) * (1.0 - lo) * phi / (1.0 + _SQRT_PI * ax)
    r = 0.0 if abs(x) >= _XMAX else r
    r = 2.0 - r if x < 0 else r
    return x if x != x else r
