"""A `float` parameter the prototype declares as a C `float` (`c_type: float`), not the kind's
double: the ctypes adapter passes a c_float, the C test double reads a float, the reference and
the checks use the value rounded to float32 (the library never sees 0.1, only
0.100000001490116...), lint takes only double or float, and check-doc compares the prototype's
type. The fixture tests/data/params/scale_float.yaml is a made-up op: out = self * alpha.
Expected values are worked out here with numpy's float32 and float64, never read from the engine.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from aclnn_conformance.conformance.acl.call import Call, TensorArg
from aclnn_conformance.conformance.spec.interpret import attribute_env
from aclnn_conformance.conformance.spec.lint import lint_file
from aclnn_conformance.conformance.spec.registry import load_registry
from aclnn_conformance.reference import engine

from tests.support.runcli import conform

pytest_plugins = ["tests.aclnn_double.fixtures"]  # lib_dir

FIXTURE = Path(__file__).parent / "data" / "params" / "scale_float.yaml"
F32_TENTH = 0.10000000149011612  # float32(0.1), by hand: 13421773 * 2^-27
# self values where rounding x * 0.1 and x * float32(0.1) to float32 differ (found below)
X = np.arange(1, 4097, dtype=np.float32)


def _call(alpha: float) -> Call:
    args = {
        "self": TensorArg.from_array(X, "FLOAT"),
        "alpha": alpha,
        "out": TensorArg.from_array(np.zeros(X.size, np.float32), "FLOAT"),
    }
    return Call("scale_float", "atlas-a2", args)


def test_the_float32_value_of_a_tenth_is_what_the_hand_says():
    assert float(np.float32(0.1)) == F32_TENTH == 13421773 * 2.0**-27


def test_checks_and_formulas_see_the_float_the_library_receives():
    spec = load_registry([FIXTURE]).get("scale_float")
    assert spec.param("alpha").c_float
    assert attribute_env(spec, _call(0.1))["alpha"] == F32_TENTH
    assert attribute_env(spec, _call(1e300))["alpha"] == float("inf")  # beyond float's range


def test_the_reference_multiplies_by_the_float32_value():
    want = (X.astype(np.float64) * F32_TENTH).astype(np.float32)
    naive = (X.astype(np.float64) * 0.1).astype(np.float32)
    assert (want != naive).any()  # the test can tell the two apart
    got = engine.evaluate(_call(0.1), load_registry([FIXTURE]))
    assert got.status == 0, got.message
    np.testing.assert_array_equal(got.outputs["out"], want)


def test_the_c_api_gets_a_c_float(lib_dir, counter):
    import ctypes

    from aclnn_conformance.conformance.run.backends.aclnn_backend import AclnnBackend

    b = AclnnBackend(registry=load_registry([FIXTURE]), lib_dir=str(lib_dir))
    try:
        got = b.execute(_call(0.1))
    finally:
        b.close()
    assert got.status == 0, got.message
    ops = ctypes.CDLL(str(lib_dir / "libopapi_nn.so"), mode=ctypes.RTLD_GLOBAL)
    ops.aclnnTestDoubleLastArgs.restype = ctypes.c_char_p
    # a double in a float's place would be read as other bits (0.1's low half: -4e-8 ...)
    assert ops.aclnnTestDoubleLastArgs().decode() == f"alpha={F32_TENTH!r}"
    want = (X.astype(np.float64) * F32_TENTH).astype(np.float32)
    np.testing.assert_array_equal(got.outputs["out"], want)
    assert counter("tensors_live") == 0


@pytest.mark.parametrize("c_type", ["int64_t", "single", "float*"])
def test_lint_takes_only_double_or_float_for_a_float_parameter(tmp_path, c_type):
    data = yaml.safe_load(FIXTURE.read_text("utf-8"))
    data["params"][1]["c_type"] = c_type
    path = tmp_path / "scale_float.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), "utf-8")
    spec, problems = lint_file(path)
    shown = "\n".join(map(str, problems))
    assert spec is None and "alpha: a float parameter's c_type is double" in shown, shown
    assert shown.startswith(f"{path}:")


PAGE = """# aclnnScaleFloat

## 函数原型

```Cpp
aclnnStatus aclnnScaleFloatGetWorkspaceSize(
    const aclTensor *self,
    {alpha},
    aclTensor *out,
    uint64_t *workspaceSize,
    aclOpExecutor **executor)
```
"""


@pytest.mark.parametrize(
    "doc, spec_c_type, flagged",
    [("float alpha", "float", False), ("float alpha", "double", True),
     ("double alpha", "float", True), ("double alpha", "double", False)],
)  # fmt: skip
def test_check_doc_compares_a_float_parameters_c_type(tmp_path, doc, spec_c_type, flagged):
    page = tmp_path / "aclnnScaleFloat.md"
    page.write_text(PAGE.replace("{alpha}", doc), "utf-8")
    data = yaml.safe_load(FIXTURE.read_text("utf-8"))
    data["params"][1]["c_type"] = spec_c_type
    spec = tmp_path / "scale_float.yaml"
    spec.write_text(yaml.safe_dump(data, sort_keys=False), "utf-8")
    proc = conform("specs", "check-doc", spec, page, "--format", "json")
    diffs = [d for r in json.loads(proc.stdout) for d in r["differences"] if d["kind"] == "c-type"]
    assert [d["param"] for d in diffs] == (["alpha"] if flagged else []), proc.stdout
