"""The reference engine against an independent mpmath evaluation of each documented formula.

The oracle below is written by hand from the vendor docs (shared/seeds/) and the fact sheet
(shared/research/aclnn-facts.md §2.4, §3.4, §4.4, §5.4, §6.4); it never reads a spec's formula
expressions. Only the spec's branch ids and special-point ids are read, so that a new branch or
special point without an oracle fails here.

Semantics (the specs' convention): every input element is widened exactly, a FLOAT scalar holds
float32(value), the exact result is rounded once to the output dtype. The exact value is computed
with mpmath (mp.dps = 40) and rounded to FLOAT / FLOAT16 / BF16 by enumerating neighbouring
representable values and picking the nearest (ties to the even bit pattern), independently of
conformance.dtypes.round_to. Those outputs must match bit for bit (up to the sign of zero; NaN
in the same positions); DOUBLE outputs must be within 4 ulp.

Special values follow IEEE semantics for the product g * f, where f is the derivative factor:
when g or x is not finite, the result is g * float64(f) (so inf times a factor that underflows in
float64 is NaN). For x = +-inf the factor is the mathematical limit, except where the limit is an
indeterminate form of the documented formula (GELU at +-inf: inf * 0, giving NaN). Branches follow
the documented comparisons, which are false for NaN x.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import ml_dtypes
import mpmath
import numpy as np
import pytest

from conformance.call import Call, ScalarArg, TensorArg
from conformance.registry import default_registry
from reference.engine import evaluate

mp = mpmath.mp
mp.dps = 40
PRODUCT = "atlas-a2"  # the only product listing BF16; the formulas do not depend on the product

NP = {
    "FLOAT": np.dtype(np.float32),
    "FLOAT16": np.dtype(np.float16),
    "BF16": np.dtype(ml_dtypes.bfloat16),
    "DOUBLE": np.dtype(np.float64),
}
SHORT = {"FLOAT": "f32", "FLOAT16": "f16", "BF16": "bf16", "DOUBLE": "f64"}
UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}
# Where each dtype overflows when rounding with an unbounded exponent: the value "inf" stands for.
OVERFLOW = {
    "FLOAT": mpmath.mpf(2) ** 128,
    "FLOAT16": mpmath.mpf(2) ** 16,
    "BF16": mpmath.mpf(2) ** 128,
}


# -- independent rounding ----------------------------------------------------------------------


def _candidates(a: float, dtype: str) -> list[np.generic]:
    """Representable non-negative values of `dtype` around the float64 approximation `a` >= 0."""
    t = NP[dtype]
    if dtype == "BF16":
        with np.errstate(over="ignore"):
            f = np.float32(a)
        top = int(f.view(np.uint32)) >> 16  # bf16 truncation of the float32 value
        pats = [p for p in range(top - 1, top + 3) if 0 <= p <= 0x7F80]
        return list(np.array(pats, dtype=np.uint16).view(ml_dtypes.bfloat16))
    with np.errstate(over="ignore"):
        c = t.type(a)
        up = np.nextafter(c, t.type(np.inf))
        down = np.nextafter(c, t.type(0))
    return [v for v in {c, up, down} if not np.isnan(v) and v >= 0]


def round_exact(v: Any, dtype: str) -> np.generic:
    """Round an exact value (mpf) or an IEEE special (float) to `dtype`, to nearest, ties to even."""
    t = NP[dtype]
    if isinstance(v, float):
        if not math.isfinite(v) or v == 0:
            return t.type(v)
        v = mpmath.mpf(v)
    if v == 0:
        return t.type(0.0)
    if dtype == "DOUBLE":
        return np.float64(float(v))  # mpmath converts to the nearest double
    sign, a = (-1, -v) if v < 0 else (1, v)
    best = None
    for c in _candidates(float(a), dtype):
        val = OVERFLOW[dtype] if np.isinf(c) else mpmath.mpf(float(c))
        dist = abs(val - a)
        bits = int(np.asarray(c).view(UINT[t.itemsize]))
        key = (dist, bits & 1)  # nearest first, then the even bit pattern
        if best is None or key < best[0]:
            best = (key, c)
    assert best is not None
    c = best[1]
    return t.type(-c if sign < 0 else c)


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

ZERO_RESULT = object()  # a branch whose value is the constant 0 (hardshrink's dead zone)
ONE = mpmath.mpf(1)


def f32(v: float) -> float:
    """The value a FLOAT scalar holds."""
    return float(np.float32(v))


def factor_leaky(x: float, s: dict) -> tuple[str, Any]:
    # facts §2.4: out = gradOutput if self > 0; gradOutput * negativeSlope if self <= 0.
    if x > 0:
        return "positive", ONE
    return "nonpositive", mpmath.mpf(s["negativeSlope"])


def factor_hardshrink(x: float, s: dict) -> tuple[str, Any]:
    # seed 001: grad if x > lambda or x < -lambda; 0 otherwise; a negative lambda counts as 0.
    lam = s["lambd"]
    if lam < 0:
        lam = 0.0
    if abs(x) <= lam:
        return "dead-zone", ZERO_RESULT
    return "pass-through", ONE


def factor_softplus(x: float, s: dict) -> tuple[str, Any]:
    # seed 002: gradOutput * (1 / (1 + e^(-beta*self)) if beta*self <= threshold; 1 otherwise).
    beta, thr = s["beta"], s["threshold"]
    if math.isnan(x):
        return "sigmoid", math.nan
    if math.isinf(x):
        if beta == 0:
            raise NotImplementedError("beta = 0 with x = inf is not an oracle case")
        bx_inf = (beta > 0) == (x > 0)
        return ("linear", ONE) if bx_inf else ("sigmoid", mpmath.mpf(0))
    bx = mpmath.mpf(beta) * mpmath.mpf(x)  # exact (at most 77 significant bits)
    if bx > thr:
        return "linear", ONE
    return "sigmoid", 1 / (1 + mpmath.exp(-bx))


def factor_gelu(x: float, s: dict) -> tuple[str, Any]:
    branch = "erf" if s["approximate"] == "none" else "tanh"
    if not math.isfinite(x):
        return branch, math.nan  # inf * 0 in the documented formula, or NaN x
    X = mpmath.mpf(x)
    if branch == "erf":
        # 1/2 + 1/2 erf(x/sqrt2) == 1/2 erfc(-x/sqrt2) (no cancellation for x << 0)
        cdf = mpmath.erfc(-X / mpmath.sqrt(2)) / 2
        return branch, cdf + X / mpmath.sqrt(2 * mpmath.pi) * mpmath.exp(-X * X / 2)
    # d/dx 0.5x(1 + tanh u), u = k(x + c x^3), k = sqrt(2/pi), c = 0.044715
    #   = 0.5(1 + tanh u) + 0.5x sech^2(u) u',  with 0.5(1 + tanh u) == 1/(1 + e^(-2u))
    k, c = mpmath.sqrt(2 / mpmath.pi), mpmath.mpf("0.044715")
    u = k * (X + c * X**3)
    du = k * (1 + 3 * c * X**2)
    return branch, 1 / (1 + mpmath.exp(-2 * u)) + X / 2 * mpmath.sech(u) ** 2 * du


def factor_elu(x: float, s: dict) -> tuple[str, Any]:
    # facts §6.4: x > 0 -> scale; x <= 0 -> inputScale*(x + alpha*scale) (isResult)
    #                                  or inputScale*alpha*scale*exp(x*inputScale) (not isResult)
    alpha, scale, iscale = (mpmath.mpf(s[k]) for k in ("alpha", "scale", "inputScale"))
    if math.isnan(x) or x > 0:
        return "positive", scale
    if s["isResult"]:
        if math.isinf(x):
            return "result-nonpositive", -math.inf * float(iscale)
        return "result-nonpositive", iscale * (mpmath.mpf(x) + alpha * scale)
    if math.isinf(x):
        if iscale <= 0:
            raise NotImplementedError("x = -inf needs inputScale > 0 in the oracle")
        return "input-nonpositive", mpmath.mpf(0)
    return "input-nonpositive", iscale * alpha * scale * mpmath.exp(mpmath.mpf(x) * iscale)


def exact_result(g: float, f: Any) -> Any:
    """g times the factor: an exact mpf, or an IEEE float64 special where g or f is not finite."""
    if f is ZERO_RESULT:
        return mpmath.mpf(0)
    if isinstance(f, float) or not math.isfinite(g):
        with np.errstate(invalid="ignore"):
            return float(np.float64(g) * np.float64(float(f)))
    return mpmath.mpf(g) * f


# -- operators: how a call is built ------------------------------------------------------------


@dataclass
class OpInfo:
    name: str
    x: str  # the tensor the factor depends on
    out: str
    dtypes: tuple[str, ...]
    factor: Callable[[float, dict], tuple[str, Any]]
    settings: list[dict] = field(default_factory=list)  # scalar/bool/string arguments


OPS = {
    "leaky_relu_backward": OpInfo(
        "leaky_relu_backward", "self", "out", ("FLOAT", "FLOAT16", "BF16", "DOUBLE"), factor_leaky
    ),
    "hardshrink_backward": OpInfo(
        "hardshrink_backward", "self", "gradInput", ("FLOAT", "FLOAT16", "BF16"), factor_hardshrink
    ),
    "softplus_backward": OpInfo(
        "softplus_backward",
        "self",
        "gradInput",
        ("FLOAT", "FLOAT16", "BF16", "DOUBLE"),
        factor_softplus,
    ),
    "gelu_backward_v2": OpInfo(
        "gelu_backward_v2", "self", "gradInput", ("FLOAT", "FLOAT16", "BF16"), factor_gelu
    ),
    "elu_backward": OpInfo(
        "elu_backward", "selfOrResult", "gradInput", ("FLOAT", "FLOAT16", "BF16"), factor_elu
    ),
}


def typed_setting(setting: dict) -> dict:
    """Scalars as the FLOAT scalars of the call hold them (float32 values)."""
    return {k: f32(v) if isinstance(v, float) else v for k, v in setting.items()}


def make_call(op: str, dtype: str, x: np.ndarray, g: np.ndarray, setting: dict, out_dtype=None):
    """A contiguous call with x, g (numpy arrays of the tensor dtypes) and a zeroed output."""
    info = OPS[op]
    spec = default_registry().get(op)
    out_dtype = out_dtype or dtype
    args: dict[str, Any] = {}
    for p in spec.params:
        if p.kind == "tensor":
            if p.is_output:
                arr, d = np.zeros(g.shape, dtype=NP[out_dtype]), out_dtype
            elif p.name == info.x:
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
    outcome = evaluate(call)
    assert outcome.status == 0, outcome.message
    return outcome.outputs[OPS[op].out].reshape(g.shape)


def oracle(op: str, x: np.ndarray, g: np.ndarray, setting: dict, out_dtype: str):
    """(expected array in out_dtype, branch ids)."""
    info, s = OPS[op], typed_setting(setting)
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
                    cache[(key, prec)] = info.factor(xv, s)
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
    outcome = evaluate(call)
    assert outcome.status == 0, outcome.message
    got = outcome.outputs[OPS[op].out].reshape(g.shape)
    exp, branches = oracle(op, x, g, setting, out_dtype)
    assert_matches(got, exp, x, g, out_dtype, context)
    return branches


# -- random values per branch -------------------------------------------------------------------

RNG_SEED = 20240611


def _log_uniform(rng, n, lo, hi):
    return rng.choice([-1.0, 1.0], n) * np.exp2(rng.uniform(lo, hi, n))


def random_g(rng, n, dtype):
    lo, hi = {"FLOAT16": (-26, 8), "BF16": (-135, 40), "FLOAT": (-150, 40), "DOUBLE": (-80, 60)}[
        dtype
    ]
    g = np.where(rng.random(n) < 0.5, rng.uniform(-4, 4, n), _log_uniform(rng, n, lo, hi))
    g[rng.random(n) < 0.03] = 0.0
    return g


def _pos(rng, n, lo=-12, hi=6):
    return np.exp2(rng.uniform(lo, hi, n))


# branch id -> (settings, x generator(rng, n, typed setting) -> float64 values)
BRANCHES: dict[tuple[str, str], tuple[list[dict], Callable]] = {
    ("leaky_relu_backward", "positive"): (
        [
            {"negativeSlope": 0.01, "selfIsResult": False},
            {"negativeSlope": 1.7, "selfIsResult": True},
        ],
        lambda rng, n, s: _pos(rng, n, -30, 10),
    ),
    ("leaky_relu_backward", "nonpositive"): (
        [
            {"negativeSlope": 0.01, "selfIsResult": False},
            {"negativeSlope": -0.37, "selfIsResult": False},
            {"negativeSlope": 1.7, "selfIsResult": True},
        ],
        lambda rng, n, s: np.where(rng.random(n) < 0.05, -0.0, -_pos(rng, n, -30, 10)),
    ),
    ("hardshrink_backward", "dead-zone"): (
        [{"lambd": 0.5}, {"lambd": 0.3}, {"lambd": 1.75}, {"lambd": -0.5}],
        lambda rng, n, s: (
            rng.uniform(-1, 1, n) * max(s["lambd"], 0.0) * rng.choice([1.0, 0.999, 0.5, 1e-3], n)
        ),
    ),
    ("hardshrink_backward", "pass-through"): (
        [{"lambd": 0.5}, {"lambd": 0.3}, {"lambd": 1.75}, {"lambd": -0.5}],
        lambda rng, n, s: (
            rng.choice([-1.0, 1.0], n) * (max(s["lambd"], 0.0) + _pos(rng, n, -20, 5))
        ),
    ),
    ("softplus_backward", "linear"): (
        [
            {"beta": 1.0, "threshold": 20.0},
            {"beta": 2.0, "threshold": 3.0},
            {"beta": 0.7, "threshold": 5.0},
        ],
        lambda rng, n, s: s["threshold"] / s["beta"] * (1 + _pos(rng, n, -9, 3)),
    ),
    ("softplus_backward", "sigmoid"): (
        [
            {"beta": 1.0, "threshold": 20.0},
            {"beta": 2.0, "threshold": 3.0},
            {"beta": 0.7, "threshold": 5.0},
        ],
        lambda rng, n, s: rng.uniform(-40, s["threshold"], n) / s["beta"],
    ),
    ("gelu_backward_v2", "erf"): (
        [{"approximate": "none"}],
        lambda rng, n, s: np.where(
            rng.random(n) < 0.7,
            rng.uniform(-6, 6, n),
            rng.choice([-1.0, 1.0], n) * _pos(rng, n, -20, 4),
        ),
    ),
    ("gelu_backward_v2", "tanh"): (
        [{"approximate": "tanh"}],
        lambda rng, n, s: np.where(
            rng.random(n) < 0.7,
            rng.uniform(-6, 6, n),
            rng.choice([-1.0, 1.0], n) * _pos(rng, n, -20, 4),
        ),
    ),
    ("elu_backward", "result-nonpositive"): (
        [
            {"alpha": 1.0, "scale": 1.0, "inputScale": 1.0, "isResult": True},
            {"alpha": 1.5, "scale": 1.0507, "inputScale": 0.8, "isResult": True},
            {"alpha": 0.3, "scale": 2.0, "inputScale": 1.7, "isResult": True},
        ],
        lambda rng, n, s: np.where(
            rng.random(n) < 0.7, rng.uniform(-3, 0, n), -_pos(rng, n, -30, 2)
        ),
    ),
    ("elu_backward", "input-nonpositive"): (
        [
            {"alpha": 1.0, "scale": 1.0, "inputScale": 1.0, "isResult": False},
            {"alpha": 1.5, "scale": 1.0507, "inputScale": 0.8, "isResult": False},
            {"alpha": -0.6, "scale": 2.0, "inputScale": 1.7, "isResult": False},
        ],
        lambda rng, n, s: np.where(
            rng.random(n) < 0.7, rng.uniform(-30, 0, n), -_pos(rng, n, -30, 7)
        ),
    ),
    ("elu_backward", "positive"): (
        [
            {"alpha": 1.0, "scale": 1.0, "inputScale": 1.0, "isResult": True},
            {"alpha": 1.5, "scale": 1.0507, "inputScale": 0.8, "isResult": False},
        ],
        lambda rng, n, s: _pos(rng, n, -30, 10),
    ),
}

VALUES_PER_BRANCH = 360  # split over the branch's scalar settings, at least 120 each


def _branch_params():
    out = []
    for (op, branch), _ in BRANCHES.items():
        for dtype in OPS[op].dtypes:
            out.append(pytest.param(op, branch, dtype, id=f"{op}-{SHORT[dtype]}-{branch}"))
    return out


def test_every_spec_branch_has_an_oracle():
    """A branch added to a spec without a random-value generator here fails this test."""
    reg = default_registry()
    assert sorted(s.name for s in reg) == sorted(OPS)
    for spec in reg:
        ids = {b.id for b in spec.formula.branches}
        mine = {b for (op, b) in BRANCHES if op == spec.name}
        assert ids == mine, f"{spec.name}: spec branches {sorted(ids)} vs oracle {sorted(mine)}"


@pytest.mark.parametrize(("op", "branch", "dtype"), _branch_params())
def test_random_values_per_branch(op, branch, dtype):
    settings, gen = BRANCHES[(op, branch)]
    n = max(120, VALUES_PER_BRANCH // len(settings))
    rng = np.random.default_rng([RNG_SEED, zlib.crc32(f"{op}/{branch}/{dtype}".encode())])
    for setting in settings:
        s = typed_setting(setting)
        with np.errstate(over="ignore"):
            x = gen(rng, 4 * n, s).astype(NP[dtype])
        x = x[np.isfinite(x.astype(np.float64))]
        # Rounding to the dtype can move a value across the boundary: keep the branch's own.
        keep = np.array([OPS[op].factor(float(v), s)[0] == branch for v in x], dtype=bool)
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


def op_special_x(op: str, s: dict, dtype: str) -> list[float]:
    """The boundaries of each op's branches, rounded to the dtype, with their neighbours."""
    if op == "hardshrink_backward":
        lam = max(s["lambd"], 0.0)
        return neighbours(lam, dtype) + neighbours(-lam, dtype)
    if op == "softplus_backward":
        exact = s["threshold"] / s["beta"]  # float64 quotient; the neighbours bracket the tie
        return neighbours(exact, dtype) + [-1000.0, 88.0, -88.0]
    if op == "elu_backward":
        return neighbours(-s["alpha"] * s["scale"], dtype) + [-200.0, -100.0]
    if op == "gelu_backward_v2":
        return [12.0, -12.0, -30.0, 30.0, -0.75, 5.5, -5.5, 1e-3, -1e-3]
    return [-2.0, 2.0]


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


SPECIAL_SETTINGS = {
    "leaky_relu_backward": [
        {"negativeSlope": 0.01, "selfIsResult": False},
        {"negativeSlope": 0.0, "selfIsResult": True},
        {"negativeSlope": -0.5, "selfIsResult": False},
    ],
    "hardshrink_backward": [{"lambd": 0.5}, {"lambd": 0.3}, {"lambd": -0.5}, {"lambd": 0.0}],
    "softplus_backward": [
        {"beta": 1.0, "threshold": 20.0},
        {"beta": 2.0, "threshold": 3.0},
        {"beta": 0.7, "threshold": 5.0},
    ],
    "gelu_backward_v2": [{"approximate": "none"}, {"approximate": "tanh"}],
    "elu_backward": [
        {"alpha": 1.0, "scale": 1.0, "inputScale": 1.0, "isResult": True},
        {"alpha": 1.0, "scale": 1.0, "inputScale": 1.0, "isResult": False},
        {"alpha": 1.5, "scale": 1.0507, "inputScale": 0.8, "isResult": True},
        {"alpha": -0.6, "scale": 2.0, "inputScale": 1.7, "isResult": False},
    ],
}

# Each spec's special points, written out here from their summaries: (overrides, x(setting)).
SPEC_SPECIAL_POINTS: dict[str, dict[str, tuple[dict, Callable[[dict], float]]]] = {
    "elu_backward": {
        "x-zero": ({}, lambda s: 0.0),
        "x-tiny-positive": ({}, lambda s: 6e-8),
        "x-minus-alpha-scale": (
            {"isResult": True, "alpha": 0.5, "scale": 2.0},
            lambda s: -s["alpha"] * s["scale"],
        ),
        "x-very-negative": ({}, lambda s: -200.0),
    },
    "gelu_backward_v2": {
        "x-zero": ({}, lambda s: 0.0),
        "x-zero-tanh": ({"approximate": "tanh"}, lambda s: 0.0),
        "x-large-positive": ({}, lambda s: 12.0),
        "x-large-negative": ({}, lambda s: -12.0),
        "x-large-negative-tanh": ({"approximate": "tanh"}, lambda s: -30.0),
    },
    "hardshrink_backward": {
        "x-at-lambd": ({}, lambda s: max(s["lambd"], 0.0)),
        "x-at-neg-lambd": ({}, lambda s: -max(s["lambd"], 0.0)),
        "x-zero": ({}, lambda s: 0.0),
        "x-zero-negative-lambd": ({"lambd": -0.5}, lambda s: 0.0),
        "x-at-unrepresentable-lambd": ({"lambd": 0.3}, lambda s: max(s["lambd"], 0.0)),
    },
    "leaky_relu_backward": {
        "x-zero": ({}, lambda s: 0.0),
        "x-tiny-positive": ({}, lambda s: 6e-8),
        "x-slope-zero": ({"negativeSlope": 0.0}, lambda s: -1.0),
        "x-slope-negative": ({"negativeSlope": -0.5, "selfIsResult": False}, lambda s: -2.0),
    },
    "softplus_backward": {
        "at-threshold": ({}, lambda s: s["threshold"] / s["beta"]),
        "at-threshold-beta2": (
            {"beta": 2.0, "threshold": 3.0},
            lambda s: s["threshold"] / s["beta"],
        ),
        "above-threshold": ({}, lambda s: s["threshold"] / s["beta"] + 1),
        "x-zero": ({}, lambda s: 0.0),
        "beta-zero": ({"beta": 0.0}, lambda s: 3.0),
        "x-very-negative": ({}, lambda s: -1000.0),
    },
}


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
    for op, settings in SPECIAL_SETTINGS.items():
        for dtype in OPS[op].dtypes:
            for i, setting in enumerate(settings):
                tag = "-".join(f"{k}={v}" for k, v in setting.items())
                out.append(pytest.param(op, dtype, i, id=f"{op}-{SHORT[dtype]}-{i}-{tag}"))
    return out


@pytest.mark.parametrize(("op", "dtype", "index"), _special_params())
def test_special_points(op, dtype, index):
    """+-0, +-inf, NaN, subnormals, max, and each op's branch boundaries, against special g."""
    setting = SPECIAL_SETTINGS[op][index]
    s = typed_setting(setting)
    xs = general_special_x(dtype) + op_special_x(op, s, dtype)
    x, g = _grid(xs, special_g(dtype), dtype)
    check(op, dtype, x, g, setting, f"{op} {dtype} {setting}")


def test_every_spec_special_point_has_an_oracle():
    for spec in default_registry():
        ids = {p.id for p in spec.special_points}
        assert ids == set(SPEC_SPECIAL_POINTS[spec.name]), spec.name


def _spec_point_params():
    out = []
    for op, points in SPEC_SPECIAL_POINTS.items():
        for dtype in OPS[op].dtypes:
            for pid in points:
                out.append(pytest.param(op, dtype, pid, id=f"{op}-{SHORT[dtype]}-{pid}"))
    return out


@pytest.mark.parametrize(("op", "dtype", "pid"), _spec_point_params())
def test_spec_special_points(op, dtype, pid):
    overrides, xfun = SPEC_SPECIAL_POINTS[op][pid]
    spec_point = {p.id: p for p in default_registry().get(op).special_points}[pid]
    # The spec's `with` arguments must be the ones written out here.
    assert {k: v for k, v in spec_point.with_.items()} == overrides
    setting = {**defaults(op), **overrides}
    x0 = xfun(typed_setting(setting))
    xs = neighbours(x0, dtype, steps=1) + [x0]
    x, g = _grid(xs, special_g(dtype), dtype)
    check(op, dtype, x, g, setting, f"{op} {dtype} {pid} {setting}")


# -- mixed dtypes: promotion, then one rounding to the output dtype -----------------------------

MIXED = [
    # op, gradOutput dtype, x dtype, output dtype, setting
    (
        "leaky_relu_backward",
        "FLOAT16",
        "BF16",
        "BF16",
        {"negativeSlope": 0.3, "selfIsResult": False},
    ),
    (
        "leaky_relu_backward",
        "DOUBLE",
        "FLOAT",
        "FLOAT16",
        {"negativeSlope": 0.01, "selfIsResult": False},
    ),
    ("hardshrink_backward", "FLOAT", "FLOAT16", "FLOAT16", {"lambd": 0.3}),
    ("hardshrink_backward", "BF16", "FLOAT16", "BF16", {"lambd": 0.5}),
    ("softplus_backward", "FLOAT", "FLOAT16", "BF16", {"beta": 2.0, "threshold": 3.0}),
    ("softplus_backward", "FLOAT16", "FLOAT", "FLOAT16", {"beta": 0.7, "threshold": 5.0}),
    ("gelu_backward_v2", "FLOAT16", "FLOAT", "FLOAT", {"approximate": "none"}),
    ("gelu_backward_v2", "BF16", "FLOAT", "FLOAT", {"approximate": "tanh"}),
    (
        "elu_backward",
        "FLOAT",
        "FLOAT",
        "FLOAT16",
        {"alpha": 1.5, "scale": 1.0507, "inputScale": 0.8, "isResult": False},
    ),
]


@pytest.mark.parametrize(
    ("op", "gdt", "xdt", "odt", "setting"),
    [pytest.param(*m, id=f"{m[0]}-{SHORT[m[1]]}-{SHORT[m[2]]}-to-{SHORT[m[3]]}") for m in MIXED],
)
def test_mixed_dtypes_round_once(op, gdt, xdt, odt, setting):
    rng = np.random.default_rng([RNG_SEED, zlib.crc32(f"{op}/{gdt}/{xdt}/{odt}".encode())])
    n = 200
    with np.errstate(over="ignore"):
        x = np.where(rng.random(n) < 0.5, rng.uniform(-6, 6, n), _log_uniform(rng, n, -20, 5))
        x = x.astype(NP[xdt])
        g = random_g(rng, n, "FLOAT16").astype(NP[gdt])
    check(op, xdt, x, g, setting, f"{op} {gdt}/{xdt} -> {odt}", out_dtype=odt)


# -- regressions: cases float64 alone gets wrong, which the mpmath refinement must get right -----


def _reproduce(op, dtype, x, g, setting):
    x = np.array([x], dtype=NP[dtype])
    g = np.array([g], dtype=NP[dtype])
    exp, branches = oracle(op, x, g, setting, dtype)
    got = run_engine(op, dtype, x, g, setting)
    assert_matches(got, exp, x, g, dtype, f"{op} {dtype} {setting}")
    return exp, branches


DOUBLE_ROUNDING = (
    "engine bug: the formula is evaluated in float64 and the float64 value is rounded to the "
    "output dtype; when the float64 rounding lands on a midpoint of the output dtype the result "
    "is rounded twice (1 ulp off, or 0 instead of the smallest subnormal)"
)


def test_regression_elu_f32_double_rounding():
    # alpha*scale = 1549/2^10 * 10831/2^13 = 2 + 3*2^-23: the midpoint of 2 + 2^-22 (odd
    # mantissa) and 2 + 2^-21. x = -2^-100 moves the exact value just below it, so the correctly
    # rounded result is 2 + 2^-22; float64 loses the 2^-100 and the tie goes to 2 + 2^-21.
    setting = {"alpha": 1549 / 1024, "scale": 10831 / 8192, "inputScale": 1.0, "isResult": True}
    x = np.array([-(2.0**-100)], dtype=np.float32)
    exp, _ = oracle("elu_backward", x, np.ones(1, np.float32), setting, "FLOAT")
    assert exp[0] == np.float32(2 + 2**-22)
    _reproduce("elu_backward", "FLOAT", -(2.0**-100), 1.0, setting)


@pytest.mark.parametrize(
    ("op", "dtype", "setting"),
    [
        pytest.param(
            "softplus_backward", "FLOAT", {"beta": 1.0, "threshold": 20.0}, id="softplus-f32"
        ),
        pytest.param("gelu_backward_v2", "FLOAT", {"approximate": "none"}, id="gelu-erf-f32"),
        pytest.param("gelu_backward_v2", "BF16", {"approximate": "tanh"}, id="gelu-tanh-bf16"),
    ],
)
def test_regression_subnormal_g_times_half(op, dtype, setting):
    # factor(x) = 1/2 + O(x) > 1/2 for a tiny x > 0; g = the smallest subnormal: the exact
    # product is just above half the smallest subnormal and rounds up to it. float64 holds
    # the factor as exactly 1/2, the tie rounds to even: the engine gives 0.
    tiny = float(_finfo(dtype).smallest_subnormal)
    _reproduce(op, dtype, 1e-38, tiny, setting)


def test_regression_softplus_f64_branch_uses_rounded_product():
    # 3 * 0.33333333333333337 > 1 exactly (linear branch: g), but 3.0 * x == 1.0 in float64.
    setting = {"beta": 3.0, "threshold": 1.0}
    _reproduce("softplus_backward", "DOUBLE", 0.33333333333333337, 1.0, setting)


def test_softplus_f64_boundary_oracle():
    """The oracle side of the reproducer above: the exact product is above the threshold."""
    x = np.array([0.33333333333333337])
    exp, branches = oracle(
        "softplus_backward", x, np.ones(1), {"beta": 3.0, "threshold": 1.0}, "DOUBLE"
    )
    assert branches[0] == "linear" and exp[0] == 1.0


def test_regression_softplus_f64_inexact_beta():
    setting = {"beta": 0.7, "threshold": 5.0}
    _reproduce("softplus_backward", "DOUBLE", -37.15576715343177, -3.552500056563961, setting)


def test_regression_softplus_f64_exp_overflow():
    _reproduce("softplus_backward", "DOUBLE", -720.0, 1e10, {"beta": 1.0, "threshold": 20.0})
