"""The torch and torch_npu adapters follow the aclnn adapter's host rules where they apply.

Inputs come back from the device (an op writing an input fails "inputs are unchanged"); on
torch_npu a failed device sync is a device fault (`crash`), never a rejection, and the process
refuses afterwards; a forked process refuses; prepare() starts the device; host_facts() says
what the host is. torch_npu is not installed here: a stand-in module (labelled fake) provides
the few torch.npu functions the adapter calls, and the ops run on the CPU.
"""

from __future__ import annotations

import sys
import types

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install '.[torch]')")

from aclnn_conformance.conformance.cases.build import build  # noqa: E402
from aclnn_conformance.conformance.cases.generate import dtype_combos  # noqa: E402
from aclnn_conformance.conformance.cases.plan import CasePlan, base_args  # noqa: E402
from aclnn_conformance.conformance.run.backend import BackendCrash, BackendError, load_backend  # noqa: E402
from aclnn_conformance.conformance.run.backends import torch_backend as tb  # noqa: E402
from aclnn_conformance.conformance.run.judging import judge  # noqa: E402
from aclnn_conformance.conformance.spec.registry import default_registry  # noqa: E402

from tests.aclnn_double.calls import S, T, hardshrink  # noqa: E402


def writing_self(backend):
    """backend's ATen lookup wrapped so that the op also doubles its second argument (self)."""
    real = backend._overload

    def lookup(binding):
        op = real(binding)

        def run(*args, **kwargs):
            out = op(*args, **kwargs)
            args[1].mul_(2)
            return out

        return run

    return lookup


def test_an_input_the_op_writes_comes_back(monkeypatch):
    b = tb.TorchBackend()
    monkeypatch.setattr(b, "_overload", writing_self(b))
    call = hardshrink(T([1.0, -2.0]), T([3.0, -4.0]), S(0.5))
    got = b.execute(call)
    assert got.status == 0 and call.args["self"].storage.tolist() == [6.0, -8.0]
    assert got.outputs["gradInput"].tolist() == [1.0, -2.0]  # computed before the write


def test_the_judge_fails_an_op_that_writes_an_input(monkeypatch):
    reg = default_registry()
    spec = reg.get("hardshrink_backward")
    args = base_args(spec, dtype_combos(spec, "atlas-a2")[0], (2, 3))
    case = build(spec, CasePlan("t/writes", spec.name, "atlas-a2", "positive",
                                tuple(args.items()), (), 0), 0)  # fmt: skip
    b = tb.TorchBackend()
    oracle = load_backend("reference", reg)
    assert judge(spec, case, b, oracle).verdict == "pass"
    monkeypatch.setattr(b, "_overload", writing_self(b))
    judged = judge(spec, case, b, oracle)
    assert (judged.verdict, judged.reason) == ("fail", "input self was modified by the call")


@pytest.fixture
def fake_npu(monkeypatch):
    """A fake torch_npu (a stand-in, not the real package) and torch.npu; state["fail"] makes
    torch.npu.synchronize() raise."""
    state: dict = {"fail": None, "syncs": 0}

    def synchronize():
        state["syncs"] += 1
        if state["fail"]:
            raise RuntimeError(state["fail"])

    npu = types.SimpleNamespace(is_available=lambda: True, synchronize=synchronize,
                                device_count=lambda: 2,
                                get_device_name=lambda i=0: "Ascend910B4")  # fmt: skip
    mod = types.ModuleType("torch_npu")
    mod.__version__ = "0.0-fake"
    mod.version = types.SimpleNamespace(cann="8.0.RC3")
    mod.npu = types.SimpleNamespace(utils=types.SimpleNamespace(is_support_inf_nan=lambda: False))
    monkeypatch.setitem(sys.modules, "torch_npu", mod)
    monkeypatch.setattr(torch, "npu", npu, raising=False)
    return state


def test_torch_npu_device_fault_is_a_crash_not_a_rejection(fake_npu):
    b = tb.TorchNpuBackend(device="cpu")
    assert b.execute(hardshrink(T([1.0]), T([3.0]), S(0.5))).status == 0 and fake_npu["syncs"]
    rejected = b.execute(hardshrink(T([1.0], "INT32"), T([3.0]), S(0.5)))  # no int kernel
    assert rejected.raised and rejected.status == 161002  # a rejection stays one
    fake_npu["fail"] = "ACL stream synchronize failed, error code:507015"
    with pytest.raises(BackendCrash, match=r"^device fault: torch.npu.synchronize\(\) raised "
                                           r"RuntimeError: ACL stream synchronize failed"):  # fmt: skip
        b.execute(hardshrink(T([1.0]), T([3.0]), S(0.5)))
    fake_npu["fail"] = None
    with pytest.raises(BackendError, match="had a device fault in an earlier case .*--isolate"):
        b.execute(hardshrink(T([1.0]), T([3.0]), S(0.5)))


def test_torch_npu_refuses_in_a_forked_process(fake_npu, monkeypatch):
    b = tb.TorchNpuBackend(device="cpu")
    monkeypatch.setattr(tb.os, "getpid", lambda: -1)  # as a fork()ed child sees it
    with pytest.raises(BackendError, match="forked from the one that started the NPU"):
        b.execute(hardshrink(T([1.0]), T([3.0]), S(0.5)))


def test_torch_npu_prepare_starts_the_device(fake_npu):
    b = tb.TorchNpuBackend(device="cpu")
    b.prepare()
    assert fake_npu["syncs"] == 1


def test_torch_npu_host_facts(fake_npu, monkeypatch, tmp_path):
    monkeypatch.delenv("ASCEND_HOME_PATH", raising=False)
    monkeypatch.delenv("ASCEND_OPP_PATH", raising=False)
    facts = tb.TorchNpuBackend(device="cpu").host_facts()
    assert {k: facts[k] for k in ("cann_version", "soc", "device_count", "overflow_mode")} == {
        "cann_version": "8.0.RC3", "soc": "Ascend910B4", "device_count": 2,
        "overflow_mode": "saturation"}  # fmt: skip
    assert facts["diagnosis"].startswith("ASCEND_OPP_PATH is not set: every operator would fail")
    assert "saturation mode" in facts["diagnosis"]
    monkeypatch.setenv("ASCEND_OPP_PATH", str(tmp_path))
    assert "ASCEND_OPP_PATH" not in tb.TorchNpuBackend(device="cpu").host_facts()["diagnosis"]


def test_plain_torch_has_no_host_facts():
    assert tb.TorchBackend().host_facts() == {}
