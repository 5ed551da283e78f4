"""The forward losses (reduction 0 none / 1 mean / 2 sum) against their hand-written oracles.

Each module of tests/oracles/ with KIND = "loss" gives, from the vendor doc alone, the exact loss
of one element (`element(t, s)`), the reduction parameter's name and the doc's dtype lists
(interface: tests/oracles/__init__.py). Checked here for every such op, on every product of its
doc, for every float dtype: the reference's output has the shape the doc says (the broadcast for
reduction 0, 0-d otherwise) and holds the correctly rounded exact value of each element, of
their mean or of their sum (mpmath at 300 bits over every element, rounded by
tests/support/rounding.round_exact), broadcast inputs and empty ones (mean NaN, sum 0) included.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from aclnn_conformance.conformance.acl.call import Call, ScalarArg, TensorArg
from aclnn_conformance.conformance.spec.registry import default_registry
from aclnn_conformance.reference import engine

from tests import oracles
from tests.oracles._common import Scalar
from tests.support.oracle_params import oracle_params
from tests.support.rounding import NP, UINT, round_exact

pytestmark = pytest.mark.registry

REG = default_registry()
ORACLES = oracles.of(REG.names(), "loss")
SHAPES = [((3, 1), (1, 5)), ((2, 3, 4), (2, 3, 4)), ((4,), (2, 3, 4)), ((), ()), ((0, 3), (1, 3))]


def _params():
    return oracle_params(
        REG, ORACLES, lambda mod, product, d: all(d in mod.allowed(p, product) for p in mod.INPUTS)
    )


def _shapes(mod, sa: tuple, sb: tuple) -> dict:
    """Each input's shape: the module's own `shapes(sa, sb)` where its inputs must keep a
    relation (one shape for two of them), else the first input sa, the second sb, the rest sa."""
    if hasattr(mod, "shapes"):
        return mod.shapes(sa, sb)
    return dict(zip(mod.INPUTS, (sa, sb), strict=False))


def _args(mod, setting: dict, reduction: int) -> dict:
    out = {}
    for name, base in {**mod.base_scalars(), **setting}.items():
        out[name] = ScalarArg(base.dtype, base.value) if isinstance(base, Scalar) else base
    out[mod.REDUCTION] = reduction
    return out


def _same(got, want) -> bool:
    g, w = np.float64(got), np.float64(want)
    if math.isnan(g) or math.isnan(w):
        return math.isnan(g) and math.isnan(w)
    u = UINT[np.asarray(got).dtype.itemsize]
    return g == w == 0 or np.asarray(got).view(u) == np.asarray(want).view(u)


@pytest.mark.parametrize("name,product,dtype", _params())
def test_losses_are_the_correctly_rounded_exact_values(name, product, dtype):
    mod = ORACLES[name]
    rng = np.random.default_rng(20261127)
    ty = NP[dtype]
    for setting in mod.SETTINGS:
        for sa, sb in SHAPES:
            shapes = _shapes(mod, sa, sb)
            arrays = {}
            for n in mod.INPUTS:
                lo, hi = mod.DOMAIN[n]
                arrays[n] = rng.uniform(lo, hi, shapes.get(n, sa)).astype(ty)
            full = np.broadcast_shapes(*(a.shape for a in arrays.values()))
            b = np.broadcast_arrays(*arrays.values())
            with mpmath.workprec(300):
                s = {k: (mpmath.mpf(v) if isinstance(v, float) else v)
                     for k, v in _args(mod, setting, 0).items()}  # fmt: skip
                elems = [
                    mod.element({n: mpmath.mpf(float(v)) for n, v in zip(mod.INPUTS, vals, strict=True)}, s)
                    for vals in zip(*(x.ravel() for x in b), strict=True)
                ]  # fmt: skip
                total = mpmath.fsum(elems)
                mean = total / len(elems) if elems else math.nan
            for reduction in (0, 1, 2):
                out_shape = tuple(full) if reduction == 0 else ()
                n_out = int(np.prod(out_shape)) if out_shape else 1
                tensors = {n: TensorArg.from_array(a, dtype) for n, a in arrays.items()}
                tensors[mod.OUT] = TensorArg.from_array(np.zeros(out_shape, ty), dtype)
                call = Call(name, product, {**tensors, **_args(mod, setting, reduction)})
                got = engine.evaluate(call, REG)
                assert got.status == 0, got.message
                out = got.outputs[mod.OUT][:n_out]
                if reduction == 0:
                    want = [round_exact(e, dtype) for e in elems]
                else:
                    want = [round_exact(mean if reduction == 1 else total, dtype)]
                bad = [i for i, (g, w) in enumerate(zip(out, want, strict=True)) if not _same(g, w)]
                assert not bad, (setting, sa, sb, reduction, bad[:3], out[bad[0]], want[bad[0]])
