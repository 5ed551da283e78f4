"""The compiled building blocks of the row kernels (reference/rowgen.py): error terms of float64
operations and the decisions of a bounded value against an output format's rounding midpoints.

A row kernel carries each value with a bound on its absolute error (first order, as
reference/errbound.py). `flag_f64` tells whether a float64 value y, within `err` of the exact
value, rounds to a FLOAT, FLOAT16 or BF16 output (precision p = 53 - drop) as the exact value
does; `decide_dd` does the same for a double-double pair and gives the pair rounded to odd (a
float64 whose rounding to the output is the pair's).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .ddmath import dexp
from .intrinsics import as_bits as _bits
from .intrinsics import as_double as _double
from .intrinsics import fma as _fma
from .intrinsics import select as _sel
from .ranges import BIG, TINY

SAFETY = 4.0  # the bound must be this many times below the distance to a midpoint
_MANT = (1 << 52) - 1
_ABS = 0x7FFFFFFFFFFFFFFF


@njit(inline="always")
def sum_err(a, b, s):  # pragma: no cover - compiled
    """|a + b - s| for s = fl(a + b) (Knuth's TwoSum); 0 where s is not finite (IEEE)."""
    bb = s - a
    return _sel(abs(s) < math.inf, abs((a - (s - bb)) + (b - bb)), 0.0)


@njit(inline="always")
def prod_err(a, b, p):  # pragma: no cover - compiled
    """|a * b - p| for p = fl(a * b) (fma: exact where |p| >= TINY); below, |p| u plus the
    smallest subnormal (an error term that underflowed), 0 for a product by zero; 0 where p is
    not finite. No subnormal floor elsewhere: a subnormal operand costs x86 a microcode assist,
    and exact products (most products of FLOAT inputs) would all carry one."""
    tiny = _sel((a == 0.0) | (b == 0.0), 0.0, abs(p) * 1.1102230246251565e-16 + 5e-324)
    return _sel(abs(p) < math.inf, _sel(abs(p) >= TINY, abs(_fma(a, b, -p)), tiny), 0.0)


@njit(inline="always")
def div_err(a, ea, b, eb, q, u):  # pragma: no cover - compiled
    """The bound of q, a / b rounded with unit roundoff u, from its operands' bounds:
    (ea + |q| eb) / (|b| - eb) plus q's own rounding; infinite where eb reaches |b|, 0 where q
    is not finite (IEEE); a q below TINY adds the smallest subnormal; an infinite b, |a| /
    2^1022 (its exact value lies beyond float64's range: errbound.OVERFLOW). u = 0: q is float64's
    quotient, its own error |a - q b| / |b| (the residual, exact by fma where nothing
    underflows or overflows: 0 where q is exact, a mean over a power of two), else |q| 2^-53."""
    # divisions by reciprocals: a row's sum as b (a normalisation) makes them loop invariants the
    # compiler hoists; the two roundings of x * (1 / d) and the product by 1 + 2^-50 stay
    # above x / d
    den = abs(b) - eb
    prop = (ea + abs(q) * eb) * (1.0 / _sel(den > 0.0, den, 1.0)) * (1.0 + 2.0**-50)
    own = abs(q) * u
    if u == 0.0:
        safe = (min(abs(a), abs(b), abs(q)) >= TINY) & (max(abs(a), abs(b), abs(q)) < BIG)
        own = _sel(safe, abs(_fma(-q, b, a)) * (1.0 / abs(b)) * (1.0 + 2.0**-50), abs(q) * 2.0**-53)
    # an infinite b (an overflow: its exact value beyond float64's range, as the bounds take
    # it) leaves a quotient below |a| / 2^1023 (a / (1 + exp(3000)) is -0, exactly tiny)
    over = _sel(abs(b) == math.inf, (abs(a) + ea) * 2.0**-1022, 0.0)
    e = _sel(den > 0.0, prop, math.inf) + own + over + _sel(abs(q) >= TINY, 0.0, 5e-324)
    return _sel(abs(q) < math.inf, e, 0.0)


@njit(inline="always")
def flag_f64(y, err, q, drop, guard, emin):  # pragma: no cover - compiled
    """0: y within err of the exact value rounds to the output as the exact value does (or y is
    not finite: IEEE); 1: not certain (within `guard` float64 ulps of a midpoint, err reaching
    one, a comparison q left undecided, an error bound that is NaN). The output drops `drop`
    of float64's bits at its normal exponents (biased `emin` and up) and more below, where
    its spacing is fixed. Branch-free, so that the loop around it vectorizes."""
    b = _bits(y) & _ABS
    e = b >> 52
    shift = max(emin - e, 0)  # the output's subnormal range: more bits dropped
    d = min(drop + shift, 52)
    half = 1 << (d - 1)
    dist = abs((b & ((1 << d) - 1)) - half)
    r = SAFETY * err
    ulp = _double(max(e - 52, 1) << 52)
    # the nearest midpoint in y's binade, or the one below its bottom (a quarter gap lower)
    reach = (r >= dist * ulp) | (r >= ((b & _MANT) + (half >> 1)) * ulp)
    reach = reach | (dist < (guard << min(shift, 52 - drop))) | (drop + shift > 52)
    # err 0: every operation was exact, y is the exact value (a tie included): decided
    unsure = (reach & (err > 0.0)) | ~(err <= 1e300)
    # y and all within its reach round to zero: only that zero's sign is open (as flag_far)
    zero = (e < emin) & (_double(b) + r < 0.5 * _double((emin + drop - 52) << 52))
    return np.uint8((e < 2047) & ((unsure & ~zero) | q))


@njit(inline="always")
def flag_far(y, err, q, drop, emin):  # pragma: no cover - compiled
    """1 where SAFETY err reaches a rounding boundary of the output (y's own cell's midpoint, or
    any once it spans a quarter of the cell), err is NaN or q; 0 where y and all within its
    reach round to zero (only that zero's sign is open, and float64's stays: the comparison
    takes -0 for +0). For elements whose nearness to a midpoint is tested apart (the
    elementwise flagging kernels, reference/codegen.py); float arithmetic that vectorizes,
    where flag_f64's variable shifts cost an elementwise kernel 3x."""
    b = _bits(y) & _ABS
    e = b >> 52
    r = SAFETY * err
    cell = _double((max(e, emin) + drop - 52) << 52)  # the output's spacing at y
    a = abs(y)
    t = a / cell  # exact: a division by a power of two
    dist = abs(t - math.floor(t) - 0.5) * cell
    zero = (e < emin) & (a + r < 0.5 * cell)
    far = (r >= dist) | (4.0 * r >= cell) | (not (err <= 1e300))
    return np.uint8((e < 2047) & (q | (far & (not zero))))


@njit(inline="always")
def decide_dd(hi, lo, err, drop, emin):  # pragma: no cover - compiled
    """(y, ok): ok where the pair hi + lo, within err of the exact value, rounds to the output
    as the exact value does; y the pair rounded to odd (truncated toward zero, its last bit set
    where inexact), whose rounding to the output is the pair's. drop 0: a DOUBLE output, ok
    where hi is within an ulp of the exact value (faithful), y = hi."""
    if drop == 0:  # DOUBLE, faithful: hi (the pair's nearest) within an ulp of the exact value
        gap = abs(hi) - _double(_bits(abs(hi)) - 1)  # the smaller gap, toward zero
        ok = (abs(hi) < math.inf) & (lo == lo) & (abs(lo) + SAFETY * err < gap) & (hi != 0.0)
        return hi, ok & (abs(hi) > TINY)
    toward_zero = (lo != 0.0) & ((lo < 0.0) != (hi < 0.0))
    t = hi
    if toward_zero:
        t = _double(_bits(hi) - 1) if hi != 0.0 else hi
    y = _double(_bits(t) | 1) if lo != 0.0 else hi
    b = _bits(hi) & _ABS
    e = b >> 52
    d = drop + max(emin - e, 0)  # the output's subnormal range: more bits dropped
    if e == 2047 or lo != lo or not err <= 1e300:
        return y, False
    r = SAFETY * err
    if e < emin and abs(hi) + abs(lo) + r < 0.5 * _double((emin + drop - 52) << 52):
        return y, True  # all within reach rounds to zero: only its sign is open (flag_far)
    if d > 52:  # below the output's smallest subnormal cell
        if d > 53:
            return y, False
        # y in [cell / 2, cell): it rounds to the cell unless it reaches the midpoint cell / 2,
        # its binade's bottom (the subtraction is exact: the same binade)
        mid = 0.5 * _double((emin + drop - 52) << 52)
        dist = abs((abs(hi) - mid) + _sel(hi < 0.0, -lo, lo)) * (1.0 - 2.0**-52)
        return y, (r < dist) & (hi != 0.0)
    half = 1 << (d - 1)
    ulp = _double((e - 52) << 52)
    mid = _double((_bits(hi) & ~((1 << d) - 1)) | half)  # the midpoint in hi's segment
    dist = abs((hi - mid) + lo) * (1.0 - 2.0**-52)  # hi - mid is exact (same binade)
    bottom = ((b & _MANT) + (half >> 1)) * ulp  # to the midpoint below the binade, about
    ok = (r < dist) & (r < (half >> 1) * ulp) & (r < bottom - abs(lo)) & (hi != 0.0)
    return y, ok


@njit(inline="always")
def dexp_low(a):  # pragma: no cover - compiled
    """ddmath.dexp, but 0 (not a poisoned pair) below -700, where e^a is under 2^-1009: the
    row kernels add that to the bound (a row of exp(x - max) over [1, 1000] has terms of e^-999)."""
    r = dexp(a)
    low = a[0] < -700.0
    return _sel(low, 0.0, r[0]), _sel(low, 0.0, r[1])
