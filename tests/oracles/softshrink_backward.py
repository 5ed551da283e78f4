"""aclnnSoftshrinkBackward, from ops-nn activation/soft_shrink_grad/docs/aclnnSoftshrinkBackward.md
(interface: tests/oracles/__init__.py, KIND "elementwise").

gradInput = gradOutput where x > lambda or x < -lambda, 0 where |x| <= lambda; a NaN x is in
no dead zone (the kernel selects 0 where |x| <= lambda holds), so its gradOutput passes.
"""

from __future__ import annotations

import math

import mpmath

from tests.oracles._common import Scalar

KIND = "elementwise"
OUT = "gradInput"
INPUTS = ("gradOutput", "self")
PRODUCTS = (
    "ascend950",
    "atlas-a3",
    "atlas-a2",
    "atlas-inference",
    "atlas-training",
)  # 310B: 不支持


def value(t: dict, s: dict):
    g, x, lam = t["gradOutput"], t["self"], s["lambd"]
    if not (isinstance(x, float) and math.isnan(x)) and abs(x) <= lam:
        return mpmath.mpf(0)
    return g


SETTINGS: list[dict] = [{"lambd": 0.5}, {"lambd": 0.3}, {"lambd": 0.0}, {"lambd": 2.75}]
DOMAIN = {"gradOutput": (-4.0, 4.0), "self": (-6.0, 6.0)}
SPECIAL = [0.0, -0.0, 0.5, -0.5, 0.3, -0.3, 6e-8, 3.4e38, float("inf"), float("-inf"),
           float("nan")]  # fmt: skip


def allowed(param: str, product: str) -> set[str]:
    """gradOutput, self and gradInput: FLOAT16, FLOAT, BFLOAT16; Atlas 推理系列产品 and Atlas
    训练系列产品 FLOAT16, FLOAT."""
    if product in ("atlas-inference", "atlas-training"):
        return {"FLOAT", "FLOAT16"}
    return {"FLOAT", "FLOAT16", "BF16"}


def base_scalars() -> dict:
    return {"lambd": Scalar("FLOAT", 0.5)}
