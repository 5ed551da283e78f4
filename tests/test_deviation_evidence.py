"""The `formula:` of a spec deviation is the other side's behaviour, written in the expression
language: checked here against that side itself (PyTorch on CPU), on inputs chosen to exercise
the difference, so that a deviation cannot excuse more or other than what PyTorch does."""

from __future__ import annotations

import numpy as np
import pytest
from aclnn_conformance.conformance.spec.expr.language import compile_expr
from aclnn_conformance.conformance.spec.registry import default_registry
from aclnn_conformance.conformance.spec.yamlpos import load as load_yaml

torch = pytest.importorskip("torch")
REG = default_registry()


def _deviation(spec_name: str, dev_id: str) -> dict:
    spec = REG.get(spec_name)
    data = load_yaml(spec.path).data
    return next(d for d in data["deviations"] if d["id"] == dev_id)


def test_softplus_exp_overflow_is_what_torch_computes():
    """softplus with threshold inf (the log branch everywhere): z = beta * x past 88.72 gives
    +-inf in float32; the deviation's formula gives the same, the spec's formula a finite x."""
    dev = _deviation("softplus", "exp-overflow")
    assert dev["differs"] == "values" and "torch" in dev["backends"]
    value = compile_expr(dev["formula"]["value"], ["self", "beta", "threshold", "z"])
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.uniform(-120, 120, 4000), [88.72283, 88.72284, 88.7229, 200.0]])
    x = x.astype(np.float32)
    for beta in (1.0, -1.0, 0.5, 2.0):
        for threshold in (float("inf"), float("nan")):
            got = torch.ops.aten.softplus(torch.from_numpy(x), beta, threshold).numpy()
            z = np.float32(beta) * x  # the kernel's and torch's float32 product
            env = {"self": x.astype(np.float64), "beta": beta, "threshold": threshold,
                   "z": z.astype(np.float64)}  # fmt: skip
            with np.errstate(all="ignore"):
                want = np.asarray(value.evaluate(env), np.float64).astype(np.float32)
            np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
            np.testing.assert_array_equal(
                np.sign(got[np.isinf(got)]), np.sign(want[np.isinf(want)])
            )
            fin = np.isfinite(got)
            np.testing.assert_allclose(got[fin], want[fin], rtol=2e-6, atol=1e-30)
            assert np.isinf(want).any()  # the inputs reach the overflow


def test_sigmoid_backward_complex_is_torchs_conjugate():
    dev = _deviation("sigmoid_backward", "torch-complex-conj")
    assert dev["differs"] == "values" and dev["dtypes"] == {"output": ["COMPLEX64", "COMPLEX128"]}
    value = compile_expr(dev["formula"]["value"], ["gradOutput", "output"])
    doc = REG.get("sigmoid_backward").formula.branches[0].value  # the spec's (the doc's) formula
    rng = np.random.default_rng(6)
    g = (rng.normal(size=64) + 1j * rng.normal(size=64)).astype(np.complex128)
    y = (rng.normal(size=64) + 1j * rng.normal(size=64)).astype(np.complex128)
    got = torch.ops.aten.sigmoid_backward(torch.from_numpy(g), torch.from_numpy(y)).numpy()
    np.testing.assert_allclose(got, value.evaluate({"gradOutput": g, "output": y}), rtol=1e-12)
    assert not np.allclose(got, doc.evaluate({"gradOutput": g, "output": y}))
    # a real output: the conjugate changes nothing
    yr = rng.normal(size=64)
    got = torch.ops.aten.sigmoid_backward(torch.from_numpy(g), torch.from_numpy(yr + 0j)).numpy()
    np.testing.assert_allclose(got, doc.evaluate({"gradOutput": g, "output": yr}), rtol=1e-12)
