"""aclnnHeaviside, from ops-nn activation/heaviside/docs/aclnnHeaviside.md (interface: specs notes,
KIND "elementwise").

Heaviside(input, values) = 0 if input < 0, values if input = 0, 1 if input > 0. The doc has no
NaN case; the kernel (op_kernel/heaviside.h) maps a NaN input to 0, as PyTorch does.
"""

from __future__ import annotations

import math

import mpmath

KIND = "elementwise"
OUT = "out"
INPUTS = ("input", "values")
PRODUCTS = ("atlas-a3", "atlas-a2")


def value(t: dict, s: dict):
    x, v = t["input"], t["values"]
    if mpmath.isnan(x) or x < 0:
        return mpmath.mpf(0)
    if x > 0:
        return mpmath.mpf(1)
    if mpmath.isnan(v):
        return math.nan
    return float(v) if mpmath.isinf(v) else v  # x == 0 (or -0): values, as it is


SETTINGS: list[dict] = [{}]
DOMAIN = {"input": (-2.0, 2.0), "values": (-10.0, 10.0)}
SPECIAL = [0.0, -0.0, 1.0, -1.0, 6e-8, -6e-8, 1e-40, float("inf"), float("-inf"), float("nan")]


def allowed(param: str, product: str) -> set[str]:
    """input, values, out: BFLOAT16, FLOAT16, FLOAT."""
    return {"BF16", "FLOAT16", "FLOAT"}


def base_scalars() -> dict:
    return {}
