"""aclnnSigmoid, from ops-nn activation/sigmoid/docs/aclnnSigmoid&aclnnInplaceSigmoid.md
(interface: specs notes, KIND "elementwise"; aclnnInplaceSigmoid is derived, no own module).

out = 1 / (1 + e^(-input)).
"""

from __future__ import annotations

import math

import mpmath

KIND = "elementwise"
OUT = "out"
INPUTS = ("self",)
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2", "atlas-inference", "atlas-training")


def value(t: dict, s: dict):
    x = t["self"]
    if mpmath.isnan(x):
        return math.nan
    if mpmath.isinf(x):
        return 1.0 if x > 0 else 0.0  # 1 / (1 + e^-inf) = 1; 1 / (1 + inf) = 0
    return 1 / (1 + mpmath.exp(-x))


SETTINGS: list[dict] = [{}]
DOMAIN = {"self": (-20.0, 20.0)}
SPECIAL = [0.0, -0.0, 1.0, -1.0, 20.0, -20.0, -100.0, -200.0, 1e-30, float("inf"),
           float("-inf"), float("nan")]  # fmt: skip


def allowed(param: str, product: str) -> set[str]:
    """self and out: FLOAT, FLOAT16, BFLOAT16 (no per-product note for aclnnSigmoid)."""
    return {"FLOAT", "FLOAT16", "BF16"}


def base_scalars() -> dict:
    return {}
