"""aclnnLogit, from ops-nn loss/logit/docs/aclnnLogit.md and its kernel's clamp rule (interface:
tests/oracles/__init__.py, KIND "elementwise").

y = ln(z / (1 - z)); z = x without a clamp for eps < 0, else eps where x < eps, 1 - eps where
x > 1 - eps (tested in that order), x otherwise; NaN stays NaN.
"""

from __future__ import annotations

import math

import mpmath

KIND = "elementwise"
OUT = "out"
INPUTS = ("input",)
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2")  # 310B, 310P, 910: 不支持


def value(t: dict, s: dict):
    x, eps = t["input"], s["eps"]
    if isinstance(x, float) and math.isnan(x):
        return math.nan
    z = x
    if eps >= 0:
        if x < eps:
            z = mpmath.mpf(eps)
        elif x > 1 - mpmath.mpf(eps):
            z = 1 - mpmath.mpf(eps)
    if isinstance(z, float):  # an infinite x, unclamped: outside [0, 1]
        return math.nan
    if z == 0:
        return -math.inf
    if z == 1:
        return math.inf
    if z < 0 or z > 1:
        return math.nan
    return mpmath.log(z / (1 - z))


SETTINGS: list[dict] = [{"eps": -1.0}, {"eps": 0.0}, {"eps": 0.25}, {"eps": 0.75}]
DOMAIN = {"input": (-0.25, 1.25)}
SPECIAL = [0.0, -0.0, 1.0, 0.5, 0.25, 0.75, 1e-30, 1.5, -0.5, float("inf"), float("-inf"),
           float("nan")]  # fmt: skip


def allowed(param: str, product: str) -> set[str]:
    """input and out: BFLOAT16, FLOAT16, FLOAT on every listed product."""
    return {"BF16", "FLOAT16", "FLOAT"}


def base_scalars() -> dict:
    return {"eps": -1.0}
