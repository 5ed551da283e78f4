"""Row sums within an ulp of the exact sum, for the reductions of the formula language.

`row_sum(x)` sums each row of a float64 array (its last axis). Compiled (numba, where the one
switch of conformance/compiled/mode.py allows it, from ROWSUM_MIN elements): Ogita, Rump and Oishi's Sum2 (sum2.py), a
cascade of error-free TwoSums, whose result differs from the exact sum S by at most
u|S| + g^2 sum |x_i| (u = 2^-53, g = n u / (1 - n u)); a row whose second term is not below
2^-60 |result| (heavy cancellation), or that holds an infinity or NaN, is summed again the numpy
way. The numpy way: `math.fsum` per row, the exact sum correctly rounded (an exact sum past
float64's range is the infinity of its sign; a NaN, or infinities of both signs, give NaN as
IEEE addition does).
"""

from __future__ import annotations

import math

import numpy as np

from . import mode

ROWSUM_MIN = 1 << 18  # elements of one call: fewer are summed by math.fsum (no numba load)


def _compiled(size: int) -> bool:
    m = mode.mode()
    if m == "numpy" or (m == "auto" and size < ROWSUM_MIN):
        return False
    return mode.numba_version() is not None


def _fsum(row: np.ndarray) -> float:
    """math.fsum of one row with IEEE semantics for specials and overflow."""
    if not np.isfinite(row).all():
        with np.errstate(invalid="ignore"):
            return float(np.sum(row))  # NaN, inf, or inf - inf = NaN, as IEEE addition gives
    try:
        return math.fsum(row.tolist())
    except OverflowError:  # a partial sum past float64: scaled by a power of two (exact but
        # for subnormal terms, negligible next to such a sum); past float64, the infinity
        k = len(row).bit_length() + 1
        return math.fsum((row * 2.0**-k).tolist()) * 2.0**k


def row_sum_exact(x: np.ndarray) -> np.ndarray:
    """The exact sum of each row of x (float64, last axis), correctly rounded (math.fsum; rows of
    one or two elements by IEEE addition, which is that sum correctly rounded, specials and
    overflow included)."""
    x = np.asarray(x, dtype=np.float64)
    out = np.empty(x.shape[:-1])
    if x.shape[-1] == 0:
        out[...] = 0.0
        return out
    if x.shape[-1] <= 2:  # a row per element of a reduction over a size-1 dim: no Python loop
        with np.errstate(all="ignore"):
            out[...] = x[..., 0] + x[..., 1] if x.shape[-1] == 2 else x[..., 0]
        return out
    if x.shape[-1] <= SHORT and x.size >= SHORT_ROWS * x.shape[-1]:
        return _sum2_short(x)
    flat = x.reshape(-1, x.shape[-1])
    out.reshape(-1)[:] = _fsum_rows(flat, np.arange(flat.shape[0]))
    return out


def _fsum_rows(flat: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """_fsum of the rows `rows` of a 2-D array: the finite ones by one list comprehension (a
    million short rows: seconds, not a minute of numpy calls per row)."""
    out = np.empty(rows.size)
    sub = flat[rows]
    finite = np.isfinite(sub).all(axis=1)
    fin = np.flatnonzero(finite)
    try:
        out[fin] = [math.fsum(r) for r in sub[fin].tolist()]
    except OverflowError:  # an exact sum past float64: row by row
        out[fin] = [_fsum(r) for r in sub[fin]]
    if not finite.all():  # NaN, inf, or inf - inf = NaN, as IEEE addition gives (as _fsum)
        with np.errstate(invalid="ignore"):
            out[~finite] = np.sum(sub[~finite], axis=1)
    return out


SHORT = 64  # rows of at most this many elements, SHORT_ROWS of them or more: Sum2 in numpy
SHORT_ROWS = 256


def _sum2_short(x: np.ndarray) -> np.ndarray:
    """Sum2 (as sum2.py) over short rows, one numpy pass per column instead of a Python call
    per row; a row whose bound is not below 2^-60 of its sum, or that is not finite, by fsum."""
    flat = x.reshape(-1, x.shape[-1])
    n = flat.shape[1]
    g = n * 2.0**-53 / (1.0 - n * 2.0**-53)
    s = np.zeros(flat.shape[0])
    c = np.zeros(flat.shape[0])
    a = np.zeros(flat.shape[0])
    with np.errstate(all="ignore"):
        for j in range(n):
            v = flat[:, j]
            t = s + v
            bp = t - s
            c += (s - (t - bp)) + (v - bp)
            s = t
            a += np.abs(v)
        hi = s + c
        redo = ~(np.isfinite(a) & (g * g * a <= 2.0**-60 * np.abs(hi)))
    redo = np.flatnonzero(redo)
    if redo.size:
        hi[redo] = _fsum_rows(flat, redo)
    return hi.reshape(x.shape[:-1])


def row_sum(x: np.ndarray) -> np.ndarray:
    """Each row's sum (x's last axis) of a float64 array: within an ulp of the exact sum (see the
    module docstring); shape x.shape[:-1]."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 0:
        return x.copy()
    if x.shape[-1] == 0 or not _compiled(x.size):
        return row_sum_exact(x)
    from .sum2 import sum2  # numba is imported only where the compiled path runs

    flat = np.ascontiguousarray(x.reshape(-1, x.shape[-1]))
    out = np.empty(flat.shape[0])
    redo = np.empty(flat.shape[0], np.bool_)
    sum2(flat, out, redo)
    redo = np.flatnonzero(redo)
    if redo.size:
        out[redo] = _fsum_rows(flat, redo)
    return out.reshape(x.shape[:-1])


def row_exact(x: np.ndarray) -> np.ndarray | None:
    """errbound.exact_sum's mask (x.shape[:-1]) computed in one compiled pass where the one
    switch and the size allow (as row_sum), else None (the caller's numpy way)."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 0 or x.shape[-1] == 0 or not _compiled(x.size):
        return None
    from .sum2 import exact_rows  # numba is imported only where the compiled path runs

    flat = np.ascontiguousarray(x.reshape(-1, x.shape[-1]))
    out = np.empty(flat.shape[0], np.bool_)
    exact_rows(flat.view(np.int64), out)
    return out.reshape(x.shape[:-1])
