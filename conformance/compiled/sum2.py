"""Ogita, Rump and Oishi's Sum2 per row, compiled: the kernel of rowsum.row_sum (imported only
where numba is, the `fast` extra)."""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange


@njit(cache=True, parallel=True, error_model="numpy")
def sum2(x: np.ndarray, out: np.ndarray, redo: np.ndarray) -> None:  # pragma: no cover
    """out[r]: row r of x summed by a cascade of TwoSums (the error terms added in float64);
    redo[r]: the bound g^2 sum |x| (g = n u / (1 - n u)) is not below 2^-60 |out[r]|, or the row
    is not finite, so the numpy way must sum it."""
    rows, n = x.shape
    g = n * 2.0**-53 / (1.0 - n * 2.0**-53)
    for r in prange(rows):
        s = 0.0
        c = 0.0
        a = 0.0
        for j in range(n):
            v = x[r, j]
            t = s + v
            bp = t - s
            c += (s - (t - bp)) + (v - bp)
            s = t
            a += abs(v)
        hi = s + c
        out[r] = hi
        redo[r] = not (math.isfinite(a) and g * g * a <= 2.0**-60 * abs(hi))


@njit(cache=True, parallel=True, error_model="numpy")
def exact_rows(bits: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover
    """out[r]: errbound.exact_sum's test of row r in one pass (bits: the float64 rows viewed
    as int64): every term finite, on one grid 2^k (k the lowest set bit among them; a zero is
    any multiple) with the sum of their magnitudes, rounded up by (1 + 2 n u), below
    2^(k + 53)."""
    rows, n = bits.shape
    grow = 1.0 + 2 * n * 2.0**-53
    for r in prange(rows):
        k = 1 << 20
        total = 0.0
        finite = True
        for j in range(n):
            b = bits[r, j] & 0x7FFFFFFFFFFFFFFF
            expo = b >> 52
            if expo >= 2047:
                finite = False
                break
            sig = b & 0xFFFFFFFFFFFFF
            if expo > 0:
                sig |= 1 << 52
            if sig != 0:
                low = math.frexp(float(sig & -sig))[1] - 1
                k = min(k, low + max(expo, 1) - 1075)
            total += math.ldexp(float(sig), max(expo, 1) - 1075)
        total *= grow
        out[r] = finite and math.isfinite(total) and total < math.ldexp(1.0, min(k, 2000) + 53)
