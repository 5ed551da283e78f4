"""aclnnGeGluV3, from ops-nn activation/ge_glu_v2/docs/aclnnGeGluV3.md (KIND "halves").

activateLeft true: out = Gelu(A) * B, outGelu = Gelu(A); false: out = A * Gelu(B),
outGelu = Gelu(B); A, B the halves of self along dim; Gelu as aclnnGeGlu (approximate 0: erf,
1: tanh).
"""

from __future__ import annotations

import mpmath

KIND = "halves"
SPLIT = "self"
DIM = "dim"
GRAD = None
OUT = "out"
FULL_OUT = False
PRODUCTS = ("ascend950", "atlas-a3", "atlas-a2", "atlas-inference")
SETTINGS = [{"approximate": ap, "activateLeft": left} for ap in (0, 1) for left in (False, True)]


def gelu(x, approximate: int):
    if approximate == 1:
        u = mpmath.sqrt(2 / mpmath.pi) * (x + mpmath.mpf("0.044715") * x**3)
        return x * (1 + mpmath.tanh(u)) / 2
    return x * mpmath.erfc(-x / mpmath.sqrt(2)) / 2  # x Phi(x)


def value(a, b, g, s: dict) -> dict:
    act, other = (a, b) if s["activateLeft"] else (b, a)
    ga = gelu(act, s["approximate"])
    return {"out": ga * other, "outGelu": ga}


def allowed(param: str, product: str) -> set[str]:
    """self, out, outGelu: FLOAT, FLOAT16, BFLOAT16 (Atlas inference: FLOAT, FLOAT16)."""
    return {"FLOAT", "FLOAT16"} if product == "atlas-inference" else {"FLOAT", "FLOAT16", "BF16"}


def base_scalars() -> dict:
    return {"approximate": 0, "activateLeft": False}
