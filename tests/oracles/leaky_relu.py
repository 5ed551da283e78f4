"""aclnnLeakyRelu, from ops-nn activation/leaky_relu/docs/aclnnLeakyRelu&aclnnInplaceLeakyRelu.md
(interface: tests/oracles/__init__.py, KIND "elementwise").

out = max(0, self) + negativeSlope * min(0, self).
"""

from __future__ import annotations

import math

import mpmath

from tests.oracles._common import Scalar

KIND = "elementwise"
OUT = "out"
INPUTS = ("self",)
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2", "atlas-training")  # 310P, 310B: 不支持


def value(t: dict, s: dict):
    x, k = t["self"], s["negativeSlope"]
    if isinstance(x, float):
        if math.isnan(x) or (math.isinf(x) and x < 0 and k == 0):
            return math.nan  # NaN, or 0 + 0 * (-inf)
        return x if x > 0 else -math.inf * math.copysign(1.0, k)
    return x if x > 0 else mpmath.mpf(k) * x


SETTINGS: list[dict] = [{"negativeSlope": 0.01}, {"negativeSlope": 0.2}, {"negativeSlope": -1.5},
                        {"negativeSlope": 0.0}]  # fmt: skip
DOMAIN = {"self": (-8.0, 8.0)}
SPECIAL = [0.0, -0.0, 6e-8, -6e-8, 1e-40, -1e-40, 3.4e38, -3.4e38, float("inf"), float("-inf"),
           float("nan")]  # fmt: skip


def allowed(param: str, product: str) -> set[str]:
    """self and out: FLOAT, FLOAT16, BFLOAT16 and (the in-place table) DOUBLE; Atlas 训练系列产品
    FLOAT, FLOAT16, DOUBLE."""
    if product == "atlas-training":
        return {"FLOAT", "FLOAT16", "DOUBLE"}
    return {"FLOAT", "FLOAT16", "BF16", "DOUBLE"}


def base_scalars() -> dict:
    return {"negativeSlope": Scalar("FLOAT", 0.01)}
