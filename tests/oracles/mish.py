"""aclnnMish, from ops-nn activation/mish/docs/aclnnMish&aclnnInplaceMish.md (interface:
tests/oracles/__init__.py, KIND "elementwise").

out = x * tanh(Softplus(x)), Softplus(x) = ln(1 + e^x).
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
    if isinstance(x, float):
        # NaN; +inf * tanh(inf) = +inf; -inf * tanh(0) = -inf * 0, NaN
        return math.inf if x == math.inf else math.nan
    return x * mpmath.tanh(mpmath.log(1 + mpmath.exp(x)))


SETTINGS: list[dict] = [{}]
DOMAIN = {"self": (-10.0, 10.0)}
SPECIAL = [0.0, -0.0, 1.0, -1.0, -1.1924, 30.0, -30.0, -100.0, 1e-30, -1e-30, 65504.0,
           float("inf"), float("-inf"), float("nan")]  # fmt: skip


def allowed(param: str, product: str) -> set[str]:
    """self and out: FLOAT16, FLOAT, BFLOAT16; Atlas 训练系列产品 FLOAT16, FLOAT."""
    base = {"FLOAT", "FLOAT16"}
    return base if product == "atlas-training" else base | {"BF16"}


def base_scalars() -> dict:
    return {}
