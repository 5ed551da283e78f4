"""The `aclnn` backend as a real Ascend host runs it, tested against the stricter TEST DOUBLE.

Each test guards one thing the real library does that a lenient double would hide (issue 24):
aclCreateScalar's NULL for the dtypes aclScalar lacks, argument C types from the spec, inputs
read back from the device, TypeSize device sizes, ACL's init reference count, fork, the
per-thread context, device faults and sync timeouts, aclGetRecentErrMsg after failures only,
formats, a missing operator package (561107), the overflow mode, device start-up cost, and what
`backends` and a run's meta and report say about the host. Expected values come from the
vendor's headers and sources (quoted as facts in the comments), numpy, or hand calculation.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest
from aclnn_conformance.cli.main import main
from aclnn_conformance.conformance.acl import dtypes as dt
from aclnn_conformance.conformance.acl.call import CallError, TensorArg
from aclnn_conformance.conformance.acl.planned import set_dtype
from aclnn_conformance.conformance.cases.build import build
from aclnn_conformance.conformance.cases.generate import dtype_combos
from aclnn_conformance.conformance.cases.plan import CasePlan, base_args
from aclnn_conformance.conformance.run.backend import BackendCrash, BackendError, BackendTimeout
from aclnn_conformance.conformance.run.backends import aclnn_backend as acl
from aclnn_conformance.conformance.run.backends.aclnn_backend import AclError, AclnnBackend
from aclnn_conformance.conformance.run.probe import probe
from aclnn_conformance.conformance.spec.registry import default_registry
from aclnn_conformance.reports.markdown import esc
from click.testing import CliRunner

from tests.aclnn_double.calls import NULLPTR, S, T, hardshrink, leaky, result

pytest_plugins = ["tests.aclnn_double.fixtures"]  # lib_dir, backend, counter, double_lib

HERE = Path(__file__).resolve().parent
HAND = HERE / "data" / "cases" / "hand"
# opbase common_types.cpp: aclScalar(const void*, DataType) has no case for these (it throws,
# and aclCreateScalar returns nullptr)
NO_SCALAR = ("STRING", "UNDEFINED", "INT4", "UINT1", "COMPLEX32")


def live(counter) -> dict[str, int]:
    names = ("allocs_live", "tensors_live", "scalars_live", "executors_live")
    return {n: counter(n) for n in names}


def ok_call():
    return leaky(T([1.0, -2.0]), T([3.0, -1.0]), S(0.5))


def fn(lib: ctypes.CDLL, name: str, restype, *argtypes):
    f = getattr(lib, name)
    f.restype, f.argtypes = restype, list(argtypes)
    return f


def current_device(double_lib) -> int:
    return fn(double_lib, "aclnnTestDoubleCurrentDevice", ctypes.c_int)()


def runner() -> CliRunner:
    try:
        return CliRunner(mix_stderr=False)
    except TypeError:
        return CliRunner()


def cli(*args: str):
    res = runner().invoke(main, list(args), catch_exceptions=False)
    assert "Traceback" not in (res.stdout or "") + (res.stderr or "")
    return res


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def hand_case(tmp_path: Path, edit=None) -> Path:
    """A copy of the hand-written leaky case directory, its case.json changed by `edit`."""
    root = tmp_path / "cases"
    shutil.copytree(HAND / "leaky-slope-half", root / "leaky")
    cj = root / "leaky" / "case.json"
    meta = json.loads(cj.read_text(encoding="utf-8"))
    if edit:
        edit(meta["args"])
    cj.write_text(json.dumps(meta), encoding="utf-8")
    return root


@pytest.fixture
def no_acl(counter):
    """ACL is not initialised in this process when the test starts (and when it ends)."""
    assert counter("acl_refcount") == 0
    yield
    assert counter("acl_refcount") == 0


# -- 1. scalars aclCreateScalar cannot make --------------------------------------------------------


@pytest.mark.parametrize("dtype", dt.tables().names())
def test_scalar_dtypes_acl_scalar_lacks_are_skipped(backend, dtype):
    why = backend.supports(leaky(T([1.0]), T([-1.0]), S(0.5, dtype)))
    if dtype in NO_SCALAR:
        assert why == (f"aclCreateScalar cannot make a {dtype} scalar (negativeSlope): the "
                       "library's aclScalar has no such type and returns NULL")  # fmt: skip
    else:
        assert why is None


def _scalar_params():
    reg = default_registry()
    return [(s.name, p.name) for s in reg for p in s.params if p.kind == "scalar"]


@pytest.mark.parametrize("op,param", _scalar_params())
def test_every_scalar_parameter_of_every_spec_skips_them(backend, op, param):
    spec = default_registry().get(op)
    product = spec.products[0]
    combo = dtype_combos(spec, product)[0]
    for d in NO_SCALAR:
        args = set_dtype(base_args(spec, combo, (2, 3)), [param], d)
        plan = CasePlan(f"t/{param}/{d}", spec.name, product, "probe", tuple(args.items()), (), 0)
        why = backend.supports(build(spec, plan, 0).call)
        assert why is not None and why.startswith(f"aclCreateScalar cannot make a {d} scalar")


def test_the_double_returns_null_for_them_like_the_library(backend, counter):
    """Past supports() (a direct caller), the double is as strict as the real library."""
    with pytest.raises(AclError, match=r"aclCreateScalar\(negativeSlope\) returned null: "
                                       r"\[TEST DOUBLE\] aclCreateScalar: dataType 33 "):  # fmt: skip
        backend.execute(leaky(T([1.0]), T([-1.0]), S(0.5, "COMPLEX32")))
    assert live(counter) == dict.fromkeys(live(counter), 0)


def test_probe_skips_them_instead_of_counting_a_rejection(backend):
    rows = probe(default_registry(), backend, ["leaky_relu_backward"], ["atlas-a2"])
    slope = next(r for r in rows if r.param == "negativeSlope")
    for d in NO_SCALAR:
        assert slope.cells[d] == "skip", d
    assert slope.cells["FLOAT"] == "agree-accept" and slope.cells["COMPLEX64"] != "skip"


# -- 2. the C type of an argument comes from the spec ------------------------------------------------


@pytest.mark.parametrize(
    "param,value,kind",
    [("gradOutput", True, "tensor (aclTensor*)"), ("gradOutput", S(1.0), "tensor (aclTensor*)"),
     ("negativeSlope", T([1.0]), "scalar (aclScalar*)"), ("negativeSlope", 1, "scalar (aclScalar*)"),
     ("selfIsResult", None, "bool (bool)"), ("selfIsResult", T([1.0]), "bool (bool)"),
     ("out", "x", "tensor (aclTensor*)")],
    ids=["true-in-tensor", "scalar-in-tensor", "tensor-in-scalar", "int-in-scalar", "null-bool",
         "tensor-in-bool", "str-in-tensor"],
)  # fmt: skip
def test_a_value_of_the_wrong_kind_is_the_cases_error(backend, counter, param, value, kind):
    call = ok_call()
    call.args[param] = value
    before = counter("phase1_calls")
    with pytest.raises(CallError, match=rf"^{param}: the spec declares a {re_escape(kind)} but "):
        backend.execute(call)
    assert counter("phase1_calls") == before  # the library never saw it
    assert live(counter) == dict.fromkeys(live(counter), 0)


def re_escape(s: str) -> str:
    import re

    return re.escape(s)


@pytest.mark.gates
def test_hand_written_case_with_true_in_a_tensor_slot(lib_dir, tmp_path):
    def edit(args):
        args["gradOutput"] = {"kind": "bool", "value": True}

    out = tmp_path / "r.jsonl"  # torch as the oracle: it rejects the call instead of refusing it
    cli("run", "--backend", "aclnn", "--backend-opt", f"lib_dir={lib_dir}", "--oracle", "torch",
        "--cases", str(hand_case(tmp_path, edit)), "--results", str(out), "-q")  # fmt: skip
    (rec,) = records(out)
    assert rec["verdict"] == "error"
    assert rec["reason"].startswith("backend raised ")  # (the worker's RuntimeError around it)
    assert rec["reason"].endswith("CallError: gradOutput: the spec declares a tensor (aclTensor*) "
                                  "but the case gives bool True")  # fmt: skip


# -- 3. inputs come back from the device ---------------------------------------------------------------


def test_inputs_are_read_back_from_the_device(backend, monkeypatch):
    monkeypatch.setenv("ACLNN_TEST_DOUBLE_WRITES_INPUT", "1")  # the kernel writes self[0]
    call = ok_call()
    before = call.args["self"].storage.copy()
    assert backend.execute(call).status == 0
    assert call.args["self"].storage[0] == np.float32(-12345.0)
    assert call.args["self"].storage[1] == before[1]


@pytest.mark.gates
@pytest.mark.parametrize("isolate", ["--isolate", "--no-isolate"])
def test_an_op_that_writes_an_input_fails_the_run(lib_dir, tmp_path, monkeypatch, isolate):
    out = tmp_path / "r.jsonl"
    monkeypatch.setenv("ACLNN_TEST_DOUBLE_WRITES_INPUT", "1")
    res = cli("run", "--backend", "aclnn", "--backend-opt", f"lib_dir={lib_dir}", isolate,
              "--cases", str(hand_case(tmp_path)), "--results", str(out), "-q")  # fmt: skip
    (rec,) = records(out)
    assert (rec["verdict"], rec["reason"]) == ("fail", "input self was modified by the call")
    assert res.exit_code == 1


# -- 4. device buffers sized as the library sizes them ---------------------------------------------------


def test_device_bytes_follow_typesize():
    for name in dt.tables().names():
        d = dt.get(name)
        if not d.opaque:  # numpy's item size is the library's element size
            assert acl.device_bytes(name, 7) == 7 * d.np.itemsize, name
    # data_type_utils.h TypeSize: COMPLEX32 4 bytes, STRING/UNDEFINED sizeof(complex128), the
    # 1-byte floats 1, and bit widths for the packed types (CalcShapeBytes rounds up)
    want = {"COMPLEX32": 28, "STRING": 112, "UNDEFINED": 112, "HIFLOAT8": 7, "FLOAT8_E8M0": 7,
            "INT4": 4, "UINT1": 1, "FLOAT6_E3M2": 6, "FLOAT6_E2M3": 6, "FLOAT4_E2M1": 4,
            "FLOAT4_E1M2": 4}  # fmt: skip
    assert {n: acl.device_bytes(n, 7) for n in want} == want


@pytest.mark.parametrize("dtype", [n for n in dt.tables().names() if dt.get(n).opaque])
def test_opaque_tensors_reach_phase_1(backend, counter, dtype):
    """The operator rejects the dtype (161002): the tensor itself was made, with the bytes the
    library reads (the double's aclCreateTensor refuses a smaller buffer)."""
    g = TensorArg(dtype, (5,), (1,), 0, np.arange(5, dtype=np.uint8))
    got = backend.execute(leaky(g, T(np.ones(5))))
    assert got.status == 161002 and "gradOutput dtype" in got.message
    assert live(counter) == dict.fromkeys(live(counter), 0)


def test_one_byte_per_element_would_be_refused(backend, monkeypatch):
    monkeypatch.setattr(acl, "device_bytes", lambda dtype, n: n)  # what numpy stores
    g = TensorArg("COMPLEX32", (5,), (1,), 0, np.zeros(5, np.uint8))
    with pytest.raises(AclError, match="large enough for the storage"):
        backend.execute(leaky(g, T(np.ones(5))))


# -- 5. ACL's init reference count -------------------------------------------------------------------


def test_acl_initialised_by_someone_else_is_left_to_them(lib_dir, double_lib, counter, no_acl):
    """torch_npu (here: the test) initialised ACL; our aclInit gets 100002 and takes a reference;
    close gives back only that one (aclFinalizeReference), never aclFinalize."""
    acl_init = fn(double_lib, "aclInit", ctypes.c_int, ctypes.c_char_p)
    acl_finalize = fn(double_lib, "aclFinalize", ctypes.c_int)
    set_device = fn(double_lib, "aclrtSetDevice", ctypes.c_int, ctypes.c_int32)
    reset_device = fn(double_lib, "aclrtResetDevice", ctypes.c_int, ctypes.c_int32)
    assert acl_init(None) == 0
    finalizes = counter("finalizes")
    b = AclnnBackend(lib_dir=str(lib_dir))
    assert b.execute(ok_call()).status == 0
    assert counter("acl_refcount") == 2
    b.close()
    assert counter("acl_refcount") == 1 and counter("finalizes") == finalizes
    assert set_device(0) == 0 and reset_device(0) == 0  # the other user's ACL still works
    assert acl_finalize() == 0


def test_without_finalize_reference_a_foreign_init_is_never_finalized(
    lib_dir, double_lib, counter, no_acl, monkeypatch
):
    acl_init = fn(double_lib, "aclInit", ctypes.c_int, ctypes.c_char_p)
    acl_finalize = fn(double_lib, "aclFinalize", ctypes.c_int)
    b = AclnnBackend(lib_dir=str(lib_dir))
    monkeypatch.setattr(b.lib, "aclFinalizeReference", None)  # an older CANN
    assert acl_init(None) == 0
    finalizes = counter("finalizes")
    assert b.execute(ok_call()).status == 0
    b.close()
    assert counter("finalizes") == finalizes and counter("acl_refcount") == 2  # left alone
    assert acl_finalize() == 0
    c = AclnnBackend(lib_dir=str(lib_dir))  # our own init: finalized by us
    assert c.execute(ok_call()).status == 0
    c.close()
    assert counter("finalizes") == finalizes + 2


def test_a_user_joining_after_us_keeps_acl(lib_dir, double_lib, counter, no_acl):
    acl_init = fn(double_lib, "aclInit", ctypes.c_int, ctypes.c_char_p)
    acl_finalize_ref = fn(double_lib, "aclFinalizeReference", ctypes.c_int,
                          ctypes.POINTER(ctypes.c_uint64))  # fmt: skip
    b = AclnnBackend(lib_dir=str(lib_dir))
    assert b.execute(ok_call()).status == 0
    assert acl_init(None) == 100002  # e.g. torch_npu, later in the same process
    b.close()
    assert counter("acl_refcount") == 1  # theirs
    left = ctypes.c_uint64(9)
    assert acl_finalize_ref(ctypes.byref(left)) == 0 and left.value == 0


# -- 6. fork -------------------------------------------------------------------------------------------


def in_child(work) -> str:
    """work() in a fork()ed child; what it returned, or the exception it raised, as text."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.close(r)
            try:
                out = str(work())
            except BaseException as exc:
                out = f"{type(exc).__name__}: {exc}"
            os.write(w, out.encode()[:8000])
        finally:
            os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 4096):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return data.decode()


def test_a_forked_child_of_a_started_backend_refuses(lib_dir, counter, no_acl):
    b = AclnnBackend(lib_dir=str(lib_dir))
    assert b.execute(ok_call()).status == 0
    said = in_child(lambda: b.execute(ok_call()).status)
    assert said.startswith("BackendError: aclnn: this process was forked from process "
                           f"{os.getpid()}, where ACL was initialised")  # fmt: skip
    said = in_child(lambda: AclnnBackend(lib_dir=str(lib_dir)).execute(ok_call()).status)
    assert said.startswith("BackendError: aclnn: this process was forked")
    assert b.execute(ok_call()).status == 0  # the parent is unharmed
    b.close()


def test_a_forked_child_of_a_foreign_acl_refuses(lib_dir, double_lib, counter, no_acl):
    acl_init = fn(double_lib, "aclInit", ctypes.c_int, ctypes.c_char_p)
    acl_finalize = fn(double_lib, "aclFinalize", ctypes.c_int)
    AclnnBackend(lib_dir=str(lib_dir))  # the libraries are loaded in the parent
    assert acl_init(None) == 0  # someone else's ACL, live at the fork
    said = in_child(lambda: AclnnBackend(lib_dir=str(lib_dir)).execute(ok_call()).status)
    assert said.startswith(
        "BackendError: aclnn: aclInit returned 100002 in a process made by fork()"
    )
    assert acl_finalize() == 0


def test_a_forked_child_starts_when_acl_was_not_live(lib_dir, counter, no_acl):
    def work():
        b = AclnnBackend(lib_dir=str(lib_dir))
        try:
            return b.execute(ok_call()).status
        finally:
            b.close()

    assert in_child(work) == "0"


# -- 7. the smaller points -----------------------------------------------------------------------------


def test_executor_is_destroyed_when_the_workspace_cannot_be_allocated(backend, double_lib, counter):
    inject = fn(double_lib, "aclnnTestDoubleInject", ctypes.c_int, ctypes.c_char_p, ctypes.c_int64)
    strided = TensorArg("FLOAT", (2, 2), (1, 2), 0, np.array([1.0, 2.0, 3.0, 4.0], np.float32))
    call = leaky(strided, T([[1.0, -1.0], [1.0, -1.0]]))  # non-contiguous: a workspace
    assert backend.execute(call).status == 0
    destroyed = counter("executors_destroyed")
    assert inject(b"malloc_fail_in", 4) == 0  # gradOutput, self, out, then the workspace
    with pytest.raises(AclError, match="aclrtMalloc returned 207001"):
        backend.execute(call)
    assert counter("executors_destroyed") == destroyed + 1
    assert live(counter) == dict.fromkeys(live(counter), 0)


def test_another_user_switching_the_device_on_this_thread(backend, double_lib):
    set_device = fn(double_lib, "aclrtSetDevice", ctypes.c_int, ctypes.c_int32)
    reset_device = fn(double_lib, "aclrtResetDevice", ctypes.c_int, ctypes.c_int32)
    assert backend.execute(ok_call()).status == 0
    assert set_device(1) == 0  # e.g. torch_npu on npu:1, same thread
    call = ok_call()
    got = backend.execute(call)
    assert got.status == 0 and result(call, got, "out").tolist() == [1.0, -1.0]
    assert current_device(double_lib) == 1  # their context is current again
    assert reset_device(1) == 0


def test_a_call_from_another_thread(backend, double_lib):
    assert backend.execute(ok_call()).status == 0
    seen: dict = {}

    def work():
        try:
            call = ok_call()
            got = backend.execute(call)
            seen["out"] = (got.status, result(call, got, "out").tolist())
        except Exception as exc:  # reported below
            seen["out"] = exc

    th = threading.Thread(target=work)
    th.start()
    th.join()
    assert seen["out"] == (0, [1.0, -1.0])


def test_device_fault_is_a_crash_and_the_context_starts_afresh(backend, counter, tmp_path,
                                                               monkeypatch):  # fmt: skip
    assert backend.execute(ok_call()).status == 0
    inits = counter("inits")
    token = tmp_path / "fault"
    token.touch()
    monkeypatch.setenv("ACLNN_TEST_DOUBLE_DEVICE_FAULT", str(token))
    with pytest.raises(BackendCrash, match=r"^device fault: aclrtSynchronizeStreamWithTimeout "
                                           r"returned 507015: \[TEST DOUBLE\] .*AI Core exception"):  # fmt: skip
        backend.execute(ok_call())
    assert not token.exists() and counter("streams_live") == 0
    assert live(counter) == dict.fromkeys(live(counter), 0)
    call = ok_call()
    got = backend.execute(call)  # a fresh context (the double's device is usable after reset)
    assert got.status == 0 and result(call, got, "out").tolist() == [1.0, -1.0]
    assert counter("inits") == inits  # only the device was restarted, not ACL


def test_sync_timeout_is_a_timeout(lib_dir, counter, tmp_path, monkeypatch):
    b = AclnnBackend(lib_dir=str(lib_dir), sync_timeout="0.25")
    token = tmp_path / "hang"
    token.touch()
    monkeypatch.setenv("ACLNN_TEST_DOUBLE_SYNC_TIMEOUT", str(token))
    with pytest.raises(BackendTimeout, match=r"did not finish within 0.25 s .*returned 507046"):
        b.execute(ok_call())
    assert counter("last_sync_timeout_ms") == 250
    assert b.execute(ok_call()).status == 0
    b.close()


def test_bad_sync_timeout_option(lib_dir):
    with pytest.raises(BackendError, match="sync_timeout 'soon': seconds a stream sync may take"):
        AclnnBackend(lib_dir=str(lib_dir), sync_timeout="soon")


def _run_faulting(lib_dir, tmp_path, monkeypatch, var: str, *extra: str) -> list[dict]:
    token = tmp_path / "token"
    token.touch()
    monkeypatch.setenv(var, str(token))
    out = tmp_path / "r.jsonl"
    cli("run", "--backend", "aclnn", "--backend-opt", f"lib_dir={lib_dir}", *extra, "--op",
        "hardshrink_backward", "--product", "atlas-training", "--dtype", "FLOAT", "-k", "values=",
        "--max-cases", "4", "--results", str(out), "-q")  # fmt: skip
    return records(out)


@pytest.mark.gates
def test_a_device_fault_ends_the_worker(lib_dir, tmp_path, monkeypatch):
    recs = _run_faulting(lib_dir, tmp_path, monkeypatch, "ACLNN_TEST_DOUBLE_DEVICE_FAULT")
    crashed = [r for r in recs if r["verdict"] == "crash"]
    assert len(crashed) == 1 and len(recs) == 4
    assert crashed[0]["reason"].startswith("device fault: aclrtSynchronizeStreamWithTimeout "
                                           "returned 507015")  # fmt: skip
    assert crashed[0]["reason"].endswith("; worker restarted")
    assert {r["verdict"] for r in recs if r is not crashed[0]} == {"pass"}  # a fresh worker


@pytest.mark.gates
def test_a_sync_timeout_ends_the_worker(lib_dir, tmp_path, monkeypatch):
    recs = _run_faulting(lib_dir, tmp_path, monkeypatch, "ACLNN_TEST_DOUBLE_SYNC_TIMEOUT",
                         "--backend-opt", "sync_timeout=0.5")  # fmt: skip
    timed_out = [r for r in recs if r["verdict"] == "timeout"]
    assert len(timed_out) == 1 and "did not finish within 0.5 s" in timed_out[0]["reason"]
    assert {r["verdict"] for r in recs if r is not timed_out[0]} == {"pass"}


def test_error_message_is_fetched_after_failures_only(backend, counter):
    assert backend.execute(ok_call()).status == 0
    calls = counter("errmsg_calls")
    for _ in range(20):
        assert backend.execute(ok_call()).status == 0
    assert counter("errmsg_calls") == calls
    null = ok_call()
    null.args["self"] = None
    got = backend.execute(null)
    assert got.status == NULLPTR and "[TEST DOUBLE]" in got.message
    assert counter("errmsg_calls") == calls + 1


@pytest.mark.parametrize("fmt", sorted(acl.PRIVATE_FORMATS))
def test_private_formats_are_skipped(backend, fmt):
    g = T([1.0, 2.0])
    g.format = fmt
    assert backend.supports(leaky(g, T([1.0, 2.0]))) == (
        f"gradOutput has the private format {fmt}: its storage shape is not 1-D, which is all "
        "this adapter passes"
    )


def test_unknown_format_is_skipped_not_made_nd(backend):
    g = T([1.0, 2.0])
    g.format = "NCHW8"
    why = backend.supports(leaky(g, T([1.0, 2.0])))
    assert why.startswith("gradOutput has the format 'NCHW8', which aclFormat does not name")


# acl_base_rt.h aclFormat values
@pytest.mark.parametrize("fmt,value", [("NCHW", 0), ("NHWC", 1), ("ND", 2), ("nd", 2), ("HWCN", 16),
                                       ("NDHWC", 27), ("NCDHW", 30), ("NC", 35), ("NCL", 47)])  # fmt: skip
def test_expressible_formats_reach_the_library(backend, counter, fmt, value):
    call = ok_call()
    call.args["out"].format = fmt  # out is the last tensor made
    assert backend.supports(call) is None
    assert backend.execute(call).status == 0
    assert counter("last_tensor_format") == value


def test_missing_operator_package_is_one_setup_error(backend, counter, monkeypatch):
    monkeypatch.delenv("ASCEND_OPP_PATH")
    monkeypatch.delenv("ASCEND_HOME_PATH", raising=False)
    null = ok_call()
    null.args["self"] = None
    assert backend.execute(null).status == NULLPTR  # the parameter checks come first
    with pytest.raises(BackendError, match=r"aclnnLeakyReluBackwardGetWorkspaceSize returned "
                                           r"561107 .*ASCEND_OPP_PATH is not set: source the "
                                           r"CANN toolkit's set_env.sh"):  # fmt: skip
        backend.execute(ok_call())
    assert live(counter) == dict.fromkeys(live(counter), 0)


def test_opp_latest_under_ascend_home_path_is_enough(backend, tmp_path, monkeypatch):
    (tmp_path / "opp_latest").mkdir()
    monkeypatch.delenv("ASCEND_OPP_PATH")
    monkeypatch.setenv("ASCEND_HOME_PATH", str(tmp_path))
    assert backend.execute(ok_call()).status == 0
    assert backend.host_facts()["diagnosis"] == ""


@pytest.mark.gates
def test_run_without_operator_package_stops_with_one_message(lib_dir, tmp_path, monkeypatch):
    monkeypatch.delenv("ASCEND_OPP_PATH")
    out = tmp_path / "r.jsonl"
    res = cli("run", "--backend", "aclnn", "--backend-opt", f"lib_dir={lib_dir}", "--op",
              "leaky_relu_backward", "--max-cases", "30", "--results", str(out), "-q")  # fmt: skip
    assert res.exit_code == 3
    assert res.stderr.count("returned 561107 (ACLNN_ERR_INNER_OPP_PATH_NOT_FOUND") == 1
    assert "warning: aclnn: ASCEND_OPP_PATH is not set" in res.stderr  # the diagnosis, first
    assert all(r.get("actual_status") != 561107 for r in records(out))
    assert len(records(out)) < 30


def test_probe_without_operator_package_is_a_setup_error(lib_dir, monkeypatch):
    monkeypatch.delenv("ASCEND_OPP_PATH")
    res = cli("probe", "--backend", "aclnn", "--lib-dir", str(lib_dir), "--op", "elu_backward")
    assert res.exit_code == 3 and "561107" in res.stderr and "set_env.sh" in res.stderr


def test_saturation_mode_is_recorded_diagnosed_and_settable(lib_dir, counter, no_acl, monkeypatch):
    monkeypatch.setenv("ACLNN_TEST_DOUBLE_SAT_MODE", "0")  # the device starts saturating
    spawned = AclnnBackend(lib_dir=str(lib_dir)).host_facts()  # not started: a spawned probe
    assert spawned["overflow_mode"] == "saturation" and "saturation mode" in spawned["diagnosis"]
    inf, fmax = np.float32(np.inf), float(np.finfo(np.float32).max)
    call = hardshrink(T([inf, -inf, 1.0]), T([1.0, 1.0, 1.0]), S(0.5))  # gradInput = gradOutput
    b = AclnnBackend(lib_dir=str(lib_dir))
    assert result(call, b.execute(call), "gradInput").tolist() == [fmax, -fmax, 1.0]
    assert b.host_facts()["overflow_mode"] == "saturation"
    b.close()
    c = AclnnBackend(lib_dir=str(lib_dir), overflow_mode="inf-nan")
    assert result(call, c.execute(call), "gradInput").tolist() == [np.inf, -np.inf, 1.0]
    facts = c.host_facts()
    assert facts["overflow_mode"] == "inf-nan" and facts["diagnosis"] == ""
    c.close()


@pytest.mark.gates
def test_device_start_up_is_not_charged_to_the_first_case(lib_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("ACLNN_TEST_DOUBLE_SETDEVICE_MS", "4000")  # a slow first aclrtSetDevice
    out = tmp_path / "r.jsonl"
    cli("run", "--backend", "aclnn", "--backend-opt", f"lib_dir={lib_dir}", "--timeout", "3",
        "--op", "hardshrink_backward", "--product", "atlas-training", "--dtype", "FLOAT", "-k",
        "values=", "--max-cases", "2", "--results", str(out), "-q")  # fmt: skip
    assert [r["verdict"] for r in records(out)] == ["pass", "pass"]


# -- what a real host needs: backends, meta, report ----------------------------------------------------


def block(stdout: str, name: str) -> list[str]:
    lines = stdout.splitlines()
    i = next(k for k, line in enumerate(lines) if line.startswith(name + " "))
    out = [lines[i]]
    for line in lines[i + 1 :]:
        if not line.startswith("  "):
            break
        out.append(line)
    return out


def test_backends_shows_what_a_real_host_needs(lib_dir, double_root, monkeypatch):
    res = cli("backends", "aclnn", "--lib-dir", str(lib_dir))
    assert res.exit_code == 0
    lines = block(res.stdout, "aclnn")
    assert lines[0].startswith("aclnn        available  (aclnn TEST DOUBLE")
    libs = ", ".join(str(lib_dir / n) for n in ("libascendcl.so", "libnnopbase.so",
                                                "libopapi_nn.so"))  # fmt: skip
    for want in (f"  libraries: {libs}", "  libraries from: option lib_dir",
                 f"  ascend opp path: {double_root / 'opp'}", "  opp found: yes",
                 "  cann version: —", "  soc: TEST-DOUBLE-SoC (aclnn TEST DOUBLE, no NPU)",
                 "  device count: 8", "  device id: 0", "  overflow mode: inf-nan",
                 "  diagnosis: none (nothing a run needs is missing)"):  # fmt: skip
        assert want in lines, (want, lines)
    monkeypatch.delenv("ASCEND_OPP_PATH")
    lines = block(cli("backends", "aclnn", "--lib-dir", str(lib_dir)).stdout, "aclnn")
    assert "  ascend opp path: —" in lines
    assert any(x.startswith("  diagnosis: ASCEND_OPP_PATH is not set: every operator would fail "
                            "with 561107") for x in lines)  # fmt: skip


def test_backends_diagnoses_a_device_that_does_not_start(lib_dir):
    lines = block(cli("backends", "aclnn", "--lib-dir", str(lib_dir), "--device-id", "9").stdout,
                  "aclnn")  # fmt: skip
    assert "  device count: 8" in lines and "  overflow mode: —" in lines
    assert ("  diagnosis: device 9 cannot be started (aclrtSetDevice(9) returned 107001: "
            "[TEST DOUBLE] aclrtSetDevice: invalid device id 9") in "\n".join(lines)  # fmt: skip


def test_backends_reads_the_cann_version_file(tmp_path, lib_dir):
    root = tmp_path / "toolkit"
    shutil.copytree(lib_dir, root / "lib64")
    (root / "version.cfg").write_text("# toolkit\nversion=8.0.RC3\n", encoding="utf-8")
    lines = block(cli("backends", "aclnn", "--lib-dir", str(root)).stdout, "aclnn")
    assert "  cann version: 8.0.RC3" in lines
    assert f"  cann version file: {root / 'version.cfg'}" in lines


def test_backends_unknown_name_is_a_usage_error():
    res = cli("backends", "aclnnn")
    assert res.exit_code == 2 and "unknown backend 'aclnnn'" in res.stderr


@pytest.mark.gates
def test_run_meta_and_report_record_the_host(lib_dir, double_root, tmp_path):
    out, md, html = tmp_path / "r.jsonl", tmp_path / "r.md", tmp_path / "r.html"
    cli("run", "--backend", "aclnn", "--backend-opt", f"lib_dir={lib_dir}", "--op",
        "elu_backward", "--max-cases", "3", "--results", str(out), "--markdown", str(md),
        "--html", str(html), "-q")  # fmt: skip
    host = json.loads(Path(str(out) + ".meta.json").read_text(encoding="utf-8"))["backend_host"]
    assert host["soc"] == "TEST-DOUBLE-SoC (aclnn TEST DOUBLE, no NPU)"
    assert (host["device_count"], host["device_id"], host["overflow_mode"]) == (8, 0, "inf-nan")
    assert host["ascend_opp_path"] == str(double_root / "opp") and host["diagnosis"] == ""
    assert host["libraries"][0] == str(lib_dir / "libascendcl.so")
    text = md.read_text(encoding="utf-8")
    assert "setup: " + esc("aclnn TEST DOUBLE (aclnn-conformance CPU stand-in; not CANN, not an "
                           "NPU) · SoC TEST-DOUBLE-SoC (aclnn TEST DOUBLE, no NPU) · 8 device(s), "
                           f"device 0 used · overflow inf-nan · ASCEND_OPP_PATH "
                           f"{double_root / 'opp'}") in text  # fmt: skip
    page = html.read_text(encoding="utf-8")
    assert '<dd id="backend-setup">aclnn TEST DOUBLE' in page
    assert f"· overflow inf-nan · ASCEND_OPP_PATH {double_root / 'opp'}</dd>" in page
