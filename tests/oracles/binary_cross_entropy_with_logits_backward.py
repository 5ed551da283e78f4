"""aclnnBinaryCrossEntropyWithLogitsBackward, from ops-nn loss/sigmoid_cross_entropy_with_logits_grad_v2/
docs/aclnnBinaryCrossEntropyWithLogitsBackward.md (the backward of BCELoss on logits) and the
forward page's loss l = -w [p y log sigma(x) + (1 - y) log(1 - sigma(x))], differentiated by hand:
dl/dx = w [sigma(x) ((p - 1) y + 1) - p y], times gradOutput (interface: tests/oracles/__init__.py,
KIND "elementwise"). Reductions none and sum only: the mean's 1/n depends on the whole shape.
"""

from __future__ import annotations

import math

import mpmath

KIND = "elementwise"
OUT = "out"
INPUTS = ("gradOutput", "self", "target", "weightOptional", "posWeightOptional")
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2", "atlas-inference", "atlas-training")


def _float_value(g: float, x: float, y: float, w: float, p: float) -> float:
    """IEEE float64 in the order g * w * (q / (1 + e^-x) - p y): NaN and infinities land
    where that order puts them (e^-x = inf for x = -inf, so q / inf = 0 for a finite q)."""
    e = math.inf if -x > 709 else math.exp(-x)
    q = (p - 1) * y + 1
    return g * w * (q / (1 + e) - p * y)


def value(t: dict, s: dict):
    g, x, y, w, p = (t[n] for n in INPUTS)
    if any(isinstance(v, float) for v in (g, x, y, w, p)):  # a NaN or an infinity among them
        return _float_value(*(float(v) for v in (g, x, y, w, p)))
    sig = 1 / (1 + mpmath.exp(-x))
    return g * w * (sig * ((p - 1) * y + 1) - p * y)


SETTINGS: list[dict] = [{"reduction": 0}, {"reduction": 2}]
DOMAIN = {"gradOutput": (-4.0, 4.0), "self": (-30.0, 30.0), "target": (0.0, 1.0),
          "weightOptional": (-2.0, 2.0), "posWeightOptional": (0.0, 3.0)}  # fmt: skip
SPECIAL = [0.0, 1.0, -1.0, 0.5, 20.0, -20.0, float("inf"), float("-inf"), float("nan")]


def allowed(param: str, product: str) -> set[str]:
    """FLOAT, FLOAT16 and BFLOAT16 on the page; the op_api's BF16 only on ASCEND910B,
    ASCEND910_93 and regbase (A2, A3, Ascend 950), not on Atlas inference / training."""
    base = {"FLOAT", "FLOAT16"}
    return base | ({"BF16"} if product in ("ascend950", "atlas-a3", "atlas-a2") else set())


def base_scalars() -> dict:
    return {"reduction": 0}
