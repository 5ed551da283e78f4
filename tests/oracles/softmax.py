"""aclnnSoftmax, from ops-nn activation/softmax_v2/docs/aclnnSoftmax.md (interface:
tests/oracles/__init__.py, KIND "dim_rows").

out_i = e^{x_i} / sum_j e^{x_j}, the sum over the slice of self along `dim` (a rank-0 self is one
slice of one element: dim 0 and -1). Written here in mpmath per slice from the page's formula
with the slice's maximum m subtracted first (the page's way to keep e^x finite; exact in mpmath:
e^{x_i - m} / sum_j e^{x_j - m} is the same number), the sum exact (mpmath.fsum, the caller's
working precision).
IEEE specials follow the formula evaluated in floating point with m subtracted: a NaN in the
slice, a +inf (inf - inf in its own term, so in the sum) or a slice of -inf only (-inf - -inf)
makes the whole slice NaN; a -inf element alone gives e^-inf = 0 and leaves the rest unchanged
(the masked-logit case; torch.softmax agrees on each of these).
Dtypes (self and out): FLOAT, FLOAT16, DOUBLE, BFLOAT16; Atlas 推理 / 训练: FLOAT, FLOAT16,
DOUBLE.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np

from tests.oracles import _dim_rows
from tests.oracles._dim_rows import INF, NAN

KIND = "dim_rows"
INPUTS = ("self",)
OUT = "out"
DIM = "dim"
PRODUCTS, SHAPES = _dim_rows.PRODUCTS, _dim_rows.SHAPES
allowed = _dim_rows.forward_allowed


def draw(rng, shape: tuple) -> dict:
    """Normal logits of mixed spreads (some slices dominated by one element); in shapes of 4
    elements and more a -inf (a masked logit) and a 100 (e^100 overflows float32 unshifted), in
    the small ones of 24 and more also a +inf and a NaN (their slices NaN)."""
    x = rng.normal(0.0, 1.0, shape) * rng.choice([0.5, 4.0, 40.0], shape)
    n = x.size
    if n >= 4:
        x.flat[0] = -INF
        x.flat[n // 2] = 100.0
    if 24 <= n <= 200:
        x.flat[-1] = INF
        x.flat[n // 3] = NAN
    return {"self": x}


def _row(x: list[float]) -> list:
    """softmax of one slice: exact mpf elements, or NaN floats."""
    if any(math.isnan(v) for v in x) or max(x) in (INF, -INF):
        return [NAN] * len(x)
    m = mpmath.mpf(max(x))
    e = [mpmath.mpf(0) if v == -INF else mpmath.exp(mpmath.mpf(v) - m) for v in x]
    s = mpmath.fsum(e)  # >= 1: the maximum's term is e^0
    return [t / s for t in e]


def value(a: dict, dim: int) -> np.ndarray:
    """The exact out (an object array of self's shape) from self (float64) and dim."""
    return _dim_rows.per_slice([a["self"]], dim, _row)
