"""aclnnHardtanhBackward, from ops-nn activation/hardtanh_grad/docs/aclnnHardtanhBackward.md
(interface: tests/oracles/__init__.py, KIND "elementwise").

res = grad_output * grad_self, grad_self = 0 if self > max or self < min, 1 otherwise (the
closed interval, and NaN self).
"""

from __future__ import annotations

import math

import mpmath

from tests.oracles._common import Scalar

KIND = "elementwise"
OUT = "out"
INPUTS = ("gradOutput", "self")
# Atlas 200I/500 A2 推理产品 is listed too, not a product of the suite yet
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2", "atlas-inference", "atlas-training")


def value(t: dict, s: dict):
    g, x = t["gradOutput"], t["self"]
    nan_x = isinstance(x, float) and math.isnan(x)
    if not nan_x and (x > s["max"] or x < s["min"]):
        if isinstance(g, float):  # inf * 0, NaN * 0
            return math.nan
        return mpmath.mpf(0)
    return g


SETTINGS: list[dict] = [
    {"min": -1.0, "max": 1.0},
    {"min": -6.0, "max": 6.0},
    {"min": 0.25, "max": 0.5},
    {"min": 1.0, "max": -1.0},  # min > max: nothing is inside
]
DOMAIN = {"gradOutput": (-10.0, 10.0), "self": (-8.0, 8.0)}
SPECIAL = [0.0, -0.0, 1.0, -1.0, 6.0, -6.0, 0.25, 0.5, 1.0009765625, -1.0009765625, 1e30,
           float("inf"), float("-inf"), float("nan")]  # fmt: skip


def allowed(param: str, product: str) -> set[str]:
    """gradOutput, self, min, max, out: BFLOAT16, FLOAT16, FLOAT; Atlas 推理/训练系列产品
    FLOAT16, FLOAT."""
    base = {"FLOAT", "FLOAT16"}
    return base if product in ("atlas-inference", "atlas-training") else base | {"BF16"}


def base_scalars() -> dict:
    return {"min": Scalar("FLOAT", -1.0), "max": Scalar("FLOAT", 1.0)}
