"""The ops over a class dim with an integer target (the NLL backwards) against their
hand-written oracles (tests/oracles/, KIND "classes"): for each such op, product of its doc,
float dtype, reduction and self shape of the oracle, the reference's output holds the correctly
rounded exact value of every element (mpmath from the doc's formula, rounded by
tests/support/rounding.round_exact), the ignore index among the targets.
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
from aclnn_conformance.conformance.acl.call import Call, TensorArg
from aclnn_conformance.conformance.spec.registry import default_registry
from aclnn_conformance.reference import engine

from tests import oracles
from tests.support.oracle_params import oracle_params
from tests.support.rounding import NP, UINT, round_exact

pytestmark = pytest.mark.registry

REG = default_registry()
ORACLES = oracles.of(REG.names(), "classes")
IGNORE = -3


def _params():
    return oracle_params(REG, ORACLES, lambda mod, product, d: d in mod.allowed("self", product))


@pytest.mark.parametrize("name,product,dtype", _params())
def test_class_ops_are_the_correctly_rounded_exact_values(name, product, dtype):
    mod = ORACLES[name]
    rng = np.random.default_rng(20261127)
    for shape in mod.SHAPES:
        for reduction in (0, 1, 2):
            arrays = mod.draw(rng, shape, reduction, IGNORE)
            # the float inputs as the dtype holds them: the oracle reads those exact values
            arrays = {k: a if a.dtype.kind == "i" else a.astype(NP[dtype]).astype(np.float64)
                      for k, a in arrays.items()}  # fmt: skip
            args = {
                k: TensorArg.from_array(a, "INT64" if a.dtype.kind == "i" else dtype)
                for k, a in arrays.items()
            }
            args.update(reduction=reduction, ignoreIndex=IGNORE)
            args[mod.OUT] = TensorArg.from_array(np.zeros(shape), dtype)
            o = engine.evaluate(Call(name, product, args), REG)
            assert o.status == 0, (shape, reduction, o.message)
            with mpmath.workprec(300):
                exact = mod.value(arrays, {"reduction": reduction, "ignoreIndex": IGNORE})
                want = np.array([round_exact(v, dtype) for v in exact.reshape(-1)], NP[dtype])
            got = np.asarray(o.outputs[mod.OUT]).reshape(-1).astype(NP[dtype])
            u = UINT[want.itemsize]
            same = (got.view(u) == want.view(u)) | ((got == 0) & (want == 0))
            assert same.all(), (shape, reduction, got[~same], want[~same])
