"""Helpers shared by the oracle modules (not an oracle itself: its name starts with `_`).

Everything here is written from the vendor docs and the fact sheet, like the modules; nothing is
imported from the code under test.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import mpmath
import numpy as np

# -- status codes and products (docs: 161001 null pointer, 161002 invalid parameter) -----------

OK, NULLPTR, INVALID = 0, 161001, 161002
A2, TRAIN, INFER = "atlas-a2", "atlas-training", "atlas-inference"
A3, A950 = "atlas-a3", "ascend950"  # the newer ops-nn pages list them with A2's dtypes
F = "FLOAT"
COMPLEX = {"COMPLEX32", "COMPLEX64", "COMPLEX128"}
INTEGRAL = {"INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32", "INT64", "UINT64", "BOOL"}
# Scalar dtypes a positive case may use where a doc says "castable to FLOAT" (every real dtype):
# the generator tries these ten.
REAL_SCALARS = {"FLOAT", "FLOAT16", "BF16", "DOUBLE", "INT32", "INT64", "INT8", "UINT8", "INT16",
                "BOOL"}  # fmt: skip

R9 = (2, 1, 1, 1, 1, 1, 1, 1, 1)
R8 = (2, 1, 1, 1, 1, 1, 1, 1)
R9_BCAST = (2, 1, 1, 1, 1, 1, 1, 2, 3)  # the broadcast of R9 with 2x3


class Scalar(NamedTuple):
    """An aclScalar argument of a hand-built call: its dtype name and value."""

    dtype: str
    value: Any


def bf16_if_a2(product: str, dtypes: list[str]) -> set[str]:
    """BFLOAT16 is listed for 'Atlas A2训练系列产品/Atlas 800I A2推理产品' in the seeds, and for
    Atlas A3 and Ascend 950 on the ops-nn pages of the same ops (the library keys BF16 on the
    DAV_2201 arch and the regbase arches)."""
    return set(dtypes) | ({"BF16"} if product in (A2, A3, A950) else set())


def promote_floats(a: str, b: str) -> str:
    """PromoteType for the float dtypes (aclnn-facts §1.4): fp16 with bf16 gives FLOAT."""
    if a == b:
        return a
    if "DOUBLE" in (a, b):
        return "DOUBLE"
    return "FLOAT"  # {FLOAT16, BF16, FLOAT} mixed


def float_castable_to(dst: str) -> bool:
    """CanCast(float, dst): floats cast to floats and complex, never to integers or bool."""
    return dst in {"FLOAT", "FLOAT16", "BF16", "DOUBLE", "COMPLEX64", "COMPLEX128"}


# -- the formula oracles ------------------------------------------------------------------------

ZERO_RESULT = object()  # a branch whose value is the constant 0 (hardshrink's dead zone)
ONE = mpmath.mpf(1)


def f32(v: float) -> float:
    """The value a FLOAT scalar holds."""
    return float(np.float32(v))


def log_uniform(rng, n, lo, hi):
    return rng.choice([-1.0, 1.0], n) * np.exp2(rng.uniform(lo, hi, n))


def pos(rng, n, lo=-12, hi=6):
    return np.exp2(rng.uniform(lo, hi, n))


Settings = list[dict]
Generator = Callable[..., np.ndarray]


@dataclass(frozen=True)
class Regression:
    """One element float64 alone gets wrong: x and g in `dtype` (also the output dtype).

    `expect` / `branch`, when given, are what the oracle itself must say (checked before the
    engine is compared with it)."""

    id: str
    dtype: str
    x: float
    g: float
    setting: dict = field(default_factory=dict)
    expect: float | None = None
    branch: str | None = None
    why: str = ""


# -- error-rule calls shared by several ops ------------------------------------------------------


def broadcast_cases(case, product: str, out_clause: str) -> None:
    """Broadcasting ops: gradOutput and x broadcast; the output must be the broadcast shape."""
    case(product, "broadcast-2x1-1x3", OK, gs=(2, 1), xs=(1, 3))
    case(product, "broadcast-0d-grad", OK, gs=())
    case(product, "broadcast-0d-x", OK, xs=())
    case(product, "not-broadcastable", INVALID, "broadcastable", gs=(1, 1, 4, 4),
         xs=(1, 1, 1, 3), os=(1, 1, 4, 4))  # fmt: skip
    case(product, "out-shape-transposed", INVALID, out_clause, os=(3, 2))
    case(product, "out-shape-extra-dim", INVALID, out_clause, os=(1, 2, 3))
    case(product, "out-shape-not-the-broadcast", INVALID, out_clause, gs=(2, 1), xs=(1, 3),
         os=(1, 3))  # fmt: skip
    case(product, "rank9-grad", INVALID, "max-rank", gs=R9, os=R9_BCAST)
    case(product, "rank9-x", INVALID, "max-rank", xs=R9, os=R9_BCAST)
    case(product, "rank9-out-only", INVALID, "max-rank", os=(1, 1, 1, 1, 1, 1, 1, 2, 3))


def equal_shape_cases(case, product: str, clause: str, rank9_out_clause: str) -> None:
    """Equal-shape ops (no broadcasting); `rank9_out_clause`: the rule a rank-9 output alone
    hits first (the rank rule, or the shape rule where shapes are checked first)."""
    case(product, "x-shape-differs", INVALID, clause, xs=(2, 3, 1))
    case(product, "grad-would-broadcast", INVALID, clause, gs=(1, 3))
    case(product, "out-shape-differs", INVALID, clause, os=(3, 2))
    case(product, "rank9-out-only", INVALID, rank9_out_clause, os=R9)
