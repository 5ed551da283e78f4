"""aclnnHardshrink, from ops-nn activation/hard_shrink/docs/aclnnHardshrink.md and
op_api/aclnn_hardshrink.cpp (interface: tests/oracles/__init__.py, KIND "elementwise").

Hardshrink(x) = x if x > lambda or x < -lambda, 0 otherwise; the op_api passes a negative lambda
as 0 ("lambd->ToFloat() < 0 ? 0"). NaN x is in no case of the page: it passes through, as the
kernel's select and PyTorch give.
"""

from __future__ import annotations

import mpmath

from tests.oracles._common import Scalar

KIND = "elementwise"
OUT = "out"
INPUTS = ("self",)
PRODUCTS = ("atlas-a3", "atlas-a2", "atlas-inference", "atlas-training")  # 950, 310B: 不支持


def value(t: dict, s: dict):
    x = t["self"]
    lam = max(float(s["lambd"]), 0.0)
    if isinstance(x, float):
        return x  # NaN and +-inf are outside every dead zone
    return x if abs(x) > lam else mpmath.mpf(0)


SETTINGS: list[dict] = [{"lambd": 0.5}, {"lambd": 0.3}, {"lambd": 0.0}, {"lambd": -0.5},
                        {"lambd": 2.75}]  # fmt: skip
DOMAIN = {"self": (-4.0, 4.0)}
SPECIAL = [0.0, -0.0, 0.5, -0.5, 0.30004882812, -0.30004882812, 0.30078125, 2.75, -2.75,
           6e-8, 65504.0, 1e30, float("inf"), float("-inf"), float("nan")]  # fmt: skip


def allowed(param: str, product: str) -> set[str]:
    """self and out: BFLOAT16, FLOAT16, FLOAT (Atlas 推理系列产品, Atlas 训练系列产品: FLOAT16,
    FLOAT); lambd: FLOAT."""
    if param == "lambd":
        return {"FLOAT"}
    base = {"FLOAT", "FLOAT16"}
    return base if product in ("atlas-inference", "atlas-training") else base | {"BF16"}


def base_scalars() -> dict:
    return {"lambd": Scalar("FLOAT", 0.5)}
