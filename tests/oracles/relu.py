"""aclnnRelu, from ops-nn activation/relu/docs/aclnnRelu&aclnnInplaceRelu.md (interface:
tests/oracles/__init__.py, KIND "elementwise").

relu(x) = x for x > 0, 0 for x <= 0; NaN (in neither case of the page) propagates, as the
kernel's max(x, 0) and PyTorch do.
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
    if isinstance(x, float) and math.isnan(x):
        return math.nan
    return x if x > 0 else mpmath.mpf(0)  # +inf stays +inf, -inf gives 0


SETTINGS: list[dict] = [{}]
DOMAIN = {"self": (-4.0, 4.0)}
SPECIAL = [0.0, -0.0, 6e-8, -6e-8, 1e-40, -1e-40, 3.4e38, -3.4e38, float("inf"), float("-inf"),
           float("nan")]  # fmt: skip


def allowed(param: str, product: str) -> set[str]:
    """self and out: FLOAT, FLOAT16, INT8, INT32, INT64, BFLOAT16 (Atlas 训练系列产品: no
    BFLOAT16); UINT8 too, which the in-place table lists and the library takes for both."""
    base = {"FLOAT", "FLOAT16", "INT8", "INT32", "INT64", "UINT8"}
    return base if product == "atlas-training" else base | {"BF16"}


def base_scalars() -> dict:
    return {}
