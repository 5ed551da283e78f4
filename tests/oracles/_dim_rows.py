"""What the softmax family's oracles (KIND "dim_rows": softmax, log_softmax and their
backwards) share: their products and shapes, and IEEE arithmetic on exact values (an mpf) or
the special floats NaN and +-inf. Not an oracle (a name starting with `_`)."""

from __future__ import annotations

import math

import mpmath
import numpy as np

PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2", "atlas-inference", "atlas-training")
# ranks 0 to 4, size-1 dims, an odd shape; (2, 9000): rows long enough for the compiled row tiers
SHAPES = ((), (1,), (6,), (4, 1), (3, 5), (1, 6, 2), (3, 5, 7), (2, 1, 3, 4), (2, 9000))
NAN = float("nan")
INF = float("inf")


def num(v: float):
    """An input value: an exact mpf, or the IEEE special float it is."""
    return mpmath.mpf(v) if math.isfinite(v) else v


def mul(a, b):
    """a * b, exact for finite values, IEEE where one is special (a float)."""
    if not isinstance(a, float) and not isinstance(b, float):
        return a * b
    if math.isnan(a) or math.isnan(b) or a == 0 or b == 0:
        return NAN  # NaN, or 0 * inf
    return INF if (a > 0) == (b > 0) else -INF


def sub(a, b):
    """a - b, exact for finite values, IEEE where one is special."""
    if not isinstance(a, float) and not isinstance(b, float):
        return a - b
    if (isinstance(a, float) and math.isnan(a)) or (isinstance(b, float) and math.isnan(b)):
        return NAN
    if isinstance(a, float) and isinstance(b, float):
        return NAN if a == b else a  # inf - inf; inf - -inf
    return a if isinstance(a, float) else -b


def per_slice(arrays: list, dim: int, row) -> np.ndarray:
    """row(slice of each array as float lists) -> the slice's exact elements, applied to every
    slice along `dim` of arrays of one shape (a rank-0 array is one slice of one element); the
    results as an object array of that shape."""
    xs = [np.asarray(a, dtype=np.float64) for a in arrays]
    shape = xs[0].shape
    xs = [x.reshape(shape or (1,)) for x in xs]
    d = dim % xs[0].ndim
    moved = [np.moveaxis(x, d, -1) for x in xs]
    flats = [m.reshape(-1, m.shape[-1]) for m in moved]
    out = np.empty(flats[0].shape, dtype=object)
    for r in range(flats[0].shape[0]):
        out[r, :] = row(*([float(v) for v in f[r]] for f in flats))
    return np.moveaxis(out.reshape(moved[0].shape), -1, d).reshape(shape)


def forward_allowed(param: str, product: str) -> set[str]:
    """softmax / log_softmax's self and out: FLOAT, FLOAT16, DOUBLE, BFLOAT16; Atlas inference /
    training no BFLOAT16."""
    if product in ("atlas-inference", "atlas-training"):
        return {"FLOAT", "FLOAT16", "DOUBLE"}
    return {"FLOAT", "FLOAT16", "DOUBLE", "BF16"}


def backward_allowed(param: str, product: str) -> set[str]:
    """The backwards' gradOutput, output and out: FLOAT, FLOAT16, BFLOAT16; Atlas inference /
    training no BFLOAT16."""
    if product in ("atlas-inference", "atlas-training"):
        return {"FLOAT", "FLOAT16"}
    return {"FLOAT", "FLOAT16", "BF16"}
