"""aclnnThreshold, from ops-nn activation/threshold/docs/aclnnThreshold&aclnnInplaceThreshold.md
(interface: tests/oracles/__init__.py, KIND "elementwise").

out = x if x > threshold, value otherwise (x = threshold and NaN x included: NaN > t is false).
"""

from __future__ import annotations

import math

import mpmath

from tests.oracles._common import Scalar

KIND = "elementwise"
OUT = "out"
INPUTS = ("self",)
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2", "atlas-training")  # 310P, 310B: 不支持


def value(t: dict, s: dict):
    x = t["self"]
    thr, val = float(s["threshold"]), float(s["value"])
    if isinstance(x, float):  # NaN or an infinity
        return x if (not math.isnan(x) and x > thr) else val
    return x if x > mpmath.mpf(thr) else mpmath.mpf(val)


SETTINGS: list[dict] = [
    {"threshold": 1.0, "value": 0.0},
    {"threshold": 0.0, "value": 0.0},
    {"threshold": -1.0, "value": 7.0},
    {"threshold": 0.3, "value": -2.0},
    {"threshold": 2.5, "value": 1e-30},
]
DOMAIN = {"self": (-4.0, 4.0)}
SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.3, 0.30004882812, 0.30078125, 2.5, 6e-8, 65504.0, 1e30,
           float("inf"), float("-inf"), float("nan")]  # fmt: skip


def allowed(param: str, product: str) -> set[str]:
    """self, out, threshold and value: BFLOAT16, FLOAT16, FLOAT32, INT32, INT8, UINT8, INT16,
    INT64 (Atlas 训练系列产品: no BFLOAT16)."""
    base = {"FLOAT", "FLOAT16", "INT32", "INT8", "UINT8", "INT16", "INT64"}
    return base if product == "atlas-training" else base | {"BF16"}


def base_scalars() -> dict:
    return {"threshold": Scalar("FLOAT", 1.0), "value": Scalar("FLOAT", 0.0)}
