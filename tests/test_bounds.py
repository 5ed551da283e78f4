"""Issue 22, "every input checked before it is read; a bad case is that case's error": one test
(or a parametrized family) per finding, named after it (p12, p14, p15, p16, p7, p21).

Expected values are derived by hand in the comments (or with math/numpy independently of the
code under test), never read back from the code's own output.
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
from aclnn_conformance import specs
from aclnn_conformance.cli.main import main
from aclnn_conformance.conformance.acl.call import Call, TensorArg
from aclnn_conformance.conformance.cases.casedir import (
    CaseFileError,
    find_cases,
    read_case,
    write_case,
)
from aclnn_conformance.conformance.cases.generate import build, plan_op
from aclnn_conformance.conformance.files import safeio
from aclnn_conformance.conformance.run import config
from aclnn_conformance.conformance.run.runner import case_bytes, over_budget, overlapping
from aclnn_conformance.conformance.spec import yamlpos
from aclnn_conformance.conformance.spec.lint import lint_file
from aclnn_conformance.conformance.spec.registry import default_registry
from aclnn_conformance.conformance.spec.tolerances import table_problems
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.runcli import conform

HAND = Path(__file__).parent / "data" / "cases" / "hand"
RELU = (specs.root() / "ops" / "relu.yaml").read_text(encoding="utf-8")


def _runner() -> CliRunner:
    try:
        return CliRunner(mix_stderr=False)
    except TypeError:  # click >= 8.2: stderr is always separate
        return CliRunner()


def cli(*args) -> tuple[int, str, str]:
    """`aclnn-conform ARGS` in this process: (exit code, stdout, stderr); an exception that
    escaped the CLI's own handling fails the test."""
    r = _runner().invoke(main, [str(a) for a in args], catch_exceptions=True)
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    assert "Traceback" not in r.output + r.stderr, r.output + r.stderr
    return r.exit_code, r.stdout, r.stderr


def _copy_hand(tmp_path: Path) -> Path:
    root = tmp_path / "cases"
    shutil.copytree(HAND, root)
    return root


def _edit(case: Path, change) -> None:
    meta = json.loads((case / "case.json").read_text())
    change(meta)
    (case / "case.json").write_text(json.dumps(meta))


def _records(path: Path) -> dict[str, dict]:
    return {r["id"]: r for r in map(json.loads, path.read_text().splitlines())}


def _npy_header(descr: str, n: int) -> bytes:
    h = io.BytesIO()
    np.lib.format.write_array_header_1_0(h, {"descr": descr, "fortran_order": False, "shape": (n,)})
    return h.getvalue()


# -- point 14: a hostile case directory is that case's error, never the run's end ------------------


def _hostile_tree(tmp_path: Path) -> Path:
    root = _copy_hand(tmp_path)  # leaky-slope-half and hardshrink-strided stay good
    for name in ("a-nested", "b-offset-inf", "c-npy-2e40", "d-fifo"):
        shutil.copytree(HAND / "leaky-slope-half", root / name)
    (root / "a-nested" / "case.json").write_text(
        '{"format": 1, "args": ' + "[" * 50_000 + "]" * 50_000 + "}"
    )
    # Python's json writes inf as the bare token Infinity, as the issue's file had it
    _edit(root / "b-offset-inf", lambda m: m["args"]["self"].update(offset=math.inf))
    npy = root / "c-npy-2e40" / "self.npy"
    npy.write_bytes(_npy_header("<f4", 1 << 40) + b"\0" * 16)
    _edit(root / "c-npy-2e40", lambda m: m["args"]["self"].pop("sha256"))
    (root / "d-fifo" / "case.json").unlink()
    os.mkfifo(root / "d-fifo" / "case.json")
    return root


@pytest.mark.gates
def test_p14_hostile_case_directories_are_their_cases_errors_and_the_run_goes_on(tmp_path):
    root = _hostile_tree(tmp_path)
    results = tmp_path / "r.jsonl"
    t0 = time.perf_counter()
    code, out, err = cli("run", "--cases", root, "--results", results, "-q")
    assert time.perf_counter() - t0 < 60
    assert code == 1, out + err
    recs = _records(results)
    assert recs["leaky-slope-half"]["verdict"] == "pass"  # the later, good cases ran
    assert recs["hardshrink-strided"]["verdict"] == "pass"
    want = {"a-nested": "nests too deeply", "b-offset-inf": "offset: must be an integer",
            "c-npy-2e40": "declares 1099511627776 elements", "d-fifo": "not a regular file (a FIFO)"}  # fmt: skip
    for case_id, needle in want.items():
        assert recs[case_id]["verdict"] == "error", recs[case_id]
        assert needle in recs[case_id]["reason"], recs[case_id]["reason"]
    meta = json.loads(Path(str(results) + ".meta.json").read_text())
    assert meta["cases"] == 6
    # --resume finds every case recorded: nothing is read again, nothing ends the run
    code, out, err = cli("run", "--cases", root, "--results", results, "-q", "--resume")
    assert code == 1, out + err
    assert len(results.read_text().splitlines()) == 6


def test_p14_npy_header_declaring_2_to_40_elements_is_refused_before_allocating(tmp_path):
    import resource

    root = _hostile_tree(tmp_path)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(CaseFileError, match="declares 1099511627776 elements"):
        read_case(root / "c-npy-2e40", root)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50_000  # KiB


@pytest.mark.parametrize(
    "header, needle",
    [
        (_npy_header("<f4", 1000), "header declares 1000 elements"),  # 16 data bytes, not 4000
        (_npy_header("<f4", 2)[:-5], "not a .npy file"),  # torn header
        (_npy_header("|O", 4), "holds |O"),  # object arrays are never read
        (_npy_header("<f8", 2), "holds float64"),
        (b"\x93NUMPY\x09\x00" + b"\0" * 30, ".npy format version (9, 0)"),
    ],
    ids=["count-vs-size", "torn", "object", "dtype", "version"],
)
def test_p14_malformed_npy_headers_are_case_file_errors(tmp_path, header, needle):
    root = _copy_hand(tmp_path)
    case = root / "leaky-slope-half"
    (case / "self.npy").write_bytes(header + b"\0" * 16)
    _edit(case, lambda m: m["args"]["self"].pop("sha256"))
    with pytest.raises(CaseFileError, match=re.escape(needle)):
        read_case(case, root)


def test_p14_any_exception_while_reading_a_case_is_its_error(tmp_path, monkeypatch):
    """Whatever escapes the reader (here a RuntimeError) is recorded for that case."""
    from aclnn_conformance.conformance.run import runner

    def boom(*a, **k):
        raise RuntimeError("something no one foresaw")

    monkeypatch.setattr(runner, "read_case", boom)
    root = _copy_hand(tmp_path)
    item = runner.Item("x", "x", path=str(root / "leaky-slope-half"), root=str(root))
    reg = default_registry()
    from aclnn_conformance.reference.backend import ReferenceBackend

    b = ReferenceBackend(reg)
    rec = runner._run(item, runner.RunConfig(), reg, b, b)
    assert rec.verdict == "error"
    assert "RuntimeError: something no one foresaw" in rec.reason


def _chain(root: Path, depth: int) -> Path:
    """root/d/d/.../d (depth levels) holding a copy of a good case, made without recursion."""
    fd = os.open(root, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            nfd = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nfd
        os.mkdir("case", dir_fd=fd)
        for f in (HAND / "leaky-slope-half").iterdir():
            cfd = os.open("case", os.O_RDONLY, dir_fd=fd)
            try:
                wfd = os.open(f.name, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=cfd)
                os.write(wfd, f.read_bytes())
                os.close(wfd)
            finally:
                os.close(cfd)
    finally:
        os.close(fd)
    return root


def _remove_chain(root: Path) -> None:
    """Remove root/d/d/... level by level (shutil.rmtree recurses, and so would fail)."""
    top = root / "d"
    while top.is_dir():
        inner = top / "d"
        if not inner.is_dir():
            shutil.rmtree(top)
            return
        os.rename(inner, root / "d.next")
        os.rmdir(top)
        os.rename(root / "d.next", top)


@pytest.fixture
def deep_root(tmp_path):
    root = tmp_path / "deep"
    root.mkdir()
    yield root
    _remove_chain(root)


def test_p14_a_1100_level_directory_chain_is_skipped_with_a_warning(tmp_path, deep_root):
    root = deep_root
    _chain(root, 1100)
    shutil.copytree(HAND / "leaky-slope-half", root / "shallow")
    warnings: list[str] = []
    found = find_cases(root, warnings.append)
    assert found == [root / "shallow"]
    assert len(warnings) == 1 and "deeper than 64 folder levels" in warnings[0]
    code, out, err = cli("run", "--cases", root, "--results", tmp_path / "r.jsonl", "-q")
    assert code == 0, out + err
    assert "warning:" in err and "deeper than 64" in err
    assert list(_records(tmp_path / "r.jsonl")) == ["shallow"]


def test_p14_case_search_order_is_sorted_depth_first(tmp_path):
    """The walk that replaced os.walk keeps its order: a folder, then its sorted subfolders."""
    for rel in ("b/x", "a", "a/z", "a/c", "c"):
        d = tmp_path / rel
        d.mkdir(parents=True, exist_ok=True)
        (d / "case.json").write_text("{}")
    os.symlink(tmp_path / "a", tmp_path / "l")  # a linked folder is not followed
    got = [p.relative_to(tmp_path).as_posix() for p in find_cases(tmp_path)]
    assert got == ["a", "a/c", "a/z", "b/x", "c"]


# -- point 15: stat before open; FIFOs and devices refused at once ------------------------------


def test_p15_fifo_case_json_is_refused_at_once(tmp_path):
    root = _copy_hand(tmp_path)
    (root / "leaky-slope-half" / "case.json").unlink()
    os.mkfifo(root / "leaky-slope-half" / "case.json")
    t0 = time.perf_counter()
    with pytest.raises(CaseFileError, match="not a regular file \\(a FIFO\\)"):
        read_case(root / "leaky-slope-half", root)
    assert time.perf_counter() - t0 < 1.0


def test_p15_fifo_case_json_with_filters_does_not_hang_the_selection(tmp_path):
    """--op reads case.json while selecting, before the run: that read is bounded too."""
    root = _copy_hand(tmp_path)
    (root / "leaky-slope-half" / "case.json").unlink()
    os.mkfifo(root / "leaky-slope-half" / "case.json")
    code, out, err = cli("run", "--cases", root, "--op", "hardshrink_backward",
                         "--results", tmp_path / "r.jsonl", "-q")  # fmt: skip
    assert code == 1, out + err
    recs = _records(tmp_path / "r.jsonl")
    assert recs["hardshrink-strided"]["verdict"] == "pass"
    assert "FIFO" in recs["leaky-slope-half"]["reason"]


@pytest.mark.gates
@pytest.mark.parametrize("kind", ["fifo", "dev-zero-link"])
def test_p15_spec_folder_with_a_fifo_or_device_yaml_is_refused(tmp_path, kind):
    folder = tmp_path / "specs"
    folder.mkdir()
    if kind == "fifo":
        os.mkfifo(folder / "x.yaml")
        needle = "not a regular file (a FIFO)"
    else:
        (folder / "x.yaml").symlink_to("/dev/zero")
        needle = "not a regular file (a character device)"
    proc = conform("--specs", folder, "specs", "list", timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert needle in proc.stderr and "x.yaml" in proc.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["run", "--op", "relu", "--expectations", "/dev/zero", "-q", "--results", "{tmp}/r"],
        ["report", "/dev/zero", "--json", "{tmp}/x.json"],
        ["diff", "/dev/zero", "/dev/zero"],
        ["merge", "/dev/zero", "-o", "{tmp}/m.jsonl"],
        ["specs", "lint", "/dev/zero"],
    ],
    ids=["expectations", "report", "diff", "merge", "lint"],
)
def test_p15_device_arguments_are_refused_at_once(tmp_path, args):
    t0 = time.perf_counter()
    code, out, err = cli(*[a.replace("{tmp}", str(tmp_path)) for a in args])
    assert time.perf_counter() - t0 < 30
    assert code in (1, 2), out + err
    assert "not a regular file (a character device)" in out + err


def test_p15_results_file_that_is_a_fifo_is_refused_by_report(tmp_path):
    os.mkfifo(tmp_path / "r.jsonl")
    code, out, err = cli("report", tmp_path / "r.jsonl", "--json", tmp_path / "x.json")
    assert code == 2 and "not a regular file (a FIFO)" in err


def test_p15_oversized_yaml_is_refused_before_reading(tmp_path):
    big = tmp_path / "big.yaml"
    with open(big, "wb") as f:
        f.truncate(3 << 30)  # 3 GiB sparse: read whole it would be 3 GiB of memory
    t0 = time.perf_counter()
    with pytest.raises(yamlpos.YamlError, match="too large: 3.0 GiB"):
        yamlpos.load(big)
    assert time.perf_counter() - t0 < 1.0


# -- point 16: storage bytes in the budget, size checked before the checksum ------------------


def _sparse_case(tmp_path: Path, gib: int) -> tuple[Path, Path]:
    """leaky-slope-half whose self.npy is a valid .npy of `gib` GiB (sparse) behind a
    15-element view, with a checksum that would take seconds to compute."""
    root = _copy_hand(tmp_path)
    case = root / "leaky-slope-half"
    n = (gib << 30) // 4
    head = _npy_header("<f4", n)
    with open(case / "self.npy", "wb") as f:
        f.write(head)
        f.truncate(len(head) + 4 * n)
    _edit(case, lambda m: m["args"]["self"].update(sha256="0" * 64, shape=[15], strides=[1]))
    return root, case


def test_p16_sparse_storage_behind_a_small_view_is_refused_before_hashing(tmp_path):
    root, case = _sparse_case(tmp_path, 4)
    t0 = time.perf_counter()
    with pytest.raises(CaseFileError, match="above --max-case-bytes 1.0 MiB"):
        read_case(case, root, max_bytes=1 << 20)
    elapsed = time.perf_counter() - t0
    print(f"4 GiB sparse storage refused in {elapsed * 1000:.1f} ms")
    assert elapsed < 0.5  # hashing 4 GiB takes seconds


def test_p16_sparse_storage_refused_by_the_run(tmp_path):
    root, _case = _sparse_case(tmp_path, 4)
    t0 = time.perf_counter()
    code, out, err = cli("run", "--cases", root, "--results", tmp_path / "r.jsonl", "-q",
                         "--max-case-bytes", "1M")  # fmt: skip
    assert time.perf_counter() - t0 < 30
    assert code == 1
    rec = _records(tmp_path / "r.jsonl")["leaky-slope-half"]
    assert rec["verdict"] == "error" and "self.npy is 4.0 GiB" in rec["reason"]


def test_p16_storage_bytes_count_in_the_case_budget():
    """A 15-element view over a 1 MiB storage needs the storage: 2^18 float32 = 1 MiB, plus the
    15-element contiguous output twice (60 bytes each)."""
    storage = np.zeros(1 << 18, dtype=np.float32)
    x = TensorArg("FLOAT", (15,), (1,), 0, storage)
    out = TensorArg("FLOAT", (15,), (1,), 0, np.zeros(15, dtype=np.float32))
    call = Call("relu", "atlas-a2", {"self": x, "out": out})
    need, _name, numel = case_bytes(call, frozenset({"out"}))
    assert need == (1 << 20) + 2 * 60 and numel == 15
    assert over_budget(call, 100_000, frozenset({"out"}))
    assert not over_budget(call, (1 << 20) + 120, frozenset({"out"}))


def _cross_entropy(reduction: str, n: int, c: int) -> Call:
    f = lambda *shape: TensorArg.from_array(np.zeros(shape, np.float32), "FLOAT")  # noqa: E731
    return Call(
        "aclnnCrossEntropyLoss",
        "atlas-a2",
        {"input": f(n, c), "target": TensorArg.from_array(np.zeros(n, np.int64), "INT64"),
         "weightOptional": None, "reductionOptional": reduction, "ignoreIndex": -100,
         "labelSmoothing": 0.0, "lseSquareScaleForZloss": 0.0, "returnZloss": False,
         "lossOut": f(n) if reduction == "none" else f(1), "logProbOut": f(n, c),
         "zlossOut": f(n) if reduction == "none" else f(1), "lseForZlossOut": f(n)},
    )  # fmt: skip


def test_p16_a_reduction_over_all_counts_its_working_memory_in_the_budget(tmp_path):
    """A mean over every element that holds a reduction per row (the cross entropy's mean of
    logsumexp rows) is evaluated as one row of all N x C elements by the numpy tiers: about
    NUMPY_BYTES an element beyond the storages. The same shape with reduction none streams
    in chunks of rows. The runner refuses the mean under a budget its storages fit in, with
    one message naming both figures."""
    from aclnn_conformance.reference import rows
    from aclnn_conformance.reference.backend import ReferenceBackend

    ref = ReferenceBackend()
    n, c = 512, 1024
    mean = _cross_entropy("mean", n, c)
    need, _name, _numel = case_bytes(mean, frozenset({"lossOut", "logProbOut"}))
    work = ref.working_bytes(mean)
    assert work >= n * c * rows.NUMPY_BYTES  # the mean's one row of every element
    assert ref.working_bytes(_cross_entropy("none", n, c)) <= work / 8  # rows of c, streamed
    budget = need + work // 2
    why = over_budget(mean, budget, frozenset({"lossOut", "logProbOut"}), work)
    assert "to evaluate it" in why and "--max-case-bytes" in why
    assert not over_budget(mean, need + work, frozenset({"lossOut", "logProbOut"}), work)
    assert ref.working_bytes(Call("relu", "atlas-a2", {})) == 0  # malformed: evaluate says why


# -- point 12: an output view that overlaps itself is malformed --------------------------------


def test_p12_output_view_overlapping_itself_is_a_malformed_case(tmp_path):
    root = _copy_hand(tmp_path)
    _edit(
        root / "leaky-slope-half", lambda m: m["args"]["out"].update(shape=[2, 2], strides=[0, 0])
    )
    _edit(
        root / "leaky-slope-half", lambda m: m["args"]["self"].update(shape=[2, 2], strides=[2, 1])
    )
    _edit(root / "leaky-slope-half", lambda m: m["args"]["gradOutput"].update(shape=[2, 2], strides=[2, 1]))  # fmt: skip
    code, out, err = cli("run", "--cases", root, "--results", tmp_path / "r.jsonl", "-q")
    assert code == 1
    rec = _records(tmp_path / "r.jsonl")["leaky-slope-half"]
    assert rec["verdict"] == "error" and "overlaps itself" in rec["reason"]


def test_p12_inputs_may_overlap(tmp_path):
    """A zero-stride input (self broadcast from one element, -1) is legal: out = gradOutput *
    0.5 where self <= 0: gradOutput [1, -2, 3, 4] -> [0.5, -1, 1.5, 2]."""
    root = _copy_hand(tmp_path)
    case = root / "leaky-slope-half"
    np.save(case / "self.npy", np.array([-1.0], dtype=np.float32))
    _edit(case, lambda m: m["args"]["self"].update(strides=[0]) or m["args"]["self"].pop("sha256"))
    keep = tmp_path / "keep"
    code, out, err = cli("run", "--cases", root, "--results", tmp_path / "r.jsonl", "-q",
                         "--keep-outputs", keep)  # fmt: skip
    assert code == 0, out + err
    assert _records(tmp_path / "r.jsonl")["leaky-slope-half"]["verdict"] == "pass"
    assert np.load(keep / "leaky-slope-half" / "out.npy").tolist() == [0.5, -1.0, 1.5, 2.0]


def test_p12_overlap_only_looks_at_outputs():
    x = TensorArg("FLOAT", (3, 4), (0, 1), 0, np.zeros(4, dtype=np.float32))  # broadcast input
    out = TensorArg("FLOAT", (3, 4), (4, 1), 0, np.zeros(12, dtype=np.float32))
    call = Call("relu", "atlas-a2", {"self": x, "out": out})
    assert overlapping(call, frozenset({"out"})) == ""
    assert "self" in overlapping(call, frozenset({"self"}))


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    st.lists(st.tuples(st.integers(0, 4), st.integers(0, 7)), min_size=0, max_size=4),
)
def test_p12_overlap_test_agrees_with_counting_every_element(dims):
    """overlaps_itself == two index tuples share an offset, counted by brute force."""
    import itertools

    shape = tuple(n for n, _ in dims)
    strides = tuple(s for _, s in dims)
    storage = np.zeros(1 + sum(max(n - 1, 0) * s for n, s in dims), dtype=np.float32)
    t = TensorArg("FLOAT", shape, strides, 0, storage)
    offsets = [sum(i * s for i, s in zip(idx, strides, strict=True))
               for idx in itertools.product(*(range(n) for n in shape))]  # fmt: skip
    assert t.overlaps_itself() == (len(set(offsets)) != len(offsets))


# -- point 7: tolerances finite and in range ----------------------------------------------------


def _relu_variant(text: str, name: str = "relu_bounds_test") -> str:
    """relu.yaml renamed (so it clashes with nothing) and edited."""
    text = text.replace("op: aclnnRelu\nname: relu\n", f"op: aclnnReluBoundsTest\nname: {name}\n")
    return text.replace("  op: aclnnInplaceRelu\n  name: inplace_relu\n",
                        f"  op: aclnnInplaceReluBoundsTest\n  name: inplace_{name}\n")  # fmt: skip


def _line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


@pytest.mark.parametrize(
    "fields, needle",
    [
        ("{rel: .nan, max_ratio: .nan}", "tolerance rel must be a finite number, not nan"),
        ("{rel: .inf}", "tolerance rel must be a finite number, not inf"),
        ("{mere: -.inf}", "-inf is less than the minimum of 0"),  # the schema says it first
        ("{small_atol: -1.0e-3}", "-0.001 is less than the minimum of 0"),
        ("{max_ratio: 1.5}", "tolerance max_ratio must be between 0 and 1"),
        ("{max_ulp: .nan}", "tolerance max_ulp must be a finite number"),
        ("{rel: 1e400}", "tolerance rel must be a finite number, not inf"),
    ],
    ids=["nan", "inf", "minus-inf", "negative", "ratio-above-1", "ulp-nan", "overflow"],
)
def test_p7_nan_or_out_of_range_tolerance_is_a_lint_error(fields, needle):
    text = _relu_variant(RELU) + f"\ntolerance:\n  FLOAT: {fields}\n"
    spec, problems = lint_file("tol.yaml", text)
    assert spec is None
    line = _line_of(text, "  FLOAT: {")
    assert any(p.line == line and needle in p.message for p in problems), problems


def test_p7_finite_tolerance_in_range_lints_clean():
    text = _relu_variant(RELU) + "\ntolerance:\n  FLOAT: {rel: 1e-3, max_ratio: 1, small_atol: 0}\n"
    spec, problems = lint_file("tol.yaml", text)
    assert problems == [] and spec.tolerance["FLOAT"] == {"rel": 0.001, "max_ratio": 1.0,
                                                         "small_atol": 0.0}  # fmt: skip


def test_p7_nan_in_the_tolerance_table_is_a_problem_with_its_line():
    text = (specs.root() / "tolerances.yaml").read_text(encoding="utf-8")
    bad = text.replace(
        "FLOAT:     {rel: 1.0e-4, max_ratio: 1.0e-4", "FLOAT:     {rel: .nan, max_ratio: 1.0e-4"
    )
    assert bad != text
    problems = table_problems(yamlpos.load("tolerances.yaml", bad))
    doc = yamlpos.load("tolerances.yaml", bad)
    lines = [doc.line(path) for path, _ in problems]
    assert len(problems) == 1 and "tolerance rel must be a finite number" in problems[0][1]
    assert lines == [_line_of(bad, "FLOAT:     {rel: .nan")]
    assert table_problems(yamlpos.load("tolerances.yaml", text)) == []  # the shipped one is good


# -- point 21: lax validation -------------------------------------------------------------------


@pytest.mark.parametrize(
    "change, needle",
    [
        (
            lambda m: m["args"]["self"].update(shape=[3.9, 5]),
            "shape[0]: must be an integer, not 3.9",
        ),
        (lambda m: m["args"]["self"].update(shape=["4"]), "shape[0]: must be an integer"),
        (
            lambda m: m["args"]["self"].update(shape=[True]),
            "shape[0]: must be an integer, not True",
        ),
        (lambda m: m["args"]["self"].update(shape=4), "shape: must be a list"),
        (lambda m: m["args"]["self"].update(strides=[1.0]), "strides[0]: must be an integer"),
        (lambda m: m["args"]["self"].update(strides=[-1]), "strides[0]: must not be negative"),
        (lambda m: m["args"]["self"].update(offset="0"), "offset: must be an integer"),
        (lambda m: m["args"]["self"].update(offset=False), "offset: must be an integer"),
        (lambda m: m["args"]["self"].update(offset=1e300), "offset: must be an integer"),
        (lambda m: m.update(expected_status=0.9), "expected_status: must be an integer, not 0.9"),
        (lambda m: m.update(expected_status=True), "expected_status: must be an integer"),
        (lambda m: m.update(seed=-1), "seed: must not be negative"),
        (lambda m: m["args"]["self"].update(format=True), "format: must be a string, not True"),
        (lambda m: m.update(op=["x"]), "op: must be a string"),
        (lambda m: m.update(clauses="positive"), "clauses must be a list"),
        (lambda m: m["args"]["self"].update(encoding="raw"), "encoding must be 'native' or 'bits'"),
        (
            lambda m: m["args"]["negativeSlope"].update(value={"re": 0.5, "im": 2.0}),
            "a complex value for a FLOAT scalar",
        ),
        (lambda m: m["args"]["negativeSlope"].update(value=True), "takes a number, not True"),
        (
            lambda m: m["args"]["negativeSlope"].update(dtype="INT32", value=2.5),
            "a INT32 scalar takes an integer, not 2.5",
        ),
        (
            lambda m: m["args"]["negativeSlope"].update(dtype="INT32", value="nan"),
            "takes an integer",
        ),
        (lambda m: m["args"]["negativeSlope"].update(dtype="BOOL", value=1), "true or false"),
        (lambda m: m["args"]["selfIsResult"].update(value=1), "true or false"),
    ],
    ids=[
        "shape-float",
        "shape-string",
        "shape-bool",
        "shape-not-list",
        "stride-float",
        "stride-negative",
        "offset-string",
        "offset-bool",
        "offset-1e300",
        "status-0.9",
        "status-bool",
        "seed-negative",
        "format-true",
        "op-list",
        "clauses-string",
        "encoding-unknown",
        "complex-for-float",
        "bool-for-float",
        "int-2.5",
        "int-nan",
        "bool-scalar-1",
        "bool-arg-1",
    ],  # fmt: skip
)
def test_p21_lax_numbers_and_types_in_case_files_are_refused(tmp_path, change, needle):
    root = _copy_hand(tmp_path)
    case = root / "leaky-slope-half"
    _edit(case, change)
    with pytest.raises(CaseFileError, match=re.escape(needle)):
        read_case(case, root)


def test_p21_complex_scalar_for_a_complex_dtype_is_kept_whole(tmp_path):
    root = _copy_hand(tmp_path)
    case = root / "leaky-slope-half"
    _edit(case, lambda m: m["args"]["negativeSlope"].update(dtype="COMPLEX64",
                                                            value={"re": 0.5, "im": 2.0}))  # fmt: skip
    assert read_case(case, root).call.args["negativeSlope"].value == complex(0.5, 2.0)


def test_p21_bits_encoding_checks_the_width(tmp_path):
    """FLOAT as bits must be uint32: uint16 bits are refused; uint32 bits read as the floats
    whose bit patterns they are (0x3f800000 = 1.0, 0xc0000000 = -2.0, by IEEE 754)."""
    root = _copy_hand(tmp_path)
    case = root / "leaky-slope-half"
    np.save(case / "self.npy", np.array([1, 2, 3, 4], dtype=np.uint16))
    _edit(
        case, lambda m: m["args"]["self"].update(encoding="bits") or m["args"]["self"].pop("sha256")
    )
    with pytest.raises(CaseFileError, match="holds uint16, the tensor needs uint32"):
        read_case(case, root)
    bits = [0x3F800000, 0xC0000000, 0, 0x80000000]
    np.save(case / "self.npy", np.array(bits, dtype=np.uint32))
    got = read_case(case, root).call.args["self"].view()
    assert got.dtype == np.float32 and got.tolist() == [1.0, -2.0, 0.0, -0.0]
    assert math.copysign(1.0, float(got[3])) == -1.0


def test_p21_native_encoding_of_a_dtype_numpy_lacks_is_refused(tmp_path):
    root = _copy_hand(tmp_path)
    case = root / "leaky-slope-half"
    np.save(case / "self.npy", np.array([1, 2, 3, 4], dtype=np.uint16))
    _edit(case, lambda m: m["args"]["self"].update(dtype="BF16") or m["args"]["self"].pop("sha256"))
    with pytest.raises(CaseFileError, match="BF16 has no native .npy form"):
        read_case(case, root)


@pytest.mark.parametrize("value", ["inf", "1e400", "0.5", "0", "-1", "nan", "", "abc", "1e-4K"])
def test_p21_bad_max_case_bytes_is_a_usage_error(tmp_path, value):
    code, out, err = cli("run", "--op", "relu", "--max-case-bytes", value, "-q",
                         "--results", tmp_path / "r.jsonl")  # fmt: skip
    assert code == 2 and err.strip().startswith("Error: --max-case-bytes"), err
    assert len(err.strip().splitlines()) == 1


def test_p21_max_case_bytes_sizes():
    assert config.parse_bytes("1.5K") == 1536
    assert config.parse_bytes("2G") == 2 << 30
    assert config.parse_bytes("1") == 1
    assert config.parse_bytes("1e3") == 1000


@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
def test_p21_diff_threshold_must_be_finite(tmp_path, value):
    code, out, err = cli("diff", tmp_path / "a", tmp_path / "b", "--threshold", value)
    assert code == 2 and "--threshold" in err


@pytest.mark.parametrize("option", ["--keep-outputs", "--shard"])
def test_p21_empty_keep_outputs_and_shard_are_refused(tmp_path, option):
    code, out, err = cli("run", "--op", "relu", option, "", "-q", "--results", tmp_path / "r.jsonl")
    assert code == 2 and f"{option} ''" in err


@pytest.mark.gates
def test_p21_lint_file_clashing_with_a_shipped_op(tmp_path):
    same = tmp_path / "relu.yaml"
    same.write_text(RELU, encoding="utf-8")
    code, out, err = cli("specs", "lint", same)
    assert code == 1
    assert f"{same}:{_line_of(RELU, 'name: relu')}: name 'relu' clashes with operator relu" in out
    # spelled another way (--op accepts it): still the same operator
    other = tmp_path / "other.yaml"
    other_text = _relu_variant(RELU, name="relubounds_test").replace(
        "aclnnReluBoundsTest", "aclnnOther"
    )
    other.write_text(other_text.replace("aclnnInplaceReluBoundsTest", "aclnnInplaceOther"))
    renamed = tmp_path / "renamed.yaml"
    renamed.write_text(_relu_variant(RELU), encoding="utf-8")
    code, out, err = cli("specs", "lint", renamed)
    assert code == 0 and "1 spec OK" in out, out + err
    code, out, err = cli("specs", "lint", renamed, other)
    assert code == 1 and "name 'relubounds_test' is also defined in" in out, out


def test_p21_shipped_specs_lint_clean_against_themselves():
    """Linting a shipped file by path is no clash with itself."""
    code, out, err = cli("specs", "lint", specs.root() / "ops" / "relu.yaml")
    assert code == 0, out + err


def test_p21_max_rank_0_is_a_lint_error_naming_the_check(tmp_path):
    """max_rank 0 leaves only 0-d tensors; the suite's base case is 2x3, so no dtype passes
    and no positive case exists on any product: a problem at the max-rank check's line."""
    text = _relu_variant(RELU).replace("    max: 8\n", "    max: 0\n")
    f = tmp_path / "rank0.yaml"
    f.write_text(text, encoding="utf-8")
    code, out, err = cli("specs", "lint", f)
    assert code == 1, out + err
    line = _line_of(text, "  - id: max-rank")
    lines = [x for x in out.splitlines() if x.startswith(f"{f}:")]
    assert len(lines) == 1 and lines[0].startswith(f"{f}:{line}: relu_bounds_test: "), out
    assert "no valid call on ascend950, atlas-a3, atlas-a2, atlas-training" in lines[0]
    assert "check max-rank rejects it (self has 2 dims, at most 0 allowed" in lines[0]


@pytest.mark.parametrize("dtype", ["STRING", "UNDEFINED", "INT4", "FLOAT8_E5M2", "HIFLOAT8"])
def test_p21_dtype_without_a_tolerance_in_a_dtype_table_is_a_lint_error(dtype):
    text = _relu_variant(RELU).replace(
        "default: [FLOAT, FLOAT16, INT8,", f"default: [FLOAT, {dtype}, FLOAT16, INT8,"
    )
    spec, problems = lint_file("d.yaml", text)
    assert spec is None
    line = _line_of(text, f"default: [FLOAT, {dtype},")
    assert [(p.line, f"dtype {dtype} cannot be judged" in p.message) for p in problems] == [
        (line, True)
    ]


def test_p21_yaml_exponent_without_a_dot_is_a_number():
    """PyYAML (YAML 1.1) reads 1e308 as a string; the loader reads floats as YAML 1.2 does."""
    doc = yamlpos.load("n.yaml", "a: 1e308\nb: -2E-5\nc: 1.5e3\nd: .5e3\ne: '1e3'\nf: 12\n")
    assert doc.data == {"a": 1e308, "b": -2e-5, "c": 1500.0, "d": 500.0, "e": "1e3", "f": 12}
    assert type(doc.data["f"]) is int
    text = _relu_variant(RELU) + "\ntolerance:\n  FLOAT: {small_atol: 1e-30, rel: 2e-4}\n"
    spec, problems = lint_file("n.yaml", text)
    assert problems == [] and spec.tolerance["FLOAT"] == {"small_atol": 1e-30, "rel": 2e-4}


def test_p21_yaml_1e308_in_expectations(tmp_path):
    from aclnn_conformance.conformance.judge import expectations

    f = tmp_path / "e.yaml"
    f.write_text("format: 1\nentries:\n  - {match: 'relu/*', kind: xfail, reason: 1e308}\n")
    with pytest.raises(expectations.ExpectationsError):  # a reason is text: the number is refused
        expectations.load(f)


def _one_case(tmp_path):
    reg = default_registry()
    spec = reg.get("relu")
    plan = plan_op(spec)[0]
    return spec, build(spec, plan, 0)


def test_p21_cases_export_refuses_a_planted_folder_link(tmp_path):
    spec, case = _one_case(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "export"
    root.mkdir()
    (root / case.id.split("/")[0]).symlink_to(outside)
    with pytest.raises(safeio.RefusedFile, match="symbolic link, not a folder"):
        write_case(root, case)
    assert list(outside.iterdir()) == []
    code, out, err = cli("cases", "export", root, "--op", "relu", "--max-cases", "1")
    assert code == 2 and "symbolic link" in err and list(outside.iterdir()) == []


def test_p21_cases_export_replaces_a_planted_file_link(tmp_path):
    spec, case = _one_case(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    root = tmp_path / "export"
    d = root.joinpath(*case.id.split("/"))
    d.mkdir(parents=True)
    (d / "case.json").symlink_to(victim)
    (d / "self.npy").symlink_to(victim)
    write_case(root, case)
    assert victim.read_text() == "keep me"
    assert not (d / "case.json").is_symlink() and not (d / "self.npy").is_symlink()
    assert read_case(d, root).id == case.id


def test_p21_keep_outputs_does_not_follow_planted_links(tmp_path):
    root = _copy_hand(tmp_path)
    keep = tmp_path / "keep"
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    outside = tmp_path / "outside"
    outside.mkdir()
    (keep / "leaky-slope-half").mkdir(parents=True)
    (keep / "leaky-slope-half" / "out.npy").symlink_to(victim)
    (keep / "leaky-slope-half" / "result.json").symlink_to(victim)
    (keep / "hardshrink-strided").symlink_to(outside)
    code, out, err = cli("run", "--cases", root, "--results", tmp_path / "r.jsonl", "-q",
                         "--keep-outputs", keep)  # fmt: skip
    assert code == 0, out + err
    assert victim.read_text() == "keep me" and list(outside.iterdir()) == []
    assert np.load(keep / "leaky-slope-half" / "out.npy").tolist() == [0.5, -1.0, 3.0, 2.0]
    recs = _records(tmp_path / "r.jsonl")
    assert "symbolic link" in recs["hardshrink-strided"]["keep_outputs_error"]
    assert recs["hardshrink-strided"]["verdict"] == "pass"


@pytest.mark.parametrize(
    "args",
    [["specs", "draft", "{fifo}"], ["cases", "import-atk", "{fifo}", "-o", "{tmp}/out"]],
    ids=["doc-page", "atk-file"],
)
def test_p15_doc_pages_and_atk_files_that_are_fifos_are_refused(tmp_path, args):
    fifo = tmp_path / "page.md"
    os.mkfifo(fifo)
    t0 = time.perf_counter()
    code, out, err = cli(*[a.format(fifo=fifo, tmp=tmp_path) for a in args])
    assert time.perf_counter() - t0 < 30
    assert code == 2 and "not a regular file (a FIFO)" in err, out + err


def test_p14_results_line_nested_too_deeply_is_a_bad_line_not_a_crash(tmp_path):
    from aclnn_conformance.conformance.judge.results import read_jsonl

    f = tmp_path / "r.jsonl"
    good = {"id": "relu/x", "op": "relu", "verdict": "pass"}
    f.write_text("[" * 100_000 + "\n" + json.dumps(good) + "\n" + "x" * 100 + "\n")
    got = read_jsonl(f)
    assert [r.id for r in got.records] == ["relu/x"]
    assert got.torn == 2 and "nested too deeply" in got.first_bad
