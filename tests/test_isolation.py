"""--isolate: a backend that segfaults, aborts or hangs costs one case, never the run."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support.plugins import install_plugin

FAULTY = """
import ctypes, os, time
from aclnn_conformance.conformance.run.backend import Backend, Capabilities
from aclnn_conformance.reference.engine import evaluate

class Faulty(Backend):
    name = "faulty"
    capabilities = Capabilities(status="exact")

    def version(self):
        return "faulty 0.0 (test fixture)"

    def execute(self, call):
        shape = call.args["gradOutput"].shape if call.args.get("gradOutput") is not None else None
        x = call.args.get("selfOrResult")
        if shape == (7,):
            ctypes.string_at(0)          # segfault
        if shape == (2, 3, 1, 4):
            os.abort()                   # SIGABRT
        if shape == (1, 2, 1, 2, 1, 2, 1, 2):
            time.sleep(60)               # hang
        return evaluate(call)
"""


def run_cli(args, env, timeout=240):
    return subprocess.run([sys.executable, "-m", "aclnn_conformance.cli.main", *args], env=env, capture_output=True,
                          text=True, timeout=timeout)  # fmt: skip


@pytest.mark.gates
def test_crash_abort_and_hang_are_classified_and_the_run_goes_on(tmp_path):
    env = install_plugin(
        tmp_path / "plug", "faulty_backend", FAULTY, {"faulty": "faulty_backend:Faulty"}
    )
    results = tmp_path / "r.jsonl"
    args = ["run", "--backend", "faulty", "--isolate", "--timeout", "3", "--op", "elu_backward",
            "--product", "atlas-a2", "-k", "f32/isResult=0/shape=", "--results", str(results), "-q"]  # fmt: skip
    p = run_cli(args, env)
    assert "Traceback" not in p.stderr + p.stdout
    recs = {json.loads(line)["id"]: json.loads(line) for line in results.read_text().splitlines()}
    by_tag = {i.rsplit("/", 1)[1]: r for i, r in recs.items()}
    assert by_tag["shape=1d-7"]["verdict"] == "crash"
    assert "SIGSEGV" in by_tag["shape=1d-7"]["reason"]
    assert by_tag["shape=4d-2x3x1x4"]["verdict"] == "crash"
    assert "SIGABRT" in by_tag["shape=4d-2x3x1x4"]["reason"]
    assert by_tag["shape=8d"]["verdict"] == "timeout"
    # every other shape case ran after the faults, in a restarted worker, and passed
    others = [
        r for t, r in by_tag.items() if t not in ("shape=1d-7", "shape=4d-2x3x1x4", "shape=8d")
    ]
    assert others and all(r["verdict"] == "pass" for r in others), [r["reason"] for r in others]
    assert p.returncode == 1  # crashes and timeouts are conformance failures


@pytest.mark.gates
def test_without_isolation_a_raising_backend_is_an_error_not_a_crash(tmp_path):
    src = FAULTY.replace("ctypes.string_at(0)          # segfault", "raise RuntimeError('boom')")
    env = install_plugin(
        tmp_path / "plug", "raising_backend", src, {"raising": "raising_backend:Faulty"}
    )
    results = tmp_path / "r.jsonl"
    p = run_cli(["run", "--backend", "raising", "--op", "elu_backward", "--product", "atlas-a2",
                 "-k", "f32/isResult=0/shape=1d", "--results", str(results), "-q"], env)  # fmt: skip
    rec = json.loads(results.read_text().splitlines()[0])
    assert rec["verdict"] == "error" and "boom" in rec["reason"]
    assert p.returncode == 1 and "Traceback" not in p.stderr


@pytest.mark.gates
def test_a_backend_that_cannot_start_is_an_infrastructure_error(tmp_path):
    src = FAULTY + "\n    def __init__(self, **kw):\n        raise OSError('device busy')\n"
    env = install_plugin(
        tmp_path / "plug", "broken_backend", src, {"broken": "broken_backend:Faulty"}
    )
    p = run_cli(["run", "--backend", "broken", "--isolate", "--op", "elu_backward", "--max-cases", "3",
                 "--results", str(tmp_path / "r.jsonl"), "-q"], env)  # fmt: skip
    assert p.returncode == 3, p.stderr
    assert "device busy" in p.stderr and "Traceback" not in p.stderr


@pytest.mark.gates
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_an_isolated_run_leaves_no_worker_folder_behind(tmp_path, jobs):
    """Every isolated backend and oracle is closed at the end of a run, in the pool's worker
    processes too, so no worker's scratch folder stays in the temporary directory."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    results = tmp_path / "r.jsonl"
    args = ["run", "--backend", "reference", "--isolate", "-j", jobs, "--op", "relu",
            "--max-cases", "6", "--results", str(results), "-q"]  # fmt: skip
    p = run_cli(args, {**os.environ, "TMPDIR": str(tmp)})
    assert p.returncode == 0, p.stderr
    assert len(results.read_text().splitlines()) == 6
    assert sorted(x.name for x in tmp.iterdir()) == []
