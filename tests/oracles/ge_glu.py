"""aclnnGeGlu, from ops-nn activation/ge_glu_v2/docs/aclnnGeGlu.md (KIND "halves").

out = A * Gelu(B), outGelu = Gelu(B); A, B the first and second half of self along dim; Gelu
the erf form x * Phi(x) (approximate 0, "none") or the tanh form
0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (approximate 1).
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
SETTINGS = [{"approximate": 0}, {"approximate": 1}]


def gelu(x, approximate: int):
    if approximate == 1:
        u = mpmath.sqrt(2 / mpmath.pi) * (x + mpmath.mpf("0.044715") * x**3)
        return x * (1 + mpmath.tanh(u)) / 2
    return x * mpmath.erfc(-x / mpmath.sqrt(2)) / 2  # x Phi(x)


def value(a, b, g, s: dict) -> dict:
    """{output: exact element} from the halves' elements a, b (mpmath)."""
    gb = gelu(b, s["approximate"])
    return {"out": a * gb, "outGelu": gb}


def allowed(param: str, product: str) -> set[str]:
    """self, out, outGelu: FLOAT, FLOAT16, BFLOAT16 (Atlas inference: FLOAT, FLOAT16)."""
    return {"FLOAT", "FLOAT16"} if product == "atlas-inference" else {"FLOAT", "FLOAT16", "BF16"}


def base_scalars() -> dict:
    return {"approximate": 0}
