"""aclnnFastGelu, from ops-nn activation/fast_gelu/docs/aclnnFastGelu.md (interface: specs notes,
KIND "elementwise").

out = x / (1 + e^(-1.702 x)).
"""

from __future__ import annotations

import math

import mpmath

KIND = "elementwise"
OUT = "out"
INPUTS = ("self",)
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2")

K = mpmath.mpf("1.702")


def value(t: dict, s: dict):
    x = t["self"]
    if mpmath.isnan(x):
        return math.nan
    if mpmath.isinf(x):
        return math.inf if x > 0 else math.nan  # -inf / (1 + inf) = -inf / inf
    return x / (1 + mpmath.exp(-K * x))


SETTINGS: list[dict] = [{}]
DOMAIN = {"self": (-10.0, 10.0)}
SPECIAL = [0.0, -0.0, 1.0, -1.0, 20.0, -20.0, -60.0, 1e-30, -1e-30, float("inf"), float("-inf"),
           float("nan")]  # fmt: skip


def allowed(param: str, product: str) -> set[str]:
    """self and out: FLOAT16, FLOAT32, BFLOAT16 (on every listed product)."""
    return {"FLOAT", "FLOAT16", "BF16"}


def base_scalars() -> dict:
    return {}
