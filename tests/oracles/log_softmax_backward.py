"""aclnnLogSoftmaxBackward, from ops-nn
activation/log_softmax_grad/docs/aclnnLogSoftmaxBackward.md (interface: tests/oracles/__init__.py,
KIND "dim_rows").

gradInput_i = g_i - exp(y_i) * sum_j g_j, g = gradOutput and y = output (the forward's
log_softmax, given as an input tensor), the sum over the slice along `dim` (a rank-0 tensor is
one slice of one element: dim 0 and -1). Written here in mpmath per slice: the sum exact
(mpmath.fsum at the caller's working precision), exp(y_i) * sum and the difference at that
precision (y = 0, a probability of 1, gives the exact g_i - sum; y need not be a log_softmax:
the op takes any y).
IEEE specials follow the formula evaluated in floating point: a NaN, or +inf and -inf, in the
slice's gradOutput make its sum NaN and the whole slice NaN (exp(y) * NaN, even where y = -inf:
0 * NaN); an infinite sum gives exp(y_i) * inf (NaN where y_i = -inf, 0 * inf) and g_i minus
it IEEE; y_i = -inf alone (a probability of 0) gives exp(y_i) = 0, the gradient g_i.
Dtypes (gradOutput, output, out): FLOAT, FLOAT16, BFLOAT16 on Atlas A2 / A3 / Ascend 950;
FLOAT, FLOAT16 on Atlas 推理 / 训练.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np

from tests.oracles import _dim_rows
from tests.oracles._dim_rows import INF, NAN, mul, num, sub

KIND = "dim_rows"
INPUTS = ("gradOutput", "output")
OUT = "out"
DIM = "dim"
PRODUCTS, SHAPES = _dim_rows.PRODUCTS, _dim_rows.SHAPES
allowed = _dim_rows.backward_allowed


def draw(rng, shape: tuple) -> dict:
    """output: the log_softmax along the last dim of normal logits of mixed spreads (a -inf
    logit in shapes of 4 elements and more: y = -inf there; a last dim of 1: y = 0), a fifth of
    it replaced by arbitrary values in [-8, 1]; gradOutput normal; in the small shapes of 24
    elements and more a NaN and a +inf gradOutput."""
    x = rng.normal(0.0, 1.0, shape) * rng.choice([0.5, 4.0, 40.0], shape)
    n = x.size
    if n >= 4 and shape[-1] > 1:
        x.flat[0] = -INF
    if shape:
        z = x - x.max(axis=-1, keepdims=True)
        y = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    else:
        y = np.zeros(shape)
    arbitrary = rng.random(shape) < 0.2
    arbitrary.flat[0] = False
    y[arbitrary] = rng.uniform(-8.0, 1.0, shape)[arbitrary]
    g = rng.normal(0.0, 2.0, shape)
    if 24 <= n <= 200:
        g.flat[n // 3] = NAN
        g.flat[-1] = INF
    return {"gradOutput": g, "output": y}


def _exp(v: float):
    """exp(y): 0 (exact) at -inf, IEEE at +inf and NaN."""
    if v == -INF:
        return mpmath.mpf(0)
    return mpmath.exp(mpmath.mpf(v)) if math.isfinite(v) else v


def _row(g: list[float], y: list[float]) -> list:
    """gradInput of one slice: mpf elements, or IEEE special floats."""
    gs = [num(v) for v in g]
    specials = [v for v in g if not math.isfinite(v)]
    if any(math.isnan(v) for v in specials) or (INF in specials and -INF in specials):
        total = NAN
    else:
        total = specials[0] if specials else mpmath.fsum(gs)
    return [sub(a, mul(_exp(b), total)) for a, b in zip(gs, y, strict=True)]


def value(a: dict, dim: int) -> np.ndarray:
    """The exact out (an object array of the inputs' shape) from gradOutput and output
    (float64) and dim."""
    return _dim_rows.per_slice([a["gradOutput"], a["output"]], dim, _row)
