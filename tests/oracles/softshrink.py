"""aclnnSoftshrink, from ops-nn activation/softshrink/docs/aclnnSoftshrink.md (interface:
tests/oracles/__init__.py, KIND "elementwise").

out = x - lambda where x > lambda, x + lambda where x < -lambda, 0 otherwise (a NaN x compares
false both ways: 0, as the 950 kernel's two compare-and-selects give).
"""

from __future__ import annotations

import math

import mpmath

from tests.oracles._common import Scalar

KIND = "elementwise"
OUT = "out"
INPUTS = ("self",)
PRODUCTS = (
    "ascend950",
    "atlas-a3",
    "atlas-a2",
    "atlas-inference",
    "atlas-training",
)  # 310B: 不支持


def value(t: dict, s: dict):
    x, lam = t["self"], s["lambd"]
    if isinstance(x, float) and math.isnan(x):
        return mpmath.mpf(0)
    if x > lam:
        return x if isinstance(x, float) else x - mpmath.mpf(lam)  # +inf stays +inf
    if x < -lam:
        return x if isinstance(x, float) else x + mpmath.mpf(lam)
    return mpmath.mpf(0)


SETTINGS: list[dict] = [{"lambd": 0.5}, {"lambd": 0.3}, {"lambd": 0.0}, {"lambd": 2.75}]
DOMAIN = {"self": (-6.0, 6.0)}
SPECIAL = [0.0, -0.0, 0.5, -0.5, 0.3, -0.3, 6e-8, -6e-8, 3.4e38, -3.4e38, float("inf"),
           float("-inf"), float("nan")]  # fmt: skip


def allowed(param: str, product: str) -> set[str]:
    """self and out: FLOAT, FLOAT16, BFLOAT16; Atlas 推理系列产品 and Atlas 训练系列产品 FLOAT,
    FLOAT16."""
    if product in ("atlas-inference", "atlas-training"):
        return {"FLOAT", "FLOAT16"}
    return {"FLOAT", "FLOAT16", "BF16"}


def base_scalars() -> dict:
    return {"lambd": Scalar("FLOAT", 0.5)}
