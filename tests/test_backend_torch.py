"""The PyTorch backend (conformance.run.backends.torch_backend).

Every expected value is derived by hand in the comments (leaky: g or g*slope; hardshrink: g or 0;
...), or is the input itself where the op is an identity; nothing is captured from the code.
Skipped only when torch cannot be imported.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install '.[torch]')")

from aclnn_conformance.conformance.acl.call import Call, ScalarArg, TensorArg  # noqa: E402
from aclnn_conformance.conformance.run.backend import BackendError, load_backend  # noqa: E402
from aclnn_conformance.conformance.run.backends.torch_backend import (  # noqa: E402
    BindingError,
    TorchBackend,
    TorchNpuBackend,
    parse_aten_binding,
)
from aclnn_conformance.conformance.spec.registry import (  # noqa: E402
    SpecError,
    default_registry,  # noqa: E402
    load_spec,
)

from tests.support.calls import (  # noqa: E402
    assert_narrow_floats_move_bit_exactly,
    out,
    result,
    run,
    t,
)

REPO = Path(__file__).resolve().parent.parent
INVALID = 161002


@pytest.fixture(scope="module")
def backend() -> TorchBackend:
    return load_backend("torch")


# ---------------------------------------------------------------- hand-checkable values


def test_leaky_relu_slope_half(backend):
    # x > 0 -> g; x <= 0 (0 included) -> g * 0.5
    o = run(backend, "leaky_relu_backward", gradOutput=t([1, 2, 3, 4]), self=t([-1, 0, 2, -3]),
            negativeSlope=ScalarArg("FLOAT", 0.5), selfIsResult=False, out=out([4]))  # fmt: skip
    assert result(o, "out").tolist() == [0.5, 1.0, 3.0, 2.0]


def test_hardshrink_dead_zone(backend):
    # |x| <= 0.5 -> 0 (x = +-0.5 included); else g
    o = run(backend, "hardshrink_backward", gradOutput=t([1, 2, 3, 4, 5]),
            self=t([-1, -0.5, 0, 0.5, 0.75]), lambd=ScalarArg("FLOAT", 0.5),
            gradInput=out([5]))  # fmt: skip
    assert result(o, "gradInput").tolist() == [1.0, 0.0, 0.0, 0.0, 5.0]


def test_softplus_branches(backend):
    # beta 2, threshold 3: x = 1.5 gives beta*x == threshold -> sigmoid(3) branch;
    # x = 2 -> linear (g); x = 0 -> g * sigmoid(0) = g / 2; x = ln(3)/2 -> sigmoid(ln 3) = 3/4
    x = [1.5, 2.0, 0.0, math.log(3) / 2]
    o = run(backend, "softplus_backward", gradOutput=t([1, 7, 6, 4], "DOUBLE"),
            self=t(x, "DOUBLE"), beta=ScalarArg("FLOAT", 2.0), threshold=ScalarArg("FLOAT", 3.0),
            gradInput=out([4], "DOUBLE"))  # fmt: skip
    got = result(o, "gradInput")
    assert got[0] == pytest.approx(1 / (1 + math.exp(-3)), rel=1e-15)
    assert got[1:3].tolist() == [7.0, 3.0]
    assert got[3] == pytest.approx(3.0, rel=1e-15)


@pytest.mark.parametrize("mode", ["none", "tanh"])
def test_gelu_both_modes(backend, mode):
    # x = 0: cdf 1/2, pdf term 0 -> g/2; x = 10: g (cdf 1, x*pdf ~ 8e-22); x = -10: ~0
    o = run(backend, "gelu_backward_v2", gradOutput=t([4, 3, 3], "DOUBLE"),
            self=t([0, 10, -10], "DOUBLE"), approximate=mode,
            gradInput=out([3], "DOUBLE"))  # fmt: skip
    got = result(o, "gradInput")
    assert got[0] == 2.0
    assert got[1] == pytest.approx(3.0, rel=1e-15)
    assert abs(got[2]) < 1e-15


def test_elu_input_and_result_forms(backend):
    # alpha 2, scale 3, inputScale 0.5. isResult false: x > 0 -> 3g; x <= 0 ->
    # g * 0.5 * 2 * 3 * exp(0.5 x): x = 0 -> 3g, x = -2 -> 3g/e. isResult true, x = -1:
    # g * 0.5 * (x + 2 * 3) = 2.5 g
    scalars = {"alpha": ScalarArg("FLOAT", 2.0), "scale": ScalarArg("FLOAT", 3.0),
               "inputScale": ScalarArg("FLOAT", 0.5)}  # fmt: skip
    o = run(backend, "elu_backward", gradOutput=t([1, 1, 2], "DOUBLE"), **scalars,
            isResult=False, selfOrResult=t([2, 0, -2], "DOUBLE"),
            gradInput=out([3], "DOUBLE"))  # fmt: skip
    got = result(o, "gradInput")
    assert got[:2].tolist() == [3.0, 3.0]
    assert got[2] == pytest.approx(6 / math.e, rel=1e-15)
    o = run(backend, "elu_backward", gradOutput=t([2], "DOUBLE"), **scalars, isResult=True,
            selfOrResult=t([-1], "DOUBLE"), gradInput=out([1], "DOUBLE"))  # fmt: skip
    assert result(o, "gradInput").tolist() == [5.0]


# ---------------------------------------------------------------- layouts, dtypes, bits


def test_strided_input_and_output_reach_torch_and_leave_gaps_alone(backend):
    # self is the transpose of a 3x2 storage, given by strides (1, 2); gradInput is every second
    # element of a 13-element storage behind an offset of 1 (a NaN-filled "gaps" layout).
    x_storage = np.array([-1, 2, -3, 4, -5, 6], dtype=np.float32)  # x = [[-1,-3,-5],[2,4,6]]
    x = TensorArg("FLOAT", (2, 3), (1, 2), 0, x_storage)
    g = t([[1, 2, 3], [4, 5, 6]])
    storage = np.full(13, np.nan, dtype=np.float32)
    gi = TensorArg("FLOAT", (2, 3), (6, 2), 1, storage)
    o = run(backend, "leaky_relu_backward", gradOutput=g, self=x,
            negativeSlope=ScalarArg("FLOAT", 0.5), selfIsResult=False, out=gi)  # fmt: skip
    whole = o.outputs["out"]
    view = TensorArg("FLOAT", (2, 3), (6, 2), 1, whole).view()
    assert view.tolist() == [[0.5, 1.0, 1.5], [4.0, 5.0, 6.0]]  # x < 0 -> g/2, x > 0 -> g
    written = {1, 3, 5, 7, 9, 11}
    for i in range(13):
        assert math.isnan(whole[i]) != (i in written), i
    assert np.isnan(storage).all()  # the call's own output storage was not touched


@pytest.mark.parametrize("dtype", ["BF16", "FLOAT16"])
def test_narrow_floats_are_moved_bit_exactly(backend, dtype):
    # hardshrink with lambd 0 passes gradOutput through wherever x != 0: every bit of every
    # gradOutput value (subnormals, the largest finite, infinities) must come back unchanged.
    assert_narrow_floats_move_bit_exactly(backend, dtype)


def test_empty_tensors_run_and_write_nothing(backend):
    o = run(backend, "hardshrink_backward", gradOutput=out([0]), self=out([0]),
            lambd=ScalarArg("FLOAT", 0.5), gradInput=out([0]))  # fmt: skip
    assert o.status == 0 and o.outputs["gradInput"].size == 0


# ---------------------------------------------------------------- rejections and skips


def test_invalid_approximate_is_rejected_and_nothing_is_written(backend):
    gi = out([2])
    o = run(backend, "gelu_backward_v2", gradOutput=t([1, 2]), self=t([0, 1]),
            approximate="test", gradInput=gi)  # fmt: skip
    assert o.status == INVALID
    assert o.raised and o.message.startswith("RuntimeError: ") and "approximate" in o.message
    assert np.isnan(o.outputs["gradInput"]).all()


def test_output_dtype_that_cannot_hold_the_result_is_rejected(backend):
    # like an out= variant: float -> int is not a permitted cast
    o = run(backend, "leaky_relu_backward", gradOutput=t([1.0]), self=t([1.0]),
            negativeSlope=ScalarArg("FLOAT", 0.5), selfIsResult=False,
            out=TensorArg.empty_like_shape((1,), "INT32", fill=7))  # fmt: skip
    assert o.status == INVALID and "can't be cast" in o.message
    assert o.outputs["out"].tolist() == [7]


def test_output_shape_other_than_the_result_is_rejected(backend):
    o = run(backend, "hardshrink_backward", gradOutput=t([1.0, 2.0]), self=t([1.0, 2.0]),
            lambd=ScalarArg("FLOAT", 0.5), gradInput=out([3]))  # fmt: skip
    assert o.status == INVALID and "shape" in o.message


def test_torch_checks_what_it_checks(backend):
    # PyTorch's own rule: a negative slope with self_is_result is refused
    o = run(backend, "leaky_relu_backward", gradOutput=t([1.0]), self=t([1.0]),
            negativeSlope=ScalarArg("FLOAT", -0.5), selfIsResult=True, out=out([1]))  # fmt: skip
    assert o.status == INVALID and "negative slope" in o.message.lower()


def test_null_pointers_and_opaque_dtypes_are_skipped_with_a_reason(backend):
    base = {"gradOutput": t([1.0]), "self": t([1.0]), "lambd": ScalarArg("FLOAT", 0.5),
            "gradInput": out([1])}  # fmt: skip
    why = backend.supports(Call("hardshrink_backward", "atlas-a2", {**base, "lambd": None}))
    assert why and "null" in why and "lambd" in why
    opaque = TensorArg("HIFLOAT8", (1,), (1,), 0, np.zeros(1, np.uint8))
    why = backend.supports(Call("hardshrink_backward", "atlas-a2", {**base, "self": opaque}))
    assert why and "HIFLOAT8" in why
    assert backend.capabilities.status == "accept_reject"


def test_version_and_devices():
    b = load_backend("torch")
    assert b.version() == f"torch {torch.__version__} (cpu)"
    if not torch.cuda.is_available():
        with pytest.raises(BackendError, match="CUDA"):
            load_backend("torch", device="cuda")


def test_torch_npu_says_why_it_is_unavailable():
    ok, reason = TorchNpuBackend.availability()
    try:
        import torch_npu  # noqa: F401
    except Exception:
        assert not ok and "torch_npu" in reason


# ---------------------------------------------------------------- bindings


def _spec_with(tmp_path: Path, aten: str):
    text = (REPO / "specs" / "ops" / "hardshrink_backward.yaml").read_text(encoding="utf-8")
    text = text[: text.index("\nbindings:")] + "\nbindings:\n  aten:\n" + aten
    path = tmp_path / "hardshrink_backward.yaml"
    path.write_text(text, encoding="utf-8")
    return load_spec(path)


@pytest.mark.parametrize("spec", list(default_registry()), ids=lambda s: s.name)
def test_every_aten_binding_in_the_registry_is_valid(backend, spec):
    if "aten" in spec.bindings:
        b = backend.binding(spec)
        assert b is not None and b.op == spec.aten, spec.name
    else:  # an op without one is skipped by this backend, with the reason
        assert backend.binding(spec) is None


@pytest.mark.parametrize(
    ("aten", "needle"),
    [
        ("    op: hardshrink_backward\n    args: [gradOutput, self, lambdaa]\n", "'lambdaa'"),
        ("    op: hardshrink_backward\n    args: [gradOutput, self, gradInput]\n", "'gradInput'"),
        ("    op: hardshrink_backward\n    kwargs: {lambd: lambdaa}\n", "bindings.aten.kwargs"),
        ("    op: hardshrink_backward\n    returns: [self]\n", "bindings.aten.returns"),
    ],
)
def test_malformed_bindings_name_the_file_and_line(tmp_path, aten, needle):
    spec = _spec_with(tmp_path, aten)
    with pytest.raises(BindingError) as err:
        parse_aten_binding(spec)
    assert str(err.value).startswith(f"{spec.path}:") and needle in str(err.value)


def test_a_binding_that_fills_not_every_written_output_is_refused(tmp_path):
    """aclnnCrossEntropyLoss writes lossOut and logProbOut; aten::cross_entropy_loss returns the
    loss alone: a binding returning [lossOut] would leave logProbOut as allocated and judge it."""
    text = (REPO / "specs" / "ops" / "cross_entropy_loss.yaml").read_text(encoding="utf-8")
    assert "\nbindings:" not in text  # the shipped spec has no ATen binding, for this reason
    at = text.index("\natk:")
    aten = (
        "  aten:\n    op: cross_entropy_loss\n    args: [input, target]\n    returns: [lossOut]\n"
    )
    path = tmp_path / "cross_entropy_loss.yaml"
    path.write_text(text[:at] + "\nbindings:\n" + aten + text[at:], encoding="utf-8")
    with pytest.raises(BindingError) as err:
        parse_aten_binding(load_spec(path))
    assert str(err.value).startswith(f"{path}:") and "logProbOut" in str(err.value)


@pytest.mark.parametrize(
    ("aten", "needle"),
    [
        ("    args: [gradOutput]\n", "'op' is missing"),
        ("    op: hardshrink_backward\n    args: [gradOutput]\n    colour: red\n", "colour"),
        ("    op: hardshrink backward\n", "op"),
    ],
)
def test_a_binding_of_the_wrong_shape_is_a_schema_problem(tmp_path, aten, needle):
    with pytest.raises(SpecError) as err:
        _spec_with(tmp_path, aten)
    assert "bindings/aten" in str(err.value) and needle in str(err.value)


def test_bindings_are_checked_against_the_aten_schema(tmp_path, backend):
    spec = _spec_with(tmp_path, "    op: hardshrink_backward\n    args: [gradOutput, self]\n")
    with pytest.raises(BindingError, match="takes 3 positional arguments"):
        backend.binding(spec)
    spec = _spec_with(tmp_path, "    op: no_such_op_backward\n    args: [gradOutput]\n")
    with pytest.raises(BindingError, match="aten::no_such_op_backward"):
        backend.binding(spec)


# ---------------------------------------------------------------- through the CLI


def conform(*args) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("aclnn-conform")
    cmd = [str(exe)] if exe.exists() else [shutil.which("aclnn-conform") or "aclnn-conform"]
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run([*cmd, *map(str, args)], capture_output=True, text=True, env=env,
                          timeout=300, stdin=subprocess.DEVNULL, cwd=REPO)  # fmt: skip


@pytest.mark.gates
def test_cli_run_hardshrink_against_torch(tmp_path):
    results = tmp_path / "r.jsonl"
    proc = conform("run", "--backend", "torch", "--op", "hardshrink_backward", "--product",
                   "atlas-a2", "-q", "--results", results)  # fmt: skip
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stdout + proc.stderr
    recs = [json.loads(line) for line in results.read_text().splitlines()]
    verdicts = {r["verdict"] for r in recs}
    assert verdicts <= {"pass", "fail", "skip", "xfail", "deviation"}, verdicts  # no adapter errors
    assert all(r["reason"] for r in recs if r["verdict"] == "skip")
    assert all(r["backend_version"].startswith("torch ") for r in recs)
    positive = [r for r in recs if r["kind"] == "positive"]
    assert len(positive) > 100 and all(r["verdict"] != "skip" for r in positive)
    # positive failures are the documented semantic differences only (facts §3.4): PyTorch does
    # not clamp a negative lambda, and rounds lambda to the tensor dtype before comparing
    known = ("point=x-zero-negative-lambd", "point=x-at-unrepresentable-lambd")
    assert {r["id"] for r in positive if r["verdict"] == "fail" and not r["id"].endswith(known)} \
        == set()  # fmt: skip
    # negative failures: PyTorch accepts a call aclnn refuses (never the other way round)
    for r in recs:
        if r["kind"] == "negative" and r["verdict"] == "fail":
            assert r["actual_status"] == 0 and r["expected_status"] != 0, r["id"]


@pytest.mark.parametrize("approximate, form", [(0, "none"), (1, "tanh")])
def test_an_int_attribute_reaches_aten_through_translate(backend, approximate, form):
    """gelu_v2's int64_t approximate becomes ATen's string (bindings.aten.translate): the
    backend's result is torch's own gelu with that approximate, bit for bit."""
    x = [-3.0, -0.5, 0.0, 0.75, 2.0]
    o = run(backend, "gelu_v2", x=t(x, "FLOAT"), approximate=approximate, y=out([5], "FLOAT"))
    want = torch.nn.functional.gelu(torch.tensor(x, dtype=torch.float32), approximate=form)
    np.testing.assert_array_equal(result(o, "y"), want.numpy())
    other = "tanh" if form == "none" else "none"
    alt = torch.nn.functional.gelu(torch.tensor(x, dtype=torch.float32), approximate=other)
    assert not np.array_equal(result(o, "y"), alt.numpy())  # the int chose the form


def test_an_int_without_a_translation_is_a_skip_with_the_reason(backend):
    call = Call("gelu_v2", "atlas-a2", {"x": TensorArg.from_array(np.zeros(2), "FLOAT"),
                                        "approximate": 2, "y": TensorArg.from_array(np.zeros(2), "FLOAT")})  # fmt: skip
    why = backend.supports(call)
    assert why is not None and "approximate = 2 has no ATen argument" in why


def test_a_warning_torch_prints_is_the_cases_message_not_terminal_noise(backend, capfd):
    # aten::mse_loss_backward with a (1, 5) self beside a (3, 5) target resizes its own
    # (1, 5) grad_input and says so on fd 2 (C++ TORCH_WARN). none: 2 (x - y) g = 2 (0 - 1) 1
    o = run(backend, "mse_loss_backward", gradOutput=t(np.ones((3, 5))), self=t(np.zeros((1, 5))),
            target=t(np.ones((3, 5))), reduction=0, out=out([3, 5]))  # fmt: skip
    assert o.status == 0 and result(o, "out").tolist() == [-2.0] * 15
    assert "resized" in o.message
    assert "resized" not in capfd.readouterr().err


def test_native_stderr_capture_takes_fd_2_for_the_block_only(capfd):
    from aclnn_conformance.conformance.run.backends.native_stderr import captured

    for k in range(2):  # the sink is reused: the second call holds only its own text
        with captured() as said:
            os.write(2, f"native words {k}\n".encode())
        assert said.text == f"native words {k}\n"
    os.write(2, b"after the block\n")
    assert capfd.readouterr().err == "after the block\n"


def test_a_random_output_is_drawn_alike_on_every_call(backend):
    # training: noise ~ U(lower, upper) where self < 0 (else 1), out = self * noise; a run and its
    # replay must see the same draw, so the generator starts from one state for every call
    x = np.linspace(-4.0, 3.0, 64) + 1 / 128  # no zero: where self = 0 only out (0) is fixed
    draws = []
    for _ in range(2):
        o = run(backend, "rrelu_with_noise", self=t(x), noise=t(np.zeros(64)),
                lower=ScalarArg("FLOAT", 0.125), upper=ScalarArg("FLOAT", 0.25), training=True,
                seed=0, offset=0, out=out([64]))  # fmt: skip
        assert o.status == 0
        noise = result(o, "noise")
        neg = x < 0
        assert np.all((noise[neg] >= 0.125) & (noise[neg] <= 0.25)) and np.all(noise[~neg] == 1)
        draws.append(noise)
    assert draws[0].tobytes() == draws[1].tobytes()
    assert len(np.unique(draws[0][x < 0])) > 1  # a draw, not a constant slope
