"""`aclnn-conform probe`: only a status is an answer about a dtype. A call that crashed, timed
out or raised (a harness error) is a cell of its own, never "rejected", and makes the probe exit
non-zero (issue 22 point 9)."""

from __future__ import annotations

import json

import pytest
from aclnn_conformance.conformance.run.probe import probe_op
from aclnn_conformance.conformance.spec.registry import default_registry

from tests.support.plugins import install_plugin
from tests.support.runcli import assert_clean, conform

FLAKY = """
from aclnn_conformance.conformance.run.backend import Backend, BackendCrash, BackendTimeout, Capabilities
from aclnn_conformance.conformance.acl.call import TensorArg
from aclnn_conformance.reference.engine import evaluate

class Flaky(Backend):
    '''The reference's answers, except: a FLOAT16 tensor crashes the worker, a BF16 one hangs,
    a DOUBLE one makes the harness fail.'''
    name = "flaky"
    capabilities = Capabilities(status="exact")

    def execute(self, call):
        dtypes = {a.dtype for a in call.args.values() if isinstance(a, TensorArg)}
        if "FLOAT16" in dtypes:
            raise BackendCrash("worker died: signal 11 (SIGSEGV)")
        if "BF16" in dtypes:
            raise BackendTimeout("no answer within 1 s")
        if "DOUBLE" in dtypes:
            raise RuntimeError("harness wrote no result.json")
        return evaluate(call, self.registry)
"""


def _flaky():
    import importlib.util
    import sys
    import tempfile
    from pathlib import Path

    path = Path(tempfile.mkdtemp()) / "flaky_probe.py"
    path.write_text(FLAKY, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("flaky_probe", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["flaky_probe"] = mod
    spec.loader.exec_module(mod)
    return mod.Flaky(default_registry())


def test_crash_timeout_and_error_are_cells_of_their_own():
    reg = default_registry()
    rows = probe_op(reg.get("relu"), _flaky(), "ascend950")
    row = next(r for r in rows if r.param == "self")
    assert row.cells["FLOAT16"] == "crash" and row.cells["BF16"] == "timeout"
    assert row.cells["DOUBLE"] == "error"
    assert set(row.broken) == {"FLOAT16", "BF16", "DOUBLE"}
    # none of them is counted as a rejection of a listed dtype
    assert not {"FLOAT16", "BF16", "DOUBLE"} & set(row.disagreements)
    assert row.cells["FLOAT"] == "agree-accept" and row.cells["COMPLEX64"] == "agree-reject"


@pytest.mark.gates
def test_the_probe_exits_non_zero_and_names_them(tmp_path):
    env = install_plugin(tmp_path, "flaky_probe", FLAKY, {"flaky": "flaky_probe:Flaky"})
    proc = conform("probe", "--backend", "flaky", "--op", "relu", "--product", "ascend950",
                   env=env)  # fmt: skip
    assert_clean(proc, 1)
    assert "calls without an answer (not counted as rejected)" in proc.stdout
    assert "relu ascend950 self: crash: FLOAT16" in proc.stdout
    assert "relu ascend950 self: timeout: BF16" in proc.stdout
    proc = conform("probe", "--backend", "flaky", "--op", "relu", "--product", "ascend950",
                   "--json", env=env)  # fmt: skip
    assert_clean(proc, 1)
    rows = json.loads(proc.stdout)
    assert rows[0]["broken"]["FLOAT16"] == "crash"
