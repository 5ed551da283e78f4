"""The `exec` backend: an external program per case, through the case-directory protocol.

The example harness (tests/data/exec_harness/harness.py, LeakyReluBackward in numpy) must pass the
generated leaky cases; broken harnesses (exit 1, garbage, a hang, wrong outputs) must give `error`
verdicts with a clear reason while the run goes on.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import textwrap
import time
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from aclnn_conformance.cli.main import main
from aclnn_conformance.conformance.acl.call import Call, ScalarArg, TensorArg
from aclnn_conformance.conformance.run.backend import BackendError
from aclnn_conformance.conformance.run.backends.exec_backend import ExecBackend, ExecHarnessError
from click.testing import CliRunner

REPO = Path(__file__).resolve().parent.parent
HARNESS = REPO / "tests" / "data" / "exec_harness" / "harness.py"
PY = shlex.quote(sys.executable)
EXAMPLE_CMD = f"{PY} {shlex.quote(str(HARNESS))}"


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


def leaky_call(g, x, slope=0.01, dtype="FLOAT", out_dtype=None, product="atlas-a2") -> Call:
    out_dtype = out_dtype or dtype
    out = TensorArg.empty_like_shape(np.shape(g), out_dtype, fill=np.nan)
    return Call("leaky_relu_backward", product, {
        "gradOutput": TensorArg.from_array(np.asarray(g, np.float64), dtype),
        "self": TensorArg.from_array(np.asarray(x, np.float64), dtype),
        "negativeSlope": ScalarArg("FLOAT", slope), "selfIsResult": False, "out": out})  # fmt: skip


# -- the example harness ------------------------------------------------------------------------------


@pytest.mark.gates
def test_example_harness_passes_generated_leaky_cases(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    out = tmp_path / "r.jsonl"
    res = run_cli("--backend", "exec", "--backend-opt", f"cmd={PY} tests/data/exec_harness/harness.py",
                  "--op", "leaky_relu_backward", "--max-cases", "50", "--results", str(out), "-q")  # fmt: skip
    recs = records(out)
    assert len(recs) == 50
    bad = [(r["id"], r["verdict"], r.get("reason")) for r in recs if r["verdict"] != "pass"]
    assert not bad and res.exit_code == 0
    assert {r["backend"] for r in recs} == {"exec"}
    assert any(r["kind"] == "negative" for r in recs) and any(r["kind"] == "positive" for r in recs)


def test_example_harness_values_bf16_and_strides():
    b = ExecBackend(cmd=EXAMPLE_CMD)
    g, x = [[1.5, -2.0, 3.0], [0.25, -8.0, 5.0]], [[-1.0, 0.0, 2.0], [3.0, -4.0, np.nan]]
    call = leaky_call(g, x, 0.5, "BF16")
    got = b.execute(call)
    assert got.status == 0, got.message
    assert got.outputs["out"].dtype == ml_dtypes.bfloat16  # bits on disk, bfloat16 back
    want = [0.75, -1.0, 3.0, 0.25, -4.0, 2.5]  # by hand: g where x > 0, g/2 elsewhere (NaN too)
    np.testing.assert_array_equal(got.outputs["out"].astype(np.float64), want)
    # an output with gaps: odd elements must stay NaN
    out = TensorArg("FLOAT", (2, 3), (6, 2), 1, np.full(12, np.nan, np.float32))
    call = leaky_call(g, x, 0.5)
    call.args["out"] = out
    got = b.execute(call)
    assert got.status == 0
    np.testing.assert_array_equal(got.outputs["out"][[1, 3, 5, 7, 9, 11]], want)
    assert np.isnan(got.outputs["out"][[0, 2, 4, 6, 8, 10]]).all()


def test_example_harness_statuses():
    b = ExecBackend(cmd=EXAMPLE_CMD)
    call = leaky_call([1.0], [1.0])
    call.args["self"] = None
    got = b.execute(call)
    assert got.status == 161001 and "self" in got.message
    assert np.isnan(got.outputs["out"]).all()  # no out.npy for a failed call: untouched
    got = b.execute(leaky_call([1.0], [1.0], dtype="BF16", product="atlas-training"))
    assert got.status == 161002 and "BF16" in got.message
    elu = Call("elu_backward", "atlas-a2", {
        "gradOutput": TensorArg.from_array(np.ones(2), "FLOAT"), "alpha": ScalarArg("FLOAT", 1.0),
        "scale": ScalarArg("FLOAT", 1.0), "inputScale": ScalarArg("FLOAT", 1.0), "isResult": False,
        "selfOrResult": TensorArg.from_array(np.ones(2), "FLOAT"),
        "gradInput": TensorArg.empty_like_shape((2,), "FLOAT")})  # fmt: skip
    got = b.execute(elu)
    assert got.status == 161002 and "unsupported op" in got.message


# -- options -------------------------------------------------------------------------------------------


def test_options_are_checked():
    with pytest.raises(BackendError, match="needs its harness command"):
        ExecBackend()
    with pytest.raises(BackendError, match="not found"):
        ExecBackend(cmd="no-such-program-4711 --flag")
    with pytest.raises(BackendError, match="cannot be parsed"):
        ExecBackend(cmd="python 'unterminated")
    with pytest.raises(BackendError, match="timeout must be a positive"):
        ExecBackend(cmd=EXAMPLE_CMD, timeout="soon")
    with pytest.raises(BackendError, match="has no option timout"):
        ExecBackend(cmd=EXAMPLE_CMD, timout="5")
    assert ExecBackend(cmd=EXAMPLE_CMD, timeout="2.5").timeout == 2.5
    assert ExecBackend(cmd=EXAMPLE_CMD).version() == f"exec: {EXAMPLE_CMD}"


# -- broken harnesses -------------------------------------------------------------------------------

BAD = """
import json, os, subprocess, sys, time
import numpy as np
mode, case_dir, out_dir = sys.argv[1], sys.argv[-2], sys.argv[-1]
case = json.load(open(os.path.join(case_dir, "case.json")))
out = case["args"]["out"]
n = np.load(os.path.join(case_dir, out["storage"])).size if out["kind"] == "tensor" else 1
def result(status, message=""):
    json.dump({"status": status, "message": message}, open(os.path.join(out_dir, "result.json"), "w"))
if mode == "exit1":
    print("harness: cannot open device 0", file=sys.stderr)
    sys.exit(1)
if mode == "garbage":
    open(os.path.join(out_dir, "result.json"), "w").write("this is {not json")
if mode == "no-result":
    pass
if mode == "status-string":
    result("ok")
if mode == "hang":
    child = subprocess.Popen(["sleep", "60"])
    open(sys.argv[2], "w").write(str(child.pid))
    time.sleep(60)
if mode == "no-npy":
    result(0)
if mode == "wrong-size":
    result(0); np.save(os.path.join(out_dir, "out.npy"), np.zeros(n + 1, np.float32))
if mode == "wrong-dtype":
    result(0); np.save(os.path.join(out_dir, "out.npy"), np.zeros(n, np.float64))
if mode == "2d":
    result(0); np.save(os.path.join(out_dir, "out.npy"), np.zeros((n, 1), np.float32))
if mode in ("modify-input", "remove-input"):
    path = os.path.join(case_dir, case["args"]["self"]["storage"])
    if mode == "modify-input":
        x = np.load(path)
        np.save(path, x + np.ones_like(x))
    else:
        os.remove(path)
    out_storage = np.load(os.path.join(case_dir, out["storage"]))
    result(0); np.save(os.path.join(out_dir, "out.npy"), out_storage)
if mode == "segv":
    import signal
    os.kill(os.getpid(), signal.SIGSEGV)
"""

CASES = {  # mode: what the error reason must say
    "exit1": "harness exited with status 1: ",
    "garbage": "result.json is not valid JSON",
    "no-result": "harness wrote no result.json",
    "status-string": "status must be an integer, got 'ok'",
    "hang": "harness timed out after 1 s (killed)",
    "no-npy": "harness returned status 0 but wrote no out.npy",
    "wrong-size": "out.npy has shape",
    "wrong-dtype": "out.npy holds float64, FLOAT storage needs float32",
    "2d": "(a 1-D array)",
}
VERDICT = {"hang": "timeout"}  # a harness past its time is a timeout; the others errors


def _dead(pid: int, wait: float = 5.0) -> bool:
    end = time.monotonic() + wait
    while time.monotonic() < end:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split(")")[-1].split()[0] in ("Z", "X"):
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.gates
@pytest.mark.parametrize("mode", list(CASES))
def test_broken_harness_is_an_error_verdict_and_the_run_goes_on(tmp_path, mode):
    script = tmp_path / "bad.py"
    script.write_text(textwrap.dedent(BAD), encoding="utf-8")
    pidfile = tmp_path / "grandchild.pid"
    cmd = f"{PY} {shlex.quote(str(script))} {mode}" + (
        f" {shlex.quote(str(pidfile))}" if mode == "hang" else ""
    )
    out = tmp_path / "r.jsonl"
    res = run_cli("--backend", "exec", "--backend-opt", f"cmd={cmd}", "--backend-opt", "timeout=1",
                  "--op", "leaky_relu_backward", "--product", "atlas-a2", "-k", "/f32/",
                  "--max-cases", "3", "--results", str(out))  # fmt: skip
    recs = records(out)
    assert len(recs) == 3 and res.exit_code == 1  # the run completed and reports the errors
    for r in recs:
        assert r["verdict"] == VERDICT.get(mode, "error"), r
        assert CASES[mode] in r["reason"], r["reason"]
    if mode == "exit1":
        assert "cannot open device 0" in recs[0]["reason"]  # the harness's stderr is shown
    if mode == "hang":
        assert _dead(int(pidfile.read_text())), "the harness's own child survived the timeout"
    assert f"{VERDICT.get(mode, 'error')} 3" in res.stdout


OTHER = {  # mode: (verdict, what the reason says)
    "modify-input": ("fail", "input self was modified by the call"),
    "remove-input": ("fail", "input self was modified by the call"),
    "segv": ("crash", "harness killed by signal SIGSEGV"),
}


@pytest.mark.gates
@pytest.mark.parametrize("mode", list(OTHER))
def test_changed_inputs_fail_and_a_signal_is_a_crash(tmp_path, mode):
    """The comparison rules forbid writing an input: a harness that rewrites (or removes) an
    input file fails the case; one killed by a signal crashed (both were `pass`/`error`)."""
    script = tmp_path / "bad.py"
    script.write_text(textwrap.dedent(BAD), encoding="utf-8")
    out = tmp_path / "r.jsonl"
    res = run_cli("--backend", "exec", "--exec-cmd", f"{PY} {shlex.quote(str(script))} {mode}",
                  "--op", "leaky_relu_backward", "--product", "atlas-a2", "-k", "/f32/",
                  "--max-cases", "2", "--results", str(out))  # fmt: skip
    recs = records(out)
    verdict, reason = OTHER[mode]
    assert len(recs) == 2 and res.exit_code == 1
    for r in recs:
        assert r["verdict"] == verdict and reason in r["reason"], r


def test_an_unchanged_input_is_left_alone():
    """The input check does not invent a change: the example harness passes in-process too."""
    from aclnn_conformance.conformance.cases.generate import build, plan_op
    from aclnn_conformance.conformance.run.judging import judge
    from aclnn_conformance.conformance.spec.registry import default_registry
    from aclnn_conformance.reference.backend import ReferenceBackend

    reg = default_registry()
    spec = reg.get("leaky_relu_backward")
    plan = next(p for p in plan_op(spec) if p.kind == "positive" and "/f32/" in p.id)
    case = build(spec, plan, 0)
    judged = judge(spec, case, ExecBackend(cmd=EXAMPLE_CMD), ReferenceBackend(registry=reg))
    assert judged.verdict == "pass", judged.reason


def test_failed_status_without_outputs_means_untouched(tmp_path):
    script = tmp_path / "reject.py"
    script.write_text("import json, sys\njson.dump({'status': 161002, 'message': 'no'}, "
                      "open(sys.argv[2] + '/result.json', 'w'))\n")  # fmt: skip
    got = ExecBackend(cmd=f"{PY} {script}").execute(leaky_call([1.0, 2.0], [1.0, -1.0]))
    assert (got.status, got.message) == (161002, "no")
    assert np.isnan(got.outputs["out"]).all() and got.outputs["out"].dtype == np.float32


def test_temporary_directories_are_removed(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    b = ExecBackend(cmd=EXAMPLE_CMD)
    b.execute(leaky_call([1.0], [1.0]))
    with pytest.raises(ExecHarnessError):
        ExecBackend(cmd=f"{PY} -c 'import sys; sys.exit(3)'").execute(leaky_call([1.0], [1.0]))
    assert list(tmp_path.iterdir()) == []
    assert os.environ["TMPDIR"] == str(tmp_path)
