"""`cases import-ttk`: TTK ACLNN rows (tests/data/ttk/rows.csv, written for these tests in TTK's
columns and cell syntax, including rows shaped like TTK's own examples for APIs without a spec)
become case directories; each row's fate is decided by the spec and printed with its reason."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np
import pytest
from aclnn_conformance.conformance.cases.casedir import read_case
from aclnn_conformance.conformance.vendor.ttk import TtkError, read_rows

from tests.support.runcli import (
    REPO,
    assert_clean,
    assert_one_line_error,
    by_id,
    conform,
    read_jsonl,
)

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


def _xlsx_of(csv_path: Path, xlsx_path: Path) -> None:
    openpyxl = pytest.importorskip("openpyxl")
    book = openpyxl.Workbook()
    sheet = book.active
    with csv_path.open(newline="") as f:
        for row in csv.reader(f):
            sheet.append([c if c != "" else None for c in row])
    book.save(xlsx_path)


@pytest.mark.gates  # the CLI in subprocesses
def test_an_xlsx_sheet_imports_as_its_csv_does(tmp_path):
    xlsx = tmp_path / "rows.xlsx"
    _xlsx_of(ROWS, xlsx)
    a, b = tmp_path / "a", tmp_path / "b"
    pa = conform("cases", "import-ttk", ROWS, "-o", a, "--product", "atlas-a2")
    pb = conform("cases", "import-ttk", xlsx, "-o", b, "--product", "atlas-a2")
    assert_clean(pa, 0)
    assert_clean(pb, 0)
    said = pb.stdout.replace("rows.xlsx", "rows.csv").replace(str(b), str(a))
    assert said == pa.stdout
    found = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert found and found == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    for rel in found:
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel


def test_without_openpyxl_an_xlsx_file_says_what_to_install(tmp_path, monkeypatch):
    xlsx = tmp_path / "rows.xlsx"
    xlsx.write_bytes(b"PK\x03\x04 not read")
    monkeypatch.setitem(sys.modules, "openpyxl", None)  # import openpyxl raises ImportError
    with pytest.raises(TtkError, match=r"rows\.xlsx: reading \.xlsx needs openpyxl"):
        read_rows(xlsx)


@pytest.mark.gates  # the CLI in subprocesses
def test_a_damaged_xlsx_file_is_one_clear_error(tmp_path):
    pytest.importorskip("openpyxl")
    bad = tmp_path / "bad.xlsx"
    bad.write_bytes(b"PK\x03\x04" + b"\x00" * 200)
    assert_one_line_error(
        conform("cases", "import-ttk", bad, "-o", tmp_path / "c"), "bad.xlsx", "not a readable"
    )


HEAD = "testcase_name,api_name,tensor_view_shapes,tensor_dtypes\n"


@pytest.mark.gates  # the CLI in subprocesses
def test_a_huge_cell_refuses_its_row_and_a_cell_past_csvs_limit_the_file(tmp_path):
    big = tmp_path / "big.csv"
    big.write_text(
        HEAD
        + f'b,aclnnLeakyReluBackward,"({"(1," * 25000}",x\n'
        + ROWS.read_text().splitlines()[1].replace("lrb_f32", "ok", 1)
        + "\n"
    )
    proc = conform("cases", "import-ttk", big, "-o", tmp_path / "c", "--product", "atlas-a2")
    assert_clean(proc, 0)
    assert "a cell of 75001 characters" in proc.stdout
    assert "2 rows: 1 accepted, 0 rejected by the spec, 1 refused" in proc.stdout
    huge = tmp_path / "huge.csv"
    huge.write_text(HEAD + "h,aclnnLeakyReluBackward," + "1" * 200_000 + ",x\n")
    assert_one_line_error(
        conform("cases", "import-ttk", huge, "-o", tmp_path / "d"),
        "huge.csv:2",
        "not a readable CSV row",
    )
    nul = tmp_path / "nul.csv"
    nul.write_bytes(HEAD.encode() + b"n,aclnnLeakyReluBackward,\x00,x\n")
    proc = conform("cases", "import-ttk", nul, "-o", tmp_path / "e")
    assert_clean(proc, 0)
    assert "refused   nul.csv:2 n" in proc.stdout and "not a Python literal" in proc.stdout


@pytest.mark.gates  # the CLI in subprocesses
def test_a_deeply_nested_cell_refuses_its_row(tmp_path):
    deep = tmp_path / "deep.csv"
    deep.write_text(HEAD + 'd,aclnnLeakyReluBackward,"' + "(" * 5000 + ")" * 5000 + '",x\n')
    proc = conform("cases", "import-ttk", deep, "-o", tmp_path / "c")
    assert_clean(proc, 0)
    assert "refused" in proc.stdout and "tensor_view_shapes: not a Python literal" in proc.stdout


SHAPED = REPO / "tests" / "data" / "ttk" / "vendor_shaped.csv"
SHAPED_ROWS = list(csv.DictReader(SHAPED.open(newline="")))


@pytest.fixture(scope="module")
def shaped_import(tmp_path_factory):
    out = tmp_path_factory.mktemp("shaped")
    proc = conform("cases", "import-ttk", SHAPED, "-o", out / "c")
    assert_clean(proc, 0)
    return _lines_of(proc, "vendor_shaped.csv:")


def _lines_of(proc, prefix: str) -> dict[str, str]:
    out = {}
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) > 2 and parts[1].startswith(prefix):
            out[parts[2]] = line
    return out


@pytest.mark.parametrize("row", SHAPED_ROWS, ids=lambda r: r["testcase_name"])
def test_rows_shaped_like_the_vendors_examples_import_or_are_refused_with_a_reason(
    row, shaped_import
):
    """One row of our own per API of TTK's examples/case_store/aclnn/*.csv (Add, Cat,
    Convolution, InplaceFillTensor, MaskedSelect, Nonzero, NonzeroV2, SplitTensor), in the
    same columns and cell forms: an API with a spec imports (accepted or rejected by a clause),
    one without is refused naming the API."""
    from aclnn_conformance.conformance.spec.registry import UnknownOp, load_registry

    line = shaped_import[row["testcase_name"]]
    try:
        load_registry().get(row["api_name"])
    except UnknownOp:
        assert line.startswith("refused") and f"no spec for {row['api_name']}" in line
    else:
        assert line.split()[0] in ("accepted", "rejected", "refused"), line
        assert ":" in line.split(")", 1)[1], line  # a status or a reason
