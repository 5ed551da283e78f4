"""Rounding an exact value (an mpmath mpf) to a float dtype, to nearest, ties to even: written
independently of conformance.acl.dtypes so that tests can check the engine's rounding with it."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import ml_dtypes
import mpmath
import numpy as np

NP = {
    "FLOAT": np.dtype(np.float32),
    "FLOAT16": np.dtype(np.float16),
    "BF16": np.dtype(ml_dtypes.bfloat16),
    "DOUBLE": np.dtype(np.float64),
}
SHORT = {"FLOAT": "f32", "FLOAT16": "f16", "BF16": "bf16", "DOUBLE": "f64"}
UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}
# Where each dtype overflows when rounding with an unbounded exponent: the value "inf" stands for.
OVERFLOW = {
    "FLOAT": mpmath.mpf(2) ** 128,
    "FLOAT16": mpmath.mpf(2) ** 16,
    "BF16": mpmath.mpf(2) ** 128,
}


def _candidates(a: float, dtype: str) -> list[np.generic]:
    """Representable non-negative values of `dtype` around the float64 approximation `a` >= 0."""
    t = NP[dtype]
    if dtype == "BF16":
        with np.errstate(over="ignore"):
            f = np.float32(a)
        top = int(f.view(np.uint32)) >> 16  # bf16 truncation of the float32 value
        pats = [p for p in range(top - 1, top + 3) if 0 <= p <= 0x7F80]
        return list(np.array(pats, dtype=np.uint16).view(ml_dtypes.bfloat16))
    with np.errstate(over="ignore"):
        c = t.type(a)
        up = np.nextafter(c, t.type(np.inf))
        down = np.nextafter(c, t.type(0))
    return [v for v in {c, up, down} if not np.isnan(v) and v >= 0]


def round_exact(v: Any, dtype: str) -> np.generic:
    """Round an exact value (mpf, or Fraction where a tie must be seen exactly) or an IEEE
    special (float) to `dtype`, to nearest, ties to even."""
    t = NP[dtype]
    if isinstance(v, Fraction):
        return _round_fraction(v, dtype)
    if isinstance(v, float):
        if not math.isfinite(v) or v == 0:
            return t.type(v)
        v = mpmath.mpf(v)
    if v == 0:
        return t.type(0.0)
    if dtype == "DOUBLE":
        return np.float64(float(v))  # mpmath converts to the nearest double
    sign, a = (-1, -v) if v < 0 else (1, v)
    best = None
    # the distances exactly, whatever precision the caller works at (a 300-bit value minus a
    # candidate at mpmath's default 53 bits would make a near-midpoint a false tie)
    with mpmath.workprec(4096):
        for c in _candidates(float(a), dtype):
            val = OVERFLOW[dtype] if np.isinf(c) else mpmath.mpf(float(c))
            dist = abs(val - a)
            bits = int(np.asarray(c).view(UINT[t.itemsize]))
            key = (dist, bits & 1)  # nearest first, then the even bit pattern
            if best is None or key < best[0]:
                best = (key, c)
    assert best is not None
    c = best[1]
    return t.type(-c if sign < 0 else c)


def _round_fraction(v: Fraction, dtype: str) -> np.generic:
    """round_exact for a rational: distances compared exactly, so an exact tie is one."""
    t = NP[dtype]
    if v == 0:
        return t.type(0.0)
    if dtype == "DOUBLE":
        return np.float64(float(v))  # int / int: correctly rounded
    a = abs(v)
    best = None
    for c in _candidates(float(a), dtype):
        val = Fraction(int(OVERFLOW[dtype])) if np.isinf(c) else Fraction(float(c))
        bits = int(np.asarray(c).view(UINT[t.itemsize]))
        key = (abs(val - a), bits & 1)
        if best is None or key < best[0]:
            best = (key, c)
    assert best is not None
    return t.type(-best[1] if v < 0 else best[1])


def mismatches(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Flat indices where two arrays of one float dtype differ bit for bit, a zero of either
    sign matching the other (docs/reference-engine.md: where every value within the bound
    rounds to zero, the reference keeps float64's sign; the comparison takes -0 for +0)."""
    bits = {2: np.uint16, 4: np.uint32, 8: np.uint64}[got.dtype.itemsize]
    g, w = np.asarray(got).ravel(), np.asarray(want).ravel()
    differ = g.view(bits) != w.view(bits)
    return np.flatnonzero(differ & ~((g == 0) & (w == 0)))
