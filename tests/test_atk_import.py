"""`aclnn-conform cases import-atk`: the vendor's ATK test files as case directories.

The ATK files under tests/data/atk/ were written for these tests (never copied from ops-nn); each
case says in its inputs what it exercises. The expectations below are derived from what the
files ask (ranges, constants, distributions, dtypes, shapes) and from the ACL promotion table,
not from the importer's output.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import ml_dtypes
import numpy as np
import pytest
from aclnn_conformance.cli.main import main
from aclnn_conformance.conformance.acl import dtypes as dt
from aclnn_conformance.conformance.cases.casedir import find_cases, read_case
from aclnn_conformance.conformance.spec.atk_forms import FormError, parse_form
from aclnn_conformance.conformance.spec.registry import default_registry
from aclnn_conformance.conformance.vendor.atk.files import mapping_of
from aclnn_conformance.conformance.vendor.atk.values import TensorValues
from click.testing import CliRunner

from tests.support.runcli import (
    REPO,
    assert_clean,
    assert_one_line_error,
    by_id,
    conform,
    read_jsonl,
)

DATA = Path(__file__).parent / "data" / "atk"
LEAKY = DATA / "atk_aclnnLeakyReluBackward.json"
SOFTPLUS = DATA / "atk_aclnnSoftplusBackward.json"
GELU = DATA / "atk_aclnnGeluBackwardV2.json"
# ATK dtype names -> aclDataType, written out here independently of conformance.vendor.atk.files
ACL = {"fp32": "FLOAT", "fp16": "FLOAT16", "bf16": "BF16", "fp64": "DOUBLE", "int32": "INT32",
       "int16": "INT16", "int8": "INT8", "uint8": "UINT8", "bool": "BOOL"}  # fmt: skip


def cli(*args) -> SimpleNamespace:
    """`aclnn-conform ARGS` in this process (a subprocess costs seconds on a loaded machine);
    shaped like subprocess.CompletedProcess for the assertions of tests.support.runcli."""
    try:
        runner = CliRunner(mix_stderr=False)
    except TypeError:  # click >= 8.2 keeps stderr apart anyway
        runner = CliRunner()
    # the shipped specs, loaded once for the module (the CLI keeps its registry in ctx.obj)
    obj = None if "--specs" in args else {"registry": default_registry()}
    res = runner.invoke(main, [str(a) for a in args], obj=obj, catch_exceptions=False)
    return SimpleNamespace(returncode=res.exit_code, stdout=res.stdout, stderr=res.stderr)


def _import(src: Path, out: Path, *extra) -> str:
    proc = cli("cases", "import-atk", src, "-o", out, *extra)
    assert_clean(proc, 0)
    return proc.stdout


@pytest.fixture(scope="module")
def leaky(tmp_path_factory):
    out = tmp_path_factory.mktemp("leaky")
    text = _import(LEAKY, out, "--seed", "5")
    return out, text


@pytest.fixture(scope="module")
def softplus(tmp_path_factory):
    out = tmp_path_factory.mktemp("softplus")
    return out, _import(SOFTPLUS, out)


def _cases(root: Path) -> dict[str, object]:
    """ATK id -> the Case read back by the project's case-directory reader."""
    got = {}
    for d in find_cases(root):
        meta = json.loads((d / "case.json").read_text(encoding="utf-8"))
        got[str(meta["atk"]["id"])] = read_case(d, root)
    return got


def _vals(case, name: str) -> np.ndarray:
    return np.asarray(case.call.args[name].view()).astype(np.float64)


def _atk(src: Path) -> dict[str, dict]:
    return {str(c["id"]): c for c in json.loads(src.read_text(encoding="utf-8"))}


# -- the forms ---------------------------------------------------------------------------------
def test_every_range_values_form_parses_to_its_kind():
    assert parse_form([-3, 5]).kind == "range" and parse_form([5, -3]).lo == -3
    assert parse_form(2.5).value == 2.5 and parse_form(True).value is True
    assert math.isnan(parse_form("nan").value) and parse_form("-inf").value == -math.inf
    nd = parse_form({"name": "nd", "mean": [-100, 100], "std": 2})
    assert (nd.kind, nd.mean, nd.std) == ("nd", (-100.0, 100.0), (2.0, 2.0))
    mix = parse_form([[-2, -1], 5, "nan"])
    assert mix.kind == "mix" and [f.kind for f in mix.forms] == ["range", "const", "const"]
    assert parse_form(["-inf", "inf"]).kind == "mix"  # not a range: a mix of the two
    assert parse_form(["nan"]).kind == "mix"
    for bad in ({"name": "uniform"}, [], None, {"name": "nd", "std": -1}):
        with pytest.raises(FormError):
            parse_form(bad)


def test_a_mix_on_a_tensor_as_small_as_its_forms_has_each_once():
    form = parse_form(["nan", 1, "-inf"])
    for seed in range(5):
        v = next(TensorValues(form, dt.get("FLOAT16"), 3, np.random.default_rng(seed)).chunks())
        v = v.astype(np.float64)
        assert np.isnan(v).sum() == 1 and (v == 1).sum() == 1 and (v == -np.inf).sum() == 1


# -- what the import reports -------------------------------------------------------------------
def test_summary_and_report_name_each_rejecting_clause_and_each_skip(leaky):
    out, text = leaky
    assert "14 ATK cases: 8 accepted, 3 rejected, 3 skipped" in text
    rep = json.loads((out / "atk-report-leaky_relu_backward.json").read_text(encoding="utf-8"))
    rejected = {k: v["atk_ids"] for k, v in rep["rejected_by_clause"].items()}
    # case 6: selfIsResult with a negative slope; 7: shapes [3] and [4]; 12: a BOOL gradOutput
    assert rejected == {"slope-nonneg-if-result": ["6"], "broadcastable": ["7"],
                        "dtype-gradOutput": ["12"]}  # fmt: skip
    assert {v["status"] for v in rep["rejected_by_clause"].values()} == {161002}
    # case 8 holds 10^10 elements: past the case reader's 2^31, whatever --max-elements says
    size = rep["skipped_by_reason"]["reader-limit"]
    assert size["atk_ids"] == ["8"] and size["would_be"] == {"accepted": 1}
    other = {k: v["atk_ids"] for k, v in rep["skipped_by_reason"].items() if k != "reader-limit"}
    assert sorted(other.values()) == [["10"], ["13"]]  # a grouped input; "default" for a tensor
    assert "'default' is not a number" in next(k for k, v in other.items() if v == ["13"])
    md = (out / "atk-report-leaky_relu_backward.md").read_text(encoding="utf-8")
    assert "leaky_relu_backward/slope-nonneg-if-result" in md
    cases = _cases(out)
    assert set(cases) == {str(i) for i in range(14)} - {"8", "10", "13"}
    assert cases["6"].expected_status == 161002 and cases["6"].kind == "negative"
    assert cases["6"].clauses == ("slope-nonneg-if-result",)


def test_each_tensor_has_the_dtype_and_shape_asked(leaky, softplus):
    for root, src in ((leaky[0], LEAKY), (softplus[0], SOFTPLUS)):
        atk = _atk(src)
        names = mapping_of(default_registry().get(src.stem[4:])).inputs
        for cid, case in _cases(root).items():
            for inp in atk[cid]["inputs"]:
                if inp["type"] != "tensor":
                    continue
                t = case.call.args[names[inp["name"]]]
                assert t.dtype == ACL[inp["dtype"]], (cid, inp["name"])
                assert t.shape == tuple(inp["shape"]), (cid, inp["name"])
                assert t.storage.size == math.prod(inp["shape"])  # 0-d: one element


def test_uniform_ranges_and_constants(leaky):
    c = _cases(leaky[0])
    g = _vals(c["0"], "gradOutput")  # [-3, 5], 64 FLOAT elements
    assert g.min() >= -3 and g.max() <= 5 and len(set(g.tolist())) > 50
    assert abs(g.mean() - 1.0) < 5 * (8 / math.sqrt(12)) / 8  # 5 standard errors of U(-3, 5)
    assert np.all(_vals(c["0"], "self") == 2.5)
    a = c["0"].call.args["negativeSlope"]
    assert (a.dtype, a.value) == ("FLOAT", 0.25)
    slope = c["11"].call.args["negativeSlope"]  # an INT32 scalar from [-3, 3]
    assert slope.dtype == "INT32" and slope.value == int(slope.value) and -3 <= slope.value <= 3
    lo, hi = float(np.float16(-1000)), float(np.float16(1000))
    x = _vals(c["9"], "self")  # FLOAT16 from [-1000, 1000]
    assert x.min() >= lo and x.max() <= hi and np.all(x == x.astype(np.float16))


def test_nan_and_inf_exactly_where_asked(leaky):
    c = _cases(leaky[0])
    assert np.all(np.isnan(_vals(c["1"], "gradOutput")))  # "nan"
    assert np.all(_vals(c["1"], "self") == np.inf)  # "inf"
    assert np.all(_vals(c["2"], "self") == -np.inf)  # "-inf", BF16
    g = _vals(c["3"], "gradOutput")  # ["-inf", "inf"]: a mix of the two
    assert np.all(np.isinf(g)) and (g > 0).any() and (g < 0).any()
    x = _vals(c["3"], "self")  # [[-2, -1], 5, "nan"]
    in_range, five, nan = (x >= -2) & (x <= -1), x == 5, np.isnan(x)
    assert np.all(in_range | five | nan) and in_range.any() and five.any() and nan.any()
    assert c["3"].call.args["selfIsResult"] is True  # a bool attribute given ["inf"]


def test_normal_draws_have_the_mean_and_std_asked(leaky):
    c = _cases(leaky[0])
    g = _vals(c["2"], "gradOutput")  # nd mean 3 std 2, 4096 BF16 elements
    n = g.size
    assert abs(g.mean() - 3) < 5 * 2 / math.sqrt(n)
    assert abs(g.std() - 2) < 5 * 2 / math.sqrt(2 * n) + 0.01  # + bf16 rounding
    g = _vals(c["9"], "gradOutput")  # nd, mean from [-100, 100], std from [1, 25]
    sd = g.std()
    assert 1 - 0.1 * 25 < sd < 25 * 1.1 and -100 - 5 * sd / 90 < g.mean() < 100 + 5 * sd / 90
    rep = json.loads((leaky[0] / "atk-report-leaky_relu_backward.json").read_text("utf-8"))
    said = next(x for x in rep["cases"] if x["atk_id"] == "9")["values"]["gradOutput"]
    mean = float(said.split("mean ")[-1].split(",")[0])  # the drawn mean the report states
    assert abs(g.mean() - mean) < 5 * sd / math.sqrt(g.size)


def test_zero_dim_mixed_dtypes_and_broadcast_output(leaky):
    c = _cases(leaky[0])
    zero = c["4"].call.args  # gradOutput FLOAT16 [], x FLOAT []: promote -> FLOAT
    assert zero["gradOutput"].shape == () and zero["self"].shape == ()
    assert (zero["out"].dtype, zero["out"].shape) == ("FLOAT", ())
    assert zero["negativeSlope"].value == float(np.float16(0.1))  # FP16 scalar 0.1, rounded
    assert c["9"].call.args["out"].dtype == "FLOAT"  # FLOAT x FLOAT16
    assert c["5"].call.args["out"].shape == (3, 4)  # [3, 1] with [4]
    assert c["2"].call.args["out"].dtype == "BF16"


def test_formula_branches_are_credited_from_the_values(leaky):
    c = _cases(leaky[0])
    assert c["1"].clauses == ("positive",)  # self = +inf > 0 everywhere
    assert c["2"].clauses == ("nonpositive",)  # self = -inf
    assert set(c["3"].clauses) == {"positive", "nonpositive"}  # 5, NaN and [-2, -1]


def test_integer_and_bool_tensors(softplus):
    out, text = softplus
    c = _cases(out)
    x = _vals(c["0"], "self")  # INT32 from [-5.5, 7.2]: the integers -5..7
    assert set(x.tolist()) == set(range(-5, 8))
    assert c["0"].call.args["beta"].value == 1.0  # nd with std 0
    assert c["0"].call.args["gradInput"].dtype == "FLOAT"  # FLOAT x INT32
    b = np.asarray(c["1"].call.args["self"].view())
    assert b.dtype == np.bool_ and b.any() and not b.all()
    assert c["1"].call.args["gradInput"].dtype == "FLOAT16"  # FLOAT16 x BOOL
    u = _vals(c["3"], "self")  # UINT8 from normal(100, 10), truncated
    assert u.min() >= 0 and u.max() <= 255 and abs(u.mean() - 99.5) < 5 * 10 / math.sqrt(50)
    assert "2" not in c and "self: nan cannot be stored as INT8" in text
    beta, thr = c["4"].call.args["beta"], c["4"].call.args["threshold"]
    assert (beta.dtype, math.isnan(beta.value)) == ("FLOAT16", True)
    assert (thr.dtype, thr.value) == ("BF16", -math.inf)
    assert c["4"].call.args["gradInput"].dtype == "DOUBLE"


def test_string_attributes_and_an_output_the_file_gives(tmp_path):
    text = _import(GELU, tmp_path)
    c = _cases(tmp_path)
    # case 0 gives gradInput FLOAT16 for FLOAT inputs: the spec wants promote(...) = FLOAT
    assert c["0"].call.args["gradInput"].dtype == "FLOAT16"
    assert c["0"].clauses == ("gradInput-is-promote",) and c["0"].expected_status == 161002
    assert c["1"].call.args["approximate"] in ("none", "tanh")
    assert c["2"].clauses == ("approximate-value",)
    assert "1 accepted, 2 rejected" in text


@pytest.mark.gates
def test_imported_cases_run_and_agree_with_the_reference(leaky, tmp_path):
    results = tmp_path / "r.jsonl"
    proc = conform("run", "--cases", leaky[0], "--results", results, "-q")
    assert_clean(proc, 0)
    recs = by_id(read_jsonl(results))
    assert len(recs) == 11 and {r["verdict"] for r in recs.values()} == {"pass"}
    assert recs["leaky_relu_backward/atk/0006"]["actual_status"] == 161002


def test_same_seed_same_bytes_other_seed_other_values(leaky, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    _import(LEAKY, a, "--seed", "5")
    _import(LEAKY, b, "--seed", "6")

    def files(root):
        return {p.relative_to(root): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}

    first, again, other = files(leaky[0]), files(a), files(b)
    assert first == again
    assert first.keys() == other.keys()
    npy = [k for k in first if k.suffix == ".npy" and first[k] != other[k]]
    assert npy  # drawn values differ with the seed


def test_max_elements_skips_before_writing(tmp_path):
    text = _import(LEAKY, tmp_path, "--max-elements", "63")
    assert "over --max-elements 63" in text
    assert "0" not in _cases(tmp_path)  # 64 elements: skipped, nothing written
    assert "1" in _cases(tmp_path)


def test_product_decides_the_dtype_lists(tmp_path):
    _import(LEAKY, tmp_path, "--product", "atlas-training")
    c = _cases(tmp_path)
    assert c["2"].clauses == ("dtype-gradOutput",)  # BF16 is listed on Atlas A2 only
    proc = cli("cases", "import-atk", LEAKY, "-o", tmp_path, "--product", "ascend-nowhere")
    assert_one_line_error(proc, "--product ascend-nowhere")


@pytest.mark.parametrize("bad", sorted((DATA / "bad").glob("*.json")), ids=lambda p: p.stem)
def test_a_bad_file_is_one_clear_error(bad, tmp_path):
    proc = cli("cases", "import-atk", bad, "-o", tmp_path, "--op", "leaky_relu_backward")
    assert_one_line_error(proc, bad.name)
    assert not tmp_path.joinpath("leaky_relu_backward").exists()


def test_a_bad_file_exits_2_from_the_installed_command(tmp_path):
    bad = DATA / "bad" / "unknown_form.json"
    proc = conform("cases", "import-atk", bad, "-o", tmp_path)
    assert_one_line_error(proc, bad.name, "case 0", "'gradOutput'", "unknown distribution")


def test_an_input_the_mapping_lacks_is_named(tmp_path):
    proc = cli("cases", "import-atk", DATA / "unmapped_input.json", "-o", tmp_path)
    assert_one_line_error(proc, "'negative_slope'", "atk.inputs")


def test_a_spec_without_atk_section_takes_the_names_as_they_are(tmp_path):
    spec_dir = Path(__file__).parent / "data" / "spec_folder"
    src = DATA / "identity_tanh.json"
    proc = cli("--specs", spec_dir, "cases", "import-atk", src, "-o", tmp_path)
    assert_clean(proc, 0)
    assert "1 accepted" in proc.stdout
    unknown = tmp_path / "atk_aclnnNoSuchOp.json"
    unknown.write_text(src.read_text("utf-8").replace("aclnnTanhBackward", "aclnnNoSuch"), "utf-8")
    proc = cli("cases", "import-atk", unknown, "-o", tmp_path / "o")
    assert_one_line_error(proc, "give --op")


def test_shipped_atk_sections_name_parameters_of_their_spec():
    reg = default_registry()
    for name in ("elu_backward", "gelu_backward_v2", "hardshrink_backward",
                 "leaky_relu_backward", "softplus_backward"):  # fmt: skip
        spec = reg.get(name)
        m = mapping_of(spec)
        assert m.declared and m.source
        assert set(m.inputs.values()) <= set(spec.param_names)
        assert not any(spec.param(p).is_output for p in m.inputs.values())


def test_bf16_values_are_bf16(leaky):
    c = _cases(leaky[0])
    g = np.asarray(c["2"].call.args["gradOutput"].view())
    assert g.dtype == np.dtype(ml_dtypes.bfloat16)


def test_positional_inputs_are_named_by_position_and_mapped_by_the_atk_section(tmp_path):
    """A torch function's inputs have no name in ATK files: "0", "1", ... in the mapping."""
    spec_dir = tmp_path / "specs"
    spec_dir.mkdir()
    text = (Path(__file__).parent / "data" / "spec_folder" / "tanh_backward.yaml").read_text(
        "utf-8"
    )
    text += ('\natk:\n  source: written for tests/test_atk_import.py\n'
             '  inputs: {"0": gradOutput, "1": output}\n  outputs: {y: gradInput}\n')  # fmt: skip
    (spec_dir / "tanh_backward.yaml").write_text(text, "utf-8")
    case = json.loads((DATA / "identity_tanh.json").read_text("utf-8"))
    for inp in case[0]["inputs"]:
        inp["name"] = None
    case[0]["outputs"] = [{"name": "y", "type": "tensor", "dtype": "fp16", "shape": [6]}]
    src = tmp_path / "positional.json"
    src.write_text(json.dumps(case), "utf-8")
    out = tmp_path / "out"
    proc = cli("--specs", spec_dir, "cases", "import-atk", src, "-o", out)
    assert_clean(proc, 0)
    (c,) = _cases(out).values()
    assert c.call.args["gradOutput"].shape == (6,) and c.call.args["output"].dtype == "FLOAT"
    # the output the file names y is gradInput, FLOAT16 where the spec wants the inputs' FLOAT
    assert c.call.args["gradInput"].dtype == "FLOAT16" and c.expected_status == 161002
    proc = cli("--specs", spec_dir.parent / "nowhere", "cases", "import-atk", src, "-o", out)
    assert proc.returncode == 2
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "tanh_backward.yaml").write_text(text.split("\natk:")[0], "utf-8")
    proc = cli("--specs", bare, "cases", "import-atk", src, "-o", out)
    assert_one_line_error(proc, "ATK input '0'", "no atk: section")


def test_lint_names_an_atk_mapping_to_no_parameter(tmp_path):
    """specs lint checks the mapping's targets, at the line of the ATK name."""
    src = REPO / "specs" / "ops" / "elu_backward.yaml"
    text = src.read_text(encoding="utf-8")
    lines = text.splitlines()
    start = lines.index("atk:")
    i = next(k for k in range(start, len(lines)) if lines[k].lstrip().startswith("inputs:"))
    lines[i] = lines[i].replace("{gradOutput: gradOutput", "{grad_output: gradOut")
    bad = tmp_path / "elu_backward.yaml"
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    proc = conform("specs", "lint", bad)
    assert proc.returncode == 1
    assert f"{bad}:{i + 1}: atk inputs: 'grad_output' maps to 'gradOut', which is no parameter" in (
        proc.stdout
    )


# -- the vendor files' other forms (issue 23): intervals, null ranges, the executor's rewrites,
# -- the case reader's limits, bounded memory -------------------------------------------------
CELU = DATA / "atk_aclnnCelu.json"
F16_TINY = 2.0**-24  # the least positive FLOAT16 (subnormal), 5.96e-8


def test_interval_strings_exclude_their_open_ends(tmp_path):
    """ "( 0, 1e-07 ]" for a FLOAT16 alpha: about a third of the uniform draws round to 0, which
    the open end excludes, so celu's alpha-nonzero never fires; "[ 0, 1e-07 ]" lets 0 through."""
    text = _import(CELU, tmp_path)
    rep = json.loads((tmp_path / "atk-report-celu.json").read_text(encoding="utf-8"))
    rejected = {
        k: sorted(int(i) for i in v["atk_ids"]) for k, v in rep["rejected_by_clause"].items()
    }
    assert set(rejected) == {"alpha-nonzero"}, text
    assert all(40 <= i < 60 for i in rejected["alpha-nonzero"]) and rejected["alpha-nonzero"]
    c = _cases(tmp_path)
    half_up = float(np.float16(1e-7))  # the closed end, rounded to FLOAT16: 2 * F16_TINY
    for i in range(20):
        alpha = c[str(i)].call.args["alpha"]
        assert alpha.dtype == "FLOAT16" and 0 < alpha.value <= half_up
        assert c[str(i + 20)].call.args["alpha"].value < 0
    # FLOAT16 in (-1e-7, 1e-7): 0 and the two least subnormals; a draw in [1.5, 1.68) x 2^-24
    # rounds to 2 x 2^-24 = 1.19e-7, past the open end, and is moved back inside
    x = _vals(c["60"], "self")
    assert set(np.unique(x).tolist()) == {-F16_TINY, 0.0, F16_TINY}
    assert 0 < c["60"].call.args["alpha"].value <= 5


def test_interval_strings_parse_with_their_ends():
    f = parse_form("[ -5, 0 )")
    assert (f.kind, f.lo, f.hi, f.lo_open, f.hi_open) == ("range", -5.0, 0.0, False, True)
    g = parse_form("( 0, 5 ]")
    assert (g.lo_open, g.hi_open, g.describe()) == (True, False, "(0, 5]")
    assert parse_form("(1e-3,2.5e2)").hi == 250.0
    for bad in ("( 5, 0 )", "[ a, 1 )", "[ -inf, 0 )"):
        with pytest.raises(FormError):
            parse_form(bad)
    # an integer dtype: the open ends drop the end integers
    v = next(TensorValues(parse_form("( -2, 2 )"), dt.get("INT32"), 1000,
                          np.random.default_rng(0)).chunks())  # fmt: skip
    assert set(np.unique(v)) == {-1, 0, 1}


def test_a_null_range_is_refused_with_its_reason(tmp_path):
    """range_values ["null"]: ATK's generator decides what it means and is not public: skipped,
    said why, nothing written."""
    _import(DATA / "atk_aclnnSquaredRelu.json", tmp_path)
    rep = json.loads((tmp_path / "atk-report-squared_relu.json").read_text(encoding="utf-8"))
    skipped = {tuple(v["atk_ids"]): k for k, v in rep["skipped_by_reason"].items()}
    assert list(skipped) == [("0", "2")]
    assert "null" in skipped[("0", "2")] and "not public" in skipped[("0", "2")]
    assert set(_cases(tmp_path)) == {"1"}


def test_the_executors_format_attribute_is_every_tensors_format(tmp_path):
    """Relu's executor reads the attribute `format` (dtype non_param) in get_format and gives
    that aclFormat to every tensor; the attribute is no parameter of the call."""
    _import(DATA / "atk_aclnnRelu.json", tmp_path)
    want = {"0": "NCHW", "1": "NCL", "2": "ND", "3": "ND"}
    for d in find_cases(tmp_path):
        meta = json.loads((d / "case.json").read_text(encoding="utf-8"))
        assert set(meta["args"]) == {"self", "out"}
        fmt = want[str(meta["atk"]["id"])]
        assert meta["args"]["self"]["format"] == fmt and meta["args"]["out"]["format"] == fmt
    assert sorted(_cases(tmp_path)) == ["0", "1", "2", "3"]


def test_an_executor_only_attribute_the_spec_does_not_handle_is_named(tmp_path):
    """A spec whose atk section does not say what the executor does with `format`: one line
    naming the attribute, exit 2, nothing imported."""
    import re

    import yaml

    spec_dir = tmp_path / "specs"
    spec_dir.mkdir()
    data = yaml.safe_load((REPO / "specs" / "ops" / "relu.yaml").read_text("utf-8"))
    data.pop("inplace")
    data["atk"].pop("formats")
    data["name"], data["op"] = "relu_plain", "aclnnReluPlain"
    (spec_dir / "relu_plain.yaml").write_text(yaml.safe_dump(data, allow_unicode=True), "utf-8")
    proc = cli("--specs", spec_dir, "cases", "import-atk", DATA / "atk_aclnnRelu.json",
               "-o", tmp_path / "out", "--op", "relu_plain")  # fmt: skip
    assert proc.returncode == 2
    *notes, last = proc.stderr.strip().splitlines()
    assert [n for n in notes if not n.startswith("note: ")] == []  # the --op note, then one error
    for needle in ("Error: ", "ATK input 'format'", "non_param", "atk.formats"):
        assert needle in last
    assert re.search(r"relu_plain\.yaml:\d+", last)
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").rglob("case.json"))


def test_the_executors_replacement_is_the_call_imported(tmp_path):
    """LogSigmoidBackward's executor passes torch.tensor([1]).to(self.dtype) as buffer, whatever
    the file gives: the imported call has that buffer, and the spec's shape-buffer rule (the doc
    asks buffer's shape to be the others') rejects it."""
    _import(DATA / "atk_aclnnLogSigmoidBackward.json", tmp_path)
    c = _cases(tmp_path)
    for atk_id, dtype in (("0", "FLOAT16"), ("1", "FLOAT")):
        buf = c[atk_id].call.args["buffer"]
        assert (buf.dtype, buf.shape) == (dtype, (1,))
        assert _vals(c[atk_id], "buffer").tolist() == [1.0]
        assert c[atk_id].expected_status == 161002
        assert c[atk_id].clauses == ("shape-buffer",)
    proc = cli("run", "--cases", tmp_path, "--backend", "reference", "-q", "--results",
               tmp_path / "r.jsonl")  # fmt: skip
    assert_clean(proc, 0)
    assert {r["verdict"] for r in read_jsonl(tmp_path / "r.jsonl")} == {"pass"}


def test_a_case_past_the_case_readers_limit_is_skipped_and_nothing_written(tmp_path):
    """2^31 + 1 elements (an int32-boundary case): past casefile.MAX_ELEMENTS whatever
    --max-elements says; skipped with the reason before anything is allocated or written."""
    text = _import(DATA / "atk_aclnnErfinv.json", tmp_path, "--max-elements", 1 << 40)
    assert "case reader's limit" in text
    rep = json.loads((tmp_path / "atk-report-erfinv.json").read_text(encoding="utf-8"))
    assert rep["skipped_by_reason"]["reader-limit"]["atk_ids"] == ["0"]
    assert rep["skipped_by_reason"]["reader-limit"]["would_be"] == {"accepted": 1}
    assert set(_cases(tmp_path)) == {"1"}
    written = sum(f.stat().st_size for f in tmp_path.rglob("*") if f.is_file())
    assert written < 1 << 20


def _peak_rss_kb(src: Path, out: Path) -> int:
    """Peak RSS of `aclnn-conform cases import-atk src` in a child process (VmHWM: see
    tests/support/rss.py)."""
    import subprocess
    import sys

    code = ("import sys; from aclnn_conformance.cli.main import main; from tests.support.rss import peak_kib\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "print('RSS', peak_kib())")  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", code, "cases", "import-atk", str(src), "-o",
                           str(out), "--max-elements", str(1 << 30)], capture_output=True,
                          text=True, cwd=REPO, check=False)  # fmt: skip
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("RSS"))
    return int(line.split()[1])


@pytest.mark.large
def test_import_memory_does_not_grow_with_the_tensors(tmp_path):
    """Values are drawn, written and read back (branch crediting) a chunk at a time: importing
    tensors of 2^23 elements costs no more memory than tensors of 2^16 (a whole tensor is 32 MB;
    three of them are written)."""
    peaks = []
    for n in (1 << 16, 1 << 23):
        src = tmp_path / f"atk_aclnnLeakyReluBackward_{n}.json"
        case = json.loads(LEAKY.read_text("utf-8"))[0]
        for inp in case["inputs"]:
            if inp["type"] == "tensor":
                inp["shape"], inp["dtype"], inp["range_values"] = [n], "fp32", [-1, 1]
        src.write_text(json.dumps([case]), "utf-8")
        peaks.append(_peak_rss_kb(src, tmp_path / f"out{n}"))
    assert peaks[1] - peaks[0] < 24 * 1024, peaks


def test_import_never_follows_a_symlink_planted_in_the_output(tmp_path):
    """Issue 22 point 21: case.json and the .npy files replace a planted file link (the file it
    points to keeps its bytes); a planted folder link is refused, nothing written through it."""
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    out = tmp_path / "out"
    first = out / "leaky_relu_backward" / "atk" / "0000"
    first.mkdir(parents=True)
    (first / "case.json").symlink_to(victim)
    (first / "gradOutput.npy").symlink_to(victim)
    _import(LEAKY, out)
    assert victim.read_text() == "keep me"
    assert not (first / "case.json").is_symlink() and not (first / "gradOutput.npy").is_symlink()
    assert json.loads((first / "case.json").read_text())["op"] == "leaky_relu_backward"

    outside = tmp_path / "outside"
    outside.mkdir()
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "leaky_relu_backward").symlink_to(outside)
    proc = cli("cases", "import-atk", LEAKY, "-o", linked)
    assert proc.returncode == 2 and "symbolic link" in proc.stderr, proc.stderr
    assert list(outside.iterdir()) == []


def test_the_report_names_an_outputs_shape_rule():
    """An output derived by the importer is described by its own shape rule where its param has
    one (a per-row loss, a split's half), and as the inputs' broadcast only where it has none."""
    from aclnn_conformance.conformance.spec.registry import default_registry
    from aclnn_conformance.conformance.vendor.atk.importer import describe_rule

    reg = default_registry()
    ruled = [(s, p.name) for s in map(reg.get, reg.names()) for p in s.outputs if p.shape]
    free = [(s, p.name) for s in map(reg.get, reg.names()) for p in s.outputs if not p.shape]
    assert ruled and free
    for spec, out in ruled:
        text = describe_rule(spec, out)
        assert f"shape: its rule {next(p.shape for p in spec.outputs if p.name == out)}" in text
    for spec, out in free:
        assert describe_rule(spec, out).endswith("shape: broadcast of the tensor inputs")


def test_branches_are_credited_chunk_by_chunk_over_the_elements_only(tmp_path, monkeypatch):
    """The importer credits branches over chunks of the elements, each input already read as
    the formula reads it (one value per element): a chunk of n elements is walked as n, not
    re-placed (a gather's index, a per-row gradient and a class weight each given a dim of
    their own made an NLLLossBackward chunk of 2^18 walk 2^36 elements). Written here: an
    NLLLossBackward case of 3 x 50 with reduction none; targets 7 (and the ignore index)."""
    from aclnn_conformance.conformance.spec.expr import walk as walk_mod
    from aclnn_conformance.conformance.vendor.atk import importer

    def tensor(name, dtype, shape, rng):
        return {"name": name, "type": "tensor", "required": True, "dtype": dtype,
                "shape": shape, "range_values": rng}  # fmt: skip

    def attr(name, value):
        return {"name": name, "type": "attr", "required": True, "dtype": "int",
                "shape": None, "range_values": value}  # fmt: skip

    case = {"id": 0, "aclnn_name": "NLLLossBackward", "inputs": [
        tensor("gradOutput", "fp32", [3], [-1, 1]), tensor("self", "fp32", [3, 50], [-1, 1]),
        tensor("target", "int64", [3], [7, 7]), tensor("weight", "fp32", [50], [1, 2]),
        attr("reduction", 0), attr("ignoreIndex", -100),
        tensor("totalWeight", "fp32", [1], [1, 2]),
    ]}  # fmt: skip
    src = tmp_path / "nll.json"
    src.write_text(json.dumps([case]), "utf-8")
    walked: list[int] = []
    taken = walk_mod.Formula.taken

    def spy(self, env, arith, n):
        walked.append(int(n))
        return taken(self, env, arith, n)

    monkeypatch.setattr(walk_mod.Formula, "taken", spy)
    monkeypatch.setattr(importer, "BRANCH_CHUNK", 16)
    _import(src, tmp_path / "out")
    assert walked and max(walked) <= 16 and sum(walked) == 150
    (c,) = _cases(tmp_path / "out").values()
    # reduction 0: the `none` branch, and the one-hot let its value reads; no other branch
    assert {"none", "one-hot"} <= set(c.clauses) and not {"mean", "sum"} & set(c.clauses)
