"""aclnnHardshrinkBackward, from seed 001 and aclnn-facts.md §3 (interface:
tests/oracles/__init__.py).

seed 001: grad if x > lambda or x < -lambda; 0 otherwise; a negative lambda counts as 0.
"""

from __future__ import annotations

import itertools

from tests.oracles._common import (
    A2,
    A3,
    A950,
    INVALID,
    NULLPTR,
    OK,
    ONE,
    R9,
    TRAIN,
    ZERO_RESULT,
    F,
    Scalar,
    bf16_if_a2,
    broadcast_cases,
    f32,
    float_castable_to,
    pos,
)

X = "self"
OUT = "gradInput"
PRODUCTS = (TRAIN, A2, A3, A950)

# -- the formula ---------------------------------------------------------------------------------

DTYPES = ("FLOAT", "FLOAT16", "BF16")


def factor(x: float, s: dict):
    lam = s["lambd"]
    if lam < 0:
        lam = 0.0
    if abs(x) <= lam:
        return "dead-zone", ZERO_RESULT
    return "pass-through", ONE


LAMBDS = [{"lambd": 0.5}, {"lambd": 0.3}, {"lambd": 1.75}, {"lambd": -0.5}]
BRANCHES = {
    "dead-zone": (
        LAMBDS,
        lambda rng, n, s: (
            rng.uniform(-1, 1, n) * max(s["lambd"], 0.0) * rng.choice([1.0, 0.999, 0.5, 1e-3], n)
        ),
    ),
    "pass-through": (
        LAMBDS,
        lambda rng, n, s: rng.choice([-1.0, 1.0], n) * (max(s["lambd"], 0.0) + pos(rng, n, -20, 5)),
    ),
}

SPECIAL_SETTINGS = [{"lambd": 0.5}, {"lambd": 0.3}, {"lambd": -0.5}, {"lambd": 0.0}]


def special_x(s: dict, dtype: str, neighbours) -> list[float]:
    lam = max(s["lambd"], 0.0)
    return neighbours(lam, dtype) + neighbours(-lam, dtype)


SPECIAL_POINTS = {
    "x-at-lambd": ({}, lambda s: max(s["lambd"], 0.0)),
    "x-at-neg-lambd": ({}, lambda s: -max(s["lambd"], 0.0)),
    "x-zero": ({}, lambda s: 0.0),
    "x-zero-negative-lambd": ({"lambd": -0.5}, lambda s: 0.0),
    "x-at-unrepresentable-lambd": ({"lambd": 0.3}, lambda s: max(s["lambd"], 0.0)),
}

MIXED = [
    ("FLOAT", "FLOAT16", "FLOAT16", {"lambd": 0.3}),
    ("BF16", "FLOAT16", "BF16", {"lambd": 0.5}),
]

REGRESSIONS: list = []

# -- error rules ---------------------------------------------------------------------------------

NULLABLE = ["gradOutput", "self", "lambd", "gradInput"]


def allowed(param: str, product: str) -> set[str]:
    """seed 001: lambd "数据类型支持FLOAT"; the tensors FLOAT, FLOAT16 (+ BF16 on Atlas A2)."""
    if param == "lambd":
        return {"FLOAT"}
    return bf16_if_a2(product, ["FLOAT", "FLOAT16"])


def base_scalars() -> dict:
    return {"lambd": Scalar("FLOAT", 0.5)}


SCALAR_RULES = [(["lambd"], "dtype-lambd", None)]


def error_cases(case) -> None:
    # promote in the list, CanCast(promote, gradInput) (UT case_promote_dtype)
    case(TRAIN, "promote-f32-f16-to-f16", OK, g="FLOAT", x="FLOAT16", o="FLOAT16")
    case(A2, "promote-f16-bf16-to-bf16", OK, g="FLOAT16", x="BF16", o="BF16")
    broadcast_cases(case, PRODUCTS[-1], "gradInput-shape")
    # a negative lambd is not an error ("当λ小于0时,按0计算")
    case(A2, "negative-lambd-ok", OK, lambd=Scalar(F, -0.5))
    # "empty" is checked before the broadcast rule (UT case_empty_tensor)
    case(A2, "empty-grad-before-broadcast", OK, "empty", gs=(0,), xs=(1, 1, 1, 4),
         os=(1, 1, 1, 4))  # fmt: skip
    case(A2, "empty-grad-not-broadcastable", OK, "empty", gs=(0,), xs=(2, 3), os=(7,))
    case(A2, "empty-self-not-broadcastable", OK, "empty", xs=(0, 5))
    # two violations: the rule checked first decides
    case(A2, "two-null-lambd-and-bad-grad", NULLPTR, "null-ptr", g="DOUBLE", lambd=None)
    case(A2, "two-bad-lambd-and-rank9", INVALID, "dtype-lambd", xs=R9,
         lambd=Scalar("DOUBLE", 0.5))  # fmt: skip
    case(A2, "two-rank9-and-not-broadcastable", INVALID, "max-rank", gs=R9, xs=(5,))


UNREACHABLE = {
    "promotable": "the listed gradOutput/self dtypes are floats, and floats always promote",
    "cast-gradInput": "every listed float dtype can be cast to every listed float gradInput dtype",
}

# -- case generation -----------------------------------------------------------------------------


def dtype_combos(product: str) -> set[tuple[tuple[str, str], ...]]:
    """seed 001 + facts §3.1: promote, castable to gradInput."""
    fl = bf16_if_a2(product, ["FLOAT", "FLOAT16"])
    return {
        (("gradOutput", g), ("self", s), ("gradInput", gi))
        for g, s, gi in itertools.product(fl, fl, fl)
        if float_castable_to(gi)
    }


def scalar_dtypes(product: str, param: str) -> set[str]:
    return {"FLOAT"}  # seed 001: lambd "数据类型支持FLOAT"


POINT_VALUES = {
    "x-at-lambd": 0.5, "x-at-neg-lambd": -0.5, "x-zero": 0.0, "x-zero-negative-lambd": 0.0,
    # lambd is a FLOAT scalar: the kernel compares with float32(0.3)
    "x-at-unrepresentable-lambd": f32(0.3),
}  # fmt: skip
