"""aclnnSmoothL1LossBackward, from ops-nn loss/smooth_l1_loss_grad_v2/docs/aclnnSmoothL1LossBackward.md
(the derivative of aclnnSmoothL1Loss.md's loss: (x - y) / beta where |x - y| < beta, sign(x - y)
otherwise; the page writes it for beta = 1), times gradOut (interface: tests/oracles/__init__.py,
KIND "elementwise"). beta is a C `float` in the prototype: 0.1 stands for its float32 value,
13421773 * 2^-27, written out here. Reductions none and sum only: the mean's 1/n depends on the
whole shape.
"""

from __future__ import annotations

import math

import mpmath

KIND = "elementwise"
OUT = "gradInput"
INPUTS = ("gradOut", "self", "target")
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2", "atlas-inference", "atlas-training")
FLOAT32_BETA = {0.1: 13421773 * 2.0**-27, 1.0: 1.0, 0.0: 0.0, 2.5: 2.5}


def _sign(v):
    return (v > 0) - (v < 0) if v == v else math.nan


def value(t: dict, s: dict):
    g, x, y = (t[n] for n in INPUTS)
    beta = FLOAT32_BETA[float(s["beta"])]
    if any(isinstance(v, float) for v in (g, x, y)):  # a NaN or an infinity: float64 semantics
        d = float(x) - float(y)
        slope = d / beta if abs(d) < beta else _sign(d)
        return float(g) * slope
    d = x - y
    slope = d / mpmath.mpf(beta) if abs(d) < beta else _sign(d)
    return g * slope


SETTINGS: list[dict] = [{"reduction": r, "beta": b} for r in (0, 2) for b in (1.0, 0.1, 0.0, 2.5)]
DOMAIN = {"gradOut": (-4.0, 4.0), "self": (-3.0, 3.0), "target": (-3.0, 3.0)}
SPECIAL = [0.0, 1.0, -1.0, 0.1, 2.5, float("inf"), float("-inf"), float("nan")]


def allowed(param: str, product: str) -> set[str]:
    """FLOAT, FLOAT16 and BFLOAT16 on the page; BF16 only with the 910B list (A2, A3, 950)."""
    base = {"FLOAT", "FLOAT16"}
    return base | ({"BF16"} if product in ("ascend950", "atlas-a3", "atlas-a2") else set())


def base_scalars() -> dict:
    return {"reduction": 0, "beta": 1.0}
