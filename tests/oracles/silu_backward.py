"""aclnnSiluBackward, from ops-nn activation/silu_grad/docs/aclnnSiluBackward.md
(interface: tests/oracles/__init__.py, KIND "elementwise").

gradInput = gradOutput * s'(x), s'(x) = sigma(x) * (1 + x - x * sigma(x)), sigma(x) = 1/(1 + e^-x).
"""

from __future__ import annotations

import math

import mpmath

KIND = "elementwise"
OUT = "gradInput"
INPUTS = ("gradOutput", "self")
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2", "atlas-training")  # 310P, 310B: 不支持


def _ds(x):
    sig = 1 / (1 + mpmath.exp(-x))
    # 1 + x - x sigma(x) == 1 + x sigma(-x): the same number without 1 - sigma(x) cancelling
    return sig * (1 + x / (1 + mpmath.exp(x)))


def value(t: dict, s: dict):
    g, x = t["gradOutput"], t["self"]
    if isinstance(x, float):
        # NaN, or +-inf: 1 + x - x*sigma(x) is inf - inf (x = +inf) or sigma(x) * (-inf) = 0 * inf
        return math.nan
    f = _ds(x)
    if isinstance(g, float):
        if math.isnan(g) or f == 0:
            return math.nan
        return math.copysign(math.inf, g * float(mpmath.sign(f)))
    return g * f


SETTINGS: list[dict] = [{}]
DOMAIN = {"gradOutput": (-10.0, 10.0), "self": (-10.0, 10.0)}
SPECIAL = [0.0, -0.0, 1.0, -1.0, -1.2784645, 30.0, -30.0, -100.0, 1e-30, float("inf"),
           float("-inf"), float("nan")]  # fmt: skip


def allowed(param: str, product: str) -> set[str]:
    """gradOutput, self, gradInput: BFLOAT16, FLOAT16, FLOAT; Atlas 训练系列产品 FLOAT16, FLOAT."""
    base = {"FLOAT", "FLOAT16"}
    return base if product == "atlas-training" else base | {"BF16"}


def base_scalars() -> dict:
    return {}
