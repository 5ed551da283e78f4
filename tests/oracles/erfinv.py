"""aclnnErfinv, from ops-nn activation/erfinv/docs/aclnnErfinv&aclnnInplaceErfinv.md (interface:
specs notes, KIND "elementwise"; aclnnInplaceErfinv is derived, no own module).

y = erfinv(x), i.e. the y with x = erf(y) = 2/sqrt(pi) * integral_0^y e^(-t^2) dt.
"""

from __future__ import annotations

import math

import mpmath

KIND = "elementwise"
OUT = "out"
INPUTS = ("self",)
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2", "atlas-training")

FLOATS = {"FLOAT", "FLOAT16", "BF16"}
INTEGERS = {"BOOL", "INT8", "INT16", "INT32", "INT64", "UINT8"}


def value(t: dict, s: dict):
    x = t["self"]
    if mpmath.isnan(x) or abs(x) > 1:
        return math.nan  # erf only reaches (-1, 1)
    if abs(x) == 1:
        return math.copysign(math.inf, float(x))  # erf(+-inf) = +-1
    return mpmath.erfinv(x)


SETTINGS: list[dict] = [{}]
DOMAIN = {"self": (-1.0, 1.0)}
SPECIAL = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 0.99951171875, 2.0, -2.0, 1e-30, float("inf"),
           float("-inf"), float("nan")]  # fmt: skip


def allowed(param: str, product: str) -> set[str]:
    """self: FLOAT, FLOAT16, BFLOAT16, BOOL, INT8, INT16, INT32, INT64, UINT8; out: FLOAT,
    FLOAT16, BFLOAT16; Atlas training: FLOAT, FLOAT16 (both)."""
    if product == "atlas-training":
        return {"FLOAT", "FLOAT16"}
    return FLOATS | INTEGERS if param == "self" else set(FLOATS)


def base_scalars() -> dict:
    return {}
