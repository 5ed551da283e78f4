"""The ops with several outputs computed per row of a 2-D input (aclnnSoftmaxCrossEntropyWithLogits)
against their hand-written oracles (tests/oracles/, KIND "rows"): for each such op, product of
its doc, float dtype and shape of the oracle, every output of the reference holds the correctly
rounded exact value of every element (mpmath from the doc's formula, rounded by
tests/support/rounding.round_exact; NaN where the oracle says NaN); a call is accepted exactly in
the doc's dtypes and at rank 2.
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
from aclnn_conformance.conformance.acl.call import Call, TensorArg
from aclnn_conformance.conformance.spec.registry import default_registry
from aclnn_conformance.reference import engine

from tests import oracles
from tests.support.oracle_params import FLOATS, on_compiled_rows, oracle_params
from tests.support.rounding import NP, UINT, round_exact

pytestmark = pytest.mark.registry

REG = default_registry()
ORACLES = oracles.of(REG.names(), "rows")


def _params():
    return oracle_params(
        REG, ORACLES, lambda mod, product, d: d in mod.allowed(mod.INPUTS[0], product)
    )


def _call(name: str, product: str, arrays: dict, outs: dict, dtype: str) -> Call:
    args = {k: TensorArg.from_array(a, dtype) for k, a in arrays.items()}
    args.update({k: TensorArg.from_array(np.zeros(shape), dtype) for k, shape in outs.items()})
    return Call(name, product, args)


def _check_exact(name: str, product: str, dtype: str) -> None:
    mod = ORACLES[name]
    rng = np.random.default_rng(20261128)
    for shape in mod.SHAPES:
        # the inputs as the dtype holds them: the oracle reads those exact values
        arrays = {
            k: a.astype(NP[dtype]).astype(np.float64) for k, a in mod.draw(rng, shape).items()
        }
        with mpmath.workprec(300):
            exact = mod.value(arrays)
        o = engine.evaluate(
            _call(name, product, arrays, {k: v.shape for k, v in exact.items()}, dtype), REG
        )
        assert o.status == 0, (shape, o.message)
        for out in mod.OUTS:
            want = np.array([round_exact(v, dtype) for v in exact[out].reshape(-1)], NP[dtype])
            got = np.asarray(o.outputs[out]).reshape(-1).astype(NP[dtype])
            u = UINT[want.itemsize]
            same = (got.view(u) == want.view(u)) | ((got == 0) & (want == 0))
            same |= np.isnan(got.astype(np.float64)) & np.isnan(want.astype(np.float64))
            assert same.all(), (
                out,
                shape,
                np.flatnonzero(~same)[:5],
                got[~same][:5],
                want[~same][:5],
            )


@pytest.mark.parametrize("name,product,dtype", _params())
def test_row_ops_are_the_correctly_rounded_exact_values(name, product, dtype):
    _check_exact(name, product, dtype)


@pytest.mark.parametrize("name", list(ORACLES))
@pytest.mark.parametrize("dtype", ["FLOAT", "BF16"])
def test_row_ops_compiled_rows_are_the_correctly_rounded_exact_values(name, dtype):
    on_compiled_rows(_check_exact, ORACLES[name], name, dtype, ORACLES[name].INPUTS[0])


@pytest.mark.parametrize("name", list(ORACLES))
def test_row_ops_accept_the_doc_dtypes_at_rank_two(name):
    mod = ORACLES[name]
    rng = np.random.default_rng(7)
    arrays = mod.draw(rng, (3, 5))
    with mpmath.workprec(64):
        shapes = {k: v.shape for k, v in mod.value(arrays).items()}
    for product in mod.PRODUCTS:
        for d in (*FLOATS, "DOUBLE"):
            o = engine.evaluate(_call(name, product, arrays, shapes, d), REG)
            want = 0 if d in mod.allowed(mod.INPUTS[0], product) else 161002
            assert o.status == want, (product, d, o.status, o.message)
    # the page's 维度 2: a 1-D or 3-D input is an invalid parameter (161002)
    for shape in ((5,), (2, 3, 5)):
        bad = {k: np.zeros(shape) for k in arrays}
        outs = {k: (shape[:-1] if len(s) == 1 else shape) for k, s in shapes.items()}
        o = engine.evaluate(_call(name, mod.PRODUCTS[0], bad, outs, "FLOAT"), REG)
        assert o.status == 161002, (shape, o.status, o.message)
