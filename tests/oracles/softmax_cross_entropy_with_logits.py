"""aclnnSoftmaxCrossEntropyWithLogits, from ops-nn
activation/softmax_cross_entropy_with_logits/docs/aclnnSoftmaxCrossEntropyWithLogits.md
(interface: tests/oracles/__init__.py, KIND "rows").

features x and labels y are 2-D (N, C) of one shape; per row, loss = -sum_i y_i log(softmax(x)_i)
(N) and backprop = softmax(x)_i - y_i (N, C), softmax(x)_i = e^x_i / sum_j e^x_j. Written here in
mpmath from the page's formula: log(softmax(x)_i) = x_i - log(sum_j e^x_j), the sum exact
(math.fsum's mpmath counterpart at 300 bits). IEEE specials follow the formula evaluated in
floating point with the row's maximum subtracted first (the usual way to keep e^x finite): a
NaN or +inf in a row, or a row of -inf only, makes the row's sum NaN and both outputs NaN; a
-inf element has softmax 0 and log-softmax -inf.
Dtypes: FLOAT, FLOAT16, BFLOAT16 (Atlas 训练 / 推理: FLOAT, FLOAT16).
"""

from __future__ import annotations

import math

import mpmath
import numpy as np

KIND = "rows"
INPUTS = ("features", "labels")
OUTS = ("loss", "backprop")
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2", "atlas-inference", "atlas-training")
# (N, C) shapes; (2, 9000) has rows long enough for the reference's compiled row tiers
SHAPES = ((3, 5), (1, 1), (4, 1), (2, 33), (2, 9000))
NAN = float("nan")
INF = float("inf")


def allowed(param: str, product: str) -> set[str]:
    """Every tensor: FLOAT, FLOAT16, BFLOAT16; Atlas training / inference FLOAT, FLOAT16."""
    if product in ("atlas-inference", "atlas-training"):
        return {"FLOAT", "FLOAT16"}
    return {"FLOAT", "FLOAT16", "BF16"}


def draw(rng, shape: tuple[int, int]) -> dict:
    """Random logits (some rows wide, some with a large spread) and labels (probabilities,
    one-hot, or arbitrary reals: the op does not require a distribution); in the small shapes
    a few IEEE specials."""
    n, c = shape
    x = rng.normal(0.0, 1.0, shape) * rng.choice([0.5, 4.0, 40.0], (n, 1))
    y = rng.uniform(-2.0, 3.0, shape)
    if n > 1:
        p = rng.uniform(0.0, 1.0, (1, c))
        y[0] = p / p.sum()  # a distribution
    if n > 2 and c > 1:
        y[1] = 0.0
        y[1, rng.integers(c)] = 1.0  # one-hot
    if n * c <= 40 and c > 1:
        x[-1, 0] = -INF  # softmax 0 there
        if n > 2:
            x[0, -1] = 100.0  # e^100: the shift by the maximum keeps it finite
    return {"features": x, "labels": y}


def _minus(w: float):
    """0 - w: exact for a finite w, IEEE for a special."""
    return -w if not math.isfinite(w) else -mpmath.mpf(w)


def _row(x: list[float], y: list[float]) -> tuple:
    """(loss, [backprop_i]) of one row, each an exact mpf or an IEEE special float."""
    c = len(x)
    m = max(x) if not any(math.isnan(v) for v in x) else NAN
    if not math.isfinite(m):  # a NaN; +inf (x - max NaN there, so the row's sum); 0 / 0
        return NAN, [NAN] * c
    mm = mpmath.mpf(m)
    lse = mm + mpmath.log(mpmath.fsum(mpmath.exp(mpmath.mpf(v) - mm) for v in x if v != -INF))
    terms, back = [], []
    for v, w in zip(x, y, strict=True):
        ls = -INF if v == -INF else mpmath.mpf(v) - lse  # log(softmax(x)_i) <= 0
        soft = 0 if v == -INF else mpmath.exp(ls)
        back.append(_minus(w) if (not math.isfinite(w) or v == -INF) else soft - w)
        # the term y_i * log(softmax(x)_i), IEEE where a factor is special
        if math.isnan(w) or (ls == -INF and w == 0) or (math.isinf(w) and ls == 0):
            terms.append(NAN)
        elif ls == -INF or math.isinf(w):
            terms.append(-INF if w > 0 else INF)  # y * (a negative number or -inf)
        else:
            terms.append(mpmath.mpf(w) * ls)
    specials = [t for t in terms if isinstance(t, float)]
    if any(math.isnan(t) for t in specials) or (INF in specials and -INF in specials):
        return NAN, back
    if specials:
        return -specials[0], back
    return -mpmath.fsum(terms), back


def value(a: dict) -> dict:
    """{output: object array of its exact elements} from the (N, C) float64 inputs."""
    x, y = a["features"], a["labels"]
    n, c = x.shape
    loss = np.empty((n,), dtype=object)
    back = np.empty((n, c), dtype=object)
    for r in range(n):
        loss[r], row = _row([float(v) for v in x[r]], [float(v) for v in y[r]])
        back[r, :] = row
    return {"loss": loss, "backprop": back}
