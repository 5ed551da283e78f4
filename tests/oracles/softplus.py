"""aclnnSoftplus, from ops-nn activation/softplus_v2/docs/aclnnSoftplus.md (interface: specs notes,
KIND "elementwise").

out = 1/beta * log(1 + exp(beta * self)) where beta * self <= threshold, else self.
"""

from __future__ import annotations

import math

import mpmath

from tests.oracles._common import Scalar

KIND = "elementwise"
OUT = "out"
INPUTS = ("self",)
PRODUCTS = ("atlas-a3", "atlas-a2", "atlas-inference", "atlas-training")


def value(t: dict, s: dict):
    x = t["self"]
    beta, thr = mpmath.mpf(s["beta"]), mpmath.mpf(s["threshold"])
    if mpmath.isnan(x) or (mpmath.isinf(x) and beta == 0):
        return math.nan  # NaN, or 0 * inf
    z = beta * x  # exact: both are binary floats
    if z > thr:
        return float(x) if mpmath.isinf(x) else x
    if mpmath.isinf(z):
        return 0.0 if beta > 0 else -0.0  # log(1 + e^-inf) / beta = 0 / beta
    if beta == 0:
        return math.inf  # log(2) / 0
    return mpmath.log1p(mpmath.exp(z)) / beta


SETTINGS = [
    {"beta": 1.0, "threshold": 20.0},
    {"beta": 2.0, "threshold": 3.0},
    {"beta": 0.699999988079071, "threshold": 5.0},  # float32(0.7)
]
DOMAIN = {"self": (-30.0, 30.0)}
SPECIAL = [0.0, -0.0, 1.0, -1.0, 1.5, 20.0, 21.0, -120.0, 1e-30, float("inf"), float("-inf"),
           float("nan")]  # fmt: skip


def allowed(param: str, product: str) -> set[str]:
    """self and out: FLOAT16, FLOAT, BFLOAT16; Atlas training/inference FLOAT16, FLOAT."""
    base = {"FLOAT16", "FLOAT"}
    return base if product in ("atlas-inference", "atlas-training") else base | {"BF16"}


def base_scalars() -> dict:
    return {"beta": Scalar("FLOAT", 1.0), "threshold": Scalar("FLOAT", 20.0)}
