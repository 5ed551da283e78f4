"""aclnnMultilabelMarginLoss, from ops-nn loss/multilabel_margin_loss/docs/aclnnMultilabelMarginLoss.md
and the kernel it documents (interface: tests/oracles/__init__.py, KIND "target_lists").

self is (N, C), (C) or () (one row of one class); target has self's shape. Per row, the targets
are the row's entries before its first -1 (an entry outside [0, C) is skipped: the kernel's
BuildMasks); isTarget[k] is 1 where some target is k. The row's loss is the sum, over every
target entry y_j (a repeated class counted each time) and every class i that is no target, of
max(0, 1 - x[y_j] + x[i]) (the kernel's and PyTorch's hinge; the page writes 1 - x[j] - x[i]),
divided by C; a hinge that IEEE arithmetic makes NaN (a NaN logit, or x[y_j] and x[i] the same
infinity) counts 0, as the kernel and PyTorch add a hinge only where it is > 0. Reduction 0:
the rows' losses ((N), () for a 1-D or 0-d self); 1: their mean; 2: their sum.

Computed with Fractions: every finite logit is a binary fraction, each hinge, each row's sum and
the division by C (or N C) exact; an infinite hinge is +inf (a sum holding one is +inf: a hinge is
never -inf, max(0, .) clamps it). Independent of the code under test: no import of it, no spec.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from tests.oracles._common import bf16_if_a2

KIND = "target_lists"
OUTS = ("out", "isTarget")
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2", "atlas-training")
SHAPES = ((5, 7), (7,), (), (1, 1), (3, 1), (1, 9), (4, 16))  # self's shapes
REDUCTIONS = (0, 1, 2)
INF = math.inf


def allowed(param: str, product: str) -> set[str]:
    """The page lists FLOAT、FLOAT16、BFLOAT16 for self, out and isTarget; the op_api keys BF16
    on the SoC (A2, A3, 950: not Atlas 训练系列产品); target INT32、INT64."""
    if param == "target":
        return {"INT32", "INT64"}
    return bf16_if_a2(product, ["FLOAT", "FLOAT16"])


def draw(rng: np.random.Generator, shape: tuple[int, ...]) -> dict[str, np.ndarray]:
    """self normal (scaled by 3: every hinge's sign occurs), target lists ended by -1 at a random
    length per row (repeats included), entries after the first -1 random classes or -1."""
    x = rng.standard_normal(shape) * 3
    c = shape[-1] if shape else 1
    rows = int(np.prod(shape[:-1], dtype=np.int64)) if len(shape) > 1 else 1
    t = rng.integers(0, c, (rows, c))
    for r in range(rows):
        stop = int(rng.integers(0, c + 1))
        if stop < c:
            t[r, stop] = -1
            after = rng.random(c - stop - 1) < 0.5
            t[r, stop + 1 :][after] = -1
    return {"self": x, "target": t.reshape(shape)}


def _targets(row: np.ndarray, c: int) -> list[int]:
    """The row's target entries: those before its first -1, in [0, C)."""
    out = []
    for v in row.tolist():
        if v == -1:
            break
        if 0 <= v < c:
            out.append(int(v))
    return out


def _hinge(xy: float, xi: float) -> Fraction | float:
    """max(0, 1 - xy + xi) exactly, +inf where it is infinite, 0 where IEEE gives NaN."""
    if math.isnan(xy) or math.isnan(xi):
        return Fraction(0)
    if math.isinf(xy) or math.isinf(xi):
        if xy == xi:  # inf - inf: NaN in IEEE
            return Fraction(0)
        z = (-xy if math.isinf(xy) else 0.0) + (xi if math.isinf(xi) else 0.0)
        return INF if z > 0 else Fraction(0)
    z = 1 - Fraction(xy) + Fraction(xi)
    return z if z > 0 else Fraction(0)


def row_loss(x: np.ndarray, t: np.ndarray) -> tuple[Fraction | float, list[int]]:
    """(the row's sum of hinges, not yet divided by C; the row's isTarget)."""
    c = x.size
    ys = _targets(t, c)
    mask = [0] * c
    for y in ys:
        mask[y] = 1
    total: Fraction | float = Fraction(0)
    for y in ys:
        for i in range(c):
            if not mask[i]:
                h = _hinge(float(x[y]), float(x[i]))
                total = INF if (h == INF or total == INF) else total + h  # type: ignore[operator]
    return total, mask


def value(arrays: dict[str, np.ndarray], reduction: int) -> dict[str, np.ndarray]:
    """{out: object array of Fractions (INF where infinite), isTarget: float array}, in the shapes
    of the outputs (out: (N) for reduction 0 and a 2-D self, () otherwise)."""
    x, t = arrays["self"], arrays["target"]
    shape = x.shape
    c = shape[-1] if shape else 1
    xr, tr = x.reshape(-1, c), t.reshape(-1, c)
    sums, masks = [], []
    for r in range(xr.shape[0]):
        s, m = row_loss(xr[r], tr[r])
        sums.append(s)
        masks.append(m)
    is_target = np.array(masks, dtype=np.float64).reshape(shape)
    losses = [s if s == INF else s / c for s in sums]
    if reduction == 0:
        out = np.empty(shape[:-1] if len(shape) == 2 else (), dtype=object)
        out.reshape(-1)[:] = losses
        return {"out": out, "isTarget": is_target}
    total = INF if INF in sums else sum(sums, Fraction(0))
    if reduction == 1 and total != INF:
        total = total / (c * len(sums))
    elif total != INF:
        total = total / c
    out = np.empty((), dtype=object)
    out[()] = total
    return {"out": out, "isTarget": is_target}


# Hand-picked rows (self, target) the drawn ones rarely hold; each is a (2-D) call of its own.
HARD = [
    # the page's example: y = [0, 3, -1, 1] lists 0 and 3 (1 after the -1 is read by nothing)
    ([[0.1, 0.2, 0.4, 0.8]], [[3, 0, -1, 1]]),
    # a repeated target counts twice; a row of -1 alone; a row with no -1
    ([[0.5, -0.25, 2.0], [1.0, 1.0, 1.0], [0.0, 3.0, -3.0]], [[2, 2, -1], [-1, -1, -1], [0, 1, 2]]),
    # ties at the hinge: 1 - x[y] + x[i] == 0 exactly (x[y] - x[i] = 1), and just above / below
    ([[1.0, 0.0, 0.5, 2.0**-24]], [[0, -1, 0, 0]]),
    ([[1.0 + 2.0**-10, 0.0, 2.0**-10, -(2.0**-10)]], [[0, -1, 3, 3]]),
    # huge and tiny magnitudes: hinges of 6e4 (FLOAT16's range), 1e38, and of 1 +- 2^-133
    ([[60000.0, -60000.0, 1.0, -1.0]], [[1, 2, -1, 0]]),
    ([[3.0e38, -3.0e38, 1.0e-40, -1.0e-40]], [[1, -1, 0, 0]]),
    ([[1.0e-40, -1.0e-40, 2.0**-133, 1.0]], [[0, 3, -1, 2]]),
    # infinities and NaN: an infinite hinge, inf - inf (counted 0), NaN (counted 0)
    ([[math.inf, 1.0, math.inf, 2.0]], [[0, -1, 1, 1]]),
    ([[-math.inf, 1.0, 0.0, 2.0]], [[0, 3, -1, -1]]),
    ([[math.nan, 0.2, math.inf, 0.8]], [[1, -1, 0, 0]]),
    ([[math.nan, 0.2, 0.4, 0.8]], [[0, -1, 0, 0]]),
    # every class a target: no hinge at all
    ([[0.3, -0.7, 5.0]], [[2, 0, 1]]),
]
