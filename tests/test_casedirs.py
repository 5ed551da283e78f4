"""Case directories: hand-written ones run and match hand-derived outputs; damaged ones are errors.

The expected outputs below are the hand derivations of tests/data/cases/hand/EXPECTED.md.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from aclnn_conformance.conformance.acl.call import TensorArg
from aclnn_conformance.conformance.cases.casedir import (
    CaseFileError,
    read_case,
    sha256_file,
    write_case,
)
from aclnn_conformance.conformance.cases.generate import build, plan_op
from aclnn_conformance.conformance.spec.registry import default_registry

from tests.support.runcli import assert_clean, assert_one_line_error, by_id, conform, read_jsonl

HAND = Path(__file__).parent / "data" / "cases" / "hand"
REG = default_registry()


def _copy_hand(dst: Path) -> Path:
    shutil.copytree(HAND, dst)
    return dst


def _meta(case: Path) -> dict:
    return json.loads((case / "case.json").read_text(encoding="utf-8"))


def _write_meta(case: Path, meta: dict) -> None:
    (case / "case.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")


# -- the hand-written cases -----------------------------------------------------------------------


@pytest.mark.gates
def test_hand_cases_pass_and_kept_outputs_are_the_hand_derived_values(tmp_path):
    keep, results = tmp_path / "K", tmp_path / "r.jsonl"
    proc = conform("run", "--cases", HAND, "--keep-outputs", keep, "--results", results)
    assert_clean(proc, 0)
    recs = by_id(read_jsonl(results))
    assert set(recs) == {"leaky-slope-half", "hardshrink-strided"}
    assert {r["verdict"] for r in recs.values()} == {"pass"}

    # leaky-slope-half: out = gradOutput where self > 0, gradOutput * 0.5 otherwise
    #   gradOutput [1, -2, 3, 4], self [-1, 0, 2, -3] -> [0.5, -1, 3, 2]
    out = np.load(keep / "leaky-slope-half" / "out.npy")
    assert out.dtype == np.float32
    assert out.tolist() == [0.5, -1.0, 3.0, 2.0]

    # hardshrink-strided: lambd 0.5, |x| <= 0.5 gives 0 (x = 0.5 is in the dead zone)
    #   gradOutput [[2, -4], [6, 8]], self [[0.25, -0.75], [0.5, 1.0]] -> [[0, -4], [0, 8]]
    # gradInput: 5 storage elements, view offset 1 strides (2, 1); element 0 stays NaN.
    grad_in = np.load(keep / "hardshrink-strided" / "gradInput.npy")
    assert grad_in.shape == (5,) and grad_in.dtype == np.float32
    assert np.isnan(grad_in[0])
    assert grad_in[1:].tolist() == [0.0, -4.0, 0.0, 8.0]
    view = TensorArg("FLOAT", (2, 2), (2, 1), 1, grad_in).view()
    assert view.tolist() == [[0.0, -4.0], [0.0, 8.0]]

    for name in ("leaky-slope-half", "hardshrink-strided"):
        result = json.loads((keep / name / "result.json").read_text(encoding="utf-8"))
        assert result["status"] == 0 and result["verdict"] == "pass"


def test_hand_cases_are_read_as_written():
    case = read_case(HAND / "hardshrink-strided", HAND)
    assert case.op == "hardshrink_backward" and case.product == "atlas-training"
    self_ = case.call.args["self"]
    assert (self_.shape, self_.strides, self_.offset) == ((2, 2), (4, 2), 1)
    assert np.asarray(self_.view()).tolist() == [[0.25, -0.75], [0.5, 1.0]]
    leaky = read_case(HAND / "leaky-slope-half", HAND)
    assert leaky.op == "aclnnLeakyReluBackward"  # any of the op's names may be used
    assert leaky.call.args["negativeSlope"].value == 0.5
    assert leaky.call.args["selfIsResult"] is False


# -- damaged cases --------------------------------------------------------------------------------


@pytest.mark.gates
def test_one_corrupted_byte_makes_that_case_an_error_and_the_other_still_passes(tmp_path):
    root = _copy_hand(tmp_path / "cases")
    npy = root / "leaky-slope-half" / "self.npy"
    data = bytearray(npy.read_bytes())
    data[-1] ^= 0x01  # last byte of the array data: still a valid .npy
    npy.write_bytes(bytes(data))
    results = tmp_path / "r.jsonl"
    proc = conform("run", "--cases", root, "--results", results)
    assert_clean(proc, 1)
    recs = by_id(read_jsonl(results))
    assert recs["leaky-slope-half"]["verdict"] == "error"
    assert "checksum" in recs["leaky-slope-half"]["reason"]
    assert "self.npy" in recs["leaky-slope-half"]["reason"]
    assert recs["hardshrink-strided"]["verdict"] == "pass"


def _bad_json(case: Path, outside: Path) -> str:
    (case / "case.json").write_text('{"format": 1, "id": "x", ', encoding="utf-8")
    return "cannot read"


def _missing_args(case: Path, outside: Path) -> str:
    meta = _meta(case)
    del meta["args"]
    _write_meta(case, meta)
    return "args"


def _unknown_dtype(case: Path, outside: Path) -> str:
    meta = _meta(case)
    meta["args"]["self"]["dtype"] = "FLOAT33"
    _write_meta(case, meta)
    return "FLOAT33"


def _view_out_of_bounds(case: Path, outside: Path) -> str:
    meta = _meta(case)
    meta["args"]["self"]["offset"] = 3  # 4 elements from offset 3 in a storage of 4
    _write_meta(case, meta)
    return "view reaches element 6"


def _wrong_storage_dtype(case: Path, outside: Path) -> str:
    npy = case / "self.npy"
    np.save(npy, np.array([-1.0, 0.0, 2.0, -3.0], dtype=np.float64))
    meta = _meta(case)
    meta["args"]["self"]["sha256"] = sha256_file(npy)  # a consistent checksum: dtype is the error
    _write_meta(case, meta)
    return "float64"


def _symlink_escaping(case: Path, outside: Path) -> str:
    target = outside / "elsewhere.npy"
    shutil.copyfile(case / "self.npy", target)
    (case / "self.npy").unlink()
    os.symlink(target, case / "self.npy")
    return "plain file"


def _path_traversal(case: Path, outside: Path) -> str:
    meta = _meta(case)
    meta["args"]["self"]["storage"] = "../hardshrink-strided/self.npy"
    meta["args"]["self"].pop("sha256")
    _write_meta(case, meta)
    return "plain file"


def _args_not_a_mapping(case: Path, outside: Path) -> str:
    meta = _meta(case)
    meta["args"] = [1, 2, 3]
    _write_meta(case, meta)
    return "malformed"


def _not_a_number(case: Path, outside: Path) -> str:
    meta = _meta(case)
    meta["args"]["negativeSlope"]["value"] = "a half"
    _write_meta(case, meta)
    return "not a number"


def _bool_not_bool(case: Path, outside: Path) -> str:
    meta = _meta(case)
    meta["args"]["selfIsResult"]["value"] = "false"
    _write_meta(case, meta)
    return "true or false"


def _storage_not_npy(case: Path, outside: Path) -> str:
    (case / "self.npy").write_bytes(b"this is not an npy file")
    meta = _meta(case)
    meta["args"]["self"]["sha256"] = sha256_file(case / "self.npy")
    _write_meta(case, meta)
    return "cannot load"


def _wrong_format(case: Path, outside: Path) -> str:
    meta = _meta(case)
    meta["format"] = 99
    _write_meta(case, meta)
    return "format"


DAMAGE = {
    "bad-json": _bad_json,
    "missing-args": _missing_args,
    "unknown-dtype": _unknown_dtype,
    "view-out-of-bounds": _view_out_of_bounds,
    "wrong-storage-dtype": _wrong_storage_dtype,
    "symlink-escaping": _symlink_escaping,
    "path-traversal": _path_traversal,
    "args-not-a-mapping": _args_not_a_mapping,
    "scalar-not-a-number": _not_a_number,
    "bool-not-bool": _bool_not_bool,
    "storage-not-npy": _storage_not_npy,
    "wrong-format": _wrong_format,
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_read_case_rejects_a_damaged_case_with_a_reason(tmp_path, damage):
    root = _copy_hand(tmp_path / "cases")
    (tmp_path / "outside").mkdir()
    needle = DAMAGE[damage](root / "leaky-slope-half", tmp_path / "outside")
    with pytest.raises(CaseFileError) as info:
        read_case(root / "leaky-slope-half", root)
    assert needle in str(info.value)


@pytest.mark.gates
def test_a_run_over_damaged_cases_records_errors_and_completes(tmp_path):
    root = tmp_path / "cases"
    root.mkdir()
    (tmp_path / "outside").mkdir()
    shutil.copytree(HAND / "hardshrink-strided", root / "good")
    needles = {}
    for name, damage in DAMAGE.items():
        shutil.copytree(HAND / "leaky-slope-half", root / name)
        needles[name] = damage(root / name, tmp_path / "outside")
    # path-traversal points at ../hardshrink-strided: give it one to point at
    shutil.copytree(HAND / "hardshrink-strided", root / "hardshrink-strided")
    results = tmp_path / "r.jsonl"
    proc = conform("run", "--cases", root, "--results", results)
    assert_clean(proc, 1)
    recs = by_id(read_jsonl(results))
    assert set(recs) == {*DAMAGE, "good", "hardshrink-strided"}
    for name, needle in needles.items():
        assert recs[name]["verdict"] == "error", name
        assert needle in recs[name]["reason"], (name, recs[name]["reason"])
    assert recs["good"]["verdict"] == "pass"
    assert recs["hardshrink-strided"]["verdict"] == "pass"
    # the summary lists them; nothing crashed
    assert f"error {len(DAMAGE)}" in proc.stdout


@pytest.mark.gates
def test_a_missing_npy_is_an_error_verdict_not_the_end_of_the_run(tmp_path):
    root = _copy_hand(tmp_path / "cases")
    (root / "leaky-slope-half" / "self.npy").unlink()
    results = tmp_path / "r.jsonl"
    proc = conform("run", "--cases", root, "--results", results)
    assert "Traceback" not in proc.stderr
    recs = by_id(read_jsonl(results)) if results.exists() else {}
    assert recs.get("leaky-slope-half", {}).get("verdict") == "error"
    assert recs["hardshrink-strided"]["verdict"] == "pass"
    assert proc.returncode == 1


def test_read_case_of_a_missing_npy_raises_case_file_error(tmp_path):
    root = _copy_hand(tmp_path / "cases")
    (root / "leaky-slope-half" / "self.npy").unlink()
    with pytest.raises(CaseFileError, match="self.npy"):
        read_case(root / "leaky-slope-half", root)


@pytest.mark.gates
def test_run_cases_honours_the_op_filter(tmp_path):
    results = tmp_path / "r.jsonl"
    # neither hand case is an elu_backward case: an empty selection is a usage error ...
    proc = conform("run", "--cases", HAND, "--op", "elu_backward", "--results", results, "-q")
    assert_one_line_error(proc, "select no case", "--op elu_backward", "--allow-empty")
    assert not results.exists()
    # ... unless the script says an empty run is fine
    proc = conform("run", "--cases", HAND, "--op", "elu_backward", "--results", results, "-q",
                   "--allow-empty")  # fmt: skip
    assert_clean(proc, 0)
    assert read_jsonl(results) == []
    proc = conform("run", "--cases", HAND, "--op", "leaky_relu_backward", "--results", results)
    assert_clean(proc, 0)
    assert [r["id"] for r in read_jsonl(results)] == ["leaky-slope-half"]


@pytest.mark.gates
def test_run_cases_keyword_filter(tmp_path):
    results = tmp_path / "r.jsonl"
    proc = conform("run", "--cases", HAND, "-k", "strided", "--results", results, "-q")
    assert_clean(proc, 0)
    assert [r["id"] for r in read_jsonl(results)] == ["hardshrink-strided"]


# -- export / round trip --------------------------------------------------------------------------


@pytest.mark.gates
def test_export_then_run_cases_round_trip(tmp_path):
    out, results = tmp_path / "exported", tmp_path / "r.jsonl"
    sel = ["--op", "gelu_backward_v2", "--product", "atlas-a2", "--max-cases", "60"]
    proc = conform("cases", "export", out, "--seed", 5, *sel)
    assert_clean(proc, 0)
    listed = conform("cases", "list", *sel)
    ids = set(listed.stdout.split())
    assert len(ids) == 60
    proc = conform("run", "--cases", out, "--results", results, "-q")
    assert_clean(proc, 0)
    recs = by_id(read_jsonl(results))
    assert set(recs) == ids
    assert {r["verdict"] for r in recs.values()} == {"pass"}
    assert {r["kind"] for r in recs.values()} == {"positive", "negative"}
    assert any("BF16" in r["dtypes"].values() for r in recs.values())
    for r in recs.values():
        assert r["seed"] == 5
        assert r["clauses"] and all(c.startswith("gelu_backward_v2/") for c in r["clauses"])


def test_bf16_storage_round_trips_through_the_bits_encoding(tmp_path):
    spec = REG.get("hardshrink_backward")
    plan = next(p for p in plan_op(spec, ["atlas-a2"]) if p.id.endswith("/bf16/-/layout=in-gaps"))
    case = build(spec, plan, 9)
    d = write_case(tmp_path, case, spec.sha256)
    meta = _meta(d)
    for name in ("gradOutput", "self", "gradInput"):
        arg = meta["args"][name]
        assert arg["dtype"] == "BF16" and arg["encoding"] == "bits"
        raw = np.load(d / arg["storage"])
        assert raw.dtype == np.uint16  # numpy has no bfloat16: its bit patterns
        assert raw.tobytes() == case.call.args[name].storage.tobytes()
    back = read_case(d, tmp_path)
    assert back.id == case.id and back.clauses == case.clauses and back.seed == 9
    for name in ("gradOutput", "self", "gradInput"):
        a, b = case.call.args[name], back.call.args[name]
        assert b.storage.dtype == ml_dtypes.bfloat16
        assert (b.shape, b.strides, b.offset) == (a.shape, a.strides, a.offset)
        assert b.storage.tobytes() == a.storage.tobytes()  # NaN padding included
    assert back.call.args["lambd"] == case.call.args["lambd"]


def test_special_values_and_every_argument_kind_round_trip(tmp_path):
    """NaN/inf/-0/subnormal bf16 values, a string argument, a null pointer, a bool."""
    gelu = REG.get("gelu_backward_v2")
    leaky = REG.get("leaky_relu_backward")
    picks = [
        (gelu, "gelu_backward_v2/atlas-a2/bf16/approximate=tanh/values=special"),
        (gelu, "gelu_backward_v2/atlas-a2/neg/null-ptr/self"),
        (leaky, "leaky_relu_backward/atlas-a2/bf16/selfIsResult=1/values=special"),
    ]
    for spec, cid in picks:
        plan = next(p for p in plan_op(spec, ["atlas-a2"]) if p.id == cid)
        case = build(spec, plan, 2)
        back = read_case(write_case(tmp_path, case), tmp_path)
        assert back.expected_status == case.expected_status
        for name, a in case.call.args.items():
            b = back.call.args[name]
            if isinstance(a, TensorArg):
                assert b.storage.tobytes() == a.storage.tobytes() and b.dtype == a.dtype
            else:
                assert b == a, (cid, name)
