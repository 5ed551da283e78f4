"""aclnnHardswish, from ops-nn activation/hard_swish/docs/aclnnHardswish&aclnnInplaceHardswish.md
(interface: tests/oracles/__init__.py, KIND "elementwise").

Hardswish(x) = x for x >= 3, 0 for x <= -3, x * (x + 3) / 6 otherwise.
"""

from __future__ import annotations

import math

import mpmath

KIND = "elementwise"
OUT = "out"
INPUTS = ("self",)
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2", "atlas-training")  # 310P, 310B: 不支持


def value(t: dict, s: dict):
    x = t["self"]
    if isinstance(x, float) and math.isnan(x):
        return math.nan
    if x >= 3:
        return x  # +inf stays +inf
    if x <= -3:
        return mpmath.mpf(0)  # -inf too: the branch is the constant 0
    return x * (x + 3) / 6


SETTINGS: list[dict] = [{}]
DOMAIN = {"self": (-5.0, 5.0)}
SPECIAL = [0.0, -0.0, 1.0, -1.5, 3.0, -3.0, 2.9990234375, -2.9990234375, 3.0009765625,
           -3.0009765625, 1e30, -1e30, 1e-30, -1e-30, float("inf"), float("-inf"),
           float("nan")]  # fmt: skip


def allowed(param: str, product: str) -> set[str]:
    """self and out: BFLOAT16, FLOAT16, FLOAT32; Atlas 训练系列产品 FLOAT16, FLOAT32."""
    base = {"FLOAT", "FLOAT16"}
    return base if product == "atlas-training" else base | {"BF16"}


def base_scalars() -> dict:
    return {}
