"""The gradient of the negative log likelihood over a class dim, shared by the NLL backward
oracles (not an oracle itself: its name starts with `_`). Written from
loss/nll_loss_grad/docs/aclnnNLLLossBackward.md's formula alone:

    x_grad[.., c, ..] = -g * w[target] (/ totalWeight for mean)  where c is the target
                        0                                        elsewhere

and the ignore index "不影响输入梯度" (its rows get 0). Inputs are drawn by `draw`.
"""

from __future__ import annotations

import itertools

import mpmath
import numpy as np


def nll_grad(g, target, w, total, shape, dim, reduction, ignore):
    """The exact gradient (an object array of mpf, `shape`): g is an array of the target's
    shape for reduction 0, else one value; every input an exact float64 value."""
    dim %= len(shape)
    out = np.empty(shape, dtype=object)
    for idx in itertools.product(*(range(n) for n in shape)):
        rest = idx[:dim] + idx[dim + 1 :]
        t = int(target[rest]) if rest else int(target)
        if t == ignore or idx[dim] != t:
            out[idx] = mpmath.mpf(0)
            continue
        gv = mpmath.mpf(float(np.reshape(g, -1)[0] if reduction else g[rest]))
        v = -gv * mpmath.mpf(float(w[t]))
        out[idx] = v / mpmath.mpf(float(np.reshape(total, -1)[0])) if reduction == 1 else v
    return out


def draw(rng, shape, dim, reduction, ignore, g_shape):
    """Valid inputs for a self of `shape` (class dim `dim`): targets in [0, C) with about one in
    five the ignore index, a weight per class, gradOutput of the row shape (reduction 0) or
    `g_shape`, a total weight (1,)."""
    dim %= len(shape)
    c = shape[dim]
    rows = shape[:dim] + shape[dim + 1 :]
    target = rng.integers(0, c, rows)
    target = np.where(rng.random(rows) < 0.2, ignore, target)
    return {
        "gradOutput": rng.uniform(-4, 4, rows if reduction == 0 else g_shape),
        "self": rng.uniform(-4, 4, shape),
        "target": np.asarray(target, np.int64),
        "weight": rng.uniform(-2, 3, c),
        "totalWeight": rng.uniform(0.5, 20, (1,)),
    }
