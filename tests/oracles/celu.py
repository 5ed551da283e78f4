"""aclnnCelu, from ops-nn activation/celu_v2/docs/aclnnCelu&aclnnInplaceCelu.md (interface:
tests/oracles/__init__.py, KIND "elementwise").

CELU(x) = max(0, x) + min(0, alpha * (exp(x / alpha) - 1)), alpha != 0.
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
    x, a = t["self"], mpmath.mpf(s["alpha"])
    if isinstance(x, float):
        if math.isnan(x):
            return math.nan
        if x > 0:
            return math.inf  # the min term is 0 or finite
        # x = -inf: exp(-inf / alpha) is 0 for alpha > 0 (min term -alpha), inf for alpha < 0
        return -a if a > 0 else -math.inf
    return max(x, 0) + min(mpmath.mpf(0), a * mpmath.expm1(x / a))


SETTINGS: list[dict] = [{"alpha": 1.0}, {"alpha": 0.5}, {"alpha": 3.0}, {"alpha": -2.0}]
DOMAIN = {"self": (-10.0, 6.0)}
SPECIAL = [0.0, -0.0, 1e-6, -1e-6, 1e-30, -1e-30, -200.0, 50.0, float("inf"), float("-inf"),
           float("nan")]  # fmt: skip


def allowed(param: str, product: str) -> set[str]:
    """self and out: FLOAT, FLOAT16, BFLOAT16; Atlas 训练系列产品 FLOAT, FLOAT16."""
    base = {"FLOAT", "FLOAT16"}
    return base if product == "atlas-training" else base | {"BF16"}


def base_scalars() -> dict:
    return {"alpha": Scalar("FLOAT", 1.0)}
