"""aclnnSilu, from ops-nn activation/swish/docs/aclnnSilu.md (interface: tests/oracles/__init__.py,
KIND "elementwise").

out = x / (1 + e^(-x)).
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
    if isinstance(x, float):
        # NaN; +inf / (1 + 0) = +inf; -inf / (1 + inf) = -inf / inf, NaN
        return math.inf if x == math.inf else math.nan
    return x / (1 + mpmath.exp(-x))


SETTINGS: list[dict] = [{}]
DOMAIN = {"self": (-10.0, 10.0)}
SPECIAL = [0.0, -0.0, 1.0, -1.0, 30.0, -30.0, -100.0, -1000.0, 1e-30, -1e-30, 65504.0,
           float("inf"), float("-inf"), float("nan")]  # fmt: skip


def allowed(param: str, product: str) -> set[str]:
    """self and out: FLOAT16, FLOAT, BFLOAT16; Atlas 推理/训练系列产品 FLOAT16, FLOAT."""
    base = {"FLOAT", "FLOAT16"}
    return base if product in ("atlas-inference", "atlas-training") else base | {"BF16"}


def base_scalars() -> dict:
    return {}
