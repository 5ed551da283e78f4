"""aclnnGlu, from ops-nn activation/glu/docs/aclnnGlu.md (KIND "halves").

GLU(a, b) = a * sigmoid(b), a and b the first and second half of self along dim; out has the
half's shape.
"""

from __future__ import annotations

import mpmath

KIND = "halves"
SPLIT = "self"  # the tensor split in halves along DIM
DIM = "dim"
GRAD = None  # no gradient input
OUT = "out"
FULL_OUT = False  # out is one half's shape
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2", "atlas-inference", "atlas-training")


def value(a, b, g=None):
    """The exact output element from the halves' elements a, b (mpmath)."""
    return a / (1 + mpmath.exp(-b))


def allowed(param: str, product: str) -> set[str]:
    """self and out: DOUBLE, FLOAT, FLOAT16, BFLOAT16 (Atlas inference/training: no BFLOAT16)."""
    base = {"DOUBLE", "FLOAT", "FLOAT16"}
    return base if product in ("atlas-inference", "atlas-training") else base | {"BF16"}


def base_scalars() -> dict:
    return {}
