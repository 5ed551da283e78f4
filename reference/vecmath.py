"""Branch-free float64 functions the compiled kernels inline, so that LLVM can vectorize the loop.

A call of libm's exp is opaque to the loop vectorizer: a kernel with one runs a scalar call per
element. exp here is plain arithmetic (Cody-Waite reduction by ln 2, a degree-13 Taylor
polynomial on |r| <= ln2/2, the scale 2^k built in the exponent bits), within 2 ulp of the
exact value over the whole float64 range (tests/test_vecmath.py, against mpmath; the largest
error measured is 1.09 ulp), where glibc's exp is within 1 ulp. That is far inside precise.GUARD (2^-20 of a FLOAT ulp is
2^9 float64 ulps), so codegen uses it only for FLOAT, FLOAT16 and BF16 outputs, whose elements
near a rounding midpoint are recomputed in mpmath anyway: the rounded results do not change.
"""

from __future__ import annotations

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
