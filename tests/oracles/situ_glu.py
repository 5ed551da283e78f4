"""aclnnSituGlu, from ops-nn activation/situ_glu/docs/aclnnSituGlu.md 计算公式 (KIND "halves").

gate / up the halves of x along dim (activateLeft: gate the first); y = beta tanh(gate / beta)
sigmoid(gate) * up', up' = linearBeta tanh(up / linearBeta) where linearBeta > 0, else up.
"""

from __future__ import annotations

import mpmath

KIND = "halves"
SPLIT = "x"
DIM = "dim"
GRAD = None
OUT = "out"
FULL_OUT = False
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2")
SETTINGS = [
    {"beta": 1.0, "linearBeta": 2.0, "activateLeft": True},
    {"beta": 0.25, "linearBeta": 0.0, "activateLeft": False},
    {"beta": 3.0, "linearBeta": -1.0, "activateLeft": True},
]


def value(a, b, g, s: dict):
    """The exact output element from the halves' elements a (first), b (second) (mpmath)."""
    gate, up = (a, b) if s["activateLeft"] else (b, a)
    beta, lb = mpmath.mpf(s["beta"]), mpmath.mpf(s["linearBeta"])
    situ = beta * mpmath.tanh(gate / beta) / (1 + mpmath.exp(-gate))
    return situ * (lb * mpmath.tanh(up / lb) if lb > 0 else up)


def allowed(param: str, product: str) -> set[str]:
    """x, out: FLOAT, FLOAT16, BFLOAT16."""
    return {"FLOAT", "FLOAT16", "BF16"}


def base_scalars() -> dict:
    return {"beta": 1.0, "linearBeta": 2.0, "activateLeft": True}
