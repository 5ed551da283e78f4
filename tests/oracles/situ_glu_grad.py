"""aclnnSituGluGrad, from ops-nn activation/situ_glu_grad/docs/aclnnSituGluGrad.md 计算公式
(KIND "halves").

gate / up the halves of x along dim (activateLeft: gate the first); t = tanh(gate / beta),
s = sigmoid(gate), situ_a = beta t s, up' = linearBeta tanh(up / linearBeta) where
linearBeta > 0, else up; grad_gate = gradY up' s ((1 - t^2) + beta t (1 - s)),
grad_up = gradY situ_a (1 - tanh^2(up / linearBeta)) where linearBeta > 0, else gradY situ_a;
out holds grad_gate where gate was and grad_up where up was.
"""

from __future__ import annotations

import mpmath

KIND = "halves"
SPLIT = "x"
DIM = "dim"
GRAD = "gradY"  # an input of the half's shape
OUT = "out"
FULL_OUT = True  # out has x's shape: (first half, second half)
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2")
SETTINGS = [
    {"beta": 1.0, "linearBeta": 0.0, "activateLeft": True},
    {"beta": 0.25, "linearBeta": 2.0, "activateLeft": False},
    {"beta": 4.0, "linearBeta": -1.0, "activateLeft": False},
    {"beta": 1.0, "linearBeta": 0.5, "activateLeft": True},
]


def value(a, b, g, s: dict):
    """(the first half's element, the second half's) from the halves' a, b and gradY's g."""
    gate, up = (a, b) if s["activateLeft"] else (b, a)
    beta, lb = mpmath.mpf(s["beta"]), mpmath.mpf(s["linearBeta"])
    t = mpmath.tanh(gate / beta)
    sg = 1 / (1 + mpmath.exp(-gate))
    situ_a = beta * t * sg
    if lb > 0:
        up_p = lb * mpmath.tanh(up / lb)
        grad_up = g * situ_a * (1 - mpmath.tanh(up / lb) ** 2)
    else:
        up_p = up
        grad_up = g * situ_a
    grad_gate = g * up_p * sg * ((1 - t**2) + beta * t * (1 - sg))
    return (grad_gate, grad_up) if s["activateLeft"] else (grad_up, grad_gate)


def allowed(param: str, product: str) -> set[str]:
    """gradY, x, out: FLOAT, FLOAT16, BFLOAT16."""
    return {"FLOAT", "FLOAT16", "BF16"}


def base_scalars() -> dict:
    return {"beta": 1.0, "linearBeta": 0.0, "activateLeft": True}
