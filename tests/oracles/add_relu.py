"""aclnnAddRelu, from ops-nn activation/relu/docs/aclnnAddRelu&aclnnInplaceAddRelu.md (interface:
tests/oracles/__init__.py, KIND "elementwise").

out = relu(self + alpha * other): the sum where it is > 0, 0 where it is <= 0; a NaN sum (in
neither case of the page) propagates, as aclnnRelu's kernel.
"""

from __future__ import annotations

import math

import mpmath

from tests.oracles._common import Scalar

KIND = "elementwise"
OUT = "out"
INPUTS = ("self", "other")
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2", "atlas-training")  # 310P, 310B: 不支持


def value(t: dict, s: dict):
    a = s["alpha"]
    a = float(a.value if isinstance(a, Scalar) else a)
    x, y = t["self"], t["other"]
    if isinstance(x, float) or isinstance(y, float):  # an IEEE special: float64 is exact enough
        v = float(x) + a * float(y)
        return v if (math.isnan(v) or v > 0) else mpmath.mpf(0)
    v = x + mpmath.mpf(a) * y
    return v if v > 0 else mpmath.mpf(0)


SETTINGS: list[dict] = [{"alpha": Scalar("FLOAT", a)} for a in (1.0, -2.0, 0.5, 0.0)]
DOMAIN = {"self": (-4.0, 4.0), "other": (-4.0, 4.0)}
SPECIAL = [0.0, -0.0, 1.0, -1.0, 6e-8, 65504.0, float("inf"), float("-inf"), float("nan")]


def allowed(param: str, product: str) -> set[str]:
    """self, other, alpha, out: BFLOAT16, FLOAT16, FLOAT32, INT8, UINT8, INT16, INT32, INT64
    (Atlas 训练系列产品: no BFLOAT16)."""
    base = {"FLOAT", "FLOAT16", "INT8", "UINT8", "INT16", "INT32", "INT64"}
    return base if product == "atlas-training" else base | {"BF16"}


def base_scalars() -> dict:
    """An INT32 alpha: it casts to every promoted dtype of the list (a FLOAT alpha does not cast
    to an integer one: "alpha无法转换为self和other推导后的数据类型")."""
    return {"alpha": Scalar("INT32", 1)}
