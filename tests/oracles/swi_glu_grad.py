"""aclnnSwiGluGrad, from ops-nn activation/swi_glu_grad/docs/aclnnSwiGluGrad.md (KIND "halves").

out = [outA, outB] along dim, A and B the halves of x, yGrad of the half's shape:
outA = yGrad * (sigmoid(A) + sigmoid(A) * (1 - sigmoid(A)) * A) * B, outB = yGrad * sigmoid(A) * A.
"""

from __future__ import annotations

import mpmath

KIND = "halves"
SPLIT = "x"
DIM = "dim"
GRAD = "yGrad"  # an input of the half's shape
OUT = "out"
FULL_OUT = True  # out has x's shape: (first half, second half)
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2", "atlas-inference")


def value(a, b, g=None):
    """(the first half's element, the second half's) from a (A), b (B) and yGrad's g (mpmath)."""
    s = 1 / (1 + mpmath.exp(-a))
    return g * (s + s * (1 - s) * a) * b, g * s * a


def allowed(param: str, product: str) -> set[str]:
    """yGrad, x, out: FLOAT, FLOAT16, BFLOAT16 (Atlas inference: FLOAT, FLOAT16)."""
    return {"FLOAT", "FLOAT16"} if product == "atlas-inference" else {"FLOAT", "FLOAT16", "BF16"}


def base_scalars() -> dict:
    return {}
