"""Every parameter check of every op spec, triggered by hand-built calls.

Expectations come from the vendor docs (shared/seeds/) and the fact sheet
(shared/research/aclnn-facts.md §1-§7): status codes 161001 (null pointer) and 161002 (invalid
parameter), the check order (the first violated rule decides), dtype lists per product, promotion
and castability, broadcast and shape rules, value constraints and the empty-tensor shortcut. The
dtype lists and nullable parameters below are written out from the docs, not read from the specs.

Every failing call must leave every output storage byte-identical.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from conformance import dtypes as dt
from conformance.call import Call, ScalarArg, TensorArg
from conformance.registry import default_registry
from reference.engine import evaluate

NULLPTR, INVALID = 161001, 161002
ALL_DTYPES = dt.tables().names()
PRODUCTS = {
    "leaky_relu_backward": ("atlas-inference", "atlas-training", "atlas-a2"),
    "hardshrink_backward": ("atlas-training", "atlas-a2"),
    "softplus_backward": ("atlas-training", "atlas-a2"),
    "gelu_backward_v2": ("atlas-inference", "atlas-training", "atlas-a2"),
    "elu_backward": ("atlas-inference", "atlas-training", "atlas-a2"),
}
COMPLEX = {"COMPLEX32", "COMPLEX64", "COMPLEX128"}
INTEGRAL = {"INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32", "INT64", "UINT64", "BOOL"}


def bf16_if_a2(product: str, dtypes: list[str]) -> set[str]:
    """BFLOAT16 is listed for 'Atlas A2训练系列产品/Atlas 800I A2推理产品' only."""
    return set(dtypes) | ({"BF16"} if product == "atlas-a2" else set())


# -- dtype lists from the seeds (per tensor / scalar, per product) ------------------------------


def allowed(op: str, param: str, product: str) -> set[str]:
    if op == "leaky_relu_backward":  # seed 000
        if param in ("gradOutput", "self"):
            return bf16_if_a2(product, ["FLOAT", "FLOAT16", "DOUBLE"])
        if param == "negativeSlope":
            return bf16_if_a2(
                product,
                ["FLOAT", "FLOAT16", "DOUBLE", "INT32", "INT64", "INT8", "BOOL", "INT16", "UINT8"],
            )
        if param == "out":  # the listed types plus those "supported through automatic cast"
            return bf16_if_a2(
                product, ["FLOAT", "FLOAT16", "DOUBLE", *INTEGRAL, "COMPLEX64", "COMPLEX128"]
            )
    if op == "hardshrink_backward":  # seed 001
        if param == "lambd":
            return {"FLOAT"}
        return bf16_if_a2(product, ["FLOAT", "FLOAT16"])
    if op == "softplus_backward":  # seed 002
        if param == "self":
            return bf16_if_a2(
                product,
                ["INT8", "INT16", "INT32", "INT64", "UINT8", "BOOL", "FLOAT16", "FLOAT", "DOUBLE"],
            )
        return bf16_if_a2(product, ["FLOAT", "FLOAT16", "DOUBLE"])
    if op == "gelu_backward_v2":  # seed 003
        return bf16_if_a2(product, ["FLOAT16", "FLOAT"])
    if op == "elu_backward":  # seed 004
        return bf16_if_a2(product, ["FLOAT", "FLOAT16"])
    raise KeyError((op, param))


# -- building calls -----------------------------------------------------------------------------

SENTINEL = 7.25


def tensor(dtype: str, shape: tuple[int, ...], fill: float = 0.5, extra: int = 0) -> TensorArg:
    """A contiguous tensor; `extra` spare storage elements after the view."""
    d = dt.get(dtype)
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    size = n + extra
    if d.opaque:
        storage = np.full(size, 0xAB, dtype=np.uint8)
    elif d.category == "bool":
        storage = np.ones(size, dtype=d.np)
    else:
        with np.errstate(all="ignore"):
            storage = np.full(size, fill).astype(d.np)
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(s, 1)
    return TensorArg(d.name, tuple(shape), tuple(reversed(strides)), 0, storage)


def out_tensor(dtype: str, shape: tuple[int, ...]) -> TensorArg:
    return tensor(dtype, shape, fill=SENTINEL, extra=3)


OUTPUT = {
    "leaky_relu_backward": "out",
    "hardshrink_backward": "gradInput",
    "softplus_backward": "gradInput",
    "gelu_backward_v2": "gradInput",
    "elu_backward": "gradInput",
}
X = {
    "leaky_relu_backward": "self",
    "hardshrink_backward": "self",
    "softplus_backward": "self",
    "gelu_backward_v2": "self",
    "elu_backward": "selfOrResult",
}


def base_args(op: str, shape=(2, 3), dtype: str = "FLOAT") -> dict[str, Any]:
    """A valid call's arguments: gradOutput, x and output of `dtype` and `shape`."""
    args: dict[str, Any] = {
        "gradOutput": tensor(dtype, shape, 0.5),
        X[op]: tensor(dtype, shape, -1.0),
        OUTPUT[op]: out_tensor(dtype, shape),
    }
    if op == "leaky_relu_backward":
        args |= {"negativeSlope": ScalarArg("FLOAT", 0.01), "selfIsResult": False}
    elif op == "hardshrink_backward":
        args |= {"lambd": ScalarArg("FLOAT", 0.5)}
    elif op == "softplus_backward":
        args |= {"beta": ScalarArg("FLOAT", 1.0), "threshold": ScalarArg("FLOAT", 20.0)}
    elif op == "gelu_backward_v2":
        args |= {"approximate": "none"}
    elif op == "elu_backward":
        args |= {
            "alpha": ScalarArg("FLOAT", 1.0),
            "scale": ScalarArg("FLOAT", 1.0),
            "inputScale": ScalarArg("FLOAT", 1.0),
            "isResult": False,
        }
    return args


@dataclass
class Case:
    id: str
    op: str
    product: str
    args: Callable[[], dict[str, Any]]
    status: int
    clause: str | None  # check id, or None for a plain success


CASES: list[Case] = []
OK = 0
DEFAULT_SHAPE = (2, 3)


def case(op, product, desc, status, clause=None, *, g=None, x=None, o=None, gs=None, xs=None,
         os=None, **changes):  # fmt: skip
    """Register a call: the valid base call with some changes.

    g / x / o: dtype names of gradOutput, the x tensor and the output (default FLOAT);
    gs / xs / os: their shapes (default 2x3); other keywords replace arguments as given
    (None for a null pointer)."""

    def build():
        args = base_args(op)
        for name, d, shape, make in (
            ("gradOutput", g, gs, tensor),
            (X[op], x, xs, tensor),
            (OUTPUT[op], o, os, out_tensor),
        ):
            if d is not None or shape is not None:
                args[name] = make(d or "FLOAT", DEFAULT_SHAPE if shape is None else shape)
        args.update(changes)
        return args

    CASES.append(Case(f"{op}-{product}-{desc}", op, product, build, status, clause))


A2, TRAIN, INFER = "atlas-a2", "atlas-training", "atlas-inference"
L, H, S, G, E = (
    "leaky_relu_backward",
    "hardshrink_backward",
    "softplus_backward",
    "gelu_backward_v2",
    "elu_backward",
)
F = "FLOAT"

# -- 1. null pointers, each separately (doc: 161001) --------------------------------------------

NULLABLE = {
    L: ["gradOutput", "self", "negativeSlope", "out"],
    H: ["gradOutput", "self", "lambd", "gradInput"],
    S: ["gradOutput", "self", "beta", "threshold", "gradInput"],
    G: ["gradOutput", "self", "approximate", "gradInput"],
    E: ["gradOutput", "alpha", "scale", "inputScale", "selfOrResult", "gradInput"],
}
NULL_COVERED: set[tuple[str, str]] = set()
for _op, _params in NULLABLE.items():
    for _p in _params:
        for _prod in PRODUCTS[_op]:
            case(_op, _prod, f"null-{_p}", NULLPTR, "null-ptr", **{_p: None})
            NULL_COVERED.add((_op, _p))

# -- 2. disallowed dtypes, per tensor and per product -------------------------------------------

for _op, _products in PRODUCTS.items():
    for _prod in _products:
        for _key, _param in (("g", "gradOutput"), ("x", X[_op]), ("o", OUTPUT[_op])):
            for _d in ALL_DTYPES:
                if _d in allowed(_op, _param, _prod):
                    continue
                _clause = f"dtype-{_param}"
                _kw = {_key: _d}
                if _op == E and _key == "g":
                    _kw["x"] = _d  # dtype-same (gradOutput == selfOrResult) comes first
                if _op == E and _key == "x":
                    _clause = "dtype-same"  # selfOrResult alone differs from gradOutput
                case(_op, _prod, f"dtype-{_param}-{_d}", INVALID, _clause, **_kw)
        if _op == L:
            # out dtypes the doc lists "through automatic cast" but that a floating promote type
            # cannot be cast to (CanCast: float -> integral or bool is false)
            for _d in sorted(allowed(_op, "out", _prod) & INTEGRAL):
                case(_op, _prod, f"cast-out-{_d}", INVALID, "cast-out", o=_d)

# scalars: leaky's and hardshrink's dtype lists; elu's and softplus's "可转换为FLOAT"
for _op, _params, _clause, _bad in (
    (L, ["negativeSlope"], "dtype-negativeSlope", None),
    (H, ["lambd"], "dtype-lambd", None),
    (E, ["alpha", "scale", "inputScale"], "scalar-castable", COMPLEX),
    (S, ["beta", "threshold"], "scalar-castable", COMPLEX),
):
    for _prod in PRODUCTS[_op]:
        for _p in _params:
            for _d in ALL_DTYPES:
                _fails = _d in _bad if _bad is not None else _d not in allowed(_op, _p, _prod)
                _value = ScalarArg(_d, True if _d == "BOOL" else 1.0)
                if _fails:
                    case(_op, _prod, f"scalar-{_p}-{_d}", INVALID, _clause, **{_p: _value})
                else:
                    case(_op, _prod, f"scalar-{_p}-{_d}", OK, **{_p: _value})

# -- 3. promotion and castability ---------------------------------------------------------------

# leaky: PromoteType(gradOutput, self), then CanCast(promote, out) (facts §2.1 step 6)
case(L, TRAIN, "promote-f16-f64-to-f16", OK, g="FLOAT16", x="DOUBLE", o="FLOAT16")
case(L, TRAIN, "promote-f16-f64-to-f64", OK, g="FLOAT16", x="DOUBLE", o="DOUBLE")
case(L, TRAIN, "promote-f16-f64-to-i32", INVALID, "cast-out", g="FLOAT16", x="DOUBLE", o="INT32")
case(L, TRAIN, "promote-f16-f64-to-bool", INVALID, "cast-out", g="FLOAT16", x="DOUBLE", o="BOOL")
case(L, A2, "promote-f16-bf16-to-bf16", OK, g="FLOAT16", x="BF16", o="BF16")
case(L, A2, "promote-f32-f32-to-c64", OK, o="COMPLEX64")
case(L, A2, "promote-f32-f32-to-c128", OK, o="COMPLEX128")
case(L, TRAIN, "bf16-out-not-on-training", INVALID, "dtype-out", o="BF16")
case(L, A2, "bf16-out-on-a2", OK, o="BF16")
# hardshrink: promote in the list, CanCast(promote, gradInput) (UT case_promote_dtype)
case(H, TRAIN, "promote-f32-f16-to-f16", OK, g="FLOAT", x="FLOAT16", o="FLOAT16")
case(H, A2, "promote-f16-bf16-to-bf16", OK, g="FLOAT16", x="BF16", o="BF16")
# softplus: no promotion rule; integer self with a float gradOutput (UT)
case(S, TRAIN, "int32-self-f32-grad", OK, x="INT32")
case(S, TRAIN, "bool-self-f16-out", OK, x="BOOL", o="FLOAT16")
case(S, A2, "f16-grad-f64-self-bf16-out", OK, g="FLOAT16", x="DOUBLE", o="BF16")
# gelu: gradInput's dtype must be the promote type exactly (facts §5.1 step 3)
case(G, TRAIN, "promote-f16-f32-to-f32", OK, g="FLOAT16", o="FLOAT")
case(G, TRAIN, "promote-f16-f32-to-f16", INVALID, "gradInput-is-promote", g="FLOAT16", o="FLOAT16")
case(G, A2, "promote-f16-bf16-to-f32", OK, g="FLOAT16", x="BF16", o="FLOAT")
case(G, A2, "promote-f16-bf16-to-bf16", INVALID, "gradInput-is-promote", g="FLOAT16", x="BF16",
     o="BF16")  # fmt: skip
case(G, A2, "promote-bf16-bf16-to-f32", INVALID, "gradInput-is-promote", g="BF16", x="BF16", o=F)
# elu: gradOutput and selfOrResult identical, gradInput castable from gradOutput
case(E, TRAIN, "f32-f16-mixed", INVALID, "dtype-same", x="FLOAT16")
case(E, TRAIN, "f32-to-f16-out", OK, o="FLOAT16")
case(E, A2, "bf16-to-f32-out", OK, g="BF16", x="BF16", o=F)

# -- 4. shapes ----------------------------------------------------------------------------------

R9 = (2, 1, 1, 1, 1, 1, 1, 1, 1)
R8 = (2, 1, 1, 1, 1, 1, 1, 1)
R9_BCAST = (2, 1, 1, 1, 1, 1, 1, 2, 3)  # the broadcast of R9 with 2x3
for _op, _prods in PRODUCTS.items():
    case(_op, _prods[0], "rank8-ok", OK, gs=R8, xs=R8, os=R8)
    case(_op, _prods[0], "rank9-all", INVALID, "max-rank", gs=R9, xs=R9, os=R9)
    case(_op, _prods[0], "zero-dim-ok", OK, gs=(), xs=(), os=())

# broadcasting ops: leaky, hardshrink, gelu (the output must equal the broadcast shape)
for _op, _out_clause in ((L, "out-shape"), (H, "gradInput-shape"), (G, "gradInput-shape")):
    _p = PRODUCTS[_op][-1]
    case(_op, _p, "broadcast-2x1-1x3", OK, gs=(2, 1), xs=(1, 3))
    case(_op, _p, "broadcast-0d-grad", OK, gs=())
    case(_op, _p, "broadcast-0d-x", OK, xs=())
    case(_op, _p, "not-broadcastable", INVALID, "broadcastable", gs=(1, 1, 4, 4), xs=(1, 1, 1, 3),
         os=(1, 1, 4, 4))  # fmt: skip
    case(_op, _p, "out-shape-transposed", INVALID, _out_clause, os=(3, 2))
    case(_op, _p, "out-shape-extra-dim", INVALID, _out_clause, os=(1, 2, 3))
    case(
        _op,
        _p,
        "out-shape-not-the-broadcast",
        INVALID,
        _out_clause,
        gs=(2, 1),
        xs=(1, 3),
        os=(1, 3),
    )
    case(_op, _p, "rank9-grad", INVALID, "max-rank", gs=R9, os=R9_BCAST)
    case(_op, _p, "rank9-x", INVALID, "max-rank", xs=R9, os=R9_BCAST)
    case(_op, _p, "rank9-out-only", INVALID, "max-rank", os=(1, 1, 1, 1, 1, 1, 1, 2, 3))

# equal-shape ops: softplus, elu (no broadcasting)
for _op in (S, E):
    _p = PRODUCTS[_op][-1]
    case(_op, _p, "x-shape-differs", INVALID, "shape-equal", xs=(2, 3, 1))
    case(_op, _p, "grad-would-broadcast", INVALID, "shape-equal", gs=(1, 3))
    case(_op, _p, "out-shape-differs", INVALID, "shape-equal", os=(3, 2))
    # softplus checks ranks first; elu checks shapes first (facts §4.1, §6.1)
    case(_op, _p, "rank9-out-only", INVALID, "max-rank" if _op == S else "shape-equal", os=R9)

# -- 5. value constraints -----------------------------------------------------------------------

# leaky: "selfIsResult为true时,negativeSlope不可以是负数"; -0.0, 0 and NaN are not negative
for _v, _bad in ((-0.1, True), (-1.0, True), (-0.0, False), (0.0, False), (0.25, False),
                 (float("nan"), False)):  # fmt: skip
    _s = ScalarArg("FLOAT", _v)
    if _bad:
        case(L, A2, f"selfIsResult-slope-{_v}", INVALID, "slope-nonneg-if-result",
             selfIsResult=True, negativeSlope=_s)  # fmt: skip
    else:
        case(L, A2, f"selfIsResult-slope-{_v}", OK, selfIsResult=True, negativeSlope=_s)
case(L, A2, "not-result-negative-slope", OK, negativeSlope=ScalarArg(F, -0.1))
case(L, A2, "selfIsResult-slope-int8-neg", INVALID, "slope-nonneg-if-result", selfIsResult=True,
     negativeSlope=ScalarArg("INT8", -1))  # fmt: skip
case(L, A2, "selfIsResult-slope-bool", OK, selfIsResult=True, negativeSlope=ScalarArg("BOOL", True))
# a FLOAT scalar holds float32(value): -1e-46 is -0.0 there, but negative as a DOUBLE
case(L, A2, "selfIsResult-slope-f32-underflow", OK, selfIsResult=True,
     negativeSlope=ScalarArg(F, -1e-46))  # fmt: skip
case(L, A2, "selfIsResult-slope-f64-tiny", INVALID, "slope-nonneg-if-result", selfIsResult=True,
     negativeSlope=ScalarArg("DOUBLE", -1e-46))  # fmt: skip
# elu: "如果isResult为true, alpha必须大于等于0"
for _v, _bad in ((-1.0, True), (-0.001, True), (-0.0, False), (0.0, False), (2.0, False),
                 (float("nan"), False)):  # fmt: skip
    _s = ScalarArg(F, _v)
    if _bad:
        case(E, A2, f"isResult-alpha-{_v}", INVALID, "alpha-nonneg-if-result", isResult=True,
             alpha=_s)  # fmt: skip
    else:
        case(E, A2, f"isResult-alpha-{_v}", OK, isResult=True, alpha=_s)
case(E, A2, "not-result-negative-alpha", OK, alpha=ScalarArg(F, -1.0))
case(E, A2, "isResult-alpha-int32-neg", INVALID, "alpha-nonneg-if-result", isResult=True,
     alpha=ScalarArg("INT32", -2))  # fmt: skip
case(E, A2, "isResult-negative-scales-ok", OK, isResult=True, scale=ScalarArg(F, -1.0),
     inputScale=ScalarArg(F, -2.0))  # fmt: skip
# hardshrink: a negative lambd is not an error ("当λ小于0时,按0计算")
case(H, A2, "negative-lambd-ok", OK, lambd=ScalarArg(F, -0.5))
# gelu: approximate is "none" or "tanh" (case-sensitive)
case(G, A2, "approximate-tanh", OK, approximate="tanh")
for _v in ("test", "None", "TANH", "", "none ", "erf"):
    case(G, A2, f"approximate-{_v!r}", INVALID, "approximate-value", approximate=_v)

# -- 6. empty tensors ---------------------------------------------------------------------------

for _op, _prods in PRODUCTS.items():
    for _shape in ((0,), (2, 0, 3), (3, 0)):
        _id = "x".join(map(str, _shape))
        case(_op, _prods[0], f"empty-{_id}", OK, "empty", gs=_shape, xs=_shape, os=_shape)
# hardshrink checks "empty" before the broadcast rule (UT case_empty_tensor)
case(H, A2, "empty-grad-before-broadcast", OK, "empty", gs=(0,), xs=(1, 1, 1, 4), os=(1, 1, 1, 4))
case(H, A2, "empty-grad-not-broadcastable", OK, "empty", gs=(0,), xs=(2, 3), os=(7,))
case(H, A2, "empty-self-not-broadcastable", OK, "empty", xs=(0, 5))
# gelu checks shapes first (UT 021, 022)
case(G, A2, "empty-self-not-broadcastable", INVALID, "broadcastable", gs=(16, 16), xs=(0,),
     os=(16, 16))  # fmt: skip
case(G, A2, "empty-grad-not-broadcastable", INVALID, "broadcastable", gs=(0,), xs=(16, 16),
     os=(16, 16))  # fmt: skip
case(G, A2, "empty-broadcast-ok", OK, "empty", gs=(0, 1), xs=(1, 3), os=(0, 3))
case(G, A2, "empty-wrong-out-shape", INVALID, "gradInput-shape", gs=(0, 3), xs=(0, 3), os=(3,))
# leaky: an empty self ends the call after every shape check (facts §2.1 step 7)
case(L, A2, "empty-self-wrong-out", INVALID, "out-shape", gs=(0, 3), xs=(0, 3), os=(1, 3))
case(L, A2, "empty-self-broadcast", OK, "empty", gs=(1, 3), xs=(0, 3), os=(0, 3))
case(L, A2, "empty-grad-only", OK, gs=(0, 3), xs=(1, 3), os=(0, 3))
case(L, A2, "empty-self-bad-dtype", INVALID, "dtype-self", x="INT32", gs=(0,), xs=(0,), os=(0,))
# softplus / elu: shapes must still match
case(S, A2, "empty-shapes-differ", INVALID, "shape-equal", gs=(0, 3), xs=(0, 3), os=(0, 4))
case(E, A2, "empty-shapes-differ", INVALID, "shape-equal", gs=(0,), xs=(2,), os=(0,))
case(E, A2, "empty-alpha-negative-isResult", INVALID, "alpha-nonneg-if-result", gs=(0,), xs=(0,),
     os=(0,), isResult=True, alpha=ScalarArg(F, -1.0))  # fmt: skip

# -- 7. two violations: the rule checked first decides ------------------------------------------

case(L, A2, "two-null-and-bad-dtype", NULLPTR, "null-ptr", x="INT32", gradOutput=None)
case(L, A2, "two-bad-dtype-and-bad-shape", INVALID, "dtype-self", x="INT32", xs=(5, 7))
case(L, A2, "two-bad-out-dtype-and-out-shape", INVALID, "dtype-out", o="UINT1", os=(9,))
case(L, A2, "two-negative-slope-and-int-out", INVALID, "slope-nonneg-if-result", o="INT32",
     selfIsResult=True, negativeSlope=ScalarArg(F, -1.0))  # fmt: skip
case(L, A2, "two-rank9-and-not-broadcastable", INVALID, "max-rank", gs=R9, xs=(5,))
case(L, A2, "two-out-shape-and-negative-slope", INVALID, "out-shape", os=(3,), selfIsResult=True,
     negativeSlope=ScalarArg(F, -1.0))  # fmt: skip
case(H, A2, "two-null-lambd-and-bad-grad", NULLPTR, "null-ptr", g="DOUBLE", lambd=None)
case(
    H, A2, "two-bad-lambd-and-rank9", INVALID, "dtype-lambd", xs=R9, lambd=ScalarArg("DOUBLE", 0.5)
)
case(H, A2, "two-rank9-and-not-broadcastable", INVALID, "max-rank", gs=R9, xs=(5,))
case(S, A2, "two-bad-grad-and-rank9-out", INVALID, "dtype-gradOutput", g="INT32", os=R9)
case(S, A2, "two-complex-beta-and-shape", INVALID, "scalar-castable", xs=(4,),
     beta=ScalarArg("COMPLEX64", 1.0))  # fmt: skip
case(G, A2, "two-null-approximate-and-bad-dtype", NULLPTR, "null-ptr", g="DOUBLE", approximate=None)
case(G, A2, "two-bad-approximate-and-shape", INVALID, "broadcastable", xs=(4,), approximate="test")
case(G, A2, "two-bad-approximate-and-out-dtype", INVALID, "gradInput-is-promote", o="FLOAT16",
     approximate="test")  # fmt: skip
case(E, A2, "two-dtype-same-and-shape", INVALID, "dtype-same", x="FLOAT16", xs=(4,))
case(E, A2, "two-null-alpha-and-mixed-dtypes", NULLPTR, "null-ptr", x="FLOAT16", alpha=None)
case(E, A2, "two-complex-scale-and-int-out", INVALID, "scalar-castable", o="INT32",
     scale=ScalarArg("COMPLEX128", 1.0))  # fmt: skip
case(E, A2, "two-shape-and-negative-alpha", INVALID, "shape-equal", os=(3, 2), isResult=True,
     alpha=ScalarArg(F, -1.0))  # fmt: skip

# -- clauses no call can reach with these specs (each proven by exhaustive search below) --------

ALWAYS_PROMOTE = "the listed gradOutput/self dtypes are floats, and floats always promote"
ALWAYS_CASTABLE = "every listed float dtype can be cast to every listed float gradInput dtype"
UNREACHABLE = {
    (L, "promotable"): ALWAYS_PROMOTE,
    (H, "promotable"): ALWAYS_PROMOTE,
    (G, "promotable"): ALWAYS_PROMOTE,
    (H, "cast-gradInput"): ALWAYS_CASTABLE,
    (E, "cast-gradInput"): ALWAYS_CASTABLE,
    # dtype-same makes selfOrResult's dtype gradOutput's, which dtype-gradOutput checks first
    (E, "dtype-selfOrResult"): "dtype-same and dtype-gradOutput come first",
}

# -- running the table --------------------------------------------------------------------------


def _storage_bytes(args: dict[str, Any]) -> dict[str, bytes]:
    return {k: v.storage.tobytes() for k, v in args.items() if isinstance(v, TensorArg)}


def run_case(c: Case):
    args = c.args()
    before = _storage_bytes(args)
    outcome = evaluate(Call(c.op, c.product, args))
    return args, before, outcome


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_rule(c: Case):
    args, before, outcome = run_case(c)
    full = f"{c.op}/{c.clause}" if c.clause else None
    assert outcome.status == c.status, f"{outcome.status} ({outcome.clause}): {outcome.message}"
    if c.status != 0:
        assert outcome.clause == full, outcome.message
    elif c.clause is not None:  # a success decided by a check (the empty shortcut)
        assert outcome.clause in (None, full)
        assert full in outcome.message, outcome.message
    # inputs are never written; a failing or empty call leaves every output byte-identical
    after = _storage_bytes(args)
    assert after == before, "the call's own storage arrays were modified"
    out = OUTPUT[c.op]
    if (
        c.status != 0
        or c.clause == "empty"
        or (isinstance(args.get(out), TensorArg) and args[out].is_empty)
    ):
        for name, storage in outcome.outputs.items():
            assert storage.tobytes() == before[name], f"{name} storage changed"
    assert set(outcome.outputs) == ({out} if isinstance(args.get(out), TensorArg) else set())


def test_case_ids_unique():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)), [i for i in ids if ids.count(i) > 1]


KNOWN_KINDS = {
    "not_null",
    "dtype_in",
    "same_dtype",
    "promotable",
    "castable",
    "max_rank",
    "broadcastable",
    "same_shape",
    "shape_is_broadcast",
    "value",
    "string_in",
    "empty_success",
}


def _spec_checks():
    return [
        pytest.param(spec.name, chk.id, id=f"{spec.name}-{chk.id}")
        for spec in default_registry()
        for chk in spec.checks
    ]


@pytest.mark.parametrize(("op", "check_id"), _spec_checks())
def test_every_check_has_a_triggering_call(op, check_id):
    """A check added to a spec without a call here that triggers it fails this test."""
    spec = default_registry().get(op)
    chk = next(c for c in spec.checks if c.id == check_id)
    assert chk.kind in KNOWN_KINDS, f"new check kind {chk.kind!r}: add cases for it"
    expected_status = (
        NULLPTR if chk.kind == "not_null" else 0 if chk.kind == "empty_success" else INVALID
    )
    assert chk.status == expected_status, f"{op}/{check_id} returns {chk.status}"
    triggering = [c for c in CASES if c.op == op and c.clause == check_id]
    if (op, check_id) in UNREACHABLE:
        assert not triggering
        return
    assert triggering, f"no call in this file triggers {op}/{check_id}"
    if chk.kind == "not_null":
        assert {p for o, p in NULL_COVERED if o == op} == set(NULLABLE[op])
        assert set(chk.params) == set(NULLABLE[op]), (
            "the spec's nullable parameters differ from the doc"
        )


def test_spec_products_match_docs():
    for spec in default_registry():
        assert tuple(spec.products) == PRODUCTS[spec.name]


# A representative dtype universe for the exhaustive searches: every dtype with host storage
# plus one exotic dtype of each category.
SEARCH_DTYPES = [d for d in ALL_DTYPES if not dt.get(d).opaque] + [
    "UNDEFINED",
    "INT4",
    "COMPLEX32",
    "HIFLOAT8",
]


def _unreachable_ops():
    return sorted({op for op, _ in UNREACHABLE})


@pytest.mark.parametrize("op", _unreachable_ops())
def test_unreachable_clauses_are_unreachable(op):
    """Sweep every dtype combination of the three tensors: the listed clauses never decide.

    These are spec findings: rules that can never fire because earlier dtype-list rules already
    reject everything they would reject. If a spec change makes one reachable, this test fails
    and a triggering call belongs in the table above."""
    dead = {cid for o, cid in UNREACHABLE if o == op}
    seen: dict[str, int] = {}
    x, out = X[op], OUTPUT[op]
    made = {d: tensor(d, (2,)) for d in SEARCH_DTYPES}  # never written: reused across calls
    args = base_args(op, shape=(2,))
    for product in PRODUCTS[op]:
        for a, b, c in itertools.product(SEARCH_DTYPES, repeat=3):
            args["gradOutput"], args[x], args[out] = made[a], made[b], made[c]
            outcome = evaluate(Call(op, product, dict(args)))
            seen[str(outcome.clause)] = seen.get(str(outcome.clause), 0) + 1
    hit = {f"{op}/{cid}" for cid in dead} & set(seen)
    assert not hit, f"reachable after all: {hit}"
    assert "None" in seen  # some combinations are valid
