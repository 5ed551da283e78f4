"""The ops with one output computed per slice along an int dim (aclnnSoftmax, aclnnLogSoftmax and
their backwards) against their hand-written oracles (tests/oracles/, KIND "dim_rows"): for each
such op, product of its doc, dtype of its doc and shape of the oracle, on every dim of the shape
(negative dims too), the reference's output holds the exact value (mpmath from the doc's formula)
of every element: correctly rounded for FLOAT, FLOAT16 and BF16 (tests/support/rounding.
round_exact; NaN where the oracle says NaN; a zero of either sign for a zero), faithfully
rounded for DOUBLE (one of the two doubles around the exact value: what the reference promises
there); the same for FLOAT and BF16 through the compiled row tiers.
"""

from __future__ import annotations

import functools
import zlib

import mpmath
import numpy as np
import pytest
from aclnn_conformance.conformance.acl.call import Call, TensorArg
from aclnn_conformance.conformance.spec.registry import default_registry
from aclnn_conformance.reference import engine

from tests import oracles
from tests.support.oracle_params import FLOATS, on_compiled_rows
from tests.support.rounding import NP, UINT, round_exact

pytestmark = pytest.mark.registry

REG = default_registry()
ORACLES = oracles.of(REG.names(), "dim_rows")
DTYPES = (*FLOATS, "DOUBLE")
PREC = 300  # bits: the backwards' sums of products exact for the dtypes' exponent ranges


def _params():
    out = []
    for name, mod in ORACLES.items():
        for product in mod.PRODUCTS:
            if product not in REG.get(name).products:
                continue
            for d in DTYPES:
                if d in mod.allowed(mod.INPUTS[0], product):
                    out.append(pytest.param(name, product, d, id=f"{name}-{product}-{d}"))
    return out


def _dims(shape: tuple) -> range:
    """Every dim of `shape`, negative ones too (a rank-0 tensor counts as rank 1)."""
    n = max(len(shape), 1)
    return range(-n, n)


@functools.cache
def _inputs(name: str, dtype: str, shape: tuple) -> dict:
    """The oracle's draw for `shape` as `dtype` holds it (the values the oracle reads); one draw
    per op and shape, whatever the dtype and product."""
    rng = np.random.default_rng(zlib.crc32(f"{name}{shape}".encode()))
    return {
        k: a.astype(NP[dtype]).astype(np.float64) for k, a in ORACLES[name].draw(rng, shape).items()
    }


def _bracket(v) -> tuple:
    """The doubles either side of the exact value v (v itself where it is one)."""
    if isinstance(v, float):
        return v, v
    r = round_exact(v, "DOUBLE")
    if mpmath.mpf(float(r)) == v:
        return r, r
    if mpmath.mpf(float(r)) < v:
        return r, np.nextafter(r, np.inf)
    return np.nextafter(r, -np.inf), r


@functools.cache
def _want(name: str, dtype: str, shape: tuple, dim: int) -> tuple:
    """(lowest, highest) acceptable output, flat: one correctly rounded value for FLOAT, FLOAT16
    and BF16, the faithful pair for DOUBLE (dim wrapped: dim and dim - rank share it)."""
    # rounded at the working precision too: round_exact's distances to the candidates are mpf
    # arithmetic, and at mpmath's default 53 bits -160.5 - 5e-37 (a log_softmax slice dominated
    # by its maximum) would be a tie
    with mpmath.workprec(PREC):
        exact = ORACLES[name].value(_inputs(name, dtype, shape), dim).reshape(-1)
        if dtype == "DOUBLE":
            lo, hi = zip(*(_bracket(v) for v in exact), strict=True)
            return np.array(lo, np.float64), np.array(hi, np.float64)
        want = np.array([round_exact(v, dtype) for v in exact], NP[dtype])
    return want, want


def _check(name: str, product: str, dtype: str) -> None:
    mod = ORACLES[name]
    for shape in mod.SHAPES:
        arrays = _inputs(name, dtype, shape)
        for dim in _dims(shape):
            args = {k: TensorArg.from_array(a, dtype) for k, a in arrays.items()}
            args[mod.DIM] = dim
            args[mod.OUT] = TensorArg.from_array(np.zeros(shape), dtype)
            o = engine.evaluate(Call(name, product, args), REG)
            assert o.status == 0, (shape, dim, o.message)
            lo, hi = _want(name, dtype, shape, dim % max(len(shape), 1))
            got = np.asarray(o.outputs[mod.OUT]).reshape(-1).astype(NP[dtype])
            u = UINT[lo.itemsize]
            same = (got.view(u) == lo.view(u)) | (got.view(u) == hi.view(u)) | (got == lo)
            same |= (got == hi) | (
                np.isnan(got.astype(np.float64)) & np.isnan(lo.astype(np.float64))
            )
            bad = np.flatnonzero(~same)
            assert not bad.size, (
                shape,
                dim,
                bad[:5],
                {k: a.reshape(-1)[bad[:5]] for k, a in arrays.items()},
                got[bad[:5]],
                lo[bad[:5]],
                hi[bad[:5]],
            )


@pytest.mark.parametrize("name,product,dtype", _params())
def test_dim_row_ops_are_the_exact_values_rounded(name, product, dtype):
    _check(name, product, dtype)


@pytest.mark.parametrize("name", list(ORACLES))
@pytest.mark.parametrize("dtype", ["FLOAT", "BF16"])
def test_dim_row_ops_compiled_rows_are_the_correctly_rounded_exact_values(name, dtype):
    on_compiled_rows(_check, ORACLES[name], name, dtype, ORACLES[name].INPUTS[0])
