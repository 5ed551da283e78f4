"""The reference engine against an independent mpmath evaluation of each documented formula.

The oracles are the modules tests/oracles/<spec name>.py (interface: tests/oracles/__init__.py),
written by hand from the vendor docs (shared/seeds/) and the fact sheet
(shared/research/aclnn-facts.md §2.4, §3.4, §4.4, §5.4, §6.4); they never read a spec's formula
expressions. Only the spec's branch ids and special-point ids are read, so that a new branch or
special point of an op with an oracle, and not in its oracle, fails here. Every test is
parametrized over the registry's ops that have an oracle; an op without one is checked by the
op-generic tests only (tests/test_oracles.py lists them).

Semantics (the specs' convention): every input element is widened exactly, a FLOAT scalar holds
float32(value), the exact result is rounded once to the output dtype. The exact value is computed
with mpmath (mp.dps = 40) and rounded to FLOAT / FLOAT16 / BF16 by enumerating neighbouring
representable values and picking the nearest (ties to the even bit pattern), independently of
conformance.acl.dtypes.round_to. Those outputs must match bit for bit (up to the sign of zero; NaN
in the same positions), DOUBLE outputs too: the engine runs in exact mode here (its default
for DOUBLE is faithful, tests/test_double_faithful.py), through both of its paths, the compiled
kernel and the numpy evaluator, which must give the same bits (tests/support/paths.py).

Special values follow IEEE semantics for the product g * f, where f is the derivative factor:
when g or x is not finite, the result is g * float64(f) (so inf times a factor that underflows in
float64 is NaN). For x = +-inf the factor is the mathematical limit, except where the limit is an
indeterminate form of the documented formula (GELU at +-inf: inf * 0, giving NaN). Branches follow
the documented comparisons, which are false for NaN x.
"""

from __future__ import annotations

import math
import zlib
from typing import Any

import ml_dtypes
import mpmath
import numpy as np
import pytest
from aclnn_conformance.conformance.acl.call import Call, ScalarArg, TensorArg
from aclnn_conformance.conformance.spec.registry import default_registry

from tests import oracles
from tests.oracles._common import ZERO_RESULT, f32, log_uniform
from tests.support.paths import evaluate_both
from tests.support.rounding import NP, round_exact

pytestmark = pytest.mark.registry

mp = mpmath.mp
PRODUCT = "atlas-a2"  # the only product listing BF16; the formulas do not depend on the product


@pytest.fixture(autouse=True)
def _forty_digits():
    """mpmath at 40 digits for each test here, restored after it (a module-level setting
    would leak into every module collected with this one)."""
    with mpmath.workdps(40):
        yield


SHORT = {"FLOAT": "f32", "FLOAT16": "f16", "BF16": "bf16", "DOUBLE": "f64"}


def test_round_exact_self_check():
    """The oracle's rounding on values whose correct rounding is known by construction."""
    h = mpmath.mpf(2) ** -11  # half an fp16 ulp at 1
    assert round_exact(1 + h, "FLOAT16") == np.float16(1.0)  # tie: even
    assert round_exact(1 + 3 * h, "FLOAT16") == np.float16(1 + 2**-9)  # tie: even upward
    assert round_exact(1 + h + mpmath.mpf(2) ** -60, "FLOAT16") == np.float16(1 + 2**-10)
    assert round_exact(mpmath.mpf(65520), "FLOAT16") == np.float16(np.inf)  # tie at the top
    assert round_exact(mpmath.mpf(65519.99), "FLOAT16") == np.float16(65504)
    assert round_exact(mpmath.mpf(2) ** -25, "FLOAT16") == 0  # half the smallest subnormal
    assert round_exact(mpmath.mpf(2) ** -25 * 1.0001, "FLOAT16") == np.float16(2**-24)
    # bf16: 1 + 2^-8 is the midpoint of 1 and 1 + 2^-7; float32 keeps it exactly.
    b = mpmath.mpf(2) ** -8
    assert float(round_exact(1 + b, "BF16")) == 1.0
    assert float(round_exact(1 + b + mpmath.mpf(2) ** -70, "BF16")) == 1 + 2**-7
    assert float(round_exact(1 + 3 * b, "BF16")) == 1 + 2**-6
    # float32: a value whose float64 rounding lands on the float32 midpoint.
    m = 1 + mpmath.mpf(2) ** -24
    assert round_exact(m - mpmath.mpf(2) ** -70, "FLOAT") == np.float32(1.0)
    assert round_exact(m + 2 * mpmath.mpf(2) ** -24 - mpmath.mpf(2) ** -70, "FLOAT") == np.float32(
        1 + 2**-23
    )
    assert round_exact(-(m + mpmath.mpf(2) ** -70), "FLOAT") == np.float32(-(1 + 2**-23))
    assert np.isinf(round_exact(mpmath.mpf(2) ** 128, "FLOAT"))


# -- the oracle ---------------------------------------------------------------------------------

ORACLES = oracles.of(default_registry().names())  # {op: its module in tests/oracles/}


def exact_result(g: float, f: Any) -> Any:
    """g times the factor: an exact mpf, or an IEEE float64 special where g or f is not finite."""
    if f is ZERO_RESULT:
        return mpmath.mpf(0)
    if isinstance(f, float) or not math.isfinite(g):
        with np.errstate(invalid="ignore"):
            return float(np.float64(g) * np.float64(float(f)))
    return mpmath.mpf(g) * f


# -- operators: how a call is built ------------------------------------------------------------


def typed_setting(setting: dict) -> dict:
    """Scalars as the FLOAT scalars of the call hold them (float32 values)."""
    return {k: f32(v) if isinstance(v, float) else v for k, v in setting.items()}


def make_call(op: str, dtype: str, x: np.ndarray, g: np.ndarray, setting: dict, out_dtype=None):
    """A contiguous call with x, g (numpy arrays of the tensor dtypes) and a zeroed output."""
    x_name = ORACLES[op].X
    spec = default_registry().get(op)
    out_dtype = out_dtype or dtype
    args: dict[str, Any] = {}
    for p in spec.params:
        if p.kind == "tensor":
            if p.is_output:
                arr, d = np.zeros(g.shape, dtype=NP[out_dtype]), out_dtype
            elif p.name == x_name:
                arr, d = x, _name_of(x)
            else:
                arr, d = g, _name_of(g)
            args[p.name] = TensorArg(d, arr.shape, _cstrides(arr.shape), 0, arr.reshape(-1).copy())
        elif p.kind == "scalar":
            args[p.name] = ScalarArg("FLOAT", setting[p.name])
        else:
            args[p.name] = setting[p.name]
    return Call(op, PRODUCT, args)


def _name_of(a: np.ndarray) -> str:
    for k, v in NP.items():
        if a.dtype == v:
            return k
    if a.dtype == np.int32:
        return "INT32"
    raise AssertionError(a.dtype)


def _cstrides(shape):
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(out))


def run_engine(op, dtype, x, g, setting, out_dtype=None) -> np.ndarray:
    call = make_call(op, dtype, x, g, setting, out_dtype)
    outcome = evaluate_both(call, exact=True)
    assert outcome.status == 0, outcome.message
    return outcome.outputs[ORACLES[op].OUT].reshape(g.shape)


def oracle(op: str, x: np.ndarray, g: np.ndarray, setting: dict, out_dtype: str):
    """(expected array in out_dtype, branch ids)."""
    factor, s = ORACLES[op].factor, typed_setting(setting)
    cache: dict[Any, tuple[str, Any]] = {}
    exp = np.empty(g.shape, dtype=NP[out_dtype])
    branches = np.empty(g.shape, dtype=object)
    for idx in np.ndindex(g.shape):
        xv, gv = float(x[idx]), float(g[idx])
        key = ("nan",) if math.isnan(xv) else (xv, math.copysign(1, xv))
        # 40 digits first; then 4x the precision until the rounded result stops changing, so
        # that a term far below 40 digits (a subnormal x next to 1/2) still decides a near-tie.
        prec, last = mp.prec, None
        while True:
            with mpmath.workprec(prec):
                if (key, prec) not in cache:
                    cache[(key, prec)] = factor(xv, s)
                branch, f = cache[(key, prec)]
                r = round_exact(exact_result(gv, f), out_dtype)
            same = last is not None and (r == last or (np.isnan(r) and np.isnan(last)))
            if same or prec > 5000:
                break
            last, prec = r, prec * 4
        exp[idx] = r
        branches[idx] = branch
    return exp, branches


def assert_matches(got, exp, x, g, dtype, context=""):
    """Bitwise equality (== for zeros, so the sign of zero is not compared), for every output
    dtype including DOUBLE; NaN in the same places."""
    got = np.asarray(got)
    exp = np.asarray(exp)
    gn, en = np.isnan(got.astype(np.float64)), np.isnan(exp.astype(np.float64))
    bad = gn != en
    both = ~gn & ~en
    bad |= both & (got != exp)
    if np.any(bad):
        rows = []
        for idx in list(zip(*np.nonzero(bad), strict=True))[:8]:
            rows.append(
                f"  x={float(x[idx])!r} g={float(g[idx])!r}: engine {float(got[idx])!r}, "
                f"mpmath {float(exp[idx])!r}"
            )
        raise AssertionError(
            f"{context}: {int(bad.sum())} of {bad.size} elements differ\n" + "\n".join(rows)
        )


def check(op, dtype, x, g, setting, context, out_dtype=None):
    """Run the engine and compare with the oracle; returns the oracle's branch ids."""
    out_dtype = out_dtype or dtype
    call = make_call(op, dtype, x, g, setting, out_dtype)
    outcome = evaluate_both(call, exact=True)
    assert outcome.status == 0, outcome.message
    got = outcome.outputs[ORACLES[op].OUT].reshape(g.shape)
    exp, branches = oracle(op, x, g, setting, out_dtype)
    assert_matches(got, exp, x, g, out_dtype, context)
    return branches


# -- random values per branch -------------------------------------------------------------------

RNG_SEED = 20240611


def random_g(rng, n, dtype):
    lo, hi = {"FLOAT16": (-26, 8), "BF16": (-135, 40), "FLOAT": (-150, 40), "DOUBLE": (-80, 60)}[
        dtype
    ]
    g = np.where(rng.random(n) < 0.5, rng.uniform(-4, 4, n), log_uniform(rng, n, lo, hi))
    g[rng.random(n) < 0.03] = 0.0
    return g


VALUES_PER_BRANCH = 360  # split over the branch's scalar settings, at least 120 each


def _branch_params():
    out = []
    for op, o in ORACLES.items():
        for branch in o.BRANCHES:
            for dtype in o.DTYPES:
                out.append(pytest.param(op, branch, dtype, id=f"{op}-{SHORT[dtype]}-{branch}"))
    return out


@pytest.mark.parametrize("op", list(ORACLES))
def test_every_spec_branch_has_an_oracle(op):
    """A branch added to a spec without a random-value generator in its oracle fails this test."""
    ids = {b.id for b in default_registry().get(op).formula.branches}
    mine = set(ORACLES[op].BRANCHES)
    assert ids == mine, f"{op}: spec branches {sorted(ids)} vs oracle {sorted(mine)}"


@pytest.mark.parametrize(("op", "branch", "dtype"), _branch_params())
def test_random_values_per_branch(op, branch, dtype):
    settings, gen = ORACLES[op].BRANCHES[branch]
    n = max(120, VALUES_PER_BRANCH // len(settings))
    rng = np.random.default_rng([RNG_SEED, zlib.crc32(f"{op}/{branch}/{dtype}".encode())])
    for setting in settings:
        s = typed_setting(setting)
        with np.errstate(over="ignore"):
            x = gen(rng, 4 * n, s).astype(NP[dtype])
        x = x[np.isfinite(x.astype(np.float64))]
        # Rounding to the dtype can move a value across the boundary: keep the branch's own.
        keep = np.array([ORACLES[op].factor(float(v), s)[0] == branch for v in x], dtype=bool)
        x = x[keep][:n]
        assert x.size == n, f"the generator gave only {x.size} values in branch {branch}"
        with np.errstate(over="ignore"):
            g = random_g(rng, x.size, dtype).astype(NP[dtype])
        branches = check(op, dtype, x, g, setting, f"{op} {dtype} {setting}")
        assert set(branches) == {branch}


# -- special points -----------------------------------------------------------------------------


def _finfo(dtype):
    return ml_dtypes.finfo(NP[dtype])


def general_special_x(dtype) -> list[float]:
    fi, t = _finfo(dtype), NP[dtype].type
    sub = float(fi.smallest_subnormal)
    normal = float(fi.smallest_normal)
    big_sub = float(np.nextafter(t(normal), t(0)))
    vals = [0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, 0.5, -0.5]
    for v in (sub, big_sub, normal, float(fi.max)):
        vals += [v, -v]
    return vals


def neighbours(v: float, dtype: str, steps: int = 2) -> list[float]:
    """v rounded to the dtype and `steps` representable values either side."""
    t = NP[dtype].type
    c = t(v)
    out = [float(c)]
    up = down = c
    for _ in range(steps):
        with np.errstate(over="ignore"):
            up, down = np.nextafter(up, t(np.inf)), np.nextafter(down, t(-np.inf))
        out += [float(up), float(down)]
    return out


def special_g(dtype) -> list[float]:
    fi = _finfo(dtype)
    return [
        1.0,
        -1.0,
        0.0,
        -0.0,
        2.5,
        -0.75,
        math.inf,
        -math.inf,
        math.nan,
        float(fi.max),
        -float(fi.max),
        float(fi.smallest_subnormal),
        -float(fi.smallest_normal),
        3.0,
    ]


def defaults(op: str) -> dict:
    spec = default_registry().get(op)
    return {p.name: p.default for p in spec.params if p.kind != "tensor"}


def _grid(xs: list[float], gs: list[float], dtype: str):
    with np.errstate(over="ignore"):
        x = np.array(xs, dtype=np.float64).astype(NP[dtype])
        g = np.array(gs, dtype=np.float64).astype(NP[dtype])
    return np.repeat(x[:, None], g.size, axis=1), np.repeat(g[None, :], x.size, axis=0)


def _special_params():
    out = []
    for op, o in ORACLES.items():
        for dtype in o.DTYPES:
            for i, setting in enumerate(o.SPECIAL_SETTINGS):
                tag = "-".join(f"{k}={v}" for k, v in setting.items())
                out.append(pytest.param(op, dtype, i, id=f"{op}-{SHORT[dtype]}-{i}-{tag}"))
    return out


@pytest.mark.parametrize(("op", "dtype", "index"), _special_params())
def test_special_points(op, dtype, index):
    """+-0, +-inf, NaN, subnormals, max, and each op's branch boundaries, against special g."""
    setting = ORACLES[op].SPECIAL_SETTINGS[index]
    s = typed_setting(setting)
    xs = general_special_x(dtype) + ORACLES[op].special_x(s, dtype, neighbours)
    x, g = _grid(xs, special_g(dtype), dtype)
    check(op, dtype, x, g, setting, f"{op} {dtype} {setting}")


@pytest.mark.parametrize("op", list(ORACLES))
def test_every_spec_special_point_has_an_oracle(op):
    ids = {p.id for p in default_registry().get(op).special_points}
    assert ids == set(ORACLES[op].SPECIAL_POINTS), op


def _spec_point_params():
    out = []
    for op, o in ORACLES.items():
        for dtype in o.DTYPES:
            for pid in o.SPECIAL_POINTS:
                out.append(pytest.param(op, dtype, pid, id=f"{op}-{SHORT[dtype]}-{pid}"))
    return out


@pytest.mark.parametrize(("op", "dtype", "pid"), _spec_point_params())
def test_spec_special_points(op, dtype, pid):
    overrides, xfun = ORACLES[op].SPECIAL_POINTS[pid]
    spec_point = {p.id: p for p in default_registry().get(op).special_points}[pid]
    # The spec's `with` arguments must be the ones written out in the oracle.
    assert {k: v for k, v in spec_point.with_.items()} == overrides
    setting = {**defaults(op), **overrides}
    x0 = xfun(typed_setting(setting))
    xs = neighbours(x0, dtype, steps=1) + [x0]
    x, g = _grid(xs, special_g(dtype), dtype)
    check(op, dtype, x, g, setting, f"{op} {dtype} {pid} {setting}")


# -- mixed dtypes: promotion, then one rounding to the output dtype -----------------------------


def _mixed_params():
    return [
        pytest.param(op, *m, id=f"{op}-{SHORT[m[0]]}-{SHORT[m[1]]}-to-{SHORT[m[2]]}")
        for op, o in ORACLES.items()
        for m in o.MIXED
    ]


@pytest.mark.parametrize(("op", "gdt", "xdt", "odt", "setting"), _mixed_params())
def test_mixed_dtypes_round_once(op, gdt, xdt, odt, setting):
    rng = np.random.default_rng([RNG_SEED, zlib.crc32(f"{op}/{gdt}/{xdt}/{odt}".encode())])
    n = 200
    with np.errstate(over="ignore"):
        x = np.where(rng.random(n) < 0.5, rng.uniform(-6, 6, n), log_uniform(rng, n, -20, 5))
        x = x.astype(NP[xdt])
        g = random_g(rng, n, "FLOAT16").astype(NP[gdt])
    check(op, xdt, x, g, setting, f"{op} {gdt}/{xdt} -> {odt}", out_dtype=odt)


# -- regressions: cases float64 alone gets wrong, which the mpmath refinement must get right -----


def _regression_params():
    return [
        pytest.param(op, r, id=f"{op}-{r.id}") for op, o in ORACLES.items() for r in o.REGRESSIONS
    ]


@pytest.mark.parametrize(("op", "reg"), _regression_params())
def test_regression(op, reg):
    """One element: what the oracle itself must say (where the regression says it), then the
    engine against the oracle, bit for bit."""
    x = np.array([reg.x], dtype=NP[reg.dtype])
    g = np.array([reg.g], dtype=NP[reg.dtype])
    exp, branches = oracle(op, x, g, reg.setting, reg.dtype)
    if reg.expect is not None:
        assert exp[0] == NP[reg.dtype].type(reg.expect)
    if reg.branch is not None:
        assert branches[0] == reg.branch
    got = run_engine(op, reg.dtype, x, g, reg.setting)
    assert_matches(got, exp, x, g, reg.dtype, f"{op} {reg.dtype} {reg.setting}")


def test_regression_subnormal_g_is_the_smallest_subnormal():
    """The regressions' g of 2^-149 (FLOAT) and 2^-133 (BF16) is each dtype's smallest subnormal."""
    assert float(_finfo("FLOAT").smallest_subnormal) == 2.0**-149
    assert float(_finfo("BF16").smallest_subnormal) == 2.0**-133
