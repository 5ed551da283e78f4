"""aclnnShrink, from ops-nn activation/shrink/docs/aclnnShrink.md (interface:
tests/oracles/__init__.py, KIND "elementwise").

out = self - bias if self > lambd, self + bias if self < -lambd, 0 if -lambd <= self <= lambd
(NaN self, in none of the doc's cases, gives 0 as in the spec and the kernel).
"""

from __future__ import annotations

import math

import mpmath

from tests.oracles._common import Scalar

KIND = "elementwise"
OUT = "out"
INPUTS = ("self",)
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2", "atlas-inference")  # 910, 310B: 不支持


def value(t: dict, s: dict):
    x = t["self"]
    lam, bias = mpmath.mpf(s["lambd"]), mpmath.mpf(s["bias"])
    if isinstance(x, float):
        if math.isnan(x):
            return mpmath.mpf(0)
        return x  # +-inf -+ a finite bias
    if x > lam:
        return x - bias
    if x < -lam:
        return x + bias
    return mpmath.mpf(0)


SETTINGS: list[dict] = [
    {"lambd": 0.5, "bias": 0.0},
    {"lambd": 1.0, "bias": 0.25},
    {"lambd": 0.0, "bias": 0.5},
    {"lambd": 0.3, "bias": -2.0},
    {"lambd": 2.0, "bias": 1e-30},
]
DOMAIN = {"self": (-5.0, 5.0)}
SPECIAL = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 0.30004882812, -0.30004882812, 2.0, -2.0, 65504.0,
           1e30, float("inf"), float("-inf"), float("nan")]  # fmt: skip


def allowed(param: str, product: str) -> set[str]:
    """self and out: FLOAT, FLOAT16; lambd and bias: FLOAT."""
    return {"FLOAT"} if param in ("lambd", "bias") else {"FLOAT", "FLOAT16"}


def base_scalars() -> dict:
    return {"lambd": Scalar("FLOAT", 0.5), "bias": Scalar("FLOAT", 0.0)}
