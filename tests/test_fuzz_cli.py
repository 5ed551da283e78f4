"""Fuzzing the real CLI (issue 22): mutated case directories (JSON fields, .npy headers, sizes,
file types), specs (YAML fields), expectations files and command-line options go through
`aclnn-conform` in this process (click's CliRunner; a few real subprocesses too). Whatever the
input, the CLI must answer within a time limit, print no traceback and no internal error, and
exit 0, 1, 2 or 3, never 0 when a judged case failed.

Reproducible: hypothesis runs derandomized (a fixed sequence of examples) without a database.
The default tier takes well under a minute; `-m slow` runs the long profile and prints how many
inputs were tried and what came of them (the counts the issue's closing note asks for).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from aclnn_conformance import specs
from aclnn_conformance.cli.main import main
from aclnn_conformance.conformance.judge.verdicts import BROKEN, FAILING
from aclnn_conformance.conformance.spec import registry as registry_mod
from aclnn_conformance.conformance.spec.lint import lint_file
from aclnn_conformance.conformance.spec.registry import load_spec as real_load_spec
from click.testing import CliRunner
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.support.runcli import REPO

HAND = Path(__file__).parent / "data" / "cases" / "hand"
VICTIM = "leaky-slope-half"  # the case the mutations hit
WITNESS = "hardshrink-strided"  # an untouched case: it must still run and pass
RELU = (specs.root() / "ops" / "relu.yaml").read_text(encoding="utf-8")
DEADLINE_S = 60.0  # one CLI invocation; a hang fails the test instead of blocking the suite

STATS: Counter = Counter()  # inputs tried and outcomes, per fuzz target (printed by the slow tier)


def profile(default: int, slow: int):
    """hypothesis settings of one tier: derandomized, no example database, no deadline (the
    CLI's own time is bounded by DEADLINE_S)."""
    return settings(
        max_examples=slow if os.environ.get("ACLNN_FUZZ_SLOW") else default,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )


# -- running the CLI, bounded -------------------------------------------------------------------


class Hang(BaseException):
    """Raised by the alarm: not an Exception, so the CLI cannot turn it into an exit code."""


@contextlib.contextmanager
def deadline(seconds: float):
    def ring(signum, frame):
        raise Hang(f"no answer within {seconds} s")

    old = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@contextlib.contextmanager
def _scratch_cwd():
    old = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="aclnn-fuzz-") as d:
        os.chdir(d)
        try:
            yield
        finally:
            os.chdir(old)


def _runner() -> CliRunner:
    try:
        return CliRunner(mix_stderr=False)
    except TypeError:
        return CliRunner()


def cli(target: str, *args: Any) -> tuple[int, str]:
    """Run the CLI in this process; check the universal promises; return (exit code, output)."""
    t0 = time.perf_counter()
    with deadline(DEADLINE_S), _scratch_cwd():  # a relative path an option names lands there
        r = _runner().invoke(main, [str(a) for a in args], catch_exceptions=True)
    STATS[f"{target}: seconds"] += time.perf_counter() - t0
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise AssertionError(f"exception escaped the CLI: {r.exception!r}") from r.exception
    out = r.output  # stdout and stderr as the user sees them (click >= 8.2)
    with contextlib.suppress(ValueError, AttributeError):  # older click: stderr kept apart
        out += "" if r.stderr in out else r.stderr
    check_output(out, r.exit_code, args)
    STATS[f"{target}: inputs"] += 1
    STATS[f"{target}: exit {r.exit_code}"] += 1
    return r.exit_code, out


def check_output(out: str, code: int, args) -> None:
    assert "Traceback" not in out, (args, out[-3000:])
    assert code in (0, 1, 2, 3), (args, code, out[-3000:])
    assert "internal error" not in out, (args, out[-3000:])


def check_results(results: Path, code: int, target: str, strict: bool = False) -> list[dict]:
    """Exit 0 is impossible when a judged case failed (or, under --strict, passed against its
    xfail expectation); counts the verdicts."""
    if not results.exists():
        return []
    recs = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines() if line]
    failing = [r for r in recs if r.get("verdict") in (FAILING if strict else BROKEN)]
    assert not (failing and code == 0), (target, failing[:3])
    for r in recs:
        STATS[f"{target}: verdict {r.get('verdict')}"] += 1
    return recs


@pytest.fixture(autouse=True)
def _fast_registry(monkeypatch):
    """Shipped spec files are parsed once per session, not once per CLI invocation (the CLI
    builds its registry anew each time; parsing 34 files would dominate the fuzz's time)."""
    shipped = {p.resolve() for p in (specs.root() / "ops").glob("*.yaml")}

    def load_spec(path):
        p = Path(path).resolve()
        if p in shipped:
            return _shipped(str(p))
        return real_load_spec(path)

    monkeypatch.setattr(registry_mod, "load_spec", load_spec)


_SHIPPED: dict[str, Any] = {}


def _shipped(path: str):
    if path not in _SHIPPED:
        _SHIPPED[path] = real_load_spec(path)
    return _SHIPPED[path]


# -- values a hostile file holds -----------------------------------------------------------------

DEEP = "__deep__"  # replaced by 20,000 nested brackets after json.dumps
HOSTILE = [None, True, False, 0, -1, 1, 3, 2**31, 2**63, 2**64, 10**30, -(2**63), 0.0, -0.0,
           0.5, 3.9, 1e308, float("inf"), float("-inf"), float("nan"), "", "x", "nan", "inf",
           "FLOAT", "BF16", "INT4", "STRING", "bits", "native", "ND", "../x.npy", "/etc/passwd",
           "self.npy", "out.npy", "a" * 5000, "\x00", "é", [], {}, [0], [0, 0], [1, 1], [2, 2],
           [4], [-1], [3.9, 5], ["4"], [True], [10**12], [1] * 70, {"re": 1, "im": 2},
           {"re": "nan", "im": 0}, {"kind": "python"}, DEEP]  # fmt: skip
values = st.one_of(
    st.sampled_from(HOSTILE),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.lists(st.integers(-2, 9), max_size=9),
)


def _dump_json(meta: Any) -> str:
    text = json.dumps(meta)
    return text.replace(json.dumps(DEEP), "[" * 20_000 + "]" * 20_000)


# -- case directories ----------------------------------------------------------------------------

TENSORS = ("self", "gradOutput", "out")
FIELDS = [("format",), ("id",), ("op",), ("product",), ("kind",), ("clauses",),
          ("expected_status",), ("seed",), ("args",), ("args", "negativeSlope", "value"),
          ("args", "negativeSlope", "dtype"), ("args", "negativeSlope", "kind"),
          ("args", "selfIsResult", "value"), ("args", "selfIsResult", "kind"),
          ("args", "extra")]  # fmt: skip
FIELDS += [("args", t, f) for t in TENSORS for f in ("kind", "dtype", "shape", "strides",
                                                     "offset", "format", "storage",
                                                     "encoding", "sha256")]  # fmt: skip
FIELDS += [("args", t) for t in TENSORS]
DESCRS = ["<f4", "<f8", "|u1", "<u4", "<u2", "|O", "<V4", ">f4", "<c8", "|b1", "<i8", "<U3"]
SHAPES = ["(4,)", "(0,)", "(5,)", "(1099511627776,)", "(2, 2)", "()", "(-1,)", "(4, )",
          "'4'", "(4.0,)", "(2**62,)", "None", "[4]"]  # fmt: skip
KINDS = ["fifo", "dir", "dev-zero", "outside-link", "empty", "sparse-2g", "garbage"]


@st.composite
def json_mutation(draw):
    path = draw(st.sampled_from(FIELDS))
    if draw(st.integers(0, 5)) == 0:
        return ("delete", path, None)
    if path[-1] in ("shape", "strides") and draw(st.booleans()):
        # an element of the list rather than the list
        return ("item", path, (draw(st.integers(0, 3)), draw(values)))
    return ("set", path, draw(values))


@st.composite
def npy_mutation(draw):
    target = draw(st.sampled_from(TENSORS))
    if draw(st.integers(0, 3)) == 0:
        return ("garbage", target, draw(st.binary(max_size=200)))
    header = (draw(st.sampled_from(DESCRS)), draw(st.booleans()), draw(st.sampled_from(SHAPES)))
    data = draw(st.sampled_from([0, 4, 15, 16, 17, 32, 1000]))
    return ("header", target, (header, data, draw(st.booleans())))


@st.composite
def file_mutation(draw):
    target = draw(st.sampled_from(["case.json", "self.npy", "out.npy"]))
    return ("file", target, draw(st.sampled_from(KINDS)))


case_mutations = st.lists(st.one_of(json_mutation(), npy_mutation(), file_mutation()),
                          min_size=1, max_size=4)  # fmt: skip


def _set(meta: Any, path: tuple, value: Any, delete: bool = False) -> None:
    node = meta
    for key in path[:-1]:
        if not isinstance(node, dict) or key not in node:
            return
        node = node[key]
    if not isinstance(node, dict):
        return
    if delete:
        node.pop(path[-1], None)
    else:
        node[path[-1]] = value


def _npy(descr: str, fortran: bool, shape: str) -> bytes:
    text = f"{{'descr': {descr!r}, 'fortran_order': {fortran}, 'shape': {shape}, }}"
    text += " " * (63 - (len(text) + 10) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text.encode("latin1")


def apply_case_mutations(case: Path, outside: Path, muts: list) -> None:
    meta_path = case / "case.json"
    for kind, target, arg in muts:
        if kind in ("set", "delete", "item"):
            if not meta_path.is_file() or meta_path.is_symlink():
                continue
            try:
                meta = json.loads(meta_path.read_text(encoding="utf-8"))
            except ValueError:
                continue
            if kind == "item":
                i, v = arg
                node = meta
                for key in target:
                    node = node.get(key) if isinstance(node, dict) else None
                if isinstance(node, list) and node:
                    node[i % len(node)] = v
            else:
                _set(meta, target, arg, delete=kind == "delete")
            meta_path.write_text(_dump_json(meta), encoding="utf-8")
        elif kind in ("garbage", "header"):
            f = case / f"{target}.npy"
            if f.is_symlink() or (f.exists() and not f.is_file()):
                continue
            if kind == "garbage":
                f.write_bytes(arg)
                fix_sum = False
            else:
                (descr, fortran, shape), n, fix_sum = arg
                f.write_bytes(_npy(descr, fortran, shape) + bytes(range(256))[:n] * 1)
            if fix_sum and meta_path.is_file() and not meta_path.is_symlink():
                import hashlib

                with contextlib.suppress(ValueError, KeyError, TypeError, AttributeError):
                    meta = json.loads(meta_path.read_text(encoding="utf-8"))
                    meta["args"][target]["sha256"] = hashlib.sha256(f.read_bytes()).hexdigest()
                    meta_path.write_text(_dump_json(meta), encoding="utf-8")
        else:  # replace a file by something else
            f = case / target
            if f.is_dir() and not f.is_symlink():
                shutil.rmtree(f)
            elif f.exists() or f.is_symlink():
                f.unlink()
            if arg == "fifo":
                os.mkfifo(f)
            elif arg == "dir":
                f.mkdir()
            elif arg == "dev-zero":
                f.symlink_to("/dev/zero")
            elif arg == "outside-link":
                f.symlink_to(outside)
            elif arg == "empty":
                f.write_bytes(b"")
            elif arg == "sparse-2g":
                with open(f, "wb") as fh:
                    fh.write(_npy("<f4", False, f"({(2 << 30) // 4},)"))
                    fh.truncate(128 + (2 << 30))
            else:
                f.write_bytes(b"\xff\xfe garbage \x00" * 10)


def _case_tree(tmp: Path) -> tuple[Path, Path]:
    root = tmp / "cases"
    shutil.copytree(HAND, root)
    outside = tmp / "outside.bin"
    outside.write_bytes(b"secret")
    return root, outside


def run_cases(tmp: Path, root: Path, target: str, *extra: Any) -> tuple[int, list[dict]]:
    results = tmp / "r.jsonl"
    code, out = cli(target, "run", "--cases", root, "--results", results, "-q",
                    "--max-case-bytes", "64M", *extra)  # fmt: skip
    recs = check_results(results, code, target)
    if code in (0, 1):
        assert Path(str(results) + ".meta.json").exists(), out
        by_id = {r["id"]: r for r in recs}
        # a hostile case is that case's error: the untouched one still ran, and passed
        assert by_id.get(WITNESS, {}).get("verdict") == "pass", (out[-2000:], by_id.keys())
    return code, recs


@pytest.mark.gates
@profile(default=12, slow=400)
@given(case_mutations)
def test_fuzz_case_directories(tmp_path_factory, muts):
    tmp = tmp_path_factory.mktemp("fz")
    root, outside = _case_tree(tmp)
    apply_case_mutations(root / VICTIM, outside, muts)
    code, recs = run_cases(tmp, root, "cases")
    assert code in (0, 1), code  # never a usage error: a bad case is a verdict
    victim = [r for r in recs if r["id"] == VICTIM]
    assert len(victim) == 1
    STATS[f"cases: victim {victim[0]['verdict']}"] += 1


# -- specs ---------------------------------------------------------------------------------------

SPEC_BASE = RELU.replace("op: aclnnRelu\nname: relu\n", "op: aclnnReluFuzz\nname: relu_fuzz\n")
SPEC_BASE = SPEC_BASE.replace("  op: aclnnInplaceRelu\n  name: inplace_relu\n",
                              "  op: aclnnInplaceReluFuzz\n  name: inplace_relu_fuzz\n")  # fmt: skip
SPEC_DOC = yaml.safe_load(SPEC_BASE)


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


SPEC_PATHS = _paths(SPEC_DOC)
yaml_values = st.one_of(
    st.sampled_from([v for v in HOSTILE if v is not DEEP and v != "\x00"]),
    st.sampled_from([0, -1, 9, 1e-3, 1e308, ".nan", "self", "out", "ACLNN_ERR_PARAM_INVALID",
                     "x ** 2", "exp(self)", "self / 0", "FLOAT16", {"rel": float("nan")}]),
)  # fmt: skip


def _has(node: Any, key: Any) -> bool:
    if isinstance(node, dict):
        return key in node
    return isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node)


def _mutate_doc(doc: Any, muts: list, paths: list[tuple]) -> Any:
    """A copy of doc with, per mutation (index, value, delete), paths[index] set or deleted."""
    doc = json.loads(json.dumps(doc))
    for i, value, delete in muts:
        path = paths[i % len(paths)]
        node = doc
        for key in path[:-1]:
            node = node[key] if _has(node, key) else None
        last = path[-1]
        if _has(node, last):
            if delete:
                del node[last]
            else:
                node[last] = value
    return doc


spec_mutations = st.lists(st.tuples(st.integers(0, 10**6), yaml_values, st.booleans()),
                          min_size=1, max_size=3)  # fmt: skip


@profile(default=25, slow=600)
@given(spec_mutations)
def test_fuzz_spec_fields_lint_to_problems(muts):
    text = yaml.safe_dump(_mutate_doc(SPEC_DOC, muts, SPEC_PATHS), sort_keys=False,
                          allow_unicode=True)  # fmt: skip
    with deadline(DEADLINE_S):
        spec, problems = lint_file("fuzz.yaml", text)
    assert (spec is None) == bool(problems)
    for p in problems:
        assert p.line >= 1 and "\n" not in str(p.message)
    STATS["spec lint: inputs"] += 1
    STATS[f"spec lint: {'clean' if spec is not None else 'problems'}"] += 1


@profile(default=4, slow=120)
@given(spec_mutations)
def test_fuzz_specs_through_the_cli(tmp_path_factory, muts):
    folder = tmp_path_factory.mktemp("sp")
    text = yaml.safe_dump(_mutate_doc(SPEC_DOC, muts, SPEC_PATHS), sort_keys=False,
                          allow_unicode=True)  # fmt: skip
    (folder / "relu_fuzz.yaml").write_text(text, encoding="utf-8")
    code, out = cli("spec cli", "specs", "lint", folder / "relu_fuzz.yaml")
    assert code in (0, 1)
    spec, _ = lint_file(folder / "relu_fuzz.yaml")
    if spec is None or code != 0:
        return
    results = folder / "r.jsonl"
    code, out = cli("spec cli", "--specs", folder, "run", "--op", spec.name, "--max-cases", "4",
                    "--results", results, "-q", "--max-case-bytes", "64M", "--allow-empty")  # fmt: skip
    check_results(results, code, "spec cli")


# -- expectations ----------------------------------------------------------------------------

EXPECT = {
    "format": 1,
    "backend": "reference",
    "entries": [
        {"match": "relu/*", "kind": "xfail", "reason": "r"},
        {"match": "*", "message": "x", "kind": "waiver", "reason": "r", "expires": "2099-01-01"},
        {"match": "relu/atlas-a2/*", "kind": "skip", "reason": "r", "version": "*"},
    ],
}
EXPECT_PATHS = _paths(EXPECT)


@profile(default=6, slow=200)
@given(st.lists(st.tuples(st.integers(0, 10**6), yaml_values, st.booleans()), max_size=3),
       st.booleans())  # fmt: skip
def test_fuzz_expectations_files(tmp_path_factory, muts, strict):
    tmp = tmp_path_factory.mktemp("ex")
    doc = _mutate_doc(EXPECT, muts, EXPECT_PATHS)
    f = tmp / "e.yaml"
    f.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), encoding="utf-8")
    results = tmp / "r.jsonl"
    args = ["run", "--op", "relu", "--max-cases", "6", "--expectations", f, "--results", results,
            "-q"]  # fmt: skip
    code, out = cli("expectations", *args, *(["--strict"] if strict else []))
    check_results(results, code, "expectations", strict)


# -- command-line options ------------------------------------------------------------------------

OPTION_VALUES = ["", "0", "-1", "1", "3", "nan", "inf", "-inf", "1e400", "0.5", "1/0", "0/4",
                 "2/1", "1/4", "a/b", "4/4/4", "x" * 3000, "/dev/zero", "relu", "FLOAT", "f16",
                 "BOOL", "atlas-a2", "atlas-a9", "nope", "positive", "relu/positive-or-nan",
                 "64M", "1k", "2G", "reference", "torch", "exec", "KEY", "k=v", "é", "-",
                 "--op", "/tmp", "."]  # fmt: skip
RUN_OPTIONS = ["--max-case-bytes", "--shard", "--seed", "--timeout", "--max-cases", "-k",
               "--op", "--dtype", "--product", "--clause", "--backend", "--oracle",
               "--backend-opt", "--keep-outputs", "--expectations", "--device", "--exec-cmd"]  # fmt: skip
FILE_COMMANDS = [("report", "--json"), ("diff", None), ("merge", "-o")]


@profile(default=10, slow=300)
@given(st.lists(st.tuples(st.sampled_from(RUN_OPTIONS), st.sampled_from(OPTION_VALUES)),
                min_size=1, max_size=3))  # fmt: skip
def test_fuzz_run_options(tmp_path_factory, opts):
    tmp = tmp_path_factory.mktemp("op")
    results = tmp / "r.jsonl"
    args: list[Any] = ["run", "--op", "relu", "--max-cases", "4", "--results", results, "-q"]
    for name, value in opts:
        if name == "--keep-outputs" and value not in ("", "-"):
            value = str(tmp / "keep" / value[:50].replace("/", "_"))
        args += [name, value]
    code, out = cli("options", *args)
    check_results(results, code, "options")


@profile(default=6, slow=150)
@given(st.sampled_from(FILE_COMMANDS), st.sampled_from(["good", "empty", "garbage", "fifo",
                                                         "dev-zero", "dir", "nested", "huge-line",
                                                         "nan", "missing"]),
       st.sampled_from(OPTION_VALUES))  # fmt: skip
def test_fuzz_results_file_commands(tmp_path_factory, command, kind, value):
    name, flag = command
    # a readable file makes `report` compute the clause coverage of every op: seconds of CPU
    # that fuzz nothing; report meets the hostile kinds only
    assume(name != "report" or kind not in ("good", "nested", "huge-line", "nan"))
    tmp = tmp_path_factory.mktemp("rf")
    f = tmp / "r.jsonl"
    good = {"id": "relu/x", "op": "relu", "verdict": "fail", "reason": "r"}
    if kind == "good":
        f.write_text(json.dumps(good) + "\n")
    elif kind == "empty":
        f.write_text("")
    elif kind == "garbage":
        f.write_bytes(b"\xff\x00{not json\n" * 5)
    elif kind == "fifo":
        os.mkfifo(f)
    elif kind == "dev-zero":
        f.symlink_to("/dev/zero")
    elif kind == "dir":
        f.mkdir()
    elif kind == "nested":
        f.write_text("[" * 100_000 + "\n" + json.dumps(good) + "\n")
    elif kind == "huge-line":
        f.write_text('{"id": "' + "x" * (17 << 20) + '"}\n' + json.dumps(good) + "\n")
    elif kind == "nan":
        f.write_text(json.dumps({**good, "stats": {"max_ulp": float("nan")}}) + "\n")
    if name == "report":
        args = ["report", f, "--json", tmp / "o.json"]
    elif name == "diff":
        args = ["diff", f, f, "--threshold", value if value not in ("", "-") else "0.1"]
    else:
        args = ["merge", f, "-o", tmp / "m.jsonl"]
    code, out = cli("results files", *args)
    if kind in ("fifo", "dev-zero", "dir", "missing", "empty", "garbage"):
        assert code == 2, (args, out)


# -- a few real processes ------------------------------------------------------------------------


@pytest.mark.gates
def test_fuzz_real_process_on_a_tree_of_hostile_cases(tmp_path):
    """Many mutated copies of one case in one tree, run by a real `aclnn-conform` process."""
    root, outside = _case_tree(tmp_path)
    variants = [
        [("file", "case.json", "fifo")],
        [("file", "self.npy", "dev-zero")],
        [("file", "self.npy", "sparse-2g")],
        [("set", ("args", "self", "offset"), float("inf"))],
        [("set", ("args",), DEEP)],
        [("header", "self", (("<f4", False, "(1099511627776,)"), 16, True))],
        [("set", ("args", "out", "strides"), [0])],
        [("set", ("args", "self", "shape"), [3.9])],
        [("set", ("args", "negativeSlope", "value"), {"re": 1, "im": 2})],
        [("file", "case.json", "outside-link")],
    ]
    for i, muts in enumerate(variants):
        d = root / f"v{i:02d}"
        shutil.copytree(HAND / VICTIM, d)
        apply_case_mutations(d, outside, muts)
    results = tmp_path / "r.jsonl"
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"}
    env.pop("ACLNN_CONFORM_DEBUG", None)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "aclnn_conformance.cli.main", "run", "--cases", root, "--results",
                           results, "-q"], capture_output=True, text=True, timeout=180,
                          stdin=subprocess.DEVNULL, env=env, cwd=REPO)  # fmt: skip
    elapsed = time.perf_counter() - t0
    out = proc.stdout + proc.stderr
    check_output(out, proc.returncode, "subprocess")
    assert proc.returncode == 1, out
    recs = {r["id"]: r for r in map(json.loads, results.read_text().splitlines())}
    assert recs[WITNESS]["verdict"] == recs[VICTIM]["verdict"] == "pass"
    assert all(recs[f"v{i:02d}"]["verdict"] == "error" for i in range(len(variants))), recs
    assert elapsed < 120


@pytest.mark.gates
def test_fuzz_real_process_with_a_fifo_spec_and_a_device_expectations(tmp_path):
    folder = tmp_path / "specs"
    folder.mkdir()
    os.mkfifo(folder / "x.yaml")
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"}
    for args in (["--specs", folder, "run", "--op", "relu", "-q"],
                 ["run", "--op", "relu", "--expectations", "/dev/zero", "-q"]):  # fmt: skip
        proc = subprocess.run([sys.executable, "-m", "aclnn_conformance.cli.main", *map(str, args)],
                              capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path,
                              stdin=subprocess.DEVNULL)  # fmt: skip
        check_output(proc.stdout + proc.stderr, proc.returncode, args)
        assert proc.returncode == 2 and "not a regular file" in proc.stderr


# -- the long profile ----------------------------------------------------------------------------


@pytest.mark.slow
def test_fuzz_long_profile_counts(request, tmp_path):
    """The fuzz targets above with the long profile (run in a child pytest with
    ACLNN_FUZZ_SLOW=1), then the count of inputs tried and of each outcome. Runs only when
    selected: `pytest -m slow tests/test_fuzz_cli.py -s` (about 30 minutes on 2 cores)."""
    if "slow" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("the long fuzz profile runs with -m slow")
    env = {**os.environ, "ACLNN_FUZZ_SLOW": "1", "PYTHONPATH": str(REPO)}
    report = tmp_path / "fuzz-counts.json"
    env["ACLNN_FUZZ_REPORT"] = str(report)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p",
                           "no:cacheprovider", __file__, "-k", "fuzz and not long_profile"],
                          capture_output=True, text=True, timeout=3600, env=env, cwd=REPO)  # fmt: skip
    print(proc.stdout[-3000:])
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]
    counts = json.loads(report.read_text())
    for key in sorted(counts):
        print(f"{key}: {counts[key]:.1f}" if "seconds" in key else f"{key}: {counts[key]}")
    assert sum(v for k, v in counts.items() if k.endswith(": inputs")) > 1000


def teardown_module(module):
    path = os.environ.get("ACLNN_FUZZ_REPORT")
    if path:
        Path(path).write_text(json.dumps(dict(STATS), indent=1, sort_keys=True))
    elif STATS:
        print("\nfuzz:", ", ".join(f"{k}={v:.0f}" for k, v in sorted(STATS.items())))
