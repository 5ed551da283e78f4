"""aclnnGeluBackwardV2, from seed 003 and aclnn-facts.md §5 (interface: tests/oracles/__init__.py).

approximate = "none": d/dx x * Phi(x) = Phi(x) + x * phi(x); "tanh": the derivative of
0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
"""

from __future__ import annotations

import itertools
import math

import mpmath
import numpy as np

from tests.oracles._common import (
    A2,
    A3,
    A950,
    INFER,
    INVALID,
    NULLPTR,
    OK,
    TRAIN,
    F,
    Regression,
    bf16_if_a2,
    broadcast_cases,
    pos,
    promote_floats,
)

X = "self"
OUT = "gradInput"
PRODUCTS = (INFER, TRAIN, A2, A3, A950)

# -- the formula ---------------------------------------------------------------------------------

DTYPES = ("FLOAT", "FLOAT16", "BF16")


def factor(x: float, s: dict):
    branch = "erf" if s["approximate"] == "none" else "tanh"
    if not math.isfinite(x):
        return branch, math.nan  # inf * 0 in the documented formula, or NaN x
    X_ = mpmath.mpf(x)
    if branch == "erf":
        # 1/2 + 1/2 erf(x/sqrt2) == 1/2 erfc(-x/sqrt2) (no cancellation for x << 0)
        cdf = mpmath.erfc(-X_ / mpmath.sqrt(2)) / 2
        return branch, cdf + X_ / mpmath.sqrt(2 * mpmath.pi) * mpmath.exp(-X_ * X_ / 2)
    # d/dx 0.5x(1 + tanh u), u = k(x + c x^3), k = sqrt(2/pi), c = 0.044715
    #   = 0.5(1 + tanh u) + 0.5x sech^2(u) u',  with 0.5(1 + tanh u) == 1/(1 + e^(-2u))
    k, c = mpmath.sqrt(2 / mpmath.pi), mpmath.mpf("0.044715")
    u = k * (X_ + c * X_**3)
    du = k * (1 + 3 * c * X_**2)
    return branch, 1 / (1 + mpmath.exp(-2 * u)) + X_ / 2 * mpmath.sech(u) ** 2 * du


def _x_values(rng, n, s):
    return np.where(
        rng.random(n) < 0.7,
        rng.uniform(-6, 6, n),
        rng.choice([-1.0, 1.0], n) * pos(rng, n, -20, 4),
    )


BRANCHES = {
    "erf": ([{"approximate": "none"}], _x_values),
    "tanh": ([{"approximate": "tanh"}], _x_values),
}

SPECIAL_SETTINGS = [{"approximate": "none"}, {"approximate": "tanh"}]


def special_x(s: dict, dtype: str, neighbours) -> list[float]:
    return [12.0, -12.0, -30.0, 30.0, -0.75, 5.5, -5.5, 1e-3, -1e-3]


SPECIAL_POINTS = {
    "x-zero": ({}, lambda s: 0.0),
    "x-zero-tanh": ({"approximate": "tanh"}, lambda s: 0.0),
    "x-large-positive": ({}, lambda s: 12.0),
    "x-large-negative": ({}, lambda s: -12.0),
    "x-large-negative-tanh": ({"approximate": "tanh"}, lambda s: -30.0),
}

MIXED = [
    ("FLOAT16", "FLOAT", "FLOAT", {"approximate": "none"}),
    ("BF16", "FLOAT", "FLOAT", {"approximate": "tanh"}),
]

# factor(x) = 1/2 + O(x) > 1/2 for a tiny x > 0; g = the smallest subnormal: the exact product
# is just above half the smallest subnormal and rounds up to it. float64 holds the factor as
# exactly 1/2, the tie rounds to even: the engine gave 0.
REGRESSIONS = [
    Regression(
        "erf-f32-subnormal-g-times-half", "FLOAT", 1e-38, 2.0**-149, {"approximate": "none"}
    ),  # fmt: skip
    Regression(
        "tanh-bf16-subnormal-g-times-half", "BF16", 1e-38, 2.0**-133, {"approximate": "tanh"}
    ),  # fmt: skip
]

# -- error rules ---------------------------------------------------------------------------------

NULLABLE = ["gradOutput", "self", "approximate", "gradInput"]


def allowed(param: str, product: str) -> set[str]:
    """seed 003: every tensor FLOAT16, FLOAT (+ BF16 on Atlas A2)."""
    return bf16_if_a2(product, ["FLOAT16", "FLOAT"])


def base_scalars() -> dict:
    return {"approximate": "none"}


SCALAR_RULES: list = []  # no aclScalar parameter


def error_cases(case) -> None:
    # gradInput's dtype must be the promote type exactly (facts §5.1 step 3)
    case(TRAIN, "promote-f16-f32-to-f32", OK, g="FLOAT16", o="FLOAT")
    case(TRAIN, "promote-f16-f32-to-f16", INVALID, "gradInput-is-promote", g="FLOAT16",
         o="FLOAT16")  # fmt: skip
    case(A2, "promote-f16-bf16-to-f32", OK, g="FLOAT16", x="BF16", o="FLOAT")
    case(A2, "promote-f16-bf16-to-bf16", INVALID, "gradInput-is-promote", g="FLOAT16", x="BF16",
         o="BF16")  # fmt: skip
    case(A2, "promote-bf16-bf16-to-f32", INVALID, "gradInput-is-promote", g="BF16", x="BF16", o=F)
    broadcast_cases(case, PRODUCTS[-1], "gradInput-shape")
    # approximate is "none" or "tanh" (case-sensitive)
    case(A2, "approximate-tanh", OK, approximate="tanh")
    for v in ("test", "None", "TANH", "", "none ", "erf"):
        case(A2, f"approximate-{v!r}", INVALID, "approximate-value", approximate=v)
    # shapes are checked before "empty" (UT 021, 022)
    case(A2, "empty-self-not-broadcastable", INVALID, "broadcastable", gs=(16, 16), xs=(0,),
         os=(16, 16))  # fmt: skip
    case(A2, "empty-grad-not-broadcastable", INVALID, "broadcastable", gs=(0,), xs=(16, 16),
         os=(16, 16))  # fmt: skip
    case(A2, "empty-broadcast-ok", OK, "empty", gs=(0, 1), xs=(1, 3), os=(0, 3))
    case(A2, "empty-wrong-out-shape", INVALID, "gradInput-shape", gs=(0, 3), xs=(0, 3), os=(3,))
    # two violations: the rule checked first decides
    case(A2, "two-null-approximate-and-bad-dtype", NULLPTR, "null-ptr", g="DOUBLE",
         approximate=None)  # fmt: skip
    case(A2, "two-bad-approximate-and-shape", INVALID, "broadcastable", xs=(4,),
         approximate="test")  # fmt: skip
    case(A2, "two-bad-approximate-and-out-dtype", INVALID, "gradInput-is-promote", o="FLOAT16",
         approximate="test")  # fmt: skip


UNREACHABLE = {
    "promotable": "the listed gradOutput/self dtypes are floats, and floats always promote",
}

# -- case generation -----------------------------------------------------------------------------


def dtype_combos(product: str) -> set[tuple[tuple[str, str], ...]]:
    """seed 003: gradInput == promote(gradOutput, self)."""
    fl = bf16_if_a2(product, ["FLOAT16", "FLOAT"])
    return {
        (("gradOutput", g), ("self", s), ("gradInput", gi))
        for g, s, gi in itertools.product(fl, fl, fl)
        if gi == promote_floats(g, s)
    }


def scalar_dtypes(product: str, param: str) -> set[str]:
    raise KeyError(f"gelu_backward_v2 has no aclScalar parameter, not even {param!r}")


POINT_VALUES = {"x-zero": 0.0, "x-zero-tanh": 0.0, "x-large-positive": 12.0,
                "x-large-negative": -12.0, "x-large-negative-tanh": -30.0}  # fmt: skip
