"""aclnnSoftmaxBackward, from ops-nn activation/softmax_grad/docs/aclnnSoftmaxBackward.md
(interface: tests/oracles/__init__.py, KIND "dim_rows").

gradInput_i = y_i * (g_i - sum_j g_j y_j), g = gradOutput and y = output (the forward's
softmax, given as an input tensor), the sum over the slice along `dim` (a rank-0 tensor is one
slice of one element: dim 0 and -1). Written here in mpmath per slice: the products g_j y_j
are exact at the caller's working precision (106 bits of two doubles), their sum exact
(mpmath.fsum) for the dtypes' exponent ranges at 300 bits, so the value is the exact rational
the formula gives on the input values (y need not be a softmax: the op takes any y).
IEEE specials follow the formula evaluated in floating point: a NaN or 0 * inf product, or
+inf and -inf products in one slice, make the slice's sum NaN and the whole slice NaN; an
infinite product makes the sum that infinity; then g_i - sum and y_i * (...) are IEEE (inf -
inf and 0 * inf NaN). Finite inputs never overflow: the value is the exact one, however large.
Dtypes (gradOutput, output, out): FLOAT, FLOAT16, BFLOAT16 on Atlas A2 / A3 / Ascend 950;
FLOAT, FLOAT16 on Atlas 推理 / 训练 (the page lists BFLOAT16 for every product, but the op_api
accepts BF16 only on the SoCs of A2 and later: the check the call meets).
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
    """output: the softmax along the last dim of normal logits of mixed spreads (a -inf logit in
    shapes of 4 elements and more: y = 0 there; a last dim of 1: y = 1), a fifth of it replaced
    by arbitrary values in [-0.5, 1.5]; gradOutput normal; in the small shapes of 24 elements
    and more a NaN and a +inf gradOutput."""
    x = rng.normal(0.0, 1.0, shape) * rng.choice([0.5, 4.0, 40.0], shape)
    n = x.size
    if n >= 4 and shape[-1] > 1:
        x.flat[0] = -INF
    if shape:
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        y = e / e.sum(axis=-1, keepdims=True)
    else:
        y = np.ones(shape)
    arbitrary = rng.random(shape) < 0.2
    arbitrary.flat[0] = False
    y[arbitrary] = rng.uniform(-0.5, 1.5, shape)[arbitrary]
    g = rng.normal(0.0, 2.0, shape)
    if 24 <= n <= 200:
        g.flat[n // 3] = NAN
        g.flat[-1] = INF
    return {"gradOutput": g, "output": y}


def _sum(terms: list):
    """The IEEE sum of exact or special terms: exact (mpmath.fsum) where all are finite."""
    specials = [t for t in terms if isinstance(t, float)]
    if any(math.isnan(t) for t in specials) or (INF in specials and -INF in specials):
        return NAN
    if specials:
        return specials[0]
    return mpmath.fsum(terms)


def _row(g: list[float], y: list[float]) -> list:
    """gradInput of one slice: exact mpf elements, or IEEE special floats."""
    gs, ys = [num(v) for v in g], [num(v) for v in y]
    dot = _sum([mul(a, b) for a, b in zip(gs, ys, strict=True)])
    return [mul(b, sub(a, dot)) for a, b in zip(gs, ys, strict=True)]


def value(a: dict, dim: int) -> np.ndarray:
    """The exact out (an object array of the inputs' shape) from gradOutput and output
    (float64) and dim."""
    return _dim_rows.per_slice([a["gradOutput"], a["output"]], dim, _row)
