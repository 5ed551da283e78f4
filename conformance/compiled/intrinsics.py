"""Four LLVM operations that numba's Python-level code cannot spell, for the compiled loops,
an int64-to-float64 conversion built on them, and the loop vectorizer's interleave count.

Bit casts between float64 and int64 (no memory round trip), fused multiply-add, and a select
(numba's conditional expression is a branch). The compiled comparison pass (measure.py) and the
reference's vectorizable functions (conformance/compiled/vecmath.py) both build on them; only imported
where numba is.
"""

from __future__ import annotations

from llvmlite import binding, ir
from numba import njit, types
from numba.extending import intrinsic

_TWO52, _TWO52_BITS = 2.0**52, 0x4330000000000000  # 2^52 and its bits

# The compiled loops are latency-bound: an element is one long chain of dependent operations (an
# exp, then a log, then a division), and LLVM's cost model interleaves only small loops, so one
# vector iteration at a time left the out-of-order core idle. Two in flight made the formula
# kernels 10-35 % faster (four slowed the comparison pass). The option is LLVM's, so it holds for
# the whole process; it changes the instruction schedule, never a result (no reassociation).
INTERLEAVE = 2
binding.set_option("aclnn-conformance", f"-force-vector-interleave={INTERLEAVE}")


@intrinsic
def as_bits(typingctx, x):  # pragma: no cover - compiled
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return types.int64(types.float64), codegen


@intrinsic
def as_double(typingctx, b):  # pragma: no cover - compiled
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.int64), codegen


@intrinsic
def fma(typingctx, a, b, c):  # pragma: no cover - compiled
    """a * b + c rounded once: LLVM's fma, one instruction on every x86 CPU since 2013 (a
    correct, slow libm call on older ones), which the loop vectorizer keeps."""

    def codegen(context, builder, signature, args):
        d = ir.DoubleType()
        fn = builder.module.declare_intrinsic("llvm.fma", [d], ir.FunctionType(d, [d, d, d]))
        return builder.call(fn, args)

    return types.float64(types.float64, types.float64, types.float64), codegen


@intrinsic
def select(typingctx, c, a, b):  # pragma: no cover - compiled
    """c ? a : b as LLVM's select: numba's conditional expression is a branch, which stops the
    loop vectorizer once a branch is as long as exp."""

    def codegen(context, builder, signature, args):
        cond = context.cast(builder, args[0], signature.args[0], types.boolean)
        return builder.select(cond, args[1], args[2])

    return types.float64(types.boolean, types.float64, types.float64), codegen


@njit(inline="always")
def small_to_double(d):  # pragma: no cover - compiled
    """float(d) for an int64 0 <= d < 2^52, exactly, through the bits of 2^52 + d: AVX2 has no
    vector int64-to-float64 conversion, so float(d) would make a loop scalar."""
    return as_double(d | _TWO52_BITS) - _TWO52
