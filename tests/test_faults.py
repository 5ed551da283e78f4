"""Fault injection: a backend that misbehaves in every way on chosen cases. The run completes,
every fault is classified, the results file is valid JSONL, and --resume after a kill -9 of the
runner loses no finished case and repeats none."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.support.plugins import install_plugin

FAULTS = """
import ctypes, os, sys, time
import numpy as np
from aclnn_conformance.conformance.run.backend import Backend, Capabilities
from aclnn_conformance.conformance.acl.call import Outcome, TensorArg
from aclnn_conformance.reference.engine import evaluate

FAULT = {"point=x-slope-zero": "segv", "point=x-slope-negative": "hang", "values=tiny": "shape",
         "values=large": "dtype", "values=special": "nan", "layout=in-gaps": "mutate",
         "layout=in-offset": "raise", "layout=in-transposed": "garbage"}

class Faulty(Backend):
    name = "faults"
    capabilities = Capabilities(status="exact")

    def version(self):
        return "faults 0.0 (test fixture)"

    def execute(self, call):
        out = evaluate(call)
        kind = FAULT.get(self._guess(call))
        if kind == "segv":
            ctypes.string_at(0)
        if kind == "hang":
            time.sleep(600)
        if kind == "shape":
            out.outputs["out"] = out.outputs["out"][:-1]
        if kind == "dtype":
            out.outputs["out"] = out.outputs["out"].astype(np.float64)
        if kind == "nan":
            out.outputs["out"][:] = np.nan
        if kind == "mutate":
            call.args["self"].storage[...] = 0
        if kind == "raise":
            raise ValueError("injected failure")
        if kind == "garbage":
            sys.stdout.write("\\x00\\xff garbage {not json}\\n" * 50)
            sys.stderr.write("more garbage\\n")
            sys.stdout.flush()
        return out

    @staticmethod
    def _guess(call):
        g, x = call.args["gradOutput"], call.args["self"]
        if x.strides and x.strides[-1] == 2:
            return "layout=in-gaps"
        if x.offset == 7:
            return "layout=in-offset"
        if len(x.shape) == 2 and x.strides == (1, 3):
            return "layout=in-transposed"
        slope = call.args["negativeSlope"].value
        if slope == 0.0:
            return "point=x-slope-zero"
        if slope == -0.5:
            return "point=x-slope-negative"
        gv = g.view().astype(float)
        finite = gv[np.isfinite(gv)]
        if gv.size and (~np.isfinite(gv)).any():
            return "values=special"
        if finite.size and np.abs(finite).max() > 1e30:
            return "values=large"
        if finite.size and np.abs(finite).max() <= 1e-3:
            return "values=tiny"
        return ""
"""

SELECT = ["--op", "leaky_relu_backward", "--product", "atlas-training", "-k", "f32/selfIsResult=0/"]
EXPECT = {"point=x-slope-zero": "crash", "scalar=negativeSlope:0": "crash", "point=x-slope-negative": "timeout", "values=tiny": "fail", "values=large": "fail",
          "values=special": "fail", "layout=in-gaps": "fail", "layout=in-offset": "error",
          "layout=in-transposed": "pass"}  # fmt: skip


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    return install_plugin(
        tmp_path_factory.mktemp("plug"),
        "faults_backend",
        FAULTS,
        {"faults": "faults_backend:Faulty"},
    )


def cli(env, *args, timeout=300):
    return subprocess.run([sys.executable, "-m", "aclnn_conformance.cli.main", *args], env=env, capture_output=True,
                          text=True, timeout=timeout)  # fmt: skip


@pytest.mark.gates
def test_every_fault_is_classified_and_the_run_completes(env, tmp_path):
    results = tmp_path / "r.jsonl"
    p = cli(
        env,
        "run",
        "--backend",
        "faults",
        "--isolate",
        "--timeout",
        "3",
        *SELECT,
        "--results",
        str(results),
        "-q",
    )
    assert "Traceback" not in p.stderr and p.returncode == 1
    lines = results.read_text().splitlines()
    recs = [json.loads(x) for x in lines]  # every line is valid JSON
    by_tail = {r["id"].split("/", 4)[-1]: r for r in recs}
    for tail, verdict in EXPECT.items():
        assert by_tail[tail]["verdict"] == verdict, (tail, by_tail[tail].get("reason"))
    reasons = {t: by_tail[t]["reason"] for t in EXPECT}
    assert "SIGSEGV" in reasons["point=x-slope-zero"]
    assert "no answer within 3 s" in reasons["point=x-slope-negative"]
    assert "no storage" in reasons["values=tiny"] and "no storage" in reasons["values=large"]
    assert "NaN mismatch" in reasons["values=special"] or "nan" in reasons["values=special"].lower()
    assert "input self was modified" in reasons["layout=in-gaps"]
    assert "injected failure" in reasons["layout=in-offset"]
    others = [r for t, r in by_tail.items() if t not in EXPECT]
    assert others and all(r["verdict"] == "pass" for r in others)


@pytest.mark.gates
def test_resume_after_kill_9_loses_nothing_and_repeats_nothing(tmp_path):
    results = tmp_path / "r.jsonl"
    args = [sys.executable, "-m", "aclnn_conformance.cli.main", "run", "--op", "softplus_backward", "--product", "atlas-a2",
            "--results", str(results), "-q"]  # fmt: skip
    full = subprocess.run([*args[:-3], "--results", str(tmp_path / "full.jsonl"), "-q"], capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    all_ids = {json.loads(x)["id"] for x in (tmp_path / "full.jsonl").read_text().splitlines()}
    proc = subprocess.Popen(
        args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    deadline = time.time() + 120
    while time.time() < deadline:
        if results.exists() and len(results.read_bytes().splitlines()) >= 40:
            break
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    first = results.read_text().splitlines()
    assert 40 <= len(first) < len(all_ids), "the kill came too late to test anything"
    done_before = {json.loads(x)["id"] for x in first if x.strip().endswith("}")}
    p = subprocess.run([*args, "--resume"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    ids = []
    for line in results.read_text().splitlines():
        with contextlib.suppress(json.JSONDecodeError):  # at most the one line the kill tore
            ids.append(json.loads(line)["id"])
    assert sorted(ids) == sorted(set(ids)), "a case was recorded twice"
    assert set(ids) == all_ids, "a case was lost"
    assert done_before <= set(ids)
    assert full.returncode == 0
