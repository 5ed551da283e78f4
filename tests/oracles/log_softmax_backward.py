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


def _num(v: float):
    """An input value: an exact mpf, or the IEEE special float it is."""
    return mpmath.mpf(v) if math.isfinite(v) else v


def _mul(a, b):
    """a * b, at the working precision for finite values, IEEE where one is special."""
    if not isinstance(a, float) and not isinstance(b, float):
        return a * b
    if math.isnan(a) or math.isnan(b) or a == 0 or b == 0:
        return NAN  # NaN, or 0 * inf
    return INF if (a > 0) == (b > 0) else -INF


def _sub(a, b):
    """a - b, at the working precision for finite values, IEEE where one is special."""
    if not isinstance(a, float) and not isinstance(b, float):
        return a - b
    if (isinstance(a, float) and math.isnan(a)) or (isinstance(b, float) and math.isnan(b)):
        return NAN
    if isinstance(a, float) and isinstance(b, float):
        return NAN if a == b else a  # inf - inf; inf - -inf
    return a if isinstance(a, float) else -b


def _exp(v: float):
    """exp(y): 0 (exact) at -inf, IEEE at +inf and NaN."""
    if v == -INF:
        return mpmath.mpf(0)
    return mpmath.exp(mpmath.mpf(v)) if math.isfinite(v) else v


def _row(g: list[float], y: list[float]) -> list:
    """gradInput of one slice: mpf elements, or IEEE special floats."""
    gs = [_num(v) for v in g]
    specials = [v for v in g if not math.isfinite(v)]
    if any(math.isnan(v) for v in specials) or (INF in specials and -INF in specials):
        total = NAN
    else:
        total = specials[0] if specials else mpmath.fsum(gs)
    return [_sub(a, _mul(_exp(b), total)) for a, b in zip(gs, y, strict=True)]


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
