"""Cancellation: inputs where float64's rounding errors grow past a rounding boundary of the
FLOAT, FLOAT16 or BF16 output, so float64's value is not the exact one rounded.

The reference must still give the exact value rounded once: tier 1 carries an error bound
(errbound.reaches on the numpy path, the flagging kernels: rowgen.Bounded.element) and
settles the elements it reaches past a boundary from their exact inputs. Each test writes the
doc's formula in mpmath here, at 2,000 bits, and runs both evaluation paths (they must agree bit
for bit: tests/support/paths.py). Every case below was misrounded before the bound (the first
two by tens of decades: float64 gives 0).
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
from aclnn_conformance.conformance.acl import dtypes
from aclnn_conformance.conformance.acl.call import Call, ScalarArg, TensorArg
from aclnn_conformance.conformance.spec.registry import default_registry
from aclnn_conformance.reference import settle

from tests.support.paths import evaluate_both
from tests.support.rounding import NP, round_exact

REG = default_registry()
F = mpmath.mpf


def _tensor(values, dtype: str) -> TensorArg:
    return TensorArg.from_array(np.asarray(values, np.float64).astype(NP[dtype]), dtype)


def _exact(fn, *columns: np.ndarray, dtype: str) -> list[float]:
    """fn over the inputs' exact values at 2,000 bits, each rounded to dtype (as float)."""
    out = []
    with mpmath.workprec(2000):
        for xs in zip(*columns, strict=True):
            out.append(float(round_exact(fn(*(F(float(x)) for x in xs)), dtype)))
    return out


def _same(got: np.ndarray, want: list[float]) -> None:
    g = got.astype(np.float64).ravel()
    w = np.array(want)
    bad = np.flatnonzero((g != w) | (np.signbit(g) != np.signbit(w)))
    assert not bad.size, f"{bad.size} wrong, first at {bad[0]}: {g[bad[0]]!r}, exact {w[bad[0]]!r}"


@pytest.mark.parametrize("dtype", ["FLOAT", "BF16"])
def test_bce_with_logits_backward_of_huge_inputs_keeps_its_overflow(dtype):
    """w g (q sigma(x) - p y), q = (p - 1) y + 1, at |inputs| ~ 1e38: sigma(x) = 1 and q - p y =
    1 - y exactly, ~1e115 after the weights (FLOAT: infinity); float64's q and p y agree to
    1e60 and cancel to 0. Inputs from the generated case values=large."""
    g = [-2.514451086208001e38, 2.2772576358017123e38, -3.0e38, 1.0e38]
    x = [2.6096372457743224e38, 3.219361972676898e38, 2.0e38, 3.0e38]
    y = [-2.7451334774833253e38, -2.5744241431650385e38, 1.5e38, -2.0e38]
    w = [-1.2943771370111533e38, 2.281605575948447e38, 2.0e38, -3.0e38]
    p = [-1.8493174529814974e38, 1.2795540421884685e38, 2.5e38, 1.0e38]
    args = {
        "gradOutput": _tensor(g, dtype),
        "self": _tensor(x, dtype),
        "target": _tensor(y, dtype),
        "weightOptional": _tensor(w, dtype),
        "posWeightOptional": _tensor(p, dtype),
        "reduction": 0,
        "out": _tensor([0.0] * 4, dtype),
    }
    call = Call("aclnnBinaryCrossEntropyWithLogitsBackward", "atlas-a2", args)
    got = evaluate_both(call, registry=REG).outputs["out"]
    cols = [args[n].storage.astype(np.float64) for n in list(args)[:5]]

    def grad(g, x, y, w, p):
        return g * w * (((p - 1) * y + 1) / (1 + mpmath.exp(-x)) - p * y)

    want = _exact(grad, *cols, dtype=dtype)
    assert all(np.isinf(want)), want  # the exact gradients overflow: float64 said 0
    _same(got, want)


@pytest.mark.parametrize("dtype", ["FLOAT", "FLOAT16", "BF16"])
def test_bce_with_logits_target_backward_at_a_tiny_logit(dtype):
    """(lsn - p ls) w g at p = 1: log sigma(-x) - log sigma(x) = -x exactly, while float64's
    (-x - log1p(e^-|x|)) + log1p(e^-|x|) loses x beside ln 2 and gives 0."""
    x = np.array([1e-30, -3e-20, 2.0**-60, 5e-7, -1e-4])
    n = x.size
    args = {
        "gradOutput": _tensor([1.0] * n, dtype),
        "self": _tensor(x, dtype),
        "target": _tensor([0.5] * n, dtype),
        "weightOptional": _tensor([1.0] * n, dtype),
        "posWeightOptional": _tensor([1.0] * n, dtype),
        "reduction": 0,
        "gradTarget": _tensor([0.0] * n, dtype),
    }
    call = Call("aclnnBinaryCrossEntropyWithLogitsTargetBackward", "atlas-a2", args)
    got = evaluate_both(call, registry=REG).outputs["gradTarget"]

    def grad(x):  # log sigma(-x) - log sigma(x)
        return -mpmath.log1p(mpmath.exp(x)) + mpmath.log1p(mpmath.exp(-x))

    _same(got, _exact(grad, args["self"].storage.astype(np.float64), dtype=dtype))


def test_swish_backward_at_its_root_is_rounded_from_the_exact_value():
    """g sigma(bx) (1 + bx (1 - sigma(bx))) for 4,096 consecutive FLOAT values of x around the
    root bx = -1.27846...: 1 + bx sigma(-bx) cancels, and float64's error (a few ulps of 1)
    reaches FLOAT rounding boundaries of the small result."""
    root = np.float32(-1.2784645)
    bits = root.view(np.int32) + np.arange(-2048, 2048, dtype=np.int32)
    x = bits.view(np.float32).astype(np.float64)
    args = {
        "gradOutput": _tensor(np.ones(x.size), "FLOAT"),
        "self": _tensor(x, "FLOAT"),
        "betaOptional": ScalarArg("FLOAT", 1.0),
        "gradInput": _tensor(np.zeros(x.size), "FLOAT"),
    }
    got = evaluate_both(Call("aclnnSwishBackward", "atlas-a2", args), registry=REG)

    def grad(x):
        s = 1 / (1 + mpmath.exp(-x))
        return s * (1 + x * (1 - s))

    _same(got.outputs["gradInput"], _exact(grad, x, dtype="FLOAT"))


def test_an_element_the_bound_reaches_skips_the_pair_tier(monkeypatch):
    """The double-double pair's margin assumes float64's error was not amplified; an element
    flagged FAR (settle.FAR) goes to exactness and mpmath instead, and is still settled."""
    seen = []
    real = settle.ddtier.decide

    def spy(spec, env, inputs, out_dtype):
        seen.extend(inputs["self"].tolist())
        return real(spec, env, inputs, out_dtype)

    monkeypatch.setattr(settle.ddtier, "decide", spy)
    spec = REG.get("aclnnSwishBackward")
    x = np.array([-1.0, -2.0, -3.0])
    raw = {"gradOutput": np.ones(3, np.float32), "self": x.astype(np.float32)}
    flags = np.array([settle.FAR, 1, settle.FAR | 1], np.uint8)
    buf = np.zeros(3)
    idx = settle.patch(spec, {"betaOptional": 1.0}, raw, {"gradOutput": "FLOAT", "self": "FLOAT"},
                       buf, flags, dtypes.get("FLOAT"), None, np.arange(3))  # fmt: skip
    assert list(idx) == [0, 1, 2]
    assert seen == [-2.0]  # the pair tier saw the element flagged near a midpoint only

    def grad(x):
        s = 1 / (1 + mpmath.exp(-x))
        return s * (1 + x * (1 - s))

    with mpmath.workprec(2000):  # settled values: rounded to odd, so FLOAT's rounding is exact
        want = [float(round_exact(grad(F(v)), "FLOAT")) for v in x]
    assert buf.astype(np.float32).tolist() == want
