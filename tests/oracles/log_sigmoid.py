"""aclnnLogSigmoid, from ops-nn activation/log_sigmoid/docs/aclnnLogSigmoid.md (interface: specs
notes, KIND "elementwise").

out = log(1 / (1 + exp(-x))).
"""

from __future__ import annotations

import math

import mpmath

KIND = "elementwise"
OUT = "out"
INPUTS = ("self",)
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2", "atlas-training")


def value(t: dict, s: dict):
    x = t["self"]
    if mpmath.isnan(x):
        return math.nan
    if mpmath.isinf(x):
        return 0.0 if x > 0 else -math.inf  # log(1/(1+0)) = log 1 = 0; log(1/inf) = log 0 = -inf
    return -mpmath.log1p(mpmath.exp(-x))  # log(1/(1+e^-x)) == -log(1 + e^-x)


SETTINGS: list[dict] = [{}]
DOMAIN = {"self": (-20.0, 20.0)}
SPECIAL = [0.0, -0.0, 1.0, -1.0, 20.0, 120.0, -20.0, -100.0, 1e-30, float("inf"),
           float("-inf"), float("nan")]  # fmt: skip


def allowed(param: str, product: str) -> set[str]:
    """self and out: FLOAT, FLOAT16, BFLOAT16; Atlas training FLOAT, FLOAT16."""
    base = {"FLOAT", "FLOAT16"}
    return base if product == "atlas-training" else base | {"BF16"}


def base_scalars() -> dict:
    return {}
