"""aclnnThresholdBackward, from ops-nn activation/threshold_grad_v2_d/docs/aclnnThresholdBackward.md
(interface: tests/oracles/__init__.py, KIND "elementwise").

out = gradOutput(i) if self(i) > threshold, 0 otherwise (NaN self: 0, as NaN > t is false).
"""

from __future__ import annotations

import math

import mpmath

from tests.oracles._common import Scalar

KIND = "elementwise"
OUT = "out"
INPUTS = ("gradOutput", "self")
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2", "atlas-inference", "atlas-training")


def value(t: dict, s: dict):
    g, x = t["gradOutput"], t["self"]
    thr = float(s["threshold"])
    above = (not math.isnan(x) and x > thr) if isinstance(x, float) else x > mpmath.mpf(thr)
    return g if above else mpmath.mpf(0)


SETTINGS: list[dict] = [{"threshold": 0.0}, {"threshold": 1.0}, {"threshold": -1.5},
                        {"threshold": 0.3}]  # fmt: skip
DOMAIN = {"gradOutput": (-3.0, 3.0), "self": (-4.0, 4.0)}
SPECIAL = [0.0, -0.0, 1.0, -1.5, 0.3, 0.30004882812, 6e-8, 65504.0, float("inf"), float("-inf"),
           float("nan")]  # fmt: skip


def allowed(param: str, product: str) -> set[str]:
    """gradOutput, self, out (and threshold): FLOAT, BFLOAT16, FLOAT16, INT32, INT8, UINT8, INT64;
    A2/A3 no INT64; 推理/训练系列产品 no BFLOAT16, INT64; 950 INT64 only with threshold 0 (the
    valid call of base_scalars has threshold 0, but the spec keeps INT64 out of 950's list)."""
    base = {"FLOAT", "FLOAT16", "INT32", "INT8", "UINT8"}
    return base if product in ("atlas-inference", "atlas-training") else base | {"BF16"}


def base_scalars() -> dict:
    return {"threshold": Scalar("FLOAT", 0.0)}
