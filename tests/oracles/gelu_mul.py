"""aclnnGeluMul, from ops-nn activation/gelu_mul/docs/aclnnGeluMul.md 计算公式 (KIND "halves").

x1, x2 the first and second half of input along the last dim; out = GELU(x1) * x2, GELU the erf
form 0.5 x (1 + erf(x / sqrt 2)) for "none" and the tanh form
0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) for "tanh".
"""

from __future__ import annotations

import mpmath

KIND = "halves"
SPLIT = "input"
DIM = -1  # always the last dim (no dim parameter)
GRAD = None
OUT = "out"
FULL_OUT = False
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2")
SETTINGS = [{"approximateOptional": "none"}, {"approximateOptional": "tanh"}]


def gelu(x, mode: str):
    if mode == "tanh":
        u = mpmath.sqrt(2 / mpmath.pi) * (x + mpmath.mpf("0.044715") * x**3)
        return x * (1 + mpmath.tanh(u)) / 2
    return x * (1 + mpmath.erf(x / mpmath.sqrt(2))) / 2


def value(a, b, g, s: dict):
    """The exact output element from the halves' elements a (x1), b (x2) (mpmath)."""
    return gelu(a, s["approximateOptional"]) * b


def allowed(param: str, product: str) -> set[str]:
    """input, out: BFLOAT16, FLOAT16, FLOAT."""
    return {"FLOAT", "FLOAT16", "BF16"}


def base_scalars() -> dict:
    return {"approximateOptional": "none"}
