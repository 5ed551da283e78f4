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

KIND = "dim_rows"
INPUTS = ("gradOutput", "output")
OUT = "out"
DIM = "dim"
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2", "atlas-inference", "atlas-training")
# ranks 0 to 4, size-1 dims, an odd shape; (2, 9000): rows long enough for the compiled row tiers
SHAPES = ((), (1,), (6,), (4, 1), (3, 5), (1, 6, 2), (3, 5, 7), (2, 1, 3, 4), (2, 9000))
NAN = float("nan")
INF = float("inf")


def allowed(param: str, product: str) -> set[str]:
    """gradOutput, output and out: FLOAT, FLOAT16, BFLOAT16; Atlas inference / training no
    BFLOAT16."""
    if product in ("atlas-inference", "atlas-training"):
        return {"FLOAT", "FLOAT16"}
    return {"FLOAT", "FLOAT16", "BF16"}


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


def _num(v: float):
    """An input value: an exact mpf, or the IEEE special float it is."""
    return mpmath.mpf(v) if math.isfinite(v) else v


def _mul(a, b):
    """a * b, exact for finite values, IEEE where one is special (a float)."""
    if not isinstance(a, float) and not isinstance(b, float):
        return a * b
    if math.isnan(a) or math.isnan(b) or a == 0 or b == 0:
        return NAN  # NaN, or 0 * inf
    return INF if (a > 0) == (b > 0) else -INF


def _sub(a, b):
    """a - b, exact for finite values, IEEE where one is special."""
    if not isinstance(a, float) and not isinstance(b, float):
        return a - b
    if (isinstance(a, float) and math.isnan(a)) or (isinstance(b, float) and math.isnan(b)):
        return NAN
    if isinstance(a, float) and isinstance(b, float):
        return NAN if a == b else a  # inf - inf; inf - -inf
    return a if isinstance(a, float) else -b


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
    gs, ys = [_num(v) for v in g], [_num(v) for v in y]
    dot = _sum([_mul(a, b) for a, b in zip(gs, ys, strict=True)])
    return [_mul(b, _sub(a, dot)) for a, b in zip(gs, ys, strict=True)]


def value(a: dict, dim: int) -> np.ndarray:
    """The exact out (an object array of the inputs' shape) from gradOutput and output
    (float64) and dim."""
    g = np.asarray(a["gradOutput"], dtype=np.float64)
    y = np.asarray(a["output"], dtype=np.float64)
    shape = g.shape
    g, y = g.reshape(shape or (1,)), y.reshape(shape or (1,))
    d = dim % g.ndim
    rows = np.moveaxis(g, d, -1)
    gf = rows.reshape(-1, rows.shape[-1])
    yf = np.moveaxis(y, d, -1).reshape(gf.shape)
    out = np.empty(gf.shape, dtype=object)
    for r in range(gf.shape[0]):
        out[r, :] = _row([float(v) for v in gf[r]], [float(v) for v in yf[r]])
    return np.moveaxis(out.reshape(rows.shape), -1, d).reshape(shape)
