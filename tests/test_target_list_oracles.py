"""The ops whose integer target lists each row's classes, ended by -1 (aclnnMultilabelMarginLoss),
against their hand-written oracles (tests/oracles/, KIND "target_lists"): for each such op,
product of its doc, float dtype, reduction and self shape of the oracle (ranks 0-2), every output
of the reference holds the correctly rounded exact value of every element (Fractions from the
doc's and the kernel's formula, rounded by tests/support/rounding.round_exact, ties seen
exactly); the oracle's hand-picked rows (hinge ties, magnitudes near the dtypes' ranges, IEEE
specials, repeated targets, a row of -1 alone, a row with no -1) likewise; an INT32 target
gives what INT64 gives; an empty batch succeeds and writes nothing, no classes is rejected. The drawn grid over every
product is the registry tier's; the hand-picked rows (on each dtype's first product), INT32 and
the empty rules run in the fast tier.

The expected values never come from the code under test: the oracle reads the inputs as the
dtype holds them and sums Fractions.
"""

from __future__ import annotations

import numpy as np
import pytest
from aclnn_conformance.conformance.acl.call import Call, TensorArg
from aclnn_conformance.conformance.spec.registry import default_registry
from aclnn_conformance.reference import engine

from tests import oracles
from tests.support.oracle_params import oracle_params
from tests.support.rounding import NP, UINT, round_exact

REG = default_registry()
ORACLES = oracles.of(REG.names(), "target_lists")


def _params():
    return oracle_params(REG, ORACLES, lambda mod, product, d: d in mod.allowed("self", product))


def _first_product_params():
    """Each op's dtypes on the first product that takes each (the fast tier's share)."""
    seen, out = set(), []
    for p in _params():
        name, _, dtype = p.values
        if (name, dtype) not in seen:
            seen.add((name, dtype))
            out.append(p)
    return out


def _call(name, product, dtype, x, t, reduction, exact, target_dtype="INT64"):
    args = {"self": TensorArg.from_array(x, dtype), "target": TensorArg.from_array(t, target_dtype),
            "reduction": reduction}  # fmt: skip
    for out, v in exact.items():
        args[out] = TensorArg.from_array(np.zeros(v.shape), dtype)
    return Call(name, product, args)


def _expect(exact: dict, dtype: str) -> dict:
    return {
        out: np.array([round_exact(v, dtype) for v in np.asarray(a, object).reshape(-1)], NP[dtype])
        for out, a in exact.items()
    }


def _check(name, product, dtype, x, t, reduction, where):
    """The reference's outputs bit for bit against the oracle's exact values (NaN never: the
    oracle counts a NaN hinge 0); the inputs as `dtype` holds them."""
    mod = ORACLES[name]
    x = np.asarray(x, np.float64).astype(NP[dtype]).astype(np.float64)
    t = np.asarray(t, np.int64)
    exact = mod.value({"self": x, "target": t}, reduction)
    want = _expect(exact, dtype)
    o = engine.evaluate(_call(name, product, dtype, x, t, reduction, exact), REG)
    assert o.status == 0, (*where, o.message)
    for out in mod.OUTS:
        got = np.asarray(o.outputs[out]).reshape(-1).astype(NP[dtype])
        u = UINT[want[out].itemsize]
        same = (got.view(u) == want[out].view(u)) | ((got == 0) & (want[out] == 0))
        assert same.all(), (out, *where, x, t, got[~same], want[out][~same])


@pytest.mark.registry
@pytest.mark.parametrize("name,product,dtype", _params())
def test_target_list_ops_are_the_correctly_rounded_exact_values(name, product, dtype):
    mod = ORACLES[name]
    rng = np.random.default_rng(20261129)
    for shape in mod.SHAPES:
        drawn = mod.draw(rng, shape)
        for reduction in mod.REDUCTIONS:
            _check(name, product, dtype, drawn["self"], drawn["target"], reduction,
                   (shape, reduction))  # fmt: skip


@pytest.mark.parametrize("name,product,dtype", _first_product_params())
def test_target_list_ops_on_hand_picked_rows(name, product, dtype):
    mod = ORACLES[name]
    for k, (x, t) in enumerate(mod.HARD):
        for reduction in mod.REDUCTIONS:
            _check(name, product, dtype, x, t, reduction, (f"HARD[{k}]", reduction))


@pytest.mark.parametrize("name", list(ORACLES))
def test_int32_targets_give_what_int64_targets_give(name):
    mod = ORACLES[name]
    drawn = mod.draw(np.random.default_rng(3), (4, 6))
    x, t = drawn["self"].astype(np.float32).astype(np.float64), drawn["target"]
    for reduction in mod.REDUCTIONS:
        exact = mod.value({"self": x, "target": t}, reduction)
        got = {}
        for td in sorted(mod.allowed("target", mod.PRODUCTS[0])):
            o = engine.evaluate(_call(name, mod.PRODUCTS[0], "FLOAT", x, t, reduction, exact, td),
                                REG)  # fmt: skip
            assert o.status == 0, (td, o.message)
            got[td] = {k: np.asarray(v).tobytes() for k, v in o.outputs.items()}
        assert got["INT32"] == got["INT64"]


@pytest.mark.parametrize("name", list(ORACLES))
def test_an_empty_batch_writes_nothing_and_no_classes_is_rejected(name):
    """The page's 空tensor rule: (0, C) succeeds with nothing written (the outputs keep their
    bits); (N, 0), (0, 0) and (0,) are invalid parameters (161002)."""
    mod = ORACLES[name]
    product = mod.PRODUCTS[0]
    for reduction in mod.REDUCTIONS:
        x, t = np.zeros((0, 5)), np.zeros((0, 5), np.int64)
        exact = {"out": np.zeros((0,) if reduction == 0 else ()), "isTarget": np.zeros((0, 5))}
        call = _call(name, product, "FLOAT", x, t, reduction, exact)
        call.args["out"] = TensorArg.from_array(np.full(exact["out"].shape, 7.0), "FLOAT")
        o = engine.evaluate(call, REG)
        assert o.status == 0, o.message
        assert np.all(np.asarray(o.outputs["out"]) == 7.0)
        for shape in ((3, 0), (0, 0), (0,)):
            x, t = np.zeros(shape), np.zeros(shape, np.int64)
            outs = {"out": np.zeros(shape[:-1] if reduction == 0 and len(shape) == 2 else ()),
                    "isTarget": np.zeros(shape)}  # fmt: skip
            o = engine.evaluate(_call(name, product, "FLOAT", x, t, reduction, outs), REG)
            assert o.status == 161002, (shape, reduction, o.status, o.message)
