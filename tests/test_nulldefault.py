"""A nullable tensor with a default (`if_null: default` with a numeric `default:` on a tensor).

The library accepts the null pointer and computes as if the tensor were filled with the default
(op_api aclnn_binary_cross_entropy_backward.cpp: `if (!weightOptional) weightTensor =
OnesLike(self)`). The fixture tests/data/nulldef/weighted_hypot.yaml is a made-up op, out =
sqrt(self^2 + weightOptional^2), whose null weight means 2 (so that ignoring it shows); the
expected values below are worked out here with math.hypot / the formula, not read from the engine.
"""

from __future__ import annotations

import json
import math
import shlex
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from aclnn_conformance.conformance.acl.call import Call, TensorArg
from aclnn_conformance.conformance.cases.casedir import find_cases, read_case, write_case
from aclnn_conformance.conformance.cases.generate import build, plan_op
from aclnn_conformance.conformance.spec.checks.base import null_default, with_defaults
from aclnn_conformance.conformance.spec.interpret import validate
from aclnn_conformance.conformance.spec.lint import lint_file
from aclnn_conformance.conformance.spec.registry import default_registry, load_registry
from aclnn_conformance.reference import engine

from tests.support.runcli import assert_clean, conform, read_jsonl

pytest_plugins = ["tests.aclnn_double.fixtures"]  # lib_dir, counter

DIR = Path(__file__).parent / "data" / "nulldef"
FIXTURE = DIR / "weighted_hypot.yaml"
X = np.array([3.0, -1.5, 0.0, 4.0, -0.25, 1.0e3], np.float32)


def _reg():
    return load_registry([FIXTURE])


def _call(weight=None, x=X, dtype="FLOAT") -> Call:
    return Call("weighted_hypot", "atlas-a2", {
        "self": TensorArg.from_array(x, dtype),
        "weightOptional": weight,
        "out": TensorArg.from_array(np.zeros(x.shape), dtype),
    })  # fmt: skip


def _hypot(x, w) -> np.ndarray:
    """sqrt(x^2 + w^2) per element, correctly rounded to float32 (math.hypot in double is
    within an ulp of double, far below float32's half ulp for these values)."""
    xs, ws = np.broadcast_arrays(np.asarray(x, np.float64), np.asarray(w, np.float64))
    return np.array([math.hypot(a, b) for a, b in zip(xs.ravel(), ws.ravel(), strict=True)],
                    np.float32).reshape(xs.shape)  # fmt: skip


# -- lint -------------------------------------------------------------------------------------------
def _edited(tmp_path: Path, edit) -> Path:
    data = yaml.safe_load(FIXTURE.read_text("utf-8"))
    edit(data)
    path = tmp_path / "weighted_hypot.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), "utf-8")
    return path


def _w(d: dict) -> dict:
    return next(p for p in d["params"] if p["name"] == "weightOptional")


def test_the_fixture_lints_clean_and_its_formula_may_read_the_tensor():
    spec, problems = lint_file(FIXTURE)
    assert problems == [] and spec is not None
    p = spec.param("weightOptional")
    assert (p.null, p.default, p.nullable) == ("default", 2, True)


@pytest.mark.gates
@pytest.mark.parametrize(
    "edit, needle",
    [
        (lambda d: _w(d).pop("default"), "if_null: default needs a documented `default:`"),
        (lambda d: _w(d).update(default="ones"), "the number a null pointer is filled with"),
        (lambda d: _w(d).update(default=True), "the number a null pointer is filled with"),
        (lambda d: _w(d).update(default=[1, 2]), "the number a null pointer is filled with"),
        (lambda d: _w(d).update(if_null="absent"), "a tensor takes a default only with if_null"),
        (lambda d: _w(d).pop("if_null"), "a tensor takes a default only with if_null"),
    ],
    ids=["no-default", "string", "bool", "list", "absent-with-default", "no-if-null"],
)
def test_lint_wants_a_numeric_default_with_if_null_default(tmp_path, edit, needle):
    path = _edited(tmp_path, edit)
    proc = conform("specs", "lint", path)
    assert proc.returncode == 1 and needle in proc.stdout, proc.stdout
    assert f"{path}:" in proc.stdout


def test_lint_still_refuses_an_absent_tensor_the_formula_reads(tmp_path):
    path = _edited(tmp_path, lambda d: (_w(d).pop("default"), _w(d).update(if_null="absent")))
    proc = conform("specs", "lint", path)
    assert proc.returncode == 1 and "if_null: absent, but the formula" in proc.stdout


# -- the null's meaning: a rank-0 fill -----------------------------------------------------------
def test_a_null_tensor_stands_for_a_rank0_fill_of_the_calls_dtype():
    spec = _reg().get("weighted_hypot")
    fill = null_default(spec.param("weightOptional"), _call(dtype="FLOAT16"))
    assert isinstance(fill, TensorArg) and fill.shape == () and fill.dtype == "FLOAT16"
    assert fill.view().tolist() == 2.0
    full = with_defaults(spec, _call())
    assert full.args["weightOptional"].storage.tolist() == [2.0]
    assert with_defaults(spec, _call(), tensors=False).args["weightOptional"] is None


# -- generation, checks and the reference --------------------------------------------------------
def test_generation_makes_a_positive_null_case():
    spec = _reg().get("weighted_hypot")
    plans = plan_op(spec)
    nulls = [p for p in plans if p.id.endswith("/null=weightOptional")]
    assert len(nulls) == 2  # FLOAT, FLOAT16
    assert all(p.kind == "positive" and p.expected_status == 0 for p in nulls)
    assert all(dict(p.args)["weightOptional"] is None for p in nulls)
    assert not any("neg/null-ptr/weightOptional" in p.id for p in plans)


def test_the_reference_computes_with_the_fill_and_checks_skip_the_null():
    got = engine.evaluate(_call(None), _reg())
    assert got.status == 0, got.message
    np.testing.assert_array_equal(got.outputs["out"], _hypot(X, 2.0))
    w = np.array([0.5, -7.0, 1.0, 3.0, 0.0, 2.0], np.float32)
    given = engine.evaluate(_call(TensorArg.from_array(w, "FLOAT")), _reg())
    np.testing.assert_array_equal(given.outputs["out"], _hypot(X, w))
    row = TensorArg.from_array(np.array([[1.0], [2.0]], np.float32), "FLOAT")  # no broadcast
    v = validate(_reg().get("weighted_hypot"), _call(row))
    assert v.status == 161002 and v.check.id == "weight-to-self"


def test_bce_backward_null_weight_is_ones_and_mean_divides_by_the_count():
    """The shipped binary_cross_entropy_backward: a null weight computes as a weight of ones;
    the mean divides by self's element count (op_api OnesLike(self); kernel 1/n)."""
    reg = default_registry()
    g = np.array([0.5], np.float32)  # a one-element gradOutput broadcast to self
    x = np.array([[0.25, 0.5, 0.75], [0.125, 0.625, 0.875]], np.float32)
    y = np.array([0.0, 1.0, 0.5], np.float32)  # broadcast along the rows
    out = TensorArg.from_array(np.zeros(x.shape), "FLOAT")

    def call(weight, reduction):
        return Call("binary_cross_entropy_backward", "atlas-a2", {
            "gradOutput": TensorArg.from_array(g, "FLOAT"), "self": TensorArg.from_array(x, "FLOAT"),
            "target": TensorArg.from_array(y, "FLOAT"), "weightOptional": weight,
            "reduction": reduction, "out": out})  # fmt: skip

    xd, yd = x.astype(np.float64), np.broadcast_to(y.astype(np.float64), x.shape)
    want = 0.5 * (xd - yd) / (xd * (1 - xd))
    for reduction, scale in ((0, 1.0), (1, 1 / 6), (2, 1.0)):
        got = engine.evaluate(call(None, reduction), reg)
        assert got.status == 0, got.message
        np.testing.assert_allclose(got.outputs["out"].reshape(x.shape), want * scale, rtol=2e-7)
    ones = TensorArg.from_array(np.ones(3, np.float32), "FLOAT")
    a = engine.evaluate(call(None, 1), reg).outputs["out"]
    np.testing.assert_array_equal(a, engine.evaluate(call(ones, 1), reg).outputs["out"])


# -- case files, the exec protocol, replay, reports ------------------------------------------------
def test_a_null_case_round_trips_as_null_in_case_files(tmp_path):
    spec = _reg().get("weighted_hypot")
    plan = next(p for p in plan_op(spec) if p.id.endswith("/null=weightOptional"))
    d = write_case(tmp_path, build(spec, plan, 0))
    meta = json.loads((d / "case.json").read_text("utf-8"))
    assert meta["args"]["weightOptional"] == {"kind": "null"}
    assert not (d / "weightOptional.npy").exists()
    assert read_case(d, tmp_path).call.args["weightOptional"] is None


def test_an_exec_harness_reads_the_null_and_its_answer_is_judged():
    from aclnn_conformance.conformance.run.backends.exec_backend import ExecBackend

    harness = DIR / "weighted_hypot_harness.py"
    b = ExecBackend(
        registry=_reg(), cmd=f"{shlex.quote(sys.executable)} {shlex.quote(str(harness))}"
    )
    got = b.execute(_call(None))
    assert got.status == 0 and got.message == "weightOptional=null", got.message
    np.testing.assert_array_equal(got.outputs["out"], _hypot(X, 2.0))
    w = TensorArg.from_array(np.full(6, 0.5, np.float32), "FLOAT")
    assert b.execute(_call(w)).message == "weightOptional=tensor"


@pytest.mark.gates
def test_replay_says_the_null_is_a_fill_and_reports_render_the_run(tmp_path):
    specs = ("--specs", DIR)
    proc = conform(*specs, "replay", "weighted_hypot/atlas-a2/f32/-/null=weightOptional")
    assert proc.returncode == 0, proc.stderr
    assert (
        "weightOptional: null (if_null: default: stands for a tensor filled with 2, broadcast)"
        in proc.stdout
    )
    res = tmp_path / "r.jsonl"
    assert_clean(conform(*specs, "run", "--op", "weighted_hypot", "-k", "null=", "--results",
                         res), 0)  # fmt: skip
    recs = read_jsonl(res)
    assert len(recs) == 2 and {r["verdict"] for r in recs} == {"pass"}
    assert all(r["dtypes"].get("weightOptional") is None for r in recs)  # no tensor was passed
    proc = conform(*specs, "report", res, "--json", tmp_path / "r.json", "--markdown",
                   tmp_path / "r.md")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "r.json").read_text("utf-8"))
    assert summary["totals"]["verdicts"]["pass"] == summary["totals"]["cases"] == 2


# -- the C API (test double), PyTorch, JAX -------------------------------------------------------
@pytest.fixture
def hypot_backend(lib_dir):
    from aclnn_conformance.conformance.run.backends.aclnn_backend import AclnnBackend

    b = AclnnBackend(registry=_reg(), lib_dir=str(lib_dir))
    yield b
    b.close()


def _last_args(double_lib_dir: Path) -> str:
    import ctypes

    ops = ctypes.CDLL(str(double_lib_dir / "libopapi_nn.so"), mode=ctypes.RTLD_GLOBAL)
    ops.aclnnTestDoubleLastArgs.restype = ctypes.c_char_p
    return ops.aclnnTestDoubleLastArgs().decode()


def test_the_c_api_gets_a_null_pointer_and_the_library_fills_it(hypot_backend, lib_dir, counter):
    got = hypot_backend.execute(_call(None))
    assert got.status == 0, got.message
    assert _last_args(lib_dir) == "weight=null"
    np.testing.assert_array_equal(got.outputs["out"], _hypot(X, 2.0))
    w = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], np.float32)
    got = hypot_backend.execute(_call(TensorArg.from_array(w, "FLOAT")))
    assert got.status == 0 and _last_args(lib_dir) == "weight=tensor"
    np.testing.assert_array_equal(got.outputs["out"], _hypot(X, w))
    assert counter("tensors_live") == 0


@pytest.mark.gates
def test_the_generated_suite_passes_on_the_double(tmp_path, lib_dir):
    res = tmp_path / "r.jsonl"
    proc = conform("--specs", DIR, "run", "--op", "weighted_hypot", "--backend", "aclnn",
                   "-k", "f32", "--backend-opt", f"lib_dir={lib_dir}", "--results", res)  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    ids = {r["id"] for r in read_jsonl(res) if r["verdict"] == "pass"}
    assert "weighted_hypot/atlas-a2/f32/-/null=weightOptional" in ids


def test_torch_gets_none_where_aten_takes_none_and_the_fill_where_not():
    """binary_cross_entropy_backward's `Tensor? weight=None` gets None (ATen's default is the
    same ones); hypot's `Tensor other` has no None, so it gets the rank-0 fill of 2."""
    pytest.importorskip("torch")
    from aclnn_conformance.conformance.run.backends.torch_backend import TorchBackend

    b = TorchBackend(registry=_reg())
    spec = _reg().get("weighted_hypot")
    binding = b.binding(spec)
    arg = b._nulls(spec, binding, b._overload(binding), _call(None)).args["weightOptional"]
    assert isinstance(arg, TensorArg) and arg.shape == () and arg.storage.tolist() == [2.0]
    got = b.execute(_call(None))
    assert got.status == 0, got.message
    np.testing.assert_array_equal(got.outputs["out"], _hypot(X, 2.0))
    reg = default_registry()
    bt = TorchBackend(registry=reg)
    bce = reg.get("binary_cross_entropy_backward")
    plan = next(
        p
        for p in plan_op(bce, ["atlas-a2"])
        if p.id.endswith("f32/reduction=1/null=weightOptional")
    )
    call = build(bce, plan, 0).call
    bb = bt.binding(bce)
    assert bt._nulls(bce, bb, bt._overload(bb), call).args["weightOptional"] is None


@pytest.mark.gates
@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_the_null_cases_pass_on_torch_and_jax(tmp_path, backend):
    pytest.importorskip(backend)
    res = tmp_path / "r.jsonl"
    proc = conform("--specs", DIR, "run", "--backend", backend, "--strict", "--op",
                   "weighted_hypot", "-k", "null=", "-q", "--results", res)  # fmt: skip
    assert_clean(proc, 0)
    assert [r["verdict"] for r in read_jsonl(res)] == ["pass", "pass"]
    if backend == "torch":
        res2 = tmp_path / "bce.jsonl"
        proc = conform("run", "--backend", "torch", "--op", "binary_cross_entropy_backward", "-k",
                       "f32/reduction=1/null=", "-q", "--results", res2)  # fmt: skip
        assert_clean(proc, 0)
        got = read_jsonl(res2)
        assert got and {r["verdict"] for r in got} == {"pass"}


# -- the ATK importer ------------------------------------------------------------------------------
def test_an_atk_case_without_the_optional_weight_imports_as_null_and_passes(tmp_path):
    out = tmp_path / "atk"
    proc = conform(
        "--specs", DIR, "cases", "import-atk", DIR / "atk_weighted_hypot.json", "-o", out
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 ATK cases: 2 accepted" in proc.stdout + proc.stderr
    dirs = sorted(find_cases(out))
    first = json.loads((dirs[0] / "case.json").read_text("utf-8"))["args"]
    second = json.loads((dirs[1] / "case.json").read_text("utf-8"))["args"]
    assert first["weightOptional"]["kind"] == "tensor" and first["weightOptional"]["shape"] == [4]
    assert second["weightOptional"] == {"kind": "null"}  # left out of the file
    res = tmp_path / "r.jsonl"
    assert_clean(conform("--specs", DIR, "run", "--cases", out, "--backend", "reference", "-q",
                         "--results", res), 0)  # fmt: skip
    assert {r["verdict"] for r in read_jsonl(res)} == {"pass"}


def test_numel_reaches_the_exact_settling_of_flagged_elements():
    """binary_cross_entropy_backward's mean reads numel(self); on a 1024x1024 case some
    elements are settled exactly (mpmath / rationals), whose environment must hold numel(self)
    too (it once raised KeyError there). Checked against float64 numpy within float32's
    rounding: the result is g w (x - y) / max(x (1 - x), 1e-12) / 2^20."""
    reg = default_registry()
    spec = reg.get("binary_cross_entropy_backward")
    plan = next(p for p in plan_op(spec) if p.id.endswith("f32/reduction=1/shape=large-1024x1024"))
    call = build(spec, plan, 0).call
    got = engine.evaluate(call, reg)
    assert got.status == 0, got.message
    names = ("gradOutput", "self", "target", "weightOptional")
    g, x, y, w = np.broadcast_arrays(*(call.tensor(n).view().astype(np.float64) for n in names))
    want = g * w * (x - y) / np.maximum(x * (1 - x), 1e-12) / x.size
    out = got.outputs["out"].reshape(x.shape).astype(np.float64)
    np.testing.assert_allclose(out, want, rtol=2.0**-23, atol=0)


# -- binary_cross_entropy: a null weight in a reduced loss, an output shape rule ------------------
def _bce_call(x, y, weight, reduction, out_shape):
    return Call("binary_cross_entropy", "atlas-a2", {
        "self": TensorArg.from_array(x, "FLOAT"), "target": TensorArg.from_array(y, "FLOAT"),
        "weight": weight, "reduction": reduction,
        "out": TensorArg.from_array(np.zeros(out_shape), "FLOAT")})  # fmt: skip


def test_bce_null_weight_means_ones_mean_and_sum_by_fsum_and_the_log_clamp():
    reg = default_registry()
    x = np.array([[0.25, 0.5, 0.75], [0.0, 1.0, 0.125]], np.float32)
    y = np.array([[1.0, 0.0, 0.5], [1.0, 1.0, 0.25]], np.float32)

    def loss(a, b):
        la = max(math.log(a), -100.0) if a > 0 else -100.0  # the kernel's clamp
        lb = max(math.log(1 - a), -100.0) if a < 1 else -100.0
        return -(b * la + (1 - b) * lb)

    each = [loss(float(a), float(b)) for a, b in zip(x.ravel(), y.ravel(), strict=True)]
    assert each[3] == 100.0  # x = 0, y = 1: -log 0 clamped
    got = engine.evaluate(_bce_call(x, y, None, 0, x.shape), reg)
    assert got.status == 0, got.message
    np.testing.assert_allclose(got.outputs["out"].ravel(), each, rtol=2.0**-24)
    for reduction, want in ((1, math.fsum(each) / 6), (2, math.fsum(each))):
        got = engine.evaluate(_bce_call(x, y, None, reduction, ()), reg)
        assert got.status == 0, got.message
        assert got.outputs["out"][0] == np.float32(want)
    wrong = engine.evaluate(_bce_call(x, y, None, 1, (1,)), reg)  # the rule says a scalar
    assert wrong.status == 161002 and "out-shape" in wrong.message


def test_bce_checks_the_dtypes_match_only_when_weight_is_given():
    """op_api CheckDtypeValid: OP_CHECK_DTYPE_NOT_MATCH(self, target / weight / out) run only
    when weight != nullptr: a FLOAT16 target beside a FLOAT self passes with a null weight."""
    spec = default_registry().get("binary_cross_entropy")
    x = np.full((2, 2), 0.5, np.float32)
    call = _bce_call(x, x, None, 0, (2, 2))
    call.args["target"] = TensorArg.from_array(x, "FLOAT16")
    assert validate(spec, call).status == 0
    call.args["weight"] = TensorArg.from_array(x, "FLOAT")
    v = validate(spec, call)
    assert v.status == 161002 and v.check.id == "same-dtypes"


def test_atk_import_gives_a_reduced_output_its_rule_shape_and_a_left_out_weight_null(tmp_path):
    out = tmp_path / "atk"
    proc = conform("cases", "import-atk", DIR / "atk_binary_cross_entropy.json", "-o", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 ATK cases: 2 accepted" in proc.stdout + proc.stderr
    dirs = sorted(find_cases(out))
    first = json.loads((dirs[0] / "case.json").read_text("utf-8"))["args"]
    second = json.loads((dirs[1] / "case.json").read_text("utf-8"))["args"]
    assert first["out"]["shape"] == [4, 3] and first["weight"]["kind"] == "tensor"
    assert second["out"]["shape"] == [] and second["weight"] == {"kind": "null"}
    res = tmp_path / "r.jsonl"
    assert_clean(
        conform("run", "--cases", out, "--backend", "reference", "-q", "--results", res), 0
    )
    assert [r["verdict"] for r in read_jsonl(res)] == ["pass", "pass"]
