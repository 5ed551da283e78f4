"""aclnnSquaredRelu, from ops-nn activation/squared_relu/docs/aclnnSquaredRelu.md (interface:
tests/oracles/__init__.py, KIND "elementwise").

y = max(0, x)^2; NaN propagates through max.
"""

from __future__ import annotations

import math

import mpmath

KIND = "elementwise"
OUT = "out"
INPUTS = ("input",)
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2")  # 310P, 910, 310B: 不支持


def value(t: dict, s: dict):
    x = t["input"]
    if isinstance(x, float):
        return math.nan if math.isnan(x) else (math.inf if x > 0 else mpmath.mpf(0))
    return x * x if x > 0 else mpmath.mpf(0)


SETTINGS: list[dict] = [{}]
DOMAIN = {"input": (-20.0, 20.0)}
SPECIAL = [0.0, -0.0, 1.0, -1.0, 2e19, 256.0, 255.9, 1e-23, 1e-4, -1e30, 3.4e38, float("inf"),
           float("-inf"), float("nan")]  # fmt: skip


def allowed(param: str, product: str) -> set[str]:
    """input and out: BFLOAT16, FLOAT16, FLOAT on every listed product."""
    return {"BF16", "FLOAT16", "FLOAT"}


def base_scalars() -> dict:
    return {}
