"""aclnnBinaryCrossEntropyWithLogits, from ops-nn loss/sigmoid_cross_entropy_with_logits_v2/docs/
aclnnBinaryCrossEntropyWithLogits.md (interface: tests/oracles/__init__.py, KIND "loss").

l_n = -w_n [p_n y_n log sigma(x_n) + (1 - y_n) log(1 - sigma(x_n))] (the page's 多标签 formula;
p = 1 is its 单标签 one), sigma(x) = 1 / (1 + e^-x); reduction 0 keeps them, 1 their mean, 2 their
sum. self and target have one shape; weightOptional and posWeightOptional broadcast to it.
Dtypes: FLOAT, FLOAT16 everywhere; BFLOAT16 on the A2 / A3 / 950 products.
"""

from __future__ import annotations

import mpmath
import numpy as np

from tests.oracles._common import bf16_if_a2

KIND = "loss"
OUT = "out"
INPUTS = ("self", "target", "weightOptional", "posWeightOptional")
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2", "atlas-inference", "atlas-training")
REDUCTION = "reduction"


def element(t: dict, s: dict):
    x, y = t["self"], t["target"]
    w, p = t["weightOptional"], t["posWeightOptional"]
    sig = 1 / (1 + mpmath.exp(-x))
    return -w * (p * y * mpmath.log(sig) + (1 - y) * mpmath.log(1 - sig))


def shapes(sa: tuple, sb: tuple) -> dict:
    """self and target one shape (their broadcast); the two weights broadcast to it."""
    full = tuple(np.broadcast_shapes(sa, sb))
    return {"self": full, "target": full, "weightOptional": sa, "posWeightOptional": sb}


SETTINGS: list[dict] = [{}]
DOMAIN = {
    "self": (-30.0, 30.0),
    "target": (0.0, 1.0),
    "weightOptional": (-2.0, 2.0),
    "posWeightOptional": (0.0, 3.0),
}


def allowed(param: str, product: str) -> set[str]:
    return bf16_if_a2(product, ["FLOAT", "FLOAT16"])


def base_scalars() -> dict:
    return {"reduction": 0}
