"""aclnnSelu, from ops-nn activation/selu/docs/aclnnSelu&aclnnInplaceSelu.md (interface:
tests/oracles/__init__.py, KIND "elementwise").

output = scale * (max(0, x) + min(0, alpha * (exp(x) - 1))), alpha = 1.6732632423543772848170429916717,
scale = 1.0507009873554804934193349852946 (the page's constants, evaluated here in mpmath).
"""

from __future__ import annotations

import math

import mpmath

KIND = "elementwise"
OUT = "out"
INPUTS = ("self",)
PRODUCTS = ("atlas-a3", "atlas-a2", "atlas-training")  # 950, 310B, 310P: 不支持

ALPHA = mpmath.mpf("1.6732632423543772848170429916717")
SCALE = mpmath.mpf("1.0507009873554804934193349852946")


def value(t: dict, s: dict):
    x = t["self"]
    if isinstance(x, float):
        if math.isnan(x) or x > 0:
            return x  # NaN, +inf
        return float(-SCALE * ALPHA)  # -inf: scale * alpha * (0 - 1)
    return SCALE * (max(mpmath.mpf(0), x) + min(mpmath.mpf(0), ALPHA * (mpmath.exp(x) - 1)))


SETTINGS: list[dict] = [{}]
DOMAIN = {"self": (-6.0, 6.0)}
SPECIAL = [0.0, -0.0, 1e-6, -1e-6, -1e-30, 6e-8, -20.0, -200.0, 88.0, 65504.0, 3e38,
           float("inf"), float("-inf"), float("nan")]  # fmt: skip


def allowed(param: str, product: str) -> set[str]:
    """self and out: FLOAT, FLOAT16, INT32, INT8, BFLOAT16 (Atlas 训练系列产品: no BFLOAT16)."""
    base = {"FLOAT", "FLOAT16", "INT32", "INT8"}
    return base if product == "atlas-training" else base | {"BF16"}


def base_scalars() -> dict:
    return {}
