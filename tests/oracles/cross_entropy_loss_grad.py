"""aclnnCrossEntropyLossGrad, from ops-nn loss/cross_entropy_loss_grad/docs/aclnnCrossEntropyLossGrad.md
(interface: tests/oracles/__init__.py, KIND "smoothed_classes").

logProb (N, C), class dim -1; target (N); weightOptional (C) or null (every weight 1); gradLoss
(N) for reduction "none", else 0-D. The page's formula without zloss, per row n and class c, with
m_n = 1 where target n is not the ignore index (else 0), p = exp(logProb), ls the label smoothing,
D = sum_n w[t_n] m_n (the mean's divisor, 1 otherwise), W = sum_c w_c:

    nllLossGrad_n    = g_n (1 - ls) m_n w[t_n] / D
    smoothLossGrad_n = g_n ls / C m_n / D
    out[n, c] = p nllLossGrad_n - 1{c = t_n} nllLossGrad_n + p smoothLossGrad_n W - smoothLossGrad_n w_c

Dtypes: FLOAT16, FLOAT, BFLOAT16 on every product of the page.
"""

from __future__ import annotations

import mpmath
import numpy as np

KIND = "smoothed_classes"
OUTS = ("out",)
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2")
SHAPES = ((6, 5), (1, 1), (3, 1), (4, 7))  # logProb's shapes
REDUCTIONS = ("none", "mean", "sum")
SMOOTHING = (0.0, 0.25, 1.0)


def allowed(param: str, product: str) -> set[str]:
    return {"FLOAT", "FLOAT16", "BF16"}


def draw(rng, shape, reduction, ignore, weighted):
    """Valid inputs: logProb as log-softmax rows of random logits, targets in [0, C) with about
    one in five the ignore index (at least one target kept), a weight per class or None, gradLoss
    per row (none) or 0-D."""
    n, c = shape
    x = rng.uniform(-4, 4, shape)
    m = x.max(axis=1, keepdims=True)
    lp = x - m - np.log(np.exp(x - m).sum(axis=1, keepdims=True))
    target = rng.integers(0, c, (n,))
    target = np.where(rng.random(n) < 0.2, ignore, target)
    target[0] = rng.integers(0, c)
    return {
        "gradLoss": rng.uniform(-4, 4, (n,) if reduction == "none" else ()),
        "logProb": lp,
        "target": np.asarray(target, np.int64),
        "weightOptional": rng.uniform(0.25, 3, (c,)) if weighted else None,
    }


def value(a: dict, s: dict):
    """{"out": the exact gradient, an object array of mpf of logProb's shape}."""
    lp, t, g = a["logProb"], a["target"], a["gradLoss"]
    n, c = lp.shape
    w = (
        [mpmath.mpf(1)] * c
        if a["weightOptional"] is None
        else [mpmath.mpf(float(v)) for v in a["weightOptional"]]
    )
    ls = mpmath.mpf(s["labelSmoothing"])
    red, ignore = s["reductionOptional"], s["ignoreIndex"]
    mask = [0 if int(t[i]) == ignore else 1 for i in range(n)]
    big_w = mpmath.fsum(w)
    den = mpmath.fsum(w[int(t[i])] for i in range(n) if mask[i]) if red == "mean" else mpmath.mpf(1)
    out = np.empty((n, c), dtype=object)
    for i in range(n):
        gi = mpmath.mpf(float(g[i] if red == "none" else np.reshape(g, -1)[0]))
        if not mask[i]:
            out[i, :] = [mpmath.mpf(0)] * c
            continue
        nll = gi * (1 - ls) * w[int(t[i])] / den
        smooth = gi * ls / c / den
        for j in range(c):
            p = mpmath.exp(mpmath.mpf(float(lp[i, j])))
            out[i, j] = (
                p * nll - (nll if j == int(t[i]) else 0) + p * smooth * big_w - smooth * w[j]
            )
    return {"out": out}
