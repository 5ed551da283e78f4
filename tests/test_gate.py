"""A gate never lies: red only for a real difference, green only when cases ran and matched.

Each test runs the CLI (or pytest with the plugin) in a subprocess as a user would and checks
the exit code, the one line it prints and that no traceback appears.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from aclnn_conformance.conformance.run.backend import backend_names

from tests.support.plugins import install_plugin
from tests.support.runcli import REPO, assert_clean, assert_one_line_error, conform, read_jsonl

LEAKY = ("--op", "leaky_relu_backward", "--product", "atlas-a2")

# A backend with no status codes (like PyTorch) that raises oneDNN's error for bf16 self and is
# the reference otherwise; and one that is slow, for Ctrl-C.
FAKES = """
import os
import time
from aclnn_conformance.conformance.run.backend import Backend, Capabilities
from aclnn_conformance.conformance.acl.call import Outcome, TensorArg
from aclnn_conformance.reference.engine import evaluate

ONEDNN = "could not create a primitive descriptor for the reorder primitive"

class Raising(Backend):
    name = "raising"
    capabilities = Capabilities(status="accept_reject")

    def version(self):
        return "raising 1.0 (test fixture)"

    def execute(self, call):
        outs = {k: a.storage.copy() for k, a in call.args.items() if isinstance(a, TensorArg)}
        if isinstance(call.args.get("self"), TensorArg) and call.args["self"].dtype == "BF16":
            return Outcome(161002, outs, "RuntimeError: " + ONEDNN, raised=True)
        return evaluate(call)

class Slow(Backend):
    name = "slow"

    def execute(self, call):
        time.sleep(float(os.environ.get("GATE_SLOW_S", "0.05")))
        return evaluate(call)
"""


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    return install_plugin(tmp_path_factory.mktemp("gate"), "gate_fakes", FAKES,
                          {"raising": "gate_fakes:Raising", "slow": "gate_fakes:Slow"})  # fmt: skip


def no_file(path: Path) -> None:
    assert not path.exists() and not Path(str(path) + ".meta.json").exists()


# -- 1. expectations that match what the backend said ------------------------------------------


@pytest.mark.gates
def test_a_message_entry_explains_the_bug_wherever_it_shows_and_never_xpasses(env, tmp_path):
    exp = tmp_path / "e.yaml"
    exp.write_text("format: 1\nentries:\n  - match: 'hardshrink_backward/*'\n"
                   "    message: could not create a primitive descriptor\n    kind: xfail\n"
                   "    reason: oneDNN reorder bug\n", encoding="utf-8")  # fmt: skip
    results = tmp_path / "r.jsonl"
    args = ("run", "--backend", "raising", "--op", "hardshrink_backward", "--product", "atlas-a2",
            "-k", "/values=", "--results", results, "--expectations", exp, "--strict", "-q")  # fmt: skip
    proc = conform(*args, env=env)
    assert_clean(proc, 0)
    recs = read_jsonl(results)
    bf16_self = [r for r in recs if r["dtypes"].get("self") == "BF16"]
    others = [r for r in recs if r["dtypes"].get("self") != "BF16"]
    assert bf16_self and others
    assert {r["verdict"] for r in bf16_self} == {"xfail"}
    assert {r["verdict"] for r in others} == {"pass"}  # the entry never turns a pass into xpass
    assert all(r["expectation"]["message"] == "could not create a primitive descriptor"
               for r in bf16_self)  # fmt: skip
    # without the entry the same cases fail, and say why in the backend's words
    proc = conform(*args[:-4], "--results", results, "--no-expectations", env=env)
    assert_clean(proc, 1)
    assert "backend raised RuntimeError: could not create a primitive descriptor" in proc.stdout


def test_the_shipped_torch_entry_matches_onednn_message_not_one_cpus_ids():
    from aclnn_conformance.conformance.judge import expectations as ex

    e = ex.load(ex.shipped("torch"))
    rec = {"id": "gelu_backward_v2/atlas-a2/bf16/approximate=none/shape=bcast-3x1.1x5",
           "verdict": "fail", "message": "RuntimeError: could not create a primitive descriptor "
           "for the reorder primitive", "reason": "backend raised ...", "differs": "status",
           "binding": "aten::gelu_backward"}  # fmt: skip
    for case_id in (rec["id"], "gelu_backward/atlas-a2/bf16/-/shape=bcast-3x1.1x5", "any/id"):
        entry = e.find(case_id, "torch", "torch 2.13.0+cpu (cpu)", rec)
        assert entry is not None and entry.kind == "xfail" and entry.message
    assert e.find(rec["id"], "torch", "torch 2.13.0+cpu (cpu)", {**rec, "message": ""}) is None
    # the same words from another kernel are another bug
    other = {**rec, "binding": "aten::gelu"}
    assert e.find(rec["id"], "torch", "torch 2.13.0+cpu (cpu)", other) is None


# -- 2. the backend's own words, never an invented status code --------------------------------


@pytest.mark.gates
def test_summary_replay_and_diff_show_what_the_backend_raised(env, tmp_path):
    results = tmp_path / "r.jsonl"
    sel = ("--op", "hardshrink_backward", "--product", "atlas-a2", "-k", "bf16/-/values=normal")
    proc = conform("run", "--backend", "raising", *sel, "--results", results, env=env)
    assert_clean(proc, 1)
    fails = [x for x in proc.stdout.splitlines() if x.startswith("  fail: ")]
    assert fails
    for line in fails:
        assert "backend raised RuntimeError: could not create a primitive descriptor" in line
        assert "161002" not in line and "ACLNN_ERR_PARAM_INVALID, expected" not in line
    case_id = read_jsonl(results)[0]["id"]
    proc = conform("replay", case_id, "--backend", "raising", env=env)
    assert_clean(proc, 1)
    assert "the backend raised RuntimeError: could not create a primitive descriptor" in proc.stdout
    ok = tmp_path / "ok.jsonl"
    assert_clean(conform("run", *sel, "--results", ok, "-q"), 0)
    proc = conform("diff", ok, results)
    assert_clean(proc, 1)
    assert "backend raised RuntimeError: could not create a primitive descriptor" in proc.stdout


# -- 3. green for nothing ----------------------------------------------------------------------


@pytest.mark.gates
@pytest.mark.parametrize("filters, needle", [
    (("--clause", "nonexistent"), "--clause 'nonexistent'"),
    (("-k", "nomatch"), "-k nomatch"),
    (("--op", "hardshrink_backward", "--product", "atlas-inference"),
     "--product atlas-inference"),
])  # fmt: skip
def test_filters_that_select_nothing_are_a_usage_error(tmp_path, filters, needle):
    results = tmp_path / "r.jsonl"
    assert_one_line_error(conform("run", *filters, "--results", results), needle)
    no_file(results)


@pytest.mark.gates
def test_allow_empty_accepts_an_empty_run(tmp_path):
    results = tmp_path / "r.jsonl"
    proc = conform("run", "-k", "nomatch", "--allow-empty", "--results", results, "-q")
    assert_clean(proc, 0)
    assert "0 cases" in proc.stdout


@pytest.mark.gates
def test_an_empty_cases_directory_is_a_usage_error(tmp_path):
    (tmp_path / "empty").mkdir()
    proc = conform("run", "--cases", tmp_path / "empty", "--results", tmp_path / "r.jsonl")
    assert_one_line_error(proc, "select no case", "--cases")


@pytest.mark.gates
@pytest.mark.parametrize("backend", backend_names())
def test_an_unknown_backend_option_is_a_usage_error_for_every_backend(backend, tmp_path):
    results = tmp_path / "r.jsonl"
    proc = conform("run", "--backend", backend, "--backend-opt", "colour=red", "--results", results)
    assert_one_line_error(proc, "colour", f"--backend {backend}")
    no_file(results)


@pytest.mark.gates
@pytest.mark.parametrize("backend, option", [
    ("torch", ("--lib-dir", "/opt/cann")),
    ("reference", ("--exec-cmd", "harness")),
    ("reference", ("--device", "cuda")),
    ("jax", ("--device-id", "1")),
    ("exec", ("--lib-dir", "/opt/cann")),
    ("aclnn", ("--device", "npu")),
])  # fmt: skip
def test_an_option_of_another_backend_is_a_usage_error(backend, option, tmp_path):
    results = tmp_path / "r.jsonl"
    proc = conform("run", "--backend", backend, *option, "--results", results)
    assert_one_line_error(proc, f"{option[0]} does not apply to --backend {backend}")
    no_file(results)


# -- 3 and 4. the pytest plugin ----------------------------------------------------------------


def run_plugin(tmp_path, *args):
    return subprocess.run([sys.executable, "-m", "pytest", "--pyargs", "aclnn_conformance.conformance", "-q",
                           "-p", "no:cacheprovider", *args],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)  # fmt: skip


def cli_error(*args) -> str:
    proc = conform(*args)
    return proc.stderr.strip().removeprefix("Error: ")


@pytest.mark.gates
@pytest.mark.parametrize("plugin_args, cli_args, renames", [
    ((), None, {}),
    (("--aclnn-backend", "reference", "--aclnn-op", "elu_forward"), ("run", "--op", "elu_forward"),
     {"--op": "--aclnn-op"}),
    (("--aclnn-backend", "reference", "--aclnn-dtype", "f8"), ("run", "--dtype", "f8"),
     {"--dtype": "--aclnn-dtype"}),
    (("--aclnn-backend", "pytorch"), ("run", "--backend", "pytorch"),
     {"--backend": "--aclnn-backend"}),
    (("--aclnn-backend", "aclnn"), ("run", "--backend", "aclnn"),
     {"--backend": "--aclnn-backend"}),
    (("--aclnn-backend", "reference", "--aclnn-op", "hardshrink_backward",
      "--aclnn-product", "atlas-inference"),
     ("run", "--op", "hardshrink_backward", "--product", "atlas-inference"),
     {"--op": "--aclnn-op", "--product": "--aclnn-product",
      "--allow-empty": "--aclnn-allow-empty"}),
])  # fmt: skip
def test_plugin_usage_errors_stop_the_session_with_the_clis_message(tmp_path, plugin_args,
                                                                     cli_args, renames):  # fmt: skip
    t0 = time.perf_counter()
    p = run_plugin(tmp_path, *plugin_args)
    assert p.returncode == 4, p.stdout + p.stderr
    out = p.stdout + p.stderr
    assert "Traceback" not in out and "passed" not in out and "failed" not in out
    errors = [x for x in p.stderr.splitlines() if x.startswith("ERROR: ")]
    assert len(errors) == 1, p.stderr
    if cli_args is None:
        assert "--aclnn-backend" in errors[0]
    else:
        want = cli_error(*cli_args)
        for cli_name, plugin_name in renames.items():
            want = want.replace(cli_name, plugin_name)
        assert errors[0] == f"ERROR: {want}"
    assert time.perf_counter() - t0 < 60


# -- 5. results that say where they came from (resume; merge: tests/test_provenance.py) --------


@pytest.mark.gates
def test_resume_refuses_another_run_unless_forced(tmp_path):
    results = tmp_path / "r.jsonl"
    assert_clean(conform("run", *LEAKY, "--max-cases", "10", "--results", results, "-q"), 0)
    meta = json.loads(Path(str(results) + ".meta.json").read_text())
    before = results.read_text()
    proc = conform("run", *LEAKY, "--max-cases", "10", "--results", results, "--resume",
                   "--seed", "5")  # fmt: skip
    assert_one_line_error(proc, "seed", "--force")
    assert results.read_text() == before
    assert json.loads(Path(str(results) + ".meta.json").read_text()) == meta
    proc = conform("run", *LEAKY, "--max-cases", "12", "--results", results, "--resume",
                   "--seed", "5", "--force", "-q")  # fmt: skip
    assert_clean(proc, 0)
    assert "warning: --force" in proc.stderr
    mixed = json.loads(Path(str(results) + ".meta.json").read_text())["mixed"]
    assert sorted(mixed["seed"]) == [0, 5]


# -- 6. exit codes -------------------------------------------------------------------------------


@pytest.mark.gates
@pytest.mark.parametrize("args, needle", [
    (("--seed", "-1"), "--seed"),
    (("--backend", "torch", "--device", "tpu"), "--device 'tpu'"),
    (("--backend", "exec"), "--exec-cmd"),
    (("--backend", "reference", "--backend-opt", "device=cuda"), "does not apply"),
    (("--max-case-bytes", "lots"), "--max-case-bytes"),
    (("--force",), "--force applies only with --resume"),
])  # fmt: skip
def test_bad_option_values_are_usage_errors_before_any_results_file(tmp_path, args, needle):
    results = tmp_path / "r.jsonl"
    proc = conform("run", *args, "--results", results)
    assert_clean(proc, 2)
    assert needle in proc.stderr and "internal error" not in proc.stderr
    no_file(results)


def _terminal_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _signal_state(pid: int) -> str:
    """Each thread's blocked, ignored and caught signal masks (SIGINT is bit 1), for a failure."""
    out = []
    for status in sorted(Path(f"/proc/{pid}/task").glob("*/status")):
        try:
            text = status.read_text()
        except OSError:
            continue
        fields = dict(ln.split(":", 1) for ln in text.splitlines() if ln.startswith("Sig"))
        out.append(
            f"{status.parent.name}: "
            + " ".join(
                f"{k}={fields[k].strip()}" for k in ("SigBlk", "SigIgn", "SigCgt") if k in fields
            )
        )
    return "; ".join(out)


@pytest.mark.gates
def test_ctrl_c_exits_130_and_says_how_to_resume(env, tmp_path):
    results = tmp_path / "r.jsonl"
    exe = Path(sys.executable).with_name("aclnn-conform")
    cmd = [str(exe), "run", "--backend", "slow", *LEAKY, "--results", str(results), "-j", "2"]
    # 1 s a case: the run cannot finish before the signal however loaded the machine, and the
    # chunks in flight when it comes (24 cases a worker, 24 s) must not be waited for
    # The child starts as under a terminal: SIGINT at its default and unblocked. A child of a
    # pytest-xdist worker once ran all its cases through the signal (1 run in 3 under load),
    # as a process that inherits SIGINT ignored or blocked does; the state is reported below.
    p = subprocess.Popen(cmd, cwd=REPO, env={**env, "NO_COLOR": "1", "GATE_SLOW_S": "1.0"},
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         stdin=subprocess.DEVNULL, preexec_fn=_terminal_sigint,
                         start_new_session=True)  # fmt: skip
    deadline = time.time() + 120
    while time.time() < deadline and (not results.exists() or results.stat().st_size < 2000):
        time.sleep(0.1)
    state = _signal_state(p.pid)
    p.send_signal(signal.SIGINT)
    sent = time.monotonic()
    try:
        out, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)  # its workers too, which hold the pipes open
        out, err = p.communicate()
        raise AssertionError(
            f"the run went on after SIGINT; its signal state then: {state}"
        ) from None
    assert p.returncode == 130, out + err + state
    assert time.monotonic() - sent < 12, "Ctrl-C waited for the cases in flight"
    assert "Traceback" not in out + err
    assert "interrupted after" in err and "--resume" in err and str(results) in err
    done = read_jsonl(results)
    assert 0 < len(done) < 300
    proc = conform("run", "--backend", "slow", *LEAKY, "--results", results, "--resume", "-q",
                   env=env, timeout=300)  # fmt: skip
    assert_clean(proc, 0)
    ids = [r["id"] for r in read_jsonl(results)]
    listed = conform("cases", "list", *LEAKY).stdout.split()
    assert len(ids) == len(set(ids)) and set(ids) == set(listed)


@pytest.mark.gates
def test_fail_fast_says_it_stopped_and_how_many_did_not_run(env, tmp_path):
    results = tmp_path / "r.jsonl"
    proc = conform("run", "--backend", "raising", "--op", "hardshrink_backward", "--product",
                   "atlas-a2", "--fail-fast", "--results", results, "-q", env=env)  # fmt: skip
    assert_clean(proc, 1)
    ran = len(read_jsonl(results))
    total = len(conform("cases", "list", "--op", "hardshrink_backward", "--product",
                        "atlas-a2").stdout.split())  # fmt: skip
    assert f"{total - ran} of {total} selected cases did not run" in proc.stderr


@pytest.mark.gates
def test_quiet_still_prints_the_totals(tmp_path):
    proc = conform("run", *LEAKY, "--max-cases", "15", "--results", tmp_path / "r.jsonl", "-q")
    assert_clean(proc, 0)
    assert proc.stdout.splitlines()[0].startswith("reference: 15 cases in ")
    assert "pass 15" in proc.stdout.splitlines()[0]


# -- 7. resource bounds on untrusted case directories ------------------------------------------


def hostile_case(root: Path) -> Path:
    """A leaky_relu case whose views are broadcast (stride 0) over one element: 10^12 each."""
    import numpy as np

    d = root / "hostile"
    d.mkdir(parents=True)
    for name in ("gradOutput", "self", "out"):
        np.save(d / f"{name}.npy", np.zeros(1, dtype=np.float32))
    tensor = {"kind": "tensor", "dtype": "FLOAT", "shape": [1_000_000, 1_000_000],
              "strides": [0, 0], "offset": 0}  # fmt: skip
    case = {"format": 1, "id": "hostile", "op": "aclnnLeakyReluBackward", "product": "atlas-a2",
            "kind": "positive", "expected_status": 0, "clauses": [],
            "args": {"gradOutput": {**tensor, "storage": "gradOutput.npy"},
                     "self": {**tensor, "storage": "self.npy"},
                     "negativeSlope": {"kind": "scalar", "dtype": "FLOAT", "value": 0.5},
                     "selfIsResult": {"kind": "bool", "value": False},
                     "out": {**tensor, "storage": "out.npy"}}}  # fmt: skip
    (d / "case.json").write_text(json.dumps(case), encoding="utf-8")
    return root


@pytest.mark.large
def test_a_case_declaring_10_to_the_12_elements_is_refused_before_allocating(tmp_path):
    root = hostile_case(tmp_path / "cases")
    results = tmp_path / "r.jsonl"
    exe = str(Path(sys.executable).with_name("aclnn-conform"))
    probe = ("import resource, subprocess, sys; p = subprocess.run(sys.argv[1:]); "
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(p.returncode)")  # fmt: skip
    p = subprocess.run([sys.executable, "-c", probe, exe, "run", "--cases", str(root),
                        "--results", str(results), "-q"], cwd=REPO, capture_output=True,
                       text=True, timeout=120, env={**os.environ, "NO_COLOR": "1"})  # fmt: skip
    assert p.returncode == 1, p.stdout + p.stderr
    assert "Traceback" not in p.stdout + p.stderr
    (rec,) = read_jsonl(results)
    assert rec["verdict"] == "error"
    assert "1,000,000,000,000 elements" in rec["reason"] and "--max-case-bytes" in rec["reason"]
    peak_kib = int(p.stdout.strip().splitlines()[-1])
    assert peak_kib < 500 * 1024, f"peak RSS {peak_kib / 1024:.0f} MiB"


@pytest.mark.gates
def test_max_case_bytes_is_the_budget(tmp_path):
    results = tmp_path / "r.jsonl"
    # the budget counts each view's bytes and each output once more (the backend's copy): a 3x5
    # FLOAT case needs 60 + 60 + 2 x 60 bytes
    proc = conform("run", *LEAKY, "-k", "shape=", "--max-case-bytes", "200", "--results", results,
                   "-q")  # fmt: skip
    assert_clean(proc, 1)
    recs = read_jsonl(results)
    assert recs and all(r["verdict"] == "error" and "above --max-case-bytes 200 B" in r["reason"]
                        for r in recs if r["verdict"] != "pass")  # fmt: skip
    assert any(r["verdict"] == "error" for r in recs)
