"""aclnnElu, from ops-nn activation/elu/docs/aclnnElu&aclnnInplaceElu.md (interface:
tests/oracles/__init__.py, KIND "elementwise").

ELU(x) = scale * x for x > 0, alpha * scale * (exp(x * inputScale) - 1) for x <= 0.
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
    x = t["self"]
    a, sc, isc = (mpmath.mpf(s[k]) for k in ("alpha", "scale", "inputScale"))
    if isinstance(x, float):
        if math.isnan(x):
            return math.nan
        if x > 0:
            return math.inf * float(sc) if sc != 0 else math.nan
        # x = -inf: exp(-inf * inputScale) - 1 = -1 for inputScale > 0
        return -a * sc
    if x > 0:
        return sc * x
    return a * sc * (mpmath.exp(x * isc) - 1)


SETTINGS: list[dict] = [
    {"alpha": 1.0, "scale": 1.0, "inputScale": 1.0},
    {"alpha": 1.6732632423543772, "scale": 1.0507009873554805, "inputScale": 1.0},
    {"alpha": 0.5, "scale": 2.0, "inputScale": 0.25},
]
DOMAIN = {"self": (-12.0, 6.0)}
SPECIAL = [0.0, -0.0, 1e-6, -1e-6, 1e-30, -1e-30, -200.0, -20.0, 80.0, float("inf"),
           float("-inf"), float("nan")]  # fmt: skip


def allowed(param: str, product: str) -> set[str]:
    """self and out: FLOAT, FLOAT16, BFLOAT16 and (the in-place table) DOUBLE; Atlas 训练系列产品
    FLOAT, FLOAT16 (in place also DOUBLE)."""
    if product == "atlas-training":
        return {"FLOAT", "FLOAT16", "DOUBLE"}
    return {"FLOAT", "FLOAT16", "BF16", "DOUBLE"}


def base_scalars() -> dict:
    return {"alpha": Scalar("FLOAT", 1.0), "scale": Scalar("FLOAT", 1.0),
            "inputScale": Scalar("FLOAT", 1.0)}  # fmt: skip
