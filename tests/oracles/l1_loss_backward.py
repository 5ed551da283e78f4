"""aclnnL1LossBackward, from ops-nn loss/l1_loss_grad/docs/aclnnL1LossBackward.md: the backward
of |x - y|, gradOutput * sign(x - y) (interface: tests/oracles/__init__.py, KIND "elementwise").
Reductions none and sum only: the mean's 1/n is the whole broadcast shape's count.
"""

from __future__ import annotations

import math

KIND = "elementwise"
OUT = "gradInput"
INPUTS = ("gradOutput", "self", "target")
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2", "atlas-inference", "atlas-training")


def value(t: dict, s: dict):
    g, x, y = t["gradOutput"], t["self"], t["target"]
    if any(isinstance(v, float) for v in (g, x, y)):  # NaN or an infinity among them
        d = float(x) - float(y)
        sgn = math.nan if math.isnan(d) else (d > 0) - (d < 0)
        return float(g) * sgn
    return g * ((x > y) - (x < y))


SETTINGS: list[dict] = [{"reduction": 0}, {"reduction": 2}]
DOMAIN = {"gradOutput": (-4.0, 4.0), "self": (-3.0, 3.0), "target": (-3.0, 3.0)}
SPECIAL = [0.0, 1.0, -1.0, 1e-30, float("inf"), float("-inf"), float("nan")]


def allowed(param: str, product: str) -> set[str]:
    """FLOAT16, FLOAT, BFLOAT16 on the page; BF16 only with the 910B list in the op_api."""
    base = {"FLOAT", "FLOAT16"}
    return base | ({"BF16"} if product in ("ascend950", "atlas-a3", "atlas-a2") else set())


def base_scalars() -> dict:
    return {"reduction": 0}
