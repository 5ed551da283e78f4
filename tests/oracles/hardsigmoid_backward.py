"""aclnnHardsigmoidBackward, from ops-nn activation/hard_sigmoid_grad/docs/aclnnHardsigmoidBackward.md
(interface: tests/oracles/__init__.py, KIND "elementwise").

The doc has no formula ("aclnnHardsigmoid的反向传播"): the derivative of the forward doc's
clip(x/6 + 1/2, 0, 1) is 1/6 on -3 < x < 3 and 0 elsewhere (0 at the knees, as PyTorch).
"""

from __future__ import annotations

import math

import mpmath

KIND = "elementwise"
OUT = "out"
INPUTS = ("gradOutput", "self")
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2", "atlas-inference", "atlas-training")


def value(t: dict, s: dict):
    g, x = t["gradOutput"], t["self"]
    inside = not (isinstance(x, float) and math.isnan(x)) and -3 < x < 3
    if not inside:
        return mpmath.mpf(0)  # the constant 0, whatever gradOutput holds
    if isinstance(g, float):  # +-inf or NaN
        return g
    return g / 6


SETTINGS: list[dict] = [{}]
DOMAIN = {"gradOutput": (-10.0, 10.0), "self": (-5.0, 5.0)}
SPECIAL = [0.0, -0.0, 1.0, 3.0, -3.0, 2.9990234375, -2.9990234375, 3.0009765625, 1e-30,
           1e30, float("inf"), float("-inf"), float("nan")]  # fmt: skip


def allowed(param: str, product: str) -> set[str]:
    """gradOutput, self, out: BFLOAT16, FLOAT16, FLOAT; Atlas 推理/训练系列产品 FLOAT16, FLOAT."""
    base = {"FLOAT", "FLOAT16"}
    return base if product in ("atlas-inference", "atlas-training") else base | {"BF16"}


def base_scalars() -> dict:
    return {}
