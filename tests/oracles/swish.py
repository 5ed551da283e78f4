"""aclnnSwish, from ops-nn activation/swish/docs/aclnnSwish.md (interface:
tests/oracles/__init__.py, KIND "elementwise").

s(x) = x * sigma(beta x), sigma(x) = 1 / (1 + e^-x); beta = betaOptional.
"""

from __future__ import annotations

import math

import mpmath

from tests.oracles._common import Scalar

KIND = "elementwise"
OUT = "out"
INPUTS = ("self",)
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2", "atlas-inference", "atlas-training")


def value(t: dict, s: dict):
    x, beta = t["self"], mpmath.mpf(s["betaOptional"])
    if isinstance(x, float):
        if math.isnan(x) or beta == 0:
            return math.nan  # NaN, or beta * inf = 0 * inf
        # x * sigma(beta x): +-inf * 1 where beta x -> +inf, +-inf * 0 (NaN) where it -> -inf
        return x if (x > 0) == (beta > 0) else math.nan
    return x / (1 + mpmath.exp(-beta * x))


SETTINGS: list[dict] = [
    {"betaOptional": 1.0},
    {"betaOptional": 0.0},
    {"betaOptional": -1.5},
    {"betaOptional": 1.702},
    {"betaOptional": 200.0},
]
DOMAIN = {"self": (-10.0, 10.0)}
SPECIAL = [0.0, -0.0, 1.0, -1.0, 30.0, -30.0, -0.5, -100.0, 1e-30, float("inf"), float("-inf"),
           float("nan")]  # fmt: skip


def allowed(param: str, product: str) -> set[str]:
    """self and out: BFLOAT16, FLOAT16, FLOAT; Atlas 推理/训练系列产品 FLOAT16, FLOAT."""
    base = {"FLOAT", "FLOAT16"}
    return base if product in ("atlas-inference", "atlas-training") else base | {"BF16"}


def base_scalars() -> dict:
    return {"betaOptional": Scalar("FLOAT", 1.0)}
