"""The processes a run starts are bounded: they die with it, stop on a signal with the meta
written, keep to --timeout and --max-memory, and -j is capped (issue 22, points 13, 17, 18)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from aclnn_conformance.conformance.run import config, limits

from tests.support.runcli import REPO, _exe, assert_clean, assert_one_line_error, conform

PY = sys.executable
SLOW_HARNESS = """
import json, os, sys, time
time.sleep(0.3)
json.dump({"status": 161002, "message": "no"}, open(os.path.join(sys.argv[-1], "result.json"), "w"))
"""


def _env() -> dict[str, str]:
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("ACLNN_CONFORM_DEBUG", None)
    return env


def _as_under_a_terminal() -> None:
    """SIGINT at its default and unblocked, whatever the test runner left (an xdist worker may
    ignore it: a child would inherit that)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})


def _start(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    """A run in a session of its own: a signal to its group reaches it as a terminal's would."""
    return subprocess.Popen([*_exe(), "run", *args], cwd=cwd, env=env or _env(), text=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True,
                            preexec_fn=_as_under_a_terminal)  # fmt: skip


def _wait_for_records(results: Path, proc: subprocess.Popen, n: int = 1, limit: float = 120):
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if results.exists() and results.read_text().count("\n") >= n:
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    pytest.fail(f"no {n} records in {limit} s")


def _descendants(pid: int) -> set[int]:
    found, todo = set(), [pid]
    while todo:
        p = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except FileNotFoundError:
            continue
        for t in tasks:
            try:
                with open(f"/proc/{p}/task/{t}/children") as f:
                    kids = {int(k) for k in f.read().split()}
            except (FileNotFoundError, ProcessLookupError):
                continue
            todo += list(kids - found)
            found |= kids
    return found


def _alive(pid: int) -> bool:
    """Running, not a zombie (an orphan's zombie waits for a reaper, which a container lacks)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[-1].split()[0] not in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):
        return False


# -- point 18: a dead parent takes its workers with it; SIGTERM and SIGINT -------------------------


@pytest.mark.gates
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and PR_SET_PDEATHSIG")
def test_kill_9_of_the_parent_takes_every_worker_with_it(tmp_path):
    """-j 2 with exec: the pool workers, their isolated backend workers and the harnesses."""
    (tmp_path / "slow.py").write_text(SLOW_HARNESS)
    results = tmp_path / "r.jsonl"
    proc = _start(["-j", "2", "--backend", "exec", "--exec-cmd", f"{PY} {tmp_path / 'slow.py'}",
                   "--op", "relu", "--results", str(results), "-q"], tmp_path)  # fmt: skip
    try:
        _wait_for_records(results, proc, 2)
        tree = _descendants(proc.pid)
        assert len(tree) >= 4, tree  # two pool workers and their two isolated workers at least
        proc.kill()
        proc.wait()
        end = time.monotonic() + 10
        while time.monotonic() < end and any(_alive(p) for p in tree):
            time.sleep(0.1)
        assert not [p for p in tree if _alive(p)], "workers outlived a kill -9 of the run"
    finally:
        for p in _descendants(proc.pid) if proc.poll() is None else ():
            os.kill(p, signal.SIGKILL)
        proc.kill()
        proc.communicate()


@pytest.mark.gates
@pytest.mark.parametrize("sig, code, group, backend", [
    (signal.SIGTERM, 143, False, "reference"),  # `kill PID`, a CI job's cancel
    (signal.SIGINT, 130, True, "exec"),  # Ctrl-C in a terminal: the whole process group
])  # fmt: skip
def test_a_signal_stops_the_run_with_its_meta_and_the_resume_hint(
    tmp_path, sig, code, group, backend
):
    """Before: SIGTERM wrote no meta, and Ctrl-C printed a BrokenPipeError traceback from each
    isolated worker after the resume hint."""
    (tmp_path / "slow.py").write_text(SLOW_HARNESS)
    results = tmp_path / "r.jsonl"
    which = ["--backend", "exec", "--exec-cmd", f"{PY} {tmp_path / 'slow.py'}", "--op", "relu"]
    proc = _start(["-j", "2", "--results", str(results), "-q",
                   *(which if backend == "exec" else [])], tmp_path)  # fmt: skip
    _wait_for_records(results, proc, 5)
    workers = _descendants(proc.pid)
    if group:
        os.killpg(proc.pid, sig)
    else:
        proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert "Traceback" not in out + err and "Error" not in err, err
    assert "Resume with: " in err and "--resume" in err
    meta = json.loads((tmp_path / "r.jsonl.meta.json").read_text())
    assert meta["run"] >= 5 and meta["cases"] > meta["run"]
    lines = results.read_text().splitlines()
    assert all(json.loads(line)["id"] for line in lines)
    end = time.monotonic() + 10
    while time.monotonic() < end and any(_alive(p) for p in workers):
        time.sleep(0.1)
    assert not [p for p in workers if _alive(p)]


@pytest.mark.gates
def test_jobs_are_capped_with_a_message(tmp_path):
    cap = config.JOBS_PER_CPU * config.cpu_count()
    assert config.checked_jobs(cap) == (cap, "")
    jobs, why = config.checked_jobs(1000)
    assert jobs == cap and "-j 1000: capped to" in why
    results = tmp_path / "r.jsonl"
    proc = conform("run", "-j", "1000", "--op", "relu", "-k", "/f32/", "--max-cases", "3",
                   "--results", results, "-q")  # fmt: skip
    assert_clean(proc, 0)
    assert f"--jobs 1000: capped to {cap} workers" in proc.stderr  # the option, by its name
    assert json.loads((tmp_path / "r.jsonl.meta.json").read_text())["jobs"] == cap


# -- --timeout and --max-memory are checked --------------------------------------------------------


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0", "-1", "soon"])
def test_a_timeout_that_is_no_bound_is_a_usage_error(tmp_path, value):
    proc = conform("run", "--op", "relu", "--timeout", value, "--results", tmp_path / "r")
    assert_clean(proc, 2)
    assert "--timeout" in proc.stderr and "positive, finite" in proc.stderr
    assert not (tmp_path / "r").exists()


@pytest.mark.gates
@pytest.mark.parametrize("value", ["inf", "nan", "0", "-5"])
def test_an_exec_timeout_that_is_no_bound_is_a_usage_error(tmp_path, value):
    proc = conform("run", "--backend", "exec", "--exec-cmd", PY, "--backend-opt",
                   f"timeout={value}", "--op", "relu", "--results", tmp_path / "r")  # fmt: skip
    assert_one_line_error(proc, "timeout must be a positive, finite number")


@pytest.mark.gates
@pytest.mark.parametrize("value", ["lots", "0", "-1G", "nanG", "inf", "10K"])
def test_a_bad_max_memory_is_a_usage_error(tmp_path, value):
    proc = conform("run", "--op", "relu", "--max-memory", value, "--results", tmp_path / "r")
    assert_one_line_error(proc, "--max-memory", "512M")


def test_memory_limits_parse_and_default():
    assert limits.parse_memory("512M") == 512 << 20
    assert limits.parse_memory("1.5GiB") == 3 << 29
    assert limits.parse_memory("none") is None and limits.parse_memory(None) is None
    assert limits.parse_memory(4 << 30) == 4 << 30
    total = limits.physical_memory()
    assert total > 0
    assert limits.default_memory(1) == max(limits.MIN_MEMORY, int(total * 0.75))
    assert limits.default_memory(64) == max(limits.MIN_MEMORY, int(total * 0.75) // 64)


REPORT_LIMIT = """
import json, os, resource, sys
soft = resource.getrlimit(resource.RLIMIT_DATA)[0]
json.dump({"status": 161002, "message": f"limit={soft}"},
          open(os.path.join(sys.argv[-1], "result.json"), "w"))
"""


@pytest.mark.gates
@pytest.mark.parametrize("isolate", ["--isolate", "--no-isolate"])
def test_an_exec_harness_runs_under_the_memory_limit(tmp_path, isolate):
    (tmp_path / "h.py").write_text(REPORT_LIMIT)
    results = tmp_path / "r.jsonl"
    proc = conform("run", "--backend", "exec", "--exec-cmd", f"{PY} {tmp_path / 'h.py'}",
                   isolate, "--max-memory", "1536M", "--op", "relu", "-k", "/f32/",
                   "--max-cases", "1", "--results", results, "-q")  # fmt: skip
    assert_clean(proc, 1)
    rec = json.loads(results.read_text().splitlines()[0])
    assert rec["message"] == f"limit={1536 << 20}"
    assert json.loads((tmp_path / "r.jsonl.meta.json").read_text())["max_memory"] == 1536 << 20


HOG = """
from aclnn_conformance.conformance.run.backend import Backend, Capabilities
from aclnn_conformance.reference.engine import evaluate

class Hog(Backend):
    name = "hog"
    capabilities = Capabilities(status="exact")

    def version(self):
        return "hog 0.0 (test fixture)"

    def execute(self, call):
        bytearray(3 << 30)  # 3 GiB, above the limit
        return evaluate(call)
"""


@pytest.mark.gates
def test_an_isolated_worker_over_the_memory_limit_costs_its_case_only(tmp_path):
    from tests.support.plugins import install_plugin

    env = install_plugin(tmp_path / "plug", "hog_backend", HOG, {"hog": "hog_backend:Hog"})
    results = tmp_path / "r.jsonl"
    proc = conform("run", "--backend", "hog", "--isolate", "--max-memory", "2G", "--op", "relu",
                   "-k", "/f32/", "--max-cases", "2", "--results", results, "-q", env=env)  # fmt: skip
    assert_clean(proc, 1)
    recs = [json.loads(line) for line in results.read_text().splitlines()]
    assert len(recs) == 2
    assert all(r["verdict"] == "error" and "MemoryError" in r["reason"] for r in recs), recs


# -- point 17: the exec harness is bounded ----------------------------------------------------------

CHATTY = """
import os, sys
block = b"x" * (1 << 20)
out = sys.stdout.buffer
out.write(b"FIRST-LINE\\n")
for _ in range({mib}):
    out.write(block)
out.write(b"\\nLAST-LINE\\n")
out.flush()
sys.stderr.write("E" * (1 << 20) + "\\nthe end of stderr\\n")
sys.exit(3)
"""

MEASURE = """
import sys, numpy as np
sys.path.insert(0, {repo!r})
from tests.support.rss import peak_kib
from aclnn_conformance.conformance.run.backends.exec_backend import ExecBackend, ExecHarnessError
from tests.test_backend_exec import leaky_call
try:
    ExecBackend(cmd={cmd!r}).execute(leaky_call([1.0], [1.0]))
except ExecHarnessError as exc:
    print(exc)
print(peak_kib())
"""


@pytest.mark.large
def test_a_harness_writing_1_5_gb_of_output_costs_no_memory(tmp_path):
    (tmp_path / "chatty.py").write_text(textwrap.dedent(CHATTY.format(mib=1536)))
    cmd = f"{PY} {tmp_path / 'chatty.py'}"
    script = textwrap.dedent(MEASURE.format(repo=str(REPO), cmd=cmd))
    t0 = time.monotonic()
    p = subprocess.run([PY, "-c", script], capture_output=True, text=True, timeout=300)
    took = time.monotonic() - t0
    assert p.returncode == 0, p.stderr
    message, rss_kib = p.stdout.strip().rsplit("\n", 1)
    assert "exited with status 3" in message and "the end of stderr" in message
    assert int(rss_kib) < 400 << 10, f"peak RSS {int(rss_kib) >> 10} MiB for 1.5 GB of output"
    assert took < 120


def test_bounded_keeps_both_ends_of_any_stream():
    from aclnn_conformance.conformance.run.backends.exec_backend import Bounded

    b = Bounded(keep=8)
    for chunk in (b"head", b"er-", b"middle" * 100, b"-the-tail"):
        b.add(chunk)
    text = b.value()
    assert text.startswith(b"header-m") and text.endswith(b"the-tail")
    assert b"bytes dropped" in text and len(b.head) == len(b.tail) == 8
    small = Bounded(keep=8)
    small.add(b"abc")
    assert small.value() == b"abc"


HANG = """
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
open({pidfile!r}, "a").write(f"{{os.getpid()}} {{child.pid}}\\n")
time.sleep(120)
"""


@pytest.mark.gates
@pytest.mark.parametrize("isolate", ["--isolate", "--no-isolate"])
def test_a_hanging_harness_is_stopped_at_the_case_timeout_with_everything_it_started(
    tmp_path, isolate
):
    """The harness's own timeout (50 s by default) is clipped to --timeout 2: the case is a
    timeout, the harness and its child are killed, the aclnn-exec-* folders are removed."""
    pidfile = tmp_path / "pids"
    (tmp_path / "hang.py").write_text(textwrap.dedent(HANG.format(pidfile=str(pidfile))))
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**_env(), "TMPDIR": str(tmp)}
    results = tmp_path / "r.jsonl"
    t0 = time.monotonic()
    proc = conform("run", "--backend", "exec", "--exec-cmd", f"{PY} {tmp_path / 'hang.py'}",
                   isolate, "--timeout", "2", "--op", "relu", "-k", "/f32/", "--max-cases", "2",
                   "--results", results, "-q", env=env)  # fmt: skip
    took = time.monotonic() - t0
    assert_clean(proc, 1)
    recs = [json.loads(line) for line in results.read_text().splitlines()]
    assert [r["verdict"] for r in recs] == ["timeout", "timeout"], recs
    assert all("timed out after" in r["reason"] for r in recs), recs
    assert recs[1]["durations"]["total"] < 2 + 2.5  # (the first also started the worker)
    pids = [int(p) for line in pidfile.read_text().splitlines() for p in line.split()]
    assert len(pids) == 4
    end = time.monotonic() + 5
    while time.monotonic() < end and any(_alive(p) for p in pids):
        time.sleep(0.1)
    assert not [p for p in pids if _alive(p)]
    assert sorted(p.name for p in tmp.iterdir()) == [], "temporary folders left behind"
    assert took < 60


# -- point 13: --timeout bounds the case ---------------------------------------------------------


def _big_case(n: int = 1 << 24):
    import numpy as np
    from aclnn_conformance.conformance.acl.call import TensorArg
    from aclnn_conformance.conformance.cases.generate import build, plan_op
    from aclnn_conformance.conformance.spec.registry import default_registry

    reg = default_registry()
    spec = reg.get("leaky_relu_backward")
    plan = next(p for p in plan_op(spec) if p.kind == "positive" and "/f32/" in p.id)
    case = build(spec, plan, 0)
    x = np.linspace(-3, 3, n)
    for name in ("gradOutput", "self"):
        case.call.args[name] = TensorArg.from_array(x, "FLOAT")
    case.call.args["out"] = TensorArg.empty_like_shape((n,), "FLOAT", fill=np.nan)
    return reg, spec, case


@pytest.fixture
def numpy_path(monkeypatch):
    from aclnn_conformance.reference import kernel

    monkeypatch.setenv("ACLNN_CONFORM_KERNEL", "numpy")  # the comparison's path
    old = kernel.set_mode("numpy")
    yield
    kernel.set_mode(old)


@pytest.mark.large
def test_a_large_case_over_the_timeout_is_a_timeout_in_bounded_time(numpy_path):
    """2^24 elements through the numpy path take 2.1 s to judge here (10^8: 14 s), on 2 busy
    cores; under --timeout 0.2 the reference as the backend stops between chunks (0.21 s)."""
    from aclnn_conformance.conformance.run.judging import judge
    from aclnn_conformance.reference.backend import ReferenceBackend

    reg, spec, case = _big_case()
    ref = ReferenceBackend(registry=reg)
    t0 = time.monotonic()
    judged = judge(spec, case, ref, ref, "reference", timeout=0.2)
    took = time.monotonic() - t0
    assert judged.verdict == "timeout", judged.reason
    assert "did not finish within 0.2 s" in judged.reason
    assert took < 0.2 + 1.0, took


def test_the_comparison_stops_at_the_timeout_too(numpy_path):
    """A backend that answers at once leaves the whole budget to the oracle's golden stream
    (the comparison alone takes 1.6 s unbounded here)."""
    import numpy as np
    from aclnn_conformance.conformance.acl.call import Outcome
    from aclnn_conformance.conformance.run.backend import Backend, Capabilities
    from aclnn_conformance.conformance.run.judging import judge
    from aclnn_conformance.reference.backend import ReferenceBackend

    reg, spec, case = _big_case()
    n = case.call.args["out"].storage.size

    class Instant(Backend):
        name = "instant"
        capabilities = Capabilities(reads_inputs_only=True)

        def execute(self, call):
            return Outcome(0, {"out": np.zeros(n, np.float32)}, "")

    t0 = time.monotonic()
    judged = judge(spec, case, Instant(registry=reg), ReferenceBackend(registry=reg),
                   "reference", timeout=0.3)  # fmt: skip
    took = time.monotonic() - t0
    assert judged.verdict == "timeout", judged.reason
    assert took < 0.3 + 1.0, took


@pytest.mark.gates
def test_a_backend_call_that_cannot_be_stopped_is_a_timeout_when_it_returns():
    from aclnn_conformance.conformance.cases.generate import build, plan_op
    from aclnn_conformance.conformance.run.backend import Backend, Capabilities
    from aclnn_conformance.conformance.run.judging import judge
    from aclnn_conformance.conformance.spec.registry import default_registry
    from aclnn_conformance.reference.backend import ReferenceBackend
    from aclnn_conformance.reference.engine import evaluate

    reg = default_registry()
    spec = reg.get("relu")
    case = build(spec, next(p for p in plan_op(spec) if p.kind == "positive"), 0)

    class Sleepy(Backend):
        name = "sleepy"
        capabilities = Capabilities(status="exact")

        def execute(self, call):
            time.sleep(0.6)
            return evaluate(call, reg)

    ref = ReferenceBackend(registry=reg)
    judged = judge(spec, case, Sleepy(registry=reg), ref, timeout=0.3)
    assert judged.verdict == "timeout" and "over --timeout 0.3 s" in judged.reason, judged.reason
    assert judge(spec, case, Sleepy(registry=reg), ref, timeout=5).verdict == "pass"
    # an oracle of the same kind, late: the case is over its time before the backend runs
    judged = judge(spec, case, ref, Sleepy(registry=reg), "sleepy", timeout=0.3)
    assert judged.verdict == "timeout" and "spent before the backend ran" in judged.reason


def _isolated_judge(oracle_isolated: bool) -> tuple[str, str, float]:
    from aclnn_conformance.conformance.run.isolation import IsolatedBackend
    from aclnn_conformance.conformance.run.judging import judge
    from aclnn_conformance.reference.backend import ReferenceBackend

    reg, spec, case = _big_case()
    iso = IsolatedBackend("reference", {}, 0.3, reg)
    try:
        oracle = iso if oracle_isolated else ReferenceBackend(registry=reg)
        t0 = time.monotonic()
        judged = judge(spec, case, iso, oracle, "reference", timeout=0.3)
        return judged.verdict, judged.reason, time.monotonic() - t0
    finally:
        iso.close()


@pytest.mark.gates
@pytest.mark.parametrize("oracle_isolated", [True, False])
def test_an_isolated_case_over_the_timeout_is_a_timeout_not_an_error(numpy_path, oracle_isolated):
    """--backend reference --isolate judged by itself (the oracle is then the isolated
    backend: it was 'oracle reference failed: BackendTimeout', an error) or by the reference."""
    verdict, reason, took = _isolated_judge(oracle_isolated)
    assert verdict == "timeout", reason
    assert "BackendTimeout" not in reason
    assert took < 60  # the 192 MB call travels to the worker: seconds on a busy machine
