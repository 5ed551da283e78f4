"""DOUBLE outputs are faithful by default: within 1 ulp of the exact value, at float64 speed.

For every operator whose doc lists DOUBLE (all tensors DOUBLE on some product) and that has a
hand-written oracle (tests/oracles/), the engine's default result r must be one of the two
doubles around the exact value e (pred(r) < e < succ(r)); an IEEE special must match. The exact
values come from the oracle in mpmath at 700 digits, on random values over 600 decades, on the
values float64 finds hardest (near 0, near the branch points, huge and tiny), and on specials.
`--exact` (exact=True) must give the correctly rounded value on the same inputs. Both paths run:
numpy (long double) and numba (the double-double kernel of reference/ddgen.py, which defers the
elements it cannot certify to long double).
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from aclnn_conformance.conformance.acl.call import Call, TensorArg
from aclnn_conformance.conformance.spec.interpret import validate
from aclnn_conformance.conformance.spec.registry import default_registry
from aclnn_conformance.reference import kernel
from aclnn_conformance.reference.engine import evaluate

from tests import oracles
from tests.support.paths import PATHS
from tests.support.rounding import round_exact
from tests.test_engine_vs_mpmath import exact_result, typed_setting

REG = default_registry()
GRADIENT = oracles.of(REG.names())  # the seed ops' interface: factor(x, s)
ELEMENTWISE = oracles.of(REG.names(), "elementwise")
N = 600
DPS = 700  # inputs reach 1e-300: exp(x) - 1 of the oracles cancels 300 digits away


def _double_product(name: str) -> str | None:
    """A product on which a call with every tensor DOUBLE is valid, or None."""
    spec = REG.get(name)
    for product in spec.products:
        args = {}
        for p in spec.params:
            if p.is_tensor:
                args[p.name] = TensorArg.from_array(np.zeros(2), "DOUBLE")
            elif p.kind == "scalar":
                from aclnn_conformance.conformance.acl.call import ScalarArg

                args[p.name] = ScalarArg(p.default_dtype or "FLOAT", p.default)
            else:
                args[p.name] = p.default
        if validate(spec, Call(name, product, args)).status == 0:
            return product
    return None


def _params():
    out = []
    for name in sorted({*GRADIENT, *ELEMENTWISE}):
        product = _double_product(name)
        if product is not None:
            out.append(pytest.param(name, product, id=f"{name}-{product}-f64"))
    return out


def _values(rng, n: int) -> np.ndarray:
    """Signed log-uniform magnitudes from 1e-300 to 1e300, N(0, 2) values, and specials."""
    mags = 10.0 ** rng.uniform(-300, 300, n // 3)
    normal = rng.normal(0.0, 2.0, n // 3)
    near = rng.uniform(-40, 40, n - 2 * (n // 3)) * 10.0 ** rng.integers(-8, 1, n - 2 * (n // 3))
    special = [0.0, -0.0, 1.0, -1.0, 1e-308, -5e-324, 1e308, -1e308, math.inf, -math.inf, math.nan]
    v = np.concatenate([mags * rng.choice([-1.0, 1.0], mags.size), normal, near, special])
    return rng.permutation(v)


def _call(name, product, tensors: dict[str, np.ndarray], out_name: str, scalars: dict) -> Call:
    spec = REG.get(name)
    n = len(next(iter(tensors.values())))
    args: dict = {}
    for p in spec.params:
        if p.name == out_name:
            args[p.name] = TensorArg.empty_like_shape((n,), "DOUBLE", fill=np.nan)
        elif p.is_tensor:
            args[p.name] = TensorArg.from_array(tensors[p.name], "DOUBLE")
        else:
            args[p.name] = scalars[p.name]
    return Call(name, product, args)


def _cases(name: str, rng):
    """(tensors, scalars for the call, exact values as mpf or float) per oracle setting."""
    if name in GRADIENT:
        from tests.test_engine_vs_mpmath import make_call

        mod = GRADIENT[name]
        for setting in mod.SPECIAL_SETTINGS:
            x, g = _values(rng, N), _values(rng, N)
            g[np.isinf(g) | (np.abs(g) > 1e300)] = 1.5  # keep the products mostly finite
            s = typed_setting(setting)
            with mpmath.workdps(DPS):
                exact = [exact_result(float(gv), _factor(mod, float(xv), s)) for xv, gv in zip(x, g, strict=True)]  # fmt: skip
            call = make_call(name, "DOUBLE", x, g, setting)
            scalars = {k: v for k, v in call.args.items() if not isinstance(v, TensorArg)}
            tensors = {k: v.view().astype(np.float64) for k, v in call.args.items()
                       if isinstance(v, TensorArg) and k != mod.OUT}  # fmt: skip
            yield tensors, scalars, exact, mod.OUT
    else:
        from tests.test_family_oracles import _oracle_s, _scalars

        mod = ELEMENTWISE[name]
        for setting in mod.SETTINGS:
            args = _scalars(mod, setting)
            tensors = {n: _values(rng, N) for n in mod.INPUTS}
            s = _oracle_s(args)
            exact = []
            with mpmath.workdps(DPS):
                for i in range(N + 11):
                    t = {k: (mpmath.mpf(float(v[i])) if math.isfinite(v[i]) else float(v[i]))
                         for k, v in tensors.items()}  # fmt: skip
                    exact.append(mod.value(t, s))
            yield tensors, args, exact, mod.OUT


def _factor(mod, x, s):
    try:
        return mod.factor(x, s)[1]
    except NotImplementedError:
        return math.nan


def _faithful(r: float, e) -> bool:
    with mpmath.workdps(DPS):  # mpf(e) rounds to the working precision: the exact value kept
        return _faithful_exact(r, e)


def _faithful_exact(r: float, e) -> bool:
    if isinstance(e, float) and not math.isfinite(e):
        return (math.isnan(r) and math.isnan(e)) or r == e
    e = mpmath.mpf(e)
    if abs(e) > np.finfo(np.float64).max:
        return abs(r) >= np.finfo(np.float64).max and (r > 0) == (e > 0)
    if not math.isfinite(r):
        return False
    lo, hi = np.nextafter(r, -np.inf), np.nextafter(r, np.inf)
    return mpmath.mpf(float(lo)) < e < mpmath.mpf(float(hi)) or mpmath.mpf(r) == e


@pytest.mark.kernels
@pytest.mark.parametrize("name,product", _params())
def test_double_outputs_are_within_one_ulp_of_the_exact_value(name, product):
    rng = np.random.default_rng(20261125)
    checked = 0
    for tensors, scalars, exact, out in _cases(name, rng):
        call = _call(name, product, tensors, out, scalars)
        for path in PATHS:  # numba: the double-double kernel, long double where it defers
            old = kernel.set_mode(path)
            try:
                got = evaluate(call)  # the default: faithful
            finally:
                kernel.set_mode(old)
            assert got.status == 0, got.message
            r = got.outputs[out].astype(np.float64)
            bad = [i for i, e in enumerate(exact) if not _faithful(float(r[i]), e)]
            assert not bad, (
                f"{path}: {len(bad)} of {len(exact)} results are more than 1 ulp off, first at "
                f"{ {k: float(v[bad[0]]) for k, v in tensors.items()} }: {r[bad[0]]!r}, exact "
                f"{mpmath.nstr(mpmath.mpf(exact[bad[0]]), 20) if not isinstance(exact[bad[0]], float) else exact[bad[0]]}"
            )
        exact_mode = evaluate(call, exact=True).outputs[out]
        want = np.array([float(round_exact(e, "DOUBLE")) if not isinstance(e, float) else e
                         for e in exact])  # fmt: skip
        same = (exact_mode == want) | (np.isnan(exact_mode) & np.isnan(want))
        assert same.all(), f"exact mode: {int((~same).sum())} results not correctly rounded"
        checked += len(exact)
    assert checked > 0


def _extended_specs() -> list[tuple[str, str]]:
    """(op, a product where it takes DOUBLE) for the ops evaluated in long double."""
    from aclnn_conformance.reference import errbound

    from tests.test_kernel import _call as call_of

    out = []
    for s in REG:
        if s.inplace_of or not errbound.extended(s):
            continue
        rng = np.random.default_rng(0)
        product = next((p for p in s.products if call_of(s, p, "DOUBLE", 4, rng)), None)
        if product is not None:
            out.append((s.name, product))
    return out


@pytest.mark.parametrize("name,product", _extended_specs())
def test_long_double_split_across_threads_gives_the_same_bits(name, product, monkeypatch):
    """evaluate_extended splits a chunk over a thread per core: the values must not change."""
    from aclnn_conformance.reference import errbound

    from tests.support.paths import assert_same_bits
    from tests.test_kernel import _call as call_of

    spec = REG.get(name)
    call = call_of(spec, product, "DOUBLE", 1 << 16, np.random.default_rng(5))
    out = spec.formula.output
    monkeypatch.setattr(errbound, "_CORES", 4)  # four parts, whatever this machine has
    split = evaluate(call).outputs[out]
    monkeypatch.setattr(errbound, "_CORES", 1)
    whole = evaluate(call).outputs[out]
    assert_same_bits(split, whole, f"{name}: split vs whole")
