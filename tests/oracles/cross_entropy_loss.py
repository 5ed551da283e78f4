"""aclnnCrossEntropyLoss, from ops-nn loss/cross_entropy_loss/docs/aclnnCrossEntropyLoss.md
(interface: tests/oracles/__init__.py, KIND "smoothed_classes").

input x (N, C) with the classes along dim 1; target (N) of class indices or the ignore index;
weightOptional w (C) or null (every class weight 1). Per row n, from the page's 计算公式:

    lse_n = log sum_c exp(x[n, c])
    logProbOut[n, c] = x[n, c] - lse_n
    nll_n = -w[t_n] (x[n, t_n] - lse_n),  0 where t_n is the ignore index

The page gives no label smoothing term; the kernels (op_kernel/cross_entropy_loss.h) add one for
labelSmoothing ls in [0, 1]:

    smooth_n = -sum_c w_c (x[n, c] - lse_n),  0 where t_n is the ignore index
    l_n = (1 - ls) nll_n + ls / C smooth_n

lossOut: {l_n} (N) for "none"; sum_n l_n (1) for "sum"; sum_n l_n / sum_n w[t_n] over the rows
not ignored (1) for "mean". Everything exact in mpmath (at the caller's precision).
Dtypes: input FLOAT, FLOAT16, BFLOAT16 on every product of the page; target INT64; weight FLOAT.
"""

from __future__ import annotations

import mpmath
import numpy as np

KIND = "smoothed_classes"
OUTS = ("lossOut", "logProbOut")
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2")
SHAPES = ((6, 5), (1, 1), (3, 1), (4, 7))  # input's (N, C) shapes
REDUCTIONS = ("none", "mean", "sum")
SMOOTHING = (0.0, 0.25, 1.0)


def allowed(param: str, product: str) -> set[str]:
    """The page's input dtypes (the outputs take input's): FLOAT, FLOAT16, BFLOAT16."""
    return {"FLOAT", "FLOAT16", "BF16"}


def draw(rng, shape, reduction, ignore, weighted):
    """Valid inputs: logits of mixed spread (one row shifted up by 60, where e^x overflows float32
    unless the row's maximum is taken out first), targets in [0, C) with about one in four the
    ignore index (the first row always a class, so the mean's divisor is not 0), a positive
    weight per class or None. `reduction` does not change the inputs' shapes here."""
    n, c = shape
    x = rng.normal(0.0, 1.0, shape) * rng.choice([0.5, 3.0, 12.0], (n, 1))
    if n > 2:
        x[n - 1] += 60.0
    target = rng.integers(0, c, (n,))
    target = np.where(rng.random(n) < 0.25, ignore, target)
    target[0] = rng.integers(0, c)
    return {
        "input": x,
        "target": np.asarray(target, np.int64),
        "weightOptional": rng.uniform(0.25, 3.0, (c,)) if weighted else None,
    }


def _lse(row) -> mpmath.mpf:
    """log sum_c e^x_c, shifted by the row's maximum (exact at the working precision)."""
    m = mpmath.mpf(max(float(v) for v in row))
    return m + mpmath.log(mpmath.fsum(mpmath.exp(mpmath.mpf(float(v)) - m) for v in row))


def value(a: dict, s: dict) -> dict:
    """{lossOut: (N,) or (1,), logProbOut: (N, C)}, object arrays of exact mpf."""
    x, t = a["input"], a["target"]
    n, c = x.shape
    w = (
        [mpmath.mpf(1)] * c
        if a.get("weightOptional") is None
        else [mpmath.mpf(float(v)) for v in a["weightOptional"]]
    )
    ls = mpmath.mpf(s["labelSmoothing"])
    red, ignore = s["reductionOptional"], int(s["ignoreIndex"])
    log_prob = np.empty((n, c), dtype=object)
    rows, divisor = [], []
    for i in range(n):
        lse = _lse(x[i])
        lp = [mpmath.mpf(float(x[i, j])) - lse for j in range(c)]
        log_prob[i, :] = lp
        k = int(t[i])
        if k == ignore:
            rows.append(mpmath.mpf(0))
            continue
        nll = -w[k] * lp[k]
        smooth = -mpmath.fsum(w[j] * lp[j] for j in range(c))
        rows.append((1 - ls) * nll + ls / c * smooth)
        divisor.append(w[k])
    if red == "none":
        total = rows
    elif red == "sum":
        total = [mpmath.fsum(rows)]
    else:
        total = [mpmath.fsum(rows) / mpmath.fsum(divisor)]
    loss = np.empty((len(total),), dtype=object)
    loss[:] = total
    return {"lossOut": loss, "logProbOut": log_prob}
