"""aclnnSwiGlu, from ops-nn activation/swi_glu/docs/aclnnSwiGlu.md 计算公式 (KIND "halves").

out = Swish(A) * B, A and B the first and second half of x along dim, Swish(A) = A sigmoid(A);
out has the half's shape.
"""

from __future__ import annotations

import mpmath

KIND = "halves"
SPLIT = "x"
DIM = "dim"
GRAD = None
OUT = "out"
FULL_OUT = False
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2", "atlas-inference")


def value(a, b, g=None):
    """The exact output element from the halves' elements a (A), b (B) (mpmath)."""
    return a * b / (1 + mpmath.exp(-a))


def allowed(param: str, product: str) -> set[str]:
    """x, out: FLOAT, FLOAT16, BFLOAT16 (Atlas inference: FLOAT, FLOAT16)."""
    return {"FLOAT", "FLOAT16"} if product == "atlas-inference" else {"FLOAT", "FLOAT16", "BF16"}


def base_scalars() -> dict:
    return {}
