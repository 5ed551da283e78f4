"""The ops over a class dim with an integer target, a string reduction, an optional class weight
and label smoothing (the cross entropy forward) against their hand-written oracles
(tests/oracles/, KIND "smoothed_classes"): for each such op, product of its doc, float dtype,
reduction, label smoothing, weight given or null and input shape of the oracle, every output the
oracle names holds the correctly rounded exact value of every element (mpmath from the doc's
formula, rounded by tests/support/rounding.round_exact), the ignore index among the targets.

The module gives OUTS, PRODUCTS, SHAPES, REDUCTIONS, SMOOTHING, allowed(param, product),
draw(rng, shape, reduction, ignore, weighted) -> {tensor input: float64 / int64 array or None}
and value(arrays, settings) -> {output: object array of mpf in that output's shape} (settings:
reductionOptional, ignoreIndex, labelSmoothing). The float inputs take the dtype under test, an
integer input INT64, the class weight FLOAT; an output tensor the oracle does not name (a buffer
the op must be given but never writes) is allocated in the shape its spec rule gives.
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
from aclnn_conformance.conformance.acl.call import Call, TensorArg
from aclnn_conformance.conformance.spec.registry import default_registry
from aclnn_conformance.conformance.spec.shapes import shape_of
from aclnn_conformance.reference import engine

from tests import oracles
from tests.support.oracle_params import on_compiled_rows, oracle_params
from tests.support.rounding import NP, UINT, round_exact

pytestmark = pytest.mark.registry

REG = default_registry()
ORACLES = oracles.of(REG.names(), "smoothed_classes")
IGNORE = -3
WEIGHT = "weightOptional"


def _params():
    return oracle_params(
        REG, ORACLES, lambda mod, product, d: d in mod.allowed(mod.OUTS[0], product)
    )


def _arg(a, dtype):
    if a.dtype.kind == "i":
        return TensorArg.from_array(a, "INT64")
    return TensorArg.from_array(a, dtype)


def _call(name, product, dtype, arrays, settings, exact):
    """The call: the drawn inputs, the settings, each oracle output in the shape value() gives,
    any other output tensor in its spec shape, every other parameter null or its default."""
    spec = REG.get(name)
    args = {k: _arg(a, dtype) for k, a in arrays.items() if k != WEIGHT}
    w = arrays.get(WEIGHT)
    args[WEIGHT] = None if w is None else TensorArg.from_array(w, "FLOAT")
    args.update(settings)
    for out, v in exact.items():
        args[out] = TensorArg.from_array(np.zeros(v.shape), dtype)
    shapes = {k: a.shape for k, a in arrays.items() if a is not None}
    shapes.update({k: v.shape for k, v in exact.items()})
    attrs = {p.name: settings.get(p.name, p.default) for p in spec.params if not p.is_tensor}
    for p in spec.params:  # the rest: unnamed outputs allocated, null tensors, default attributes
        if p.name in args:
            continue
        if p.is_tensor and p.is_output:
            shape = shape_of(p.shape, shapes, attrs) if p.shape is not None else (1,)
            args[p.name] = TensorArg.from_array(np.zeros(shape), dtype)
        else:
            args[p.name] = None if p.is_tensor else p.default
    return Call(name, product, args)


@pytest.mark.parametrize("name,product,dtype", _params())
def test_smoothed_class_ops_are_the_correctly_rounded_exact_values(
    name: str, product: str, dtype: str
) -> None:
    mod = ORACLES[name]
    rng = np.random.default_rng(20261128)
    for shape in mod.SHAPES:
        for reduction in mod.REDUCTIONS:
            for ls in mod.SMOOTHING:
                for weighted in (True, False):
                    drawn = mod.draw(rng, shape, reduction, IGNORE, weighted)
                    # the inputs as their dtypes hold them: the oracle reads those values
                    arrays = {}
                    for k, a in drawn.items():
                        if a is None or a.dtype.kind == "i":
                            arrays[k] = a
                        elif k == WEIGHT:  # the class weight is FLOAT
                            arrays[k] = a.astype(np.float32).astype(np.float64)
                        else:
                            arrays[k] = a.astype(NP[dtype]).astype(np.float64)
                    settings = {"reductionOptional": reduction, "ignoreIndex": IGNORE,
                                "labelSmoothing": ls}  # fmt: skip
                    with mpmath.workprec(300):
                        exact = mod.value(arrays, settings)
                        want = {
                            out: np.array(
                                [round_exact(v, dtype) for v in exact[out].reshape(-1)], NP[dtype]
                            )
                            for out in mod.OUTS
                        }
                    call = _call(name, product, dtype, arrays, settings, exact)
                    o = engine.evaluate(call, REG)
                    where = (shape, reduction, ls, weighted)
                    assert o.status == 0, (*where, o.message)
                    for out in mod.OUTS:  # storages: contiguous, in C order
                        got = np.asarray(o.outputs[out]).reshape(-1).astype(NP[dtype])
                        assert got.size == exact[out].size, (out, *where, got.size)
                        u = UINT[want[out].itemsize]
                        same = (got.view(u) == want[out].view(u)) | ((got == 0) & (want[out] == 0))
                        assert same.all(), (out, *where, got[~same], want[out][~same])
                    for out in set(o.outputs) - set(mod.OUTS):  # never written: still 0
                        assert not np.asarray(o.outputs[out]).any(), (out, *where)


@pytest.mark.parametrize("name", list(ORACLES))
@pytest.mark.parametrize("dtype", ["FLOAT", "BF16"])
def test_smoothed_class_ops_compiled_rows_are_the_correctly_rounded_exact_values(name, dtype):
    check = test_smoothed_class_ops_are_the_correctly_rounded_exact_values
    on_compiled_rows(check, ORACLES[name], name, dtype, ORACLES[name].OUTS[0])
