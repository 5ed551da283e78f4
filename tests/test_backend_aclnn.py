"""The `aclnn` backend (ctypes over CANN), exercised against the TEST DOUBLE in tests/aclnn_double/.

The double is a small C library with the real library names and symbols that runs the five
operators on the CPU (it is not CANN). It is compiled here with the system C compiler. Expected
values are computed independently (by hand, with `math`, numpy or ml_dtypes), never captured from
the backend.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from aclnn_conformance.cli.main import main
from aclnn_conformance.conformance.acl import dtypes as dt
from aclnn_conformance.conformance.acl.call import Call, TensorArg
from aclnn_conformance.conformance.run.backend import BackendError, load_backend
from aclnn_conformance.conformance.run.backends.aclnn_backend import AclError, AclnnBackend
from click.testing import CliRunner

from tests.aclnn_double.calls import (
    INVALID,
    NULLPTR,
    O,
    S,
    T,
    assert_untouched,
    elu,
    gelu,
    hardshrink,
    leaky,
    outputs_before,
    result,
    softplus,
)

pytest_plugins = ["tests.aclnn_double.fixtures"]  # lib_dir, backend, counter, double_lib

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def live(counter) -> dict[str, int]:
    return {
        n: counter(n) for n in ("allocs_live", "tensors_live", "scalars_live", "executors_live")
    }


# -- identity, discovery ------------------------------------------------------------------------------


def test_version_says_test_double(backend, lib_dir):
    v = backend.version()
    assert "TEST DOUBLE" in v and str(lib_dir) in v


def test_missing_library_lists_every_place_it_looked(tmp_path, monkeypatch):
    monkeypatch.setenv("ASCEND_HOME_PATH", str(tmp_path / "home"))
    monkeypatch.setenv("ASCEND_TOOLKIT_HOME", str(tmp_path / "toolkit"))
    ok, why = AclnnBackend.availability()
    if ok:  # a machine with CANN installed in a default place
        pytest.skip("CANN is installed under /usr/local/Ascend")
    assert why.startswith("CANN libraries not found: looked in ")
    for place in (f"{tmp_path}/home/lib64 ($ASCEND_HOME_PATH)",
                  f"{tmp_path}/toolkit/lib64 ($ASCEND_TOOLKIT_HOME)",
                  "/usr/local/Ascend/ascend-toolkit/latest/lib64",
                  "/usr/local/Ascend/cann/lib64", "libascendcl.so", "libopapi_nn.so or libopapi.so",
                  "--lib-dir DIR", "set_env.sh"):  # fmt: skip
        assert place in why, (place, why)


def test_explicit_lib_dir_is_the_only_place(tmp_path, lib_dir):
    ok, why = AclnnBackend.availability(lib_dir=str(tmp_path))
    assert not ok and f"{tmp_path} (option lib_dir)" in why and "/usr/local" not in why
    with pytest.raises(BackendError, match="CANN libraries not found"):
        AclnnBackend(lib_dir=str(tmp_path))
    with pytest.raises(BackendError, match="not available|not found"):
        load_backend("aclnn", lib_dir=str(tmp_path))
    assert AclnnBackend.availability(lib_dir=str(lib_dir)) == (True, "")
    assert AclnnBackend.availability(lib_dir=str(lib_dir.parent)) == (True, "")  # the root works


def test_found_through_ascend_home_path(double_root, monkeypatch):
    monkeypatch.setenv("ASCEND_HOME_PATH", str(double_root))
    assert AclnnBackend.availability() == (True, "")
    b = AclnnBackend()
    assert "TEST DOUBLE" in b.version()
    b.close()


def test_bad_options_are_setup_errors(lib_dir):
    with pytest.raises(BackendError, match="has no option libdir"):
        AclnnBackend(libdir=str(lib_dir))
    with pytest.raises(BackendError, match="device id must be an integer"):
        AclnnBackend(lib_dir=str(lib_dir), device_id="first")


def test_product_option_skips_other_products(lib_dir):
    b = AclnnBackend(lib_dir=str(lib_dir), product="atlas-a2")
    assert b.supports(leaky(T([1.0]), T([1.0]), product="atlas-a2")) is None
    why = b.supports(leaky(T([1.0]), T([1.0]), product="atlas-training"))
    assert why == "the device under test is atlas-a2, not atlas-training"
    with pytest.raises(BackendError, match="unknown product 'atlas-a4'"):
        AclnnBackend(lib_dir=str(lib_dir), product="atlas-a4")


def test_device_that_does_not_exist(lib_dir, counter):
    b = AclnnBackend(lib_dir=str(lib_dir), device_id="99")  # options arrive as strings from the CLI
    with pytest.raises(BackendError, match=r"cannot start device 99.*invalid device id 99"):
        b.execute(leaky(T([1.0]), T([1.0])))
    b.close()
    assert counter("streams_live") == 0


def test_init_and_teardown_once_per_process(lib_dir, counter):
    inits, finalizes = counter("inits"), counter("finalizes")
    a, b = AclnnBackend(lib_dir=str(lib_dir)), AclnnBackend(lib_dir=str(lib_dir))
    assert counter("inits") == inits  # lazily: nothing before the first execute
    for x in (a, b):
        assert x.execute(leaky(T([1.0]), T([1.0]))).status == 0
    assert counter("inits") == inits + 1 and counter("streams_live") == 2
    a.close()
    assert counter("finalizes") == finalizes and counter("streams_live") == 1
    b.close()
    b.close()  # idempotent
    assert counter("finalizes") == finalizes + 1 and counter("streams_live") == 0
    c = AclnnBackend(lib_dir=str(lib_dir))  # a later backend starts again
    assert c.execute(leaky(T([2.0]), T([1.0]))).status == 0
    c.close()
    assert counter("inits") == inits + 2


# -- status paths -------------------------------------------------------------------------------------


def valid_calls() -> dict[str, Call]:
    g, x = T([[1.0, -2.0], [3.0, 4.0]]), T([[-1.0, 0.5], [2.0, -3.0]])
    return {"leaky_relu_backward": leaky(g, x), "hardshrink_backward": hardshrink(g, x),
            "softplus_backward": softplus(g, x), "gelu_backward_v2": gelu(g, x),
            "elu_backward": elu(g, x)}  # fmt: skip


# Every pointer each op null-checks (facts §2.1-§6.1). Softplus's beta/threshold are not checked by
# the real library (it dereferences them, facts §4.1); the double answers 161001 instead of crashing.
NULLABLE = [(op, name) for op, names in {
    "leaky_relu_backward": ["gradOutput", "self", "negativeSlope", "out"],
    "hardshrink_backward": ["gradOutput", "self", "lambd", "gradInput"],
    "softplus_backward": ["gradOutput", "self", "gradInput", "beta", "threshold"],
    "gelu_backward_v2": ["gradOutput", "self", "approximate", "gradInput"],
    "elu_backward": ["gradOutput", "alpha", "scale", "inputScale", "selfOrResult", "gradInput"],
}.items() for name in names]  # fmt: skip


@pytest.mark.parametrize("op,name", NULLABLE, ids=[f"{o}-{n}" for o, n in NULLABLE])
def test_null_pointer_is_161001(backend, counter, op, name):
    call = valid_calls()[op]
    call.args[name] = None
    before, d2h = outputs_before(call), counter("memcpy_d2h")
    got = backend.execute(call)
    assert got.status == NULLPTR
    assert "TEST DOUBLE" in got.message and name in got.message  # from aclGetRecentErrMsg
    assert_untouched(call, got, before)
    assert counter("memcpy_d2h") == d2h  # a phase-1 failure copies nothing back
    assert live(counter) == dict.fromkeys(live(counter), 0)


def invalid_calls() -> list[tuple[str, Call, str]]:
    g, x, f16 = (
        T([[1.0, -2.0], [3.0, 4.0]]),
        T([[-1.0, 0.5], [2.0, -3.0]]),
        T(np.ones((2, 2)), "FLOAT16"),
    )
    nine = T(np.ones((1,) * 9))
    return [
        ("leaky dtype INT32 gradOutput", leaky(T([[1, 2], [3, 4]], "INT32"), x), "dtype"),
        ("leaky rank 9", leaky(nine, nine), "dims"),
        ("leaky out not the broadcast shape", leaky(g, x, out=O((2, 3))), "broadcast shape"),
        ("leaky selfIsResult with slope < 0", leaky(g, x, S(-0.1), True), "negativeSlope"),
        ("leaky INT32 out (not castable)", leaky(g, x, out=O((2, 2), "INT32")), "cast"),
        ("hardshrink DOUBLE", hardshrink(T([1.0], "DOUBLE"), T([1.0], "DOUBLE")), "dtype"),
        (
            "hardshrink not broadcastable",
            hardshrink(T(np.ones((1, 1, 4, 4))), T(np.ones((1, 1, 1, 3))), out=O((1, 1, 4, 4))),
            "broadcast",
        ),
        (
            "softplus shapes differ",
            softplus(T(np.ones((2, 3, 1))), T(np.ones((2, 3)))),
            "shapes differ",
        ),
        ("softplus rank 9", softplus(nine, nine), "dims"),
        ("gelu approximate 'test'", gelu(g, x, "test"), "approximate"),
        (
            "gelu gradInput not the promoted dtype",
            gelu(g, f16, out=O((2, 2), "FLOAT16")),
            "promoted",
        ),
        ("elu FLOAT vs FLOAT16", elu(g, T([[1.0, 2.0], [3.0, 4.0]], "FLOAT16")), "dtypes differ"),
        ("elu isResult with alpha < 0", elu(g, x, alpha=S(-1.0), is_result=True), "negative slope"),
        ("elu complex alpha", elu(g, x, alpha=S(1 + 1j, "COMPLEX64")), "castable"),
    ]


@pytest.mark.parametrize("what,call,text", invalid_calls(), ids=[c[0] for c in invalid_calls()])
def test_invalid_parameter_is_161002(backend, counter, what, call, text):
    before, d2h = outputs_before(call), counter("memcpy_d2h")
    got = backend.execute(call)
    assert got.status == INVALID, what
    assert "TEST DOUBLE" in got.message and text in got.message, got.message
    assert_untouched(call, got, before)
    assert counter("memcpy_d2h") == d2h
    assert live(counter) == dict.fromkeys(live(counter), 0)


# -- values (expected ones computed here in float64 with `math`; the double runs in float32) --------

XS = [-3.0, -1.0, -0.25, 0.0, 0.5, 2.0]
GS = [1.5, -2.0, 0.75, 3.0, -1.25, 0.5]


def check(backend, call: Call, name: str, expected: list[float], rtol=2e-6, atol=1e-7):
    got = backend.execute(call)
    assert got.status == 0, got.message
    np.testing.assert_allclose(result(call, got, name).reshape(-1), expected, rtol=rtol, atol=atol)
    return got


def test_leaky_values(backend):
    want = [g if x > 0 else g * float(np.float32(0.2)) for g, x in zip(GS, XS, strict=True)]
    check(backend, leaky(T(GS), T(XS), S(0.2)), "out", want)


def test_hardshrink_values_and_negative_lambd(backend):
    want = [0.0 if abs(x) <= 0.5 else g for g, x in zip(GS, XS, strict=True)]
    check(backend, hardshrink(T(GS), T(XS), S(0.5)), "gradInput", want)
    # lambd < 0 counts as 0: only x == 0 lands in the dead zone
    want = [0.0 if x == 0 else g for g, x in zip(GS, XS, strict=True)]
    check(backend, hardshrink(T(GS), T(XS), S(-0.5)), "gradInput", want)


def test_softplus_values_beta_threshold(backend):
    beta, thr = 2.0, 1.0  # beta*x > 1 for x = 2.0 only: that element is gradOutput exactly
    want = [
        g if beta * x > thr else g / (1 + math.exp(-beta * x)) for g, x in zip(GS, XS, strict=True)
    ]
    got = check(backend, softplus(T(GS), T(XS), S(beta), S(thr)), "gradInput", want)
    assert got.outputs["gradInput"][5] == np.float32(0.5)


def test_swish_null_beta_reaches_the_library_as_a_null_pointer(backend, counter):
    """A nullable scalar (swish's betaOptional, if_null: default) goes to the library as a null
    aclScalar* (the double, as op_api aclnn_swish.cpp, then uses 1.0; a non-null pointer that is
    no aclScalar would be refused with 161002), and nothing is left allocated."""
    call = Call("swish", "atlas-a2", {"self": T(XS), "betaOptional": None, "out": O((6,))})
    check(backend, call, "out", [x / (1 + math.exp(-x)) for x in XS])
    assert live(counter) == dict.fromkeys(live(counter), 0)
    beta = 2.0  # a non-null beta is read: the values differ from beta = 1
    call = Call("swish", "atlas-a2", {"self": T(XS), "betaOptional": S(beta), "out": O((6,))})
    check(backend, call, "out", [x / (1 + math.exp(-beta * x)) for x in XS])


def test_gelu_none_and_tanh(backend):
    def none(g, x):
        return g * (
            0.5 * (1 + math.erf(x / math.sqrt(2)))
            + x * math.exp(-x * x / 2) / math.sqrt(2 * math.pi)
        )

    def tanh(g, x):
        k = math.sqrt(2 / math.pi)
        t = math.tanh(k * (x + 0.044715 * x**3))
        return g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x))

    check(
        backend,
        gelu(T(GS), T(XS), "none"),
        "gradInput",
        [none(g, x) for g, x in zip(GS, XS, strict=True)],
        rtol=1e-5,
    )
    check(
        backend,
        gelu(T(GS), T(XS), "tanh"),
        "gradInput",
        [tanh(g, x) for g, x in zip(GS, XS, strict=True)],
        rtol=1e-5,
    )


def test_elu_both_result_modes(backend):
    a, s, i = 0.5, 2.0, 1.5
    inp = [g * s if x > 0 else g * i * a * s * math.exp(x * i) for g, x in zip(GS, XS, strict=True)]
    check(backend, elu(T(GS), T(XS), S(a), S(s), S(i), False), "gradInput", inp)
    res = [g * s if x > 0 else g * i * (x + a * s) for g, x in zip(GS, XS, strict=True)]
    check(backend, elu(T(GS), T(XS), S(a), S(s), S(i), True), "gradInput", res)


def test_broadcast(backend):
    g, x = T([[1.0], [2.0]]), T([[-1.0, 1.0, -2.0]])
    want = [0.1 * 1, 1, 0.1 * 1, 0.2, 2, 0.2]
    got = check(backend, leaky(g, x, S(0.1, "DOUBLE")), "out", want)
    assert got.outputs["out"].shape == (6,)


# -- layouts, workspace, empty tensors ----------------------------------------------------------------


def test_noncontiguous_inputs_and_output_with_offsets(backend, counter):
    g_logical = np.array([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]])
    x_logical = np.array([[-1.0, 2.0, 0.0], [3.0, -4.0, 5.0]])
    # gradOutput transposed in memory: storage holds g.T row by row
    g = TensorArg("FLOAT", (2, 3), (1, 2), 0, g_logical.T.reshape(-1).astype(np.float32))
    # self: every other element, rows 7 apart, behind an offset of 2; NaN in the gaps
    xs = np.full(2 + 7 + 2 * 2 + 1 + 3, np.nan, np.float32)
    x = TensorArg("FLOAT", (2, 3), (7, 2), 2, xs)
    x.write(x_logical.astype(np.float32))
    # out: offset 3, rows 8 apart, stride 2 inside a row; every other element must stay NaN
    out = TensorArg("FLOAT", (2, 3), (8, 2), 3, np.full(3 + 8 + 4 + 1 + 2, np.nan, np.float32))
    runs = counter("workspace_runs")
    call = leaky(g, x, S(0.5), out=out)
    got = backend.execute(call)
    assert got.status == 0
    want = np.where(x_logical > 0, g_logical, g_logical * 0.5)
    np.testing.assert_array_equal(result(call, got, "out"), want)
    inside = np.zeros(out.storage.size, bool)
    inside[[3 + 8 * i + 2 * j for i in range(2) for j in range(3)]] = True
    assert np.isnan(got.outputs["out"][~inside]).all()  # nothing written outside the view
    assert got.outputs["out"][~inside].tobytes() == out.storage[~inside].tobytes()
    assert counter("workspace_runs") == runs + 1  # phase 1 asked for a workspace, phase 2 got it
    assert call.args["out"].storage.tobytes() == out.storage.tobytes()  # the call is not mutated


def _strided_call() -> Call:
    g = TensorArg("FLOAT", (2, 2), (1, 2), 0, np.array([1.0, 2.0, 3.0, 4.0], np.float32))
    return leaky(g, T([[1.0, -1.0], [1.0, -1.0]]))


def test_phase2_gets_exactly_the_workspace_phase1_asked_for(backend, monkeypatch):
    """The double refuses a wrong size, so the workspace test above has teeth."""
    real = backend._functions

    def wrong_size(op, params):
        phase1, phase2 = real(op, params)
        return phase1, lambda ws, size, ex, stream: phase2(ws, size - 1, ex, stream)

    monkeypatch.setattr(backend, "_functions", wrong_size)
    got = backend.execute(_strided_call())
    assert got.status == INVALID and "phase 1 asked for" in got.message


def test_everything_is_released_when_a_call_fails_half_way(backend, counter):
    bad = TensorArg("FLOAT", (4,), (1,), 0, np.zeros(4, np.float32))
    bad.shape = (5,)  # a view past its storage: aclCreateTensor (the double's) returns null
    with pytest.raises(AclError, match="aclCreateTensor\\(self\\) returned null"):
        backend.execute(leaky(T(np.ones(5)), bad))
    assert live(counter) == dict.fromkeys(live(counter), 0)


def test_contiguous_inputs_need_no_workspace(backend, counter):
    runs = counter("workspace_runs")
    assert backend.execute(leaky(T([1.0, 2.0]), T([1.0, -1.0]))).status == 0
    assert counter("workspace_runs") == runs


@pytest.mark.parametrize(
    "call",
    [
        leaky(T(np.ones(0)), T(np.ones(0)), out=O((0,))),
        leaky(
            T(np.ones((2, 0, 3))),
            T(np.ones((2, 0, 3))),
            out=TensorArg("FLOAT", (2, 0, 3), (0, 3, 1), 1, np.full(5, np.nan, np.float32)),
        ),
        # hardshrink checks emptiness before the broadcast rule (facts §3.1 UT case_empty_tensor)
        hardshrink(T(np.ones(0)), T(np.ones((1, 1, 1, 4))), out=O((1, 1, 1, 4))),
        softplus(T(np.ones((2, 0))), T(np.ones((2, 0))), out=O((2, 0))),
        gelu(T(np.ones((0, 3))), T(np.ones((0, 3))), out=O((0, 3))),
        elu(T(np.ones(0)), T(np.ones(0)), out=O((0,))),
    ],
    ids=["leaky-0", "leaky-2x0x3-storage5", "hardshrink-grad-empty", "softplus", "gelu", "elu"],
)
def test_empty_tensor_succeeds_and_writes_nothing(backend, counter, call):
    before, phase2, runs = outputs_before(call), counter("phase2_calls"), counter("workspace_runs")
    got = backend.execute(call)
    assert got.status == 0 and got.message == ""
    assert_untouched(call, got, before)
    assert counter("phase2_calls") == phase2 + 1 and counter("workspace_runs") == runs


def test_zero_dim_tensor(backend):
    call = elu(T(np.array(-1.0)), T(np.array(-1.0)), S(1.0), S(1.0), S(1.0), True, out=O(()))
    check(backend, call, "gradInput", [-1.0 * (-1.0 + 1.0)])


# -- dtypes on the wire ---------------------------------------------------------------------------------


def _quiet_bits(dtype: str, rng) -> np.ndarray:
    """Every kind of 16-bit pattern except signalling NaNs (a conversion may quiet those)."""
    bits = rng.integers(0, 1 << 16, 20000, dtype=np.uint16)
    exp_mask, quiet = (0x7C00, 0x0200) if dtype == "FLOAT16" else (0x7F80, 0x0040)
    nan = ((bits & exp_mask) == exp_mask) & ((bits & ~np.uint16(0x8000 | exp_mask)) != 0)
    return bits[~nan | ((bits & quiet) != 0)]


@pytest.mark.parametrize("dtype", ["FLOAT16", "BF16"])
def test_fp16_bf16_bit_exact_transfer(backend, dtype):
    """hardshrink with lambd 0 returns gradOutput bit for bit (inf, NaN, subnormals, -0 included)."""
    rng = np.random.default_rng(7)
    bits = _quiet_bits(dtype, rng)
    np_dt = dt.get(dtype).np
    g = TensorArg(dtype, (bits.size,), (1,), 0, bits.view(np_dt))
    signs = rng.choice([-1.0, 1.0, 0.0, np.nan], bits.size, p=[0.45, 0.45, 0.05, 0.05])
    x = T(signs * 3.0, dtype)
    got = backend.execute(hardshrink(g, x, S(0.0), out=O(g.shape, dtype)))
    assert got.status == 0
    want = np.where(signs == 0, np.uint16(0), bits)  # |x| <= 0 only for x == 0: +0.0
    assert np.array_equal(got.outputs["gradInput"].view(np.uint16), want)


@pytest.mark.parametrize("dtype,np_type", [("FLOAT16", np.float16), ("BF16", ml_dtypes.bfloat16)])
def test_float32_result_rounds_to_nearest_even(backend, dtype, np_type):
    ties = [1 + 2**-11, 1 + 3 * 2**-11, 2**-25, 3 * 2**-25, 65519.99, 65520.0, 1 + 2**-8,
            1 + 3 * 2**-8, 3.3895e38, 3.4028e38, -(1 + 2**-11), 1e-45, -0.0]  # fmt: skip
    rng = np.random.default_rng(3)
    g32 = np.concatenate([np.array(ties, np.float32),
                          (rng.standard_normal(5000) * 10.0 ** rng.integers(-8, 8, 5000)).astype(np.float32)])  # fmt: skip
    g = TensorArg("FLOAT", (g32.size,), (1,), 0, g32)
    x = T(np.ones(g32.size))  # x > 0: out = gradOutput, computed in FLOAT, then cast
    got = backend.execute(leaky(g, x, S(0.5), out=O(g.shape, dtype)))
    assert got.status == 0
    with np.errstate(over="ignore"):  # numpy / ml_dtypes: one correctly rounded float32 cast
        want = g32.astype(np_type)
    assert np.array_equal(got.outputs["out"].view(np.uint16), want.view(np.uint16))


def test_fp16_computes_in_float32_then_rounds(backend):
    rng = np.random.default_rng(11)
    g16 = rng.standard_normal(4000).astype(np.float16)
    x16 = (-np.abs(rng.standard_normal(4000))).astype(np.float16)  # all in the slope branch
    g, x = TensorArg("FLOAT16", (4000,), (1,), 0, g16), TensorArg("FLOAT16", (4000,), (1,), 0, x16)
    got = backend.execute(leaky(g, x, S(0.1), out=O((4000,), "FLOAT16")))
    want = (g16.astype(np.float32) * np.float32(0.1)).astype(np.float16)
    assert np.array_equal(got.outputs["out"].view(np.uint16), want.view(np.uint16))


def test_double_runs_in_double_with_a_float_slope(backend):
    rng = np.random.default_rng(5)
    g64, x64 = rng.standard_normal(1000), rng.standard_normal(1000)
    got = backend.execute(
        leaky(T(g64, "DOUBLE"), T(x64, "DOUBLE"), S(0.1), out=O((1000,), "DOUBLE"))
    )
    want = np.where(x64 > 0, g64, g64 * float(np.float32(0.1)))  # facts §2.3: slope passed as float
    assert np.array_equal(got.outputs["out"], want)


@pytest.mark.parametrize("dtype,value", [("FLOAT16", 0.25), ("BF16", 0.25), ("DOUBLE", 0.25),
                                         ("INT32", 2), ("INT8", -1), ("BOOL", True), ("UINT8", 3),
                                         ("INT64", 2**40), ("INT16", 5)])  # fmt: skip
def test_scalar_dtypes_reach_the_library(backend, dtype, value):
    got = backend.execute(leaky(T([2.0]), T([-1.0]), S(value, dtype)))
    assert got.status == 0
    assert got.outputs["out"][0] == np.float32(2.0 * np.float32(float(value)))


# -- no leaks -------------------------------------------------------------------------------------------


def _rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:  # not Linux: the peak is an upper bound that never shrinks
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def test_no_leaks_over_10000_calls(backend, counter):
    strided = TensorArg("FLOAT16", (2, 2), (1, 2), 0, np.arange(4, dtype=np.float16))
    calls = [
        leaky(T([1.0, -2.0]), T([1.0, -1.0])),  # success
        hardshrink(strided, T(np.ones((2, 2)), "FLOAT16"), out=O((2, 2), "FLOAT16")),  # workspace
        leaky(None, T([1.0]), out=O((1,))),  # 161001  # type: ignore[arg-type]
        leaky(T([1], "INT32"), T([1.0])),  # 161002
        gelu(T(np.ones(0)), T(np.ones(0)), out=O((0,))),  # empty
        elu(T([1.0, -1.0], "BF16"), T([0.5, -0.5], "BF16"), is_result=True, out=O((2,), "BF16")),
        softplus(T([1.0]), T([3.0]), S(2, "INT32"), S(5.0, "DOUBLE")),
    ]
    statuses = [0, 0, NULLPTR, INVALID, 0, 0, 0]
    for _ in range(300):  # warm up allocators and caches
        for c in calls:
            backend.execute(c)
    start, runs = _rss_bytes(), counter("workspace_runs")
    n = 0
    t0 = time.perf_counter()
    while n < 10_000:
        for c, want in zip(calls, statuses, strict=True):
            assert backend.execute(c).status == want
            n += 1
    elapsed = time.perf_counter() - t0
    assert live(counter) == {"allocs_live": 0, "tensors_live": 0, "scalars_live": 0,
                             "executors_live": 0}  # fmt: skip
    assert counter("workspace_runs") - runs == sum(1 for k in range(n) if k % len(calls) == 1)
    growth = _rss_bytes() - start
    assert growth < 5 * 2**20, f"RSS grew by {growth / 2**20:.1f} MiB over {n} calls"
    print(f"{n} calls in {elapsed:.2f} s, RSS growth {growth / 1024:.0f} KiB")


# -- through the command line ---------------------------------------------------------------------------


def runner() -> CliRunner:
    try:
        return CliRunner(mix_stderr=False)
    except TypeError:
        return CliRunner()


def run_cli(*args: str):
    res = runner().invoke(main, ["run", *args], catch_exceptions=False)
    assert "Traceback" not in (res.stdout or "") + (res.stderr or "")
    return res


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _kernel_precision_only(rec: dict) -> bool:
    """LeakyReluBackward computes in promote(gradOutput, self) and casts to out afterwards
    (facts §2.3): with an FP16/BF16 promote type and a different out dtype the result carries
    16-bit precision, which out's tolerance (FLOAT's, say) rejects. The real library does this too;
    the reference rounds the exact value once, to out's dtype."""
    d = rec.get("dtypes", {})
    if not {"gradOutput", "self", "out"} <= set(d):
        return False
    promote = dt.tables().promote(d["gradOutput"], d["self"])
    return promote in ("FLOAT16", "BF16") and d["out"] != promote


def _unrepresentable_scalar(rec: dict) -> bool:
    """A skip because aclCreateScalar cannot hold the scalar's dtype (opbase's aclScalar has
    no case for STRING, UNDEFINED, INT4, UINT1 and COMPLEX32)."""
    m = re.search(r"/negativeSlope:(\w+)$", rec["id"])
    return (rec["verdict"] == "skip" and m is not None
            and m.group(1) in ("STRING", "UNDEFINED", "INT4", "UINT1", "COMPLEX32")
            and rec["reason"].startswith(f"aclCreateScalar cannot make a {m.group(1)} scalar"))  # fmt: skip


@pytest.mark.gates
def test_generated_leaky_suite_through_the_double(lib_dir, tmp_path):
    out = tmp_path / "r.jsonl"
    res = run_cli("--backend", "aclnn", "--backend-opt", f"lib_dir={lib_dir}", "--op",
                  "leaky_relu_backward", "--product", "atlas-a2", "--max-cases", "200",
                  "--results", str(out), "-q")  # fmt: skip
    recs = records(out)
    assert len(recs) == 200
    assert all("TEST DOUBLE" in r["backend_version"] for r in recs)
    odd = [
        (r["id"], r["verdict"], r.get("reason"))
        for r in recs
        if r["verdict"] not in ("pass", "fail") and not _unrepresentable_scalar(r)
    ]
    assert not odd
    failed = [r for r in recs if r["verdict"] == "fail"]
    # The double computes in the promoted input dtype and casts, as the kernels do; the policy
    # of the less precise dtype applies (execute.tolerance_dtype), so such cases pass, and any
    # failure left must be one of the kernel-precision effects of _kernel_precision_only.
    assert res.exit_code == (1 if failed else 0)
    for r in failed:
        assert _kernel_precision_only(r), (r["id"], r["reason"])
        assert r["status_match"] is True and "mismatch ratio" in r["reason"]


@pytest.mark.gates
def test_generated_null_scalar_cases_through_the_double(lib_dir, tmp_path):
    """The suite's positive null cases (`.../null=betaOptional`) run on the aclnn backend: the
    null pointer reaches the library, which computes with beta = 1 as the reference does."""
    out = tmp_path / "r.jsonl"
    res = run_cli("--backend", "aclnn", "--backend-opt", f"lib_dir={lib_dir}", "--op", "swish",
                  "--product", "atlas-a2", "-k", "null=", "--results", str(out), "-q")  # fmt: skip
    recs = records(out)
    assert res.exit_code == 0, res.output
    assert recs and all(r["id"].endswith("/null=betaOptional") for r in recs)
    assert {r["verdict"] for r in recs} == {"pass"}


@pytest.mark.gates
def test_generated_suite_with_workers(lib_dir, tmp_path):
    out = tmp_path / "r.jsonl"
    res = run_cli("--backend", "aclnn", "--backend-opt", f"lib_dir={lib_dir}", "--op",
                  "hardshrink_backward", "--product", "atlas-training", "--dtype", "FLOAT",
                  "--max-cases", "40", "-j", "2", "--results", str(out), "-q")  # fmt: skip
    recs = records(out)
    assert len(recs) == 40 and {r["verdict"] for r in recs} <= {"pass", "fail"}
    # the only failures: lambd's dtype is not checked by the library (spec deviation)
    for r in recs:
        assert r["verdict"] == "pass" or "/neg/dtype-lambd/" in r["id"], (r["id"], r["reason"])
    assert res.exit_code in (0, 1)


@pytest.mark.gates
def test_hand_written_case_directories(lib_dir, tmp_path):
    kept, out = tmp_path / "kept", tmp_path / "r.jsonl"
    res = run_cli("--backend", "aclnn", "--backend-opt", f"lib_dir={lib_dir}", "--cases",
                  str(HERE / "data" / "cases" / "hand"), "--keep-outputs", str(kept),
                  "--results", str(out), "-q")  # fmt: skip
    assert res.exit_code == 0, res.stdout
    assert {r["verdict"] for r in records(out)} == {"pass"}
    # the hand-derived values of tests/data/cases/hand/EXPECTED.md
    leaky_out = np.load(kept / "leaky-slope-half" / "out.npy")
    np.testing.assert_array_equal(leaky_out.reshape(-1)[:4], [0.5, -1, 3, 2])
    grad_in = np.load(kept / "hardshrink-strided" / "gradInput.npy")
    assert np.isnan(grad_in[0])
    np.testing.assert_array_equal(grad_in[1:], [0, -4, 0, 8])


def test_cli_missing_library_is_a_setup_error(tmp_path):
    res = run_cli("--backend", "aclnn", "--backend-opt", f"lib_dir={tmp_path}", "--op",
                  "leaky_relu_backward", "--max-cases", "1", "--results", str(tmp_path / "r.jsonl"))  # fmt: skip
    assert res.exit_code == 3  # infrastructure: the run cannot start
    assert re.search(r"CANN libraries not found: looked in .*option lib_dir", res.stderr)
