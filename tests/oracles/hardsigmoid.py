"""aclnnHardsigmoid, from ops-nn activation/hard_sigmoid/docs/aclnnHardsigmoid&aclnnInplaceHardsigmoid.md
(interface: tests/oracles/__init__.py, KIND "elementwise").

Hardsigmoid(x) = clip(x/6 + 1/2, 0, 1): 1 for x > 3, 0 for x <= -3, x/6 + 1/2 otherwise.
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
    if x > 3:
        return mpmath.mpf(1)
    if x <= -3:
        return mpmath.mpf(0)
    return x / 6 + mpmath.mpf(1) / 2


SETTINGS: list[dict] = [{}]
DOMAIN = {"self": (-5.0, 5.0)}
SPECIAL = [0.0, -0.0, 1.0, -1.0, 3.0, -3.0, 2.9990234375, -2.9990234375, 3.0009765625,
           -3.0009765625, 1000.0, -1000.0, 1e-30, float("inf"), float("-inf"),
           float("nan")]  # fmt: skip


def allowed(param: str, product: str) -> set[str]:
    """self and out: FLOAT, FLOAT16, INT32, BFLOAT16; Atlas 训练系列产品 FLOAT, FLOAT16, INT32."""
    base = {"FLOAT", "FLOAT16", "INT32"}
    return base if product == "atlas-training" else base | {"BF16"}


def base_scalars() -> dict:
    return {}
