"""aclnnGluBackward, from ops-nn activation/glu_grad/docs/aclnnGluBackward.md (KIND "halves").

out = [a_grad, b_grad] along dim: sig_b = sigmoid(b), a_grad = grad_out * sig_b,
b_grad = a_grad * (a - a * sig_b); a and b the halves of self, grad_out the half's shape.
"""

from __future__ import annotations

import mpmath

KIND = "halves"
SPLIT = "self"
DIM = "dim"
GRAD = "gradOut"  # an input of the half's shape
OUT = "out"
FULL_OUT = True  # out has self's shape: (first half, second half)
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2", "atlas-inference", "atlas-training")


def value(a, b, g=None):
    """(the first half's element, the second half's) from a, b and grad_out's g (mpmath)."""
    s = 1 / (1 + mpmath.exp(-b))
    ga = g * s
    return ga, ga * (a - a * s)


def allowed(param: str, product: str) -> set[str]:
    """gradOut, self, out: DOUBLE, FLOAT, FLOAT16, BFLOAT16 (Atlas inference/training: no BF16)."""
    base = {"DOUBLE", "FLOAT", "FLOAT16"}
    return base if product in ("atlas-inference", "atlas-training") else base | {"BF16"}


def base_scalars() -> dict:
    return {}
