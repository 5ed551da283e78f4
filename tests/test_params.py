"""Parameter kinds beyond tensor/scalar/bool/string (issue 27, point 1): `int` (int64_t by
value), `float` (double by value), `int_array` / `float_array` / `bool_array` (aclIntArray* ...),
`tensor_list`, `scalar_list`, and nullable tensors.

The fixture tests/data/params/scale_shift.yaml is a made-up op: out = self * alpha + shift where
mode == 1, self + alpha + shift otherwise, with arrays only its checks read. Expected values are
worked out here in float64 (every product below is exact in float64), never read from the engine.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from aclnn_conformance.conformance.acl.call import ArrayArg, Call, CallError, TensorArg
from aclnn_conformance.conformance.cases.casedir import CaseFileError, read_case, write_case
from aclnn_conformance.conformance.cases.generate import build, plan_op
from aclnn_conformance.conformance.spec.interpret import attribute_env, validate
from aclnn_conformance.conformance.spec.lint import lint_file
from aclnn_conformance.conformance.spec.registry import load_registry
from aclnn_conformance.reference import engine

from tests.support.runcli import conform

pytest_plugins = ["tests.aclnn_double.fixtures"]  # lib_dir, counter

FIXTURE = Path(__file__).parent / "data" / "params" / "scale_shift.yaml"
X = np.array([-3.0, -0.5, 0.0, 0.25, 1.0, 7.5], np.float32)


def _reg():
    return load_registry([FIXTURE])


def _call(**over) -> Call:
    args = {
        "self": TensorArg.from_array(X, "FLOAT"),
        "mode": 0,
        "alpha": 1.5,
        "shift": 2,
        "dims": ArrayArg("int_array", (0, -1)),
        "weights": ArrayArg("float_array", (0.5, 2.0)),
        "flags": ArrayArg("bool_array", (True, False)),
        "out": TensorArg.from_array(np.zeros(X.size), "FLOAT"),
    }
    args.update(over)
    return Call("scale_shift", "atlas-a2", args)


# -- the model and lint ------------------------------------------------------------------------


def test_the_fixture_reads_each_kind_with_its_type():
    spec = _reg().get("scale_shift")
    kinds = {p.name: p.kind for p in spec.params}
    assert kinds == {"self": "tensor", "mode": "int", "alpha": "float", "shift": "int",
                     "dims": "int_array", "weights": "float_array", "flags": "bool_array",
                     "out": "tensor"}  # fmt: skip
    mode, alpha = spec.param("mode"), spec.param("alpha")
    assert mode.values == (0, 1) and mode.default == 0 and mode.is_number and mode.by_value
    assert alpha.range == (-100, 100) and isinstance(alpha.default, float)
    assert spec.param("dims").is_array and spec.param("dims").default == [0, -1]


def _edited(tmp_path: Path, edit) -> Path:
    data = yaml.safe_load(FIXTURE.read_text("utf-8"))
    edit(data)
    path = tmp_path / "scale_shift.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), "utf-8")
    return path


def _p(data: dict, name: str) -> dict:
    return next(p for p in data["params"] if p["name"] == name)


@pytest.mark.parametrize(
    "edit, needle",
    [
        (lambda d: d["formula"]["branches"][0].update(value="self * dims"),
         "dims is a int_array: an expression cannot read it"),
        (lambda d: _p(d, "mode").update(default=0.5), "mode: default must be an integer"),
        (lambda d: _p(d, "mode").update(values=[0, 1.5]), "values[1] must be an integer"),
        (lambda d: _p(d, "alpha").update(default=500.0), "outside range [-100, 100]"),
        (lambda d: _p(d, "alpha").update(range=[5, 1]), "range is [lo, hi] with lo <= hi"),
        (lambda d: _p(d, "shift").update(if_null="default"), "a int is passed by value"),
        (lambda d: _p(d, "dims").update(default=[1, 2.5]), "is a list of ints"),
        (lambda d: _p(d, "flags").update(default=[1, 0]), "is a list of bools"),
        (lambda d: _p(d, "dims").update(range=[0, 3]), "only an int or a float has a range"),
        (lambda d: d["checks"][0]["params"].append("mode"), "'mode' is a int passed by value"),
        (lambda d: d["checks"][2].update(examples=[{"mode": 1.5}]), "example mode: must be an"),
    ],
    ids=["array-in-formula", "float-default-for-int", "bool-value", "default-out-of-range",
         "range-reversed", "by-value-null", "int-array-float", "bool-array-int", "array-range",
         "not-null-int", "example-float-for-int"],
)  # fmt: skip
def test_lint_refuses_ill_typed_parameters(tmp_path, edit, needle):
    path = _edited(tmp_path, edit)
    spec, problems = lint_file(path)
    shown = "\n".join(map(str, problems))
    assert spec is None and needle in shown, shown
    assert shown.startswith(f"{path}:")


@pytest.mark.gates
def test_the_lint_command_names_the_file_and_line(tmp_path):
    path = _edited(tmp_path, lambda d: _p(d, "mode").update(default=0.5))
    proc = conform("specs", "lint", path)
    assert proc.returncode == 1 and f"{path}:" in proc.stdout and "mode: default" in proc.stdout


# -- interpretation and the reference --------------------------------------------------------


def test_the_attribute_env_holds_python_numbers_and_tuples():
    env = attribute_env(_reg().get("scale_shift"), _call(mode=1))
    assert env["mode"] == 1 and type(env["mode"]) is int
    assert env["alpha"] == 1.5 and type(env["alpha"]) is float
    assert env["dims"] == (0, -1) and env["weights"] == (0.5, 2.0) and env["flags"] == (True, False)


@pytest.mark.parametrize(
    "mode, alpha, shift", [(0, 1.5, 2), (1, 1.5, 2), (1, -3.25, -7), (0, 0.0, 0)]
)
def test_the_reference_reads_int_and_float_in_the_formula(mode, alpha, shift):
    got = engine.evaluate(_call(mode=mode, alpha=alpha, shift=shift), _reg())
    assert got.status == 0
    x = X.astype(np.float64)
    want = (x * alpha + shift) if mode == 1 else (x + alpha + shift)  # exact in float64
    np.testing.assert_array_equal(got.outputs["out"], want.astype(np.float32))


@pytest.mark.parametrize(
    "over, status, check",
    [({"mode": 2}, 161002, "mode-valid"), ({"mode": -1}, 161002, "mode-valid"),
     ({"alpha": 100.5}, 161002, "alpha-range"), ({"dims": None}, 161001, "null-ptr"),
     ({"mode": 1}, 0, None)],
)  # fmt: skip
def test_value_checks_read_ints_and_floats_and_arrays_can_be_null(over, status, check):
    v = validate(_reg().get("scale_shift"), _call(**over))
    assert v.status == status
    assert (v.check.id if v.check else None) == check


@pytest.mark.parametrize(
    "over, needle",
    [({"mode": 1.0}, "mode must be an integer"), ({"mode": True}, "mode must be an integer"),
     ({"alpha": "1"}, "alpha must be a number"), ({"mode": None}, "passed by value"),
     ({"dims": (0, 1)}, "dims must be a int_array"),
     ({"dims": ArrayArg("int_array", (0, 1.5))}, "dims[1]: must be an int64"),
     ({"flags": ArrayArg("bool_array", (1,))}, "flags[0]: must be true or false")],
)  # fmt: skip
def test_the_reference_refuses_ill_typed_arguments(over, needle):
    with pytest.raises(CallError, match=None) as exc:
        engine.evaluate(_call(**over), _reg())
    assert needle in str(exc.value)


# -- generation and case files ---------------------------------------------------------------


def test_generation_makes_a_case_per_documented_value_and_passes_the_defaults():
    spec = _reg().get("scale_shift")
    plans = plan_op(spec)
    tags = {p.id.split("/")[3] for p in plans if p.kind == "positive"}
    assert tags == {"mode=0", "mode=1"}
    base = next(p for p in plans if p.id.endswith("/dtypes")).arg
    assert base["alpha"] == 1.5 and type(base["alpha"]) is float and base["shift"] == 2
    assert base["dims"] == ArrayArg("int_array", (0, -1))
    assert base["flags"] == ArrayArg("bool_array", (True, False))
    negs = {p.id.split("/neg/")[1]: p.arg for p in plans if p.kind == "negative"}
    assert negs["mode-valid/example1"]["mode"] == 2
    assert negs["alpha-range/example1"]["alpha"] == 150.5
    assert negs["null-ptr/dims"]["dims"] is None


def test_case_files_hold_each_kind_and_read_back_the_same(tmp_path):
    spec = _reg().get("scale_shift")
    plan = next(p for p in plan_op(spec) if "mode=1/values=normal" in p.id)
    case = build(spec, plan, 0)
    d = write_case(tmp_path, case)
    args = json.loads((d / "case.json").read_text("utf-8"))["args"]
    assert args["mode"] == {"kind": "int", "value": 1}
    assert args["alpha"] == {"kind": "float", "value": 1.5}
    assert args["dims"] == {"kind": "int_array", "values": [0, -1]}
    assert args["weights"] == {"kind": "float_array", "values": [0.5, 2.0]}
    assert args["flags"] == {"kind": "bool_array", "values": [True, False]}
    back = read_case(d, tmp_path)
    for name in ("mode", "alpha", "shift", "dims", "weights", "flags"):
        assert back.call.args[name] == case.call.args[name]
        assert type(back.call.args[name]) is type(case.call.args[name])


def _hostile(tmp_path: Path, name: str, value: dict) -> Path:
    spec = _reg().get("scale_shift")
    plan = next(p for p in plan_op(spec) if p.id.endswith("/dtypes"))
    d = write_case(tmp_path, build(spec, plan, 0))
    meta = json.loads((d / "case.json").read_text("utf-8"))
    meta["args"][name] = value
    (d / "case.json").write_text(json.dumps(meta), "utf-8")
    return d


@pytest.mark.parametrize(
    "name, value, needle",
    [
        ("dims", {"kind": "int_array", "values": "0,1"}, "values of a int_array must be a list"),
        ("dims", {"kind": "int_array", "values": [0, "1"]}, "values[1]: an int parameter must be"),
        ("dims", {"kind": "int_array", "values": [0] * 70000}, "a int_array of 70000 items"),
        ("mode", {"kind": "int", "value": 1.0}, "args.mode: value: an int parameter must be an integer"),
        ("mode", {"kind": "int", "value": 2**70}, "outside int64"),
        ("alpha", {"kind": "float", "value": True}, "a float parameter must be a number"),
        ("flags", {"kind": "bool_array", "values": [1]}, "bool_array item is true or false"),
    ],
    ids=["string-for-list", "string-item", "long-list", "float-for-int", "huge-int",
         "bool-for-float", "int-for-bool"],
)  # fmt: skip
def test_a_hostile_case_file_is_refused_with_one_message(tmp_path, name, value, needle):
    d = _hostile(tmp_path, name, value)
    with pytest.raises(CaseFileError) as exc:
        read_case(d, tmp_path)
    assert needle in str(exc.value) and str(d / "case.json") in str(exc.value)


def test_a_billion_long_list_is_refused_by_the_file_size_before_parsing(tmp_path):
    d = _hostile(tmp_path, "dims", {"kind": "int_array", "values": []})
    text = (
        (d / "case.json")
        .read_text("utf-8")
        .replace('"values": []', '"values": [' + "0," * 600_000 + "0]")
    )
    (d / "case.json").write_text(text, "utf-8")  # 1.2 MB stands for 10^9 items: the size cap
    with pytest.raises(CaseFileError) as exc:
        read_case(d, tmp_path)
    assert "case.json" in str(exc.value)


@pytest.mark.gates
def test_run_over_exported_cases_passes_and_a_bad_file_is_one_line(tmp_path):
    out = tmp_path / "cases"
    proc = conform("--specs", FIXTURE.parent, "cases", "export", "--op", "scale_shift", "-k",
                   "values=normal", out)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    proc = conform(
        "--specs", FIXTURE.parent, "run", "--cases", out, "--results", tmp_path / "r.jsonl"
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert len(lines) == 4 and {r["verdict"] for r in lines} == {"pass"}


# -- the aclnn ctypes backend against the C test double ----------------------------------------


@pytest.fixture
def scale_backend(lib_dir):
    from aclnn_conformance.conformance.run.backends.aclnn_backend import AclnnBackend

    b = AclnnBackend(registry=_reg(), lib_dir=str(lib_dir))
    yield b
    b.close()


def _last_args(double_lib_dir: Path) -> str:
    import ctypes

    ops = ctypes.CDLL(str(double_lib_dir / "libopapi_nn.so"), mode=ctypes.RTLD_GLOBAL)
    ops.aclnnTestDoubleLastArgs.restype = ctypes.c_char_p
    return ops.aclnnTestDoubleLastArgs().decode()


@pytest.mark.parametrize("mode, alpha, shift", [(0, 1.5, 2), (1, -3.25, -7)])
def test_the_c_api_gets_int64_double_and_arrays_by_their_c_types(
    scale_backend, lib_dir, counter, mode, alpha, shift
):
    dims = ArrayArg("int_array", (0, -1, 2**40))
    weights = ArrayArg("float_array", (0.5, -2.25))
    flags = ArrayArg("bool_array", (True, False, True))
    call = _call(mode=mode, alpha=alpha, shift=shift, dims=dims, weights=weights, flags=flags)
    got = scale_backend.execute(call)
    assert got.status == 0, got.message
    assert _last_args(lib_dir) == (
        f"mode={mode} alpha={alpha!r} shift={shift} dims=0,-1,1099511627776 "
        "weights=0.5,-2.25 flags=101"
    )
    x = X.astype(np.float64)
    want = (x * alpha + shift) if mode == 1 else (x + alpha + shift)
    np.testing.assert_array_equal(got.outputs["out"], want.astype(np.float32))
    assert counter("arrays_live") == 0 and counter("tensors_live") == 0


@pytest.mark.parametrize(
    "over, status",
    [({"mode": 2}, 161002), ({"alpha": 150.5}, 161002), ({"weights": None}, 161001)],
)
def test_the_c_api_statuses_agree_with_the_spec(scale_backend, counter, over, status):
    call = _call(**over)
    assert scale_backend.execute(call).status == status
    assert validate(_reg().get("scale_shift"), call).status == status
    assert counter("arrays_live") == 0


def test_the_adapter_refuses_a_float_for_an_int_before_the_library(scale_backend, counter):
    before = counter("phase1_calls")
    with pytest.raises(CallError) as exc:
        scale_backend.execute(_call(mode=1.0))
    assert "mode: the spec declares a int (int64_t)" in str(exc.value)
    assert counter("phase1_calls") == before


@pytest.mark.gates
def test_the_generated_suite_passes_on_the_double(tmp_path, lib_dir):
    proc = conform("--specs", FIXTURE.parent, "run", "--op", "scale_shift", "--backend", "aclnn",
                   "--backend-opt", f"lib_dir={lib_dir}", "--results", tmp_path / "r.jsonl")  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


# -- the exec protocol ---------------------------------------------------------------------------


def test_an_exec_harness_reads_each_kind_from_the_case_file():
    import shlex
    import sys

    from aclnn_conformance.conformance.run.backends.exec_backend import ExecBackend

    harness = FIXTURE.parent / "scale_shift_harness.py"
    b = ExecBackend(
        registry=_reg(), cmd=f"{shlex.quote(sys.executable)} {shlex.quote(str(harness))}"
    )
    got = b.execute(_call(mode=1, alpha=-3.25, shift=-7))
    assert got.status == 0, got.message
    assert got.message == "dims=[0, -1] weights=[0.5, 2.0] flags=[True, False]"
    x = X.astype(np.float64)
    np.testing.assert_array_equal(got.outputs["out"], (x * -3.25 - 7).astype(np.float32))
    assert b.execute(_call(mode=2)).status == 161002
