"""`cases import-ttk`: TTK ACLNN rows (tests/data/ttk/rows.csv, written for these tests in TTK's
columns and cell syntax, including rows shaped like TTK's own examples for APIs without a spec)
become case directories; each row's fate is decided by the spec and printed with its reason."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from aclnn_conformance.conformance.cases.casedir import read_case

from tests.support.runcli import REPO, assert_clean, by_id, conform, read_jsonl

ROWS = REPO / "tests" / "data" / "ttk" / "rows.csv"


def _lines(proc) -> dict[str, str]:
    out = {}
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) > 2 and parts[1].startswith("rows.csv:"):
            out[parts[2]] = line
    return out


def test_every_row_is_imported_or_refused_with_its_reason(tmp_path):
    proc = conform("cases", "import-ttk", ROWS, "-o", tmp_path / "c", "--product", "atlas-a2")
    assert_clean(proc, 0)
    fate = _lines(proc)
    assert fate["lrb_f32"].startswith("accepted")
    assert fate["lrb_f16_bcast"].startswith("accepted")
    # an int8 output of float inputs: LeakyReluBackward's spec rejects the cast (a negative case)
    assert fate["lrb_int_out"].startswith("rejected") and "161002" in fate["lrb_int_out"]
    assert "unsupported columns: tensor_formats" in fate["lrb_nz"]
    assert "no spec for aclnnAdd" in fate["add_0"]
    assert "no spec for aclnnCat" in fate["cat_f32"]
    assert "takes 3 (gradOutput, self, out)" in fate["lrb_short"]
    assert "7 rows: 2 accepted, 1 rejected by the spec, 4 refused" in proc.stdout


def test_imported_cases_carry_the_rows_shapes_dtypes_ranges_and_attributes(tmp_path):
    root = tmp_path / "c"
    assert_clean(conform("cases", "import-ttk", ROWS, "-o", root, "--product", "atlas-a2"), 0)
    case = read_case(root / "leaky_relu_backward/atlas-a2/ttk/lrb_f16_bcast")
    g, x, out = (case.call.tensor(n) for n in ("gradOutput", "self", "out"))
    assert (g.shape, x.shape, out.shape) == ((4, 1), (1, 5), (4, 5))
    assert {g.dtype, x.dtype, out.dtype} == {"FLOAT16"}
    assert case.call.args["negativeSlope"].value == 0.5
    assert case.call.args["selfIsResult"] is False
    for t in (g, x):
        v = np.asarray(t.view(), dtype=np.float64)
        assert v.min() >= -3 and v.max() <= 3 and v.std() > 0
    neg = read_case(root / "leaky_relu_backward/atlas-a2/ttk/lrb_int_out")
    assert neg.kind == "negative" and neg.expected_status == 161002


def test_imported_cases_run_and_pass_on_torch(tmp_path):
    root, res = tmp_path / "c", tmp_path / "r.jsonl"
    assert_clean(conform("cases", "import-ttk", ROWS, "-o", root, "--product", "atlas-a2"), 0)
    assert_clean(conform("run", "--cases", root, "--backend", "torch", "--results", res), 0)
    recs = by_id(read_jsonl(res))
    assert len(recs) == 3 and {r["verdict"] for r in recs.values()} == {"pass"}


def test_a_file_that_is_not_a_ttk_file_is_one_clear_error(tmp_path):
    bad = tmp_path / "x.csv"
    bad.write_text("a,b\n1,2\n")
    proc = conform("cases", "import-ttk", bad, "-o", tmp_path / "c")
    assert_clean(proc, 2)
    assert "no api_name column" in proc.stderr and "x.csv:1" in proc.stderr


def test_a_cell_is_read_as_a_literal_never_executed(tmp_path):
    hostile = tmp_path / "h.csv"
    hostile.write_text(
        "testcase_name,api_name,tensor_view_shapes,tensor_dtypes\n"
        "h,aclnnLeakyReluBackward,\"__import__('os').system('touch PWNED')\",\"('float32',)\"\n"
    )
    proc = conform("cases", "import-ttk", hostile, "-o", tmp_path / "c", cwd=tmp_path)
    assert_clean(proc, 0)
    assert "not a Python literal" in proc.stdout and not (tmp_path / "PWNED").exists()
    assert not Path(tmp_path / "c").exists() or not any((tmp_path / "c").rglob("case.json"))
