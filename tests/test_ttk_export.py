"""`cases export-ttk DIR -o OUT`: case directories as a TTK ACLNN CSV plus TTK manual-data folders
(inputs, our golden), and back: import-ttk(export-ttk(cases)) gives the same cases (case.json and
storage bytes); the golden files hold the expected values rounded once to the output dtype; TTK's
file and folder naming (hicann/ops-test-kit docs/Manual_Data_Prepare_and_Replay.md) is kept;
hostile inputs end in one clear message."""

from __future__ import annotations

import hashlib
import json
import re

import numpy as np
import pytest
from aclnn_conformance.conformance.acl import dtypes as dt
from aclnn_conformance.conformance.cases.casedir import read_case
from aclnn_conformance.conformance.vendor.ttk import case_directory_name, data_file_name

from tests.support.runcli import assert_clean, assert_one_line_error, conform

# TTK's file names (docs/Manual_Data_Prepare_and_Replay.md, section 4), written out here
TTK_FILE = re.compile(
    r"^(input|scalar|golden)_(0|[1-9][0-9]*)_([a-z0-9_]+)(__shape_(scalar|\d+(x\d+)*))?\.bin$"
)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """Generated leaky_relu_backward cases (f32/f16/bf16, scalars, strided and negative ones),
    exported to TTK and imported back."""
    base = tmp_path_factory.mktemp("ttk")
    src, out, back = base / "src", base / "out", base / "back"
    assert_clean(
        conform("cases", "export", src, "--op", "leaky_relu_backward", "--product", "atlas-a2",
                "--max-cases", "60", "--golden"), 0)  # fmt: skip
    proc = conform("cases", "export-ttk", src, "-o", out)
    assert_clean(proc, 0)
    imp = conform("cases", "import-ttk", out / "cases.csv", "-o", back,
                  "--manual-data-dirs", out / "manual_data")  # fmt: skip
    assert_clean(imp, 0)
    return src, out, back, proc.stdout, imp.stdout


def _ids(stdout: str, word: str) -> list[str]:
    return [line.split()[1].rstrip(":") for line in stdout.splitlines() if line.startswith(word)]


@pytest.mark.gates  # the CLI in subprocesses
def test_the_round_trip_gives_the_same_cases(exported):
    src, out, back, stdout, imp = exported
    ids = _ids(stdout, "exported")
    assert len(ids) >= 10
    assert f"{len(ids)} rows: {len(ids)} accepted, 0 rejected by the spec, 0 refused" in imp
    dtypes = set()
    for cid in ids:
        a, b = src.joinpath(*cid.split("/")), back.joinpath(*cid.split("/"))
        ja = json.loads((a / "case.json").read_text())
        jb = json.loads((b / "case.json").read_text())
        assert ja == jb, cid
        for arg in ja["args"].values():
            if arg["kind"] == "tensor":
                dtypes.add(arg["dtype"])
                assert (a / arg["storage"]).read_bytes() == (b / arg["storage"]).read_bytes()
    assert {"FLOAT", "FLOAT16", "BF16"} <= dtypes


@pytest.mark.gates  # the CLI in subprocesses
def test_cases_a_ttk_row_cannot_hold_are_skipped_with_their_reason(exported):
    src, _, _, stdout, _ = exported
    skipped = [line for line in stdout.splitlines() if line.startswith("skipped")]
    assert skipped, "the generated suite has strided and negative cases"
    for line in skipped:
        cid = line.split()[1].rstrip(":")
        meta = json.loads(src.joinpath(*cid.split("/"), "case.json").read_text())
        strided = any(
            a["kind"] == "tensor" and (a["offset"] or a["strides"] != _contiguous(a["shape"]))
            for a in meta["args"].values()
        )
        if meta["expected_status"] != 0:
            assert "negative case" in line
        else:
            assert strided and "strided or offset view" in line


def _contiguous(shape):
    out, n = [], 1
    for s in reversed(shape):
        out.append(n)
        n *= max(s, 1)
    return list(reversed(out))


@pytest.mark.gates  # the CLI in subprocesses
def test_folders_and_files_follow_ttk_naming(exported):
    _, out, _, stdout, _ = exported
    rows = (out / "cases.csv").read_text().splitlines()
    assert rows[0].split(",")[:2] == ["testcase_name", "api_name"]
    for cid in _ids(stdout, "exported"):
        folder = out / "manual_data" / case_directory_name(cid)
        names = sorted(p.name for p in folder.iterdir())
        assert all(TTK_FILE.match(n) for n in names), names
        roles = [n.split("_")[0] for n in names]
        # gradOutput, self (inputs 0, 1), negativeSlope (scalar 0), out (golden 0)
        assert roles.count("input") == 2 and roles.count("scalar") == 1
        assert roles.count("golden") == 1
    # the sidecar sits beside the CSV, never inside the manual-data root (TTK rejects sidecars)
    assert (out / "cases.aclnn-conform.json").is_file()
    assert all(p.is_dir() for p in (out / "manual_data").iterdir())


@pytest.mark.gates  # the CLI in subprocesses
def test_the_golden_is_the_expected_value_rounded_to_the_output_dtype(exported):
    src, out, _, stdout, _ = exported
    checked = 0
    for cid in _ids(stdout, "exported"):
        case = read_case(src.joinpath(*cid.split("/")))
        g = np.asarray(case.call.tensor("gradOutput").view(), dtype=np.float64)
        x = np.asarray(case.call.tensor("self").view(), dtype=np.float64)
        s = case.call.args["negativeSlope"]  # the scalar as its dtype holds it
        slope = float(np.asarray(s.value).astype(dt.get(s.dtype).np).astype(np.float64))
        o = case.call.tensor("out")
        if not (np.isfinite(g).all() and np.isfinite(x).all()) or o.dtype != "FLOAT":
            continue
        g, x = np.broadcast_arrays(g, x)
        want = np.where(x > 0, g, g * slope).astype(np.float32)  # one rounding of the exact value
        name = data_file_name("golden", 0, "float32", tuple(o.shape))
        got = np.fromfile(out / "manual_data" / case_directory_name(cid) / name, np.float32)
        assert np.array_equal(got, want.reshape(-1)), cid
        checked += 1
    assert checked >= 2


def test_ttk_folder_names():
    assert case_directory_name("plain_Name-1.x") == "plain_Name-1.x"
    for hostile in ("../../etc/passwd", "a/b=c", "x" * 121, ".hidden", "..", "a\x00b"):
        name = case_directory_name(hostile)
        digest = hashlib.sha256(hostile.encode()).hexdigest()[:12]
        assert name.endswith("-" + digest) and "/" not in name and not name.startswith(".")
    assert data_file_name("golden", 0, "float16", (2, 0, 3)) == "golden_0_float16__shape_2x0x3.bin"
    assert data_file_name("golden", 1, "int8", ()) == "golden_1_int8__shape_scalar.bin"
    assert data_file_name("input", 2, None) == "input_2_none.bin"


@pytest.mark.gates  # the CLI in subprocesses
def test_a_hostile_case_id_stays_inside_the_output(tmp_path):
    src, out = tmp_path / "src", tmp_path / "out"
    assert_clean(conform("cases", "export", src, "--op", "leaky_relu_backward", "--product",
                         "atlas-a2", "--max-cases", "1"), 0)  # fmt: skip
    (cj,) = src.rglob("case.json")
    meta = json.loads(cj.read_text())
    meta["id"] = "../../../escaped"
    cj.write_text(json.dumps(meta))
    proc = conform("cases", "export-ttk", src, "-o", out)
    assert_clean(proc, 0)
    assert not (tmp_path / "escaped").exists() and not (tmp_path.parent / "escaped").exists()
    assert all(p.resolve().is_relative_to(out.resolve()) for p in out.rglob("*"))
    # imported back, the id is not a case id of the op: the row is refused, nothing escapes
    imp = conform("cases", "import-ttk", out / "cases.csv", "-o", tmp_path / "back",
                  "--manual-data-dirs", out / "manual_data")  # fmt: skip
    assert_clean(imp, 0)
    assert "refused" in imp.stdout and "is not a case id of leaky_relu_backward" in imp.stdout
    assert not (tmp_path / "back").exists() or not any((tmp_path / "back").rglob("case.json"))


@pytest.mark.gates  # the CLI in subprocesses
def test_an_output_that_is_not_a_new_folder_is_one_clear_error(tmp_path):
    src = tmp_path / "src"
    assert_clean(conform("cases", "export", src, "--op", "relu", "--max-cases", "1"), 0)
    full = tmp_path / "full"
    full.mkdir()
    (full / "x").write_text("keep")
    assert_one_line_error(conform("cases", "export-ttk", src, "-o", full), "not empty")
    f = tmp_path / "file"
    f.write_text("x")
    assert_one_line_error(conform("cases", "export-ttk", src, "-o", f), "not a folder")


@pytest.mark.gates  # the CLI in subprocesses
def test_manual_data_that_does_not_fit_the_row_refuses_it(exported, tmp_path):
    _, out, _, stdout, _ = exported
    cid = _ids(stdout, "exported")[0]
    data = tmp_path / "md"
    folder = data / case_directory_name(cid)
    folder.mkdir(parents=True)
    src = out / "manual_data" / case_directory_name(cid)
    for p in src.iterdir():
        (folder / p.name).write_bytes(p.read_bytes())
    (folder / "notes.json").write_text("{}")  # a sidecar TTK rejects
    proc = conform("cases", "import-ttk", out / "cases.csv", "-o", tmp_path / "c",
                   "--manual-data-dirs", data)  # fmt: skip
    assert_clean(proc, 0)
    line = next(x for x in proc.stdout.splitlines() if cid in x)
    assert line.startswith("refused") and "unexpected entry 'notes.json'" in line
    (folder / "notes.json").unlink()
    (inp,) = [p for p in folder.iterdir() if p.name.startswith("input_0_")]
    inp.write_bytes(inp.read_bytes()[:-1])  # a truncated file
    proc = conform("cases", "import-ttk", out / "cases.csv", "-o", tmp_path / "d",
                   "--manual-data-dirs", data)  # fmt: skip
    line = next(x for x in proc.stdout.splitlines() if cid in x)
    assert line.startswith("refused") and "is not whole" in line
    others = [x for x in proc.stdout.splitlines() if x.startswith("refused") and cid not in x]
    assert all("no manual data folder" in x for x in others)


def test_the_round_trip_in_process(tmp_path):
    """The fast tier's guard of the round trip (the CLI in-process, a few cases)."""
    from aclnn_conformance.cli.main import main
    from click.testing import CliRunner

    src, out, back = tmp_path / "src", tmp_path / "out", tmp_path / "back"
    sel = [
        "--op",
        "leaky_relu_backward",
        "--product",
        "atlas-a2",
        "-k",
        "values=",
        "--max-cases",
        "6",
    ]
    for argv in (
        ["cases", "export", str(src), *sel],
        ["cases", "export-ttk", str(src), "-o", str(out)],
        ["cases", "import-ttk", str(out / "cases.csv"), "-o", str(back), "--manual-data-dirs",
         str(out / "manual_data")],
    ):  # fmt: skip
        res = CliRunner().invoke(main, argv)
        assert res.exit_code == 0, res.output
    metas = sorted(src.rglob("case.json"))
    assert len(metas) == 6
    for m in metas:
        rel = m.parent.relative_to(src)
        assert json.loads(m.read_text()) == json.loads((back / rel / "case.json").read_text())
        for npy in m.parent.glob("*.npy"):
            assert npy.read_bytes() == (back / rel / npy.name).read_bytes()
