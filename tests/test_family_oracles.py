"""The elementwise ops of the activation family against their hand-written oracles.

Each module of tests/oracles/ with KIND = "elementwise" gives, from the vendor doc alone, the exact
value of one output element and the doc's dtype lists (interface: tests/oracles/__init__.py).
Checked here for every such op, on every product of its doc, for every float dtype its output
takes there:

- the reference engine's result is the correctly rounded exact value, element for element, on
  random values and on the oracle's special values (branch points, zeros, infinities, NaN);
- the in-place variant (when the spec defines one) writes that same result into the input's own
  storage, through a strided view, and leaves the storage outside the view alone;
- a call whose tensors all have one dtype is accepted exactly when the doc lists that dtype.
"""

from __future__ import annotations

import itertools
import math

import mpmath
import numpy as np
import pytest
from aclnn_conformance.conformance.acl import dtypes as dt
from aclnn_conformance.conformance.acl.call import Call, ScalarArg, TensorArg
from aclnn_conformance.conformance.spec.registry import default_registry
from aclnn_conformance.reference.backend import ReferenceBackend

from tests import oracles
from tests.oracles._common import Scalar
from tests.support.oracle_params import oracle_params
from tests.support.paths import evaluate_both
from tests.support.rounding import NP, UINT, round_exact

pytestmark = pytest.mark.registry

REG = default_registry()
ORACLES = oracles.of(REG.names(), "elementwise")
ENGINE = ReferenceBackend(registry=REG)
N_RANDOM = 48
ALL_DTYPES = [d for d in dt.tables().names() if not dt.get(d).opaque]


def _out_dtype(mod, dtype: str) -> str:
    return mod.out_dtype(dtype) if hasattr(mod, "out_dtype") else dtype


def _scalars(mod, setting: dict) -> dict:
    """The call's non-tensor arguments: the oracle's valid call with `setting` applied; a scalar
    keeps the dtype of the valid call unless the setting gives a Scalar of its own."""
    out = {}
    for name, base in mod.base_scalars().items():
        v = setting.get(name, base)
        if isinstance(v, Scalar):
            v = ScalarArg(v.dtype, v.value)
        elif isinstance(base, Scalar):
            v = ScalarArg(base.dtype, v)
        out[name] = v
    return out


def _oracle_s(args: dict) -> dict:
    """The non-tensor arguments as the oracle reads them: a scalar as the value its dtype holds."""
    return {k: float(v.as_float64()) if isinstance(v, ScalarArg) else v for k, v in args.items()}


def _inputs(mod, dtype: str, rng) -> dict[str, np.ndarray]:
    """Random values in each input's domain plus every combination of the special values (one
    row per combination for the first two inputs), rounded to `dtype`."""
    names = list(mod.INPUTS)
    special = list(mod.SPECIAL)
    grid = list(itertools.product(special, repeat=min(len(names), 2)))
    cols: dict[str, list[float]] = {n: [] for n in names}
    for row in grid:
        for i, n in enumerate(names):
            cols[n].append(row[i] if i < len(row) else row[0])
    for n in names:
        lo, hi = mod.DOMAIN[n]
        cols[n] += list(rng.uniform(lo, hi, N_RANDOM))
    with np.errstate(all="ignore"):
        return {n: np.asarray(v, np.float64).astype(NP[dtype]) for n, v in cols.items()}


def _expected(mod, values: dict[str, np.ndarray], s: dict, out_dtype: str) -> np.ndarray:
    n = len(next(iter(values.values())))
    out = []
    with mpmath.workdps(50):  # far beyond any double rounding of the dtypes checked
        for i in range(n):
            t = {}
            for name, col in values.items():
                x = float(col[i])
                t[name] = mpmath.mpf(x) if math.isfinite(x) else x
            out.append(round_exact(mod.value(t, s), out_dtype))
    return np.array(out, dtype=NP[out_dtype])


def _same(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Element-wise bit equality, any NaN equal to any NaN, +0 equal to -0 (mpmath has no sign
    on zero)."""
    nan = np.isnan(got.astype(np.float64)) & np.isnan(want.astype(np.float64))
    zero = (got.astype(np.float64) == 0) & (want.astype(np.float64) == 0)
    u = UINT[got.dtype.itemsize]
    return nan | zero | (got.view(u) == want.view(u))


def _float_params():
    def allows(mod, product, d):
        ins = all(d in mod.allowed(p, product) for p in mod.INPUTS)
        return ins and _out_dtype(mod, d) in mod.allowed(mod.OUT, product)

    return oracle_params(REG, ORACLES, allows)


def _run(name: str, product: str, tensors: dict[str, TensorArg], args: dict):
    call = Call(name, product, {**tensors, **args})
    got = evaluate_both(call, registry=REG)  # the compiled and the numpy path, bit for bit
    assert got.status == 0, got.message
    return got


@pytest.mark.parametrize("name,product,dtype", _float_params())
def test_results_are_the_correctly_rounded_exact_values(name, product, dtype):
    mod = ORACLES[name]
    rng = np.random.default_rng(20261123)
    out_d = _out_dtype(mod, dtype)
    for k, setting in enumerate(mod.SETTINGS):
        args = _scalars(mod, setting)
        values = _inputs(mod, dtype, rng)
        tensors = {n: TensorArg.from_array(v.astype(np.float64), dtype) for n, v in values.items()}
        n = len(values[mod.INPUTS[0]])
        out = TensorArg.empty_like_shape((n,), out_d, fill=np.nan)
        got = _run(name, product, {**tensors, mod.OUT: out}, args)
        got_v = got.outputs[mod.OUT].view(NP[out_d])
        want = _expected(mod, values, _oracle_s(args), out_d)
        bad = np.flatnonzero(~_same(got_v, want))
        assert not bad.size, (
            f"setting {k} {setting}: {bad.size} of {n} elements differ, first at "
            f"{ {q: float(values[q][bad[0]]) for q in values} }: engine {got_v[bad[0]]!r}, "
            f"oracle {want[bad[0]]!r}"
        )


def _inplace_params():
    out = []
    for p in _float_params():
        name, product, dtype = p.values
        spec = REG.get(name)
        for v in spec.variants:
            inout = next(q.name for q in v.params if q.is_inout)
            # the in-place API may document a list of its own (inplace.dtype_sets: no BF16
            # selfRef on Atlas inference/training for aclnnInplaceSigmoid)
            own = all(dtype in v.dtypes_for(c.dtype_set, product) for c in v.checks
                      if c.kind == "dtype_in" and c.dtype_set and inout in c.params)  # fmt: skip
            if product in v.products and _out_dtype(ORACLES[name], dtype) == dtype and own:
                out.append(
                    pytest.param(name, v.name, product, dtype, id=f"{v.name}-{product}-{dtype}")
                )
    return out


@pytest.mark.parametrize("name,variant,product,dtype", _inplace_params())
def test_the_inplace_variant_writes_the_result_into_its_input(name, variant, product, dtype):
    """The in-place spec's tensor is a transposed view with a gap before it: the results land in
    its elements, the rest of its storage keeps its bits."""
    mod = ORACLES[name]
    spec = REG.get(variant)
    inout = next(p for p in spec.params if p.is_inout)
    rng = np.random.default_rng(7)
    args = _scalars(mod, mod.SETTINGS[0])
    values = _inputs(mod, dtype, rng)
    n = len(values[inout.name])
    rows = 2 if n % 2 == 0 else 1
    cols = n // rows
    # storage: 5 sentinel elements, then the values laid out column-major (a transposed view)
    sentinel = np.float64(-7.5)
    logical = values[inout.name].astype(np.float64).reshape(rows, cols)
    storage = np.concatenate([np.full(5, sentinel), logical.T.reshape(-1)]).astype(NP[dtype])
    t = TensorArg(dtype, (rows, cols), (1, rows), 5, storage)
    others = {q: TensorArg.from_array(values[q].astype(np.float64).reshape(rows, cols), dtype)
              for q in mod.INPUTS if q != inout.name}  # fmt: skip
    got = _run(variant, product, {inout.name: t, **others}, args)
    after = got.outputs[inout.name].view(NP[dtype])
    assert np.all(after[:5] == NP[dtype].type(sentinel)), "the in-place op wrote outside its view"
    result = TensorArg(dtype, (rows, cols), (1, rows), 5, after).view().reshape(-1)
    flat = {q: v.astype(np.float64).reshape(rows, cols).reshape(-1).astype(NP[dtype])
            for q, v in values.items()}  # fmt: skip
    want = _expected(mod, flat, _oracle_s(args), dtype)
    assert _same(result, want).all()


def _dtype_params():
    return [pytest.param(name, product, id=f"{name}-{product}")
            for name, mod in ORACLES.items() for product in mod.PRODUCTS
            if product in REG.get(name).products]  # fmt: skip


@pytest.mark.parametrize("name,product", _dtype_params())
def test_a_dtype_is_accepted_exactly_where_the_doc_lists_it(name, product):
    mod = ORACLES[name]
    args = _scalars(mod, {})
    wrong = []
    for d in ALL_DTYPES:
        out_d = _out_dtype(mod, d)
        listed = all(d in mod.allowed(p, product) for p in mod.INPUTS) and out_d in mod.allowed(
            mod.OUT, product
        )
        tensors = {p: TensorArg.from_array(np.ones((2, 3)), d) for p in mod.INPUTS}
        tensors[mod.OUT] = TensorArg.empty_like_shape((2, 3), out_d)
        got = ENGINE.execute(Call(name, product, {**tensors, **args}))
        if (got.status == 0) != listed:
            wrong.append(f"{d}: status {got.status}, doc {'lists' if listed else 'omits'} it")
    assert not wrong, "; ".join(wrong)


def test_every_product_of_an_oracle_is_in_its_spec():
    """The oracle's product list (from the doc) and the spec's agree."""
    for name, mod in ORACLES.items():
        assert set(mod.PRODUCTS) == set(REG.get(name).products), name
