"""aclnnLogSoftmax, from ops-nn activation/log_softmax_v2/docs/aclnnLogSoftmax.md (interface:
tests/oracles/__init__.py, KIND "dim_rows").

out_i = log(e^{x_i} / sum_j e^{x_j}) = x_i - log(sum_j e^{x_j}), the sum over the slice of self
along `dim` (a rank-0 self is one slice of one element: dim 0 and -1). Written here in mpmath
per slice as (x_i - m) - log1p(sum_{j != k} e^{x_j - m}), m = x_k the slice's maximum (the
same number; the shift keeps e^x finite where the formula is evaluated in floating point; both
terms are <= 0, so nothing cancels, and log1p keeps a slice dominated by its maximum exact:
-log(1 + 1e-40) is -1e-40, not 0), the sum exact (mpmath.fsum, the caller's working precision).
IEEE specials follow the formula evaluated in floating point with m subtracted: a NaN in the
slice, a +inf (inf - inf) or a slice of -inf only (-inf - -inf) makes the whole slice NaN; a
-inf element alone is -inf (log 0) and leaves the rest unchanged (torch.log_softmax agrees).
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
    """Normal logits of mixed spreads; in shapes of 4 elements and more a -inf and a 100, in
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
    """log_softmax of one slice: exact mpf elements, or -inf / NaN floats."""
    if any(math.isnan(v) for v in x) or max(x) in (INF, -INF):
        return [NAN] * len(x)
    top = x.index(max(x))
    m = mpmath.mpf(x[top])
    # log(sum_j e^{x_j - m}) = log1p(the sum without one maximum's e^0): no rounding of 1 + tiny
    t = mpmath.fsum(
        mpmath.exp(mpmath.mpf(v) - m) for j, v in enumerate(x) if j != top and v != -INF
    )
    lse = mpmath.log1p(t)
    # x_i - m <= 0 and -lse <= 0: the sum of two of one sign, no cancellation
    return [-INF if v == -INF else (mpmath.mpf(v) - m) - lse for v in x]


def value(a: dict, dim: int) -> np.ndarray:
    """The exact out (an object array of self's shape) from self (float64) and dim."""
    return _dim_rows.per_slice([a["self"]], dim, _row)
