"""The JAX backend (conformance.run.backends.jax_backend): gradients by jax.vjp of forward functions.

Every expected value is derived by hand in the comments, or is the input itself where the op is an
identity; nothing is captured from the code. Skipped only when jax cannot be imported.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("jax", reason="jax is not installed (pip install '.[jax]')")

from aclnn_conformance.conformance.acl.call import Call, ScalarArg, TensorArg  # noqa: E402
from aclnn_conformance.conformance.run.backend import load_backend  # noqa: E402
from aclnn_conformance.conformance.run.backends.jax_backend import (  # noqa: E402
    BindingError,
    JaxBackend,
    parse_jax_binding,
)
from aclnn_conformance.conformance.spec.registry import (  # noqa: E402
    SpecError,
    default_registry,  # noqa: E402
    load_spec,
)

from tests.support.calls import (  # noqa: E402
    assert_narrow_floats_move_bit_exactly,
    out,
    result,
    run,
    t,
)

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def backend() -> JaxBackend:
    return load_backend("jax")


# ---------------------------------------------------------------- hand-checkable values


def test_leaky_relu_slope_half(backend):
    # x > 0 -> g; x < 0 -> g * 0.5; x = 0 -> g: jax.nn.leaky_relu is x >= 0 ? x : slope * x,
    # so JAX's derivative at 0 is 1 (aclnn and PyTorch take the slope there)
    o = run(backend, "leaky_relu_backward", gradOutput=t([1, 2, 3, 4]), self=t([-1, 2, -3, 0]),
            negativeSlope=ScalarArg("FLOAT", 0.5), selfIsResult=False, out=out([4]))  # fmt: skip
    assert result(o, "out").tolist() == [0.5, 2.0, 1.5, 4.0]


def test_hardshrink_dead_zone_and_nan(backend):
    # |x| <= 0.5 -> 0 (x = +-0.5 included); else g; NaN x is outside the dead zone -> g
    o = run(backend, "hardshrink_backward", gradOutput=t([1, 2, 3, 4, 5, 6]),
            self=t([-1, -0.5, 0, 0.5, 0.75, np.nan]), lambd=ScalarArg("FLOAT", 0.5),
            gradInput=out([6]))  # fmt: skip
    assert result(o, "gradInput").tolist() == [1.0, 0.0, 0.0, 0.0, 5.0, 6.0]


def test_softplus_branches(backend):
    # beta 2, threshold 3: x = 1.5 gives beta*x == threshold -> sigmoid(3); x = 2 -> linear (g);
    # x = 0 -> g / 2; x = ln(3)/2 -> sigmoid(ln 3) = 3/4; x = 400 (exp would overflow) -> g
    x = [1.5, 2.0, 0.0, math.log(3) / 2, 400.0]
    o = run(backend, "softplus_backward", gradOutput=t([1, 7, 6, 4, 5], "DOUBLE"),
            self=t(x, "DOUBLE"), beta=ScalarArg("FLOAT", 2.0), threshold=ScalarArg("FLOAT", 3.0),
            gradInput=out([5], "DOUBLE"))  # fmt: skip
    got = result(o, "gradInput")
    assert got[0] == pytest.approx(1 / (1 + math.exp(-3)), rel=1e-15)
    assert got[1:3].tolist() == [7.0, 3.0]
    assert got[3] == pytest.approx(3.0, rel=1e-15)
    assert got[4] == 5.0


@pytest.mark.parametrize("mode", ["none", "tanh"])
def test_gelu_both_modes(backend, mode):
    # x = 0 -> g/2; x = 10 -> g; x = -10 -> ~0 (cdf and x*pdf both below 1e-15)
    o = run(backend, "gelu_backward_v2", gradOutput=t([4, 3, 3], "DOUBLE"),
            self=t([0, 10, -10], "DOUBLE"), approximate=mode,
            gradInput=out([3], "DOUBLE"))  # fmt: skip
    got = result(o, "gradInput")
    assert got[0] == 2.0
    assert got[1] == pytest.approx(3.0, rel=1e-15)
    assert abs(got[2]) < 1e-15


def test_elu_input_form_and_result_form_skipped(backend):
    # alpha 2, scale 3, inputScale 0.5, x > 0 -> 3g; x <= 0 -> g*0.5*2*3*exp(0.5x):
    # x = 0 -> 3g, x = -2 -> 3g/e; x = 1000 -> 3g (the exponential side must not leak a NaN)
    scalars = {"alpha": ScalarArg("FLOAT", 2.0), "scale": ScalarArg("FLOAT", 3.0),
               "inputScale": ScalarArg("FLOAT", 0.5)}  # fmt: skip
    o = run(backend, "elu_backward", gradOutput=t([1, 1, 2, 1], "DOUBLE"), **scalars,
            isResult=False, selfOrResult=t([2, 0, -2, 1000], "DOUBLE"),
            gradInput=out([4], "DOUBLE"))  # fmt: skip
    got = result(o, "gradInput")
    assert got[[0, 1, 3]].tolist() == [3.0, 3.0, 3.0]
    assert got[2] == pytest.approx(6 / math.e, rel=1e-15)
    call = Call("elu_backward", "atlas-a2", {"gradOutput": t([1.0]), **scalars, "isResult": True,
                                             "selfOrResult": t([1.0]), "gradInput": out([1])})  # fmt: skip
    why = backend.supports(call)
    assert why and "isResult" in why


def test_broadcast_inputs_give_the_broadcast_gradient(backend):
    # g (2,1) and x (1,3) -> out (2,3); leaky with slope 0.25: x < 0 -> g/4
    o = run(backend, "leaky_relu_backward", gradOutput=t([[4], [8]]), self=t([[-1, 1, -2]]),
            negativeSlope=ScalarArg("FLOAT", 0.25), selfIsResult=False, out=out([2, 3]))  # fmt: skip
    assert result(o, "out").reshape(2, 3).tolist() == [[1, 4, 1], [2, 8, 2]]


# ---------------------------------------------------------------- layouts, dtypes, bits


def test_strided_input_and_output_and_gaps_untouched(backend):
    x_storage = np.array([-1, 2, -3, 4, -5, 6], dtype=np.float32)  # x = [[-1,-3,-5],[2,4,6]]
    x = TensorArg("FLOAT", (2, 3), (1, 2), 0, x_storage)
    storage = np.full(13, np.nan, dtype=np.float32)
    gi = TensorArg("FLOAT", (2, 3), (6, 2), 1, storage)
    o = run(backend, "leaky_relu_backward", gradOutput=t([[1, 2, 3], [4, 5, 6]]), self=x,
            negativeSlope=ScalarArg("FLOAT", 0.5), selfIsResult=False, out=gi)  # fmt: skip
    whole = o.outputs["out"]
    assert TensorArg("FLOAT", (2, 3), (6, 2), 1, whole).view().tolist() == [
        [0.5, 1.0, 1.5],
        [4.0, 5.0, 6.0],
    ]
    written = {1, 3, 5, 7, 9, 11}
    for i in range(13):
        assert math.isnan(whole[i]) != (i in written), i
    assert np.isnan(storage).all()


@pytest.mark.parametrize("dtype", ["BF16", "FLOAT16"])
def test_narrow_floats_are_moved_bit_exactly(backend, dtype):
    # hardshrink with lambd 0 passes gradOutput through wherever x != 0 (normal x: XLA on CPU
    # flushes subnormal inputs of arithmetic to zero, so x stays away from them)
    assert_narrow_floats_move_bit_exactly(backend, dtype)


def test_float8_output_storage_is_written(backend):
    # numpy cannot make strided views of float8_e5m2 ('<f1'); the adapter writes through bits
    o = run(backend, "hardshrink_backward", gradOutput=t([2.0, 3.0]), self=t([1.0, 0.0]),
            lambd=ScalarArg("FLOAT", 0.5), gradInput=out([2], "FLOAT8_E5M2"))  # fmt: skip
    assert o.outputs["gradInput"].astype(np.float64).tolist() == [2.0, 0.0]


def test_empty_tensors(backend):
    o = run(backend, "hardshrink_backward", gradOutput=out([0]), self=out([0]),
            lambd=ScalarArg("FLOAT", 0.5), gradInput=out([0]))  # fmt: skip
    assert o.status == 0 and o.outputs["gradInput"].size == 0


# ---------------------------------------------------------------- what JAX cannot do


def test_a_call_jax_cannot_compute_returns_a_status_and_writes_nothing(backend):
    gi = TensorArg.empty_like_shape((2,), "INT32")
    o = run(backend, "hardshrink_backward", gradOutput=t([1, 2], "INT32"), self=t([0, 1], "INT32"),
            lambd=ScalarArg("FLOAT", 0.5), gradInput=gi)  # fmt: skip
    assert o.status == 161002 and "differentiate" in o.message
    assert o.outputs["gradInput"].tolist() == gi.storage.tolist()
    assert backend.capabilities.status == "none"


def test_null_pointers_are_skipped(backend):
    call = Call("hardshrink_backward", "atlas-a2", {"gradOutput": t([1.0]), "self": None,
                "lambd": ScalarArg("FLOAT", 0.5), "gradInput": out([1])})  # fmt: skip
    why = backend.supports(call)
    assert why and "null" in why and "self" in why


def test_version(backend):
    import jax

    assert backend.version().startswith(f"jax {jax.__version__} ")
    assert jax.config.jax_enable_x64


# ---------------------------------------------------------------- bindings


def _spec_with(tmp_path: Path, jax_binding: str):
    text = (REPO / "specs" / "ops" / "elu_backward.yaml").read_text(encoding="utf-8")
    text = text[: text.index("\nbindings:")] + "\nbindings:\n  jax:\n" + jax_binding
    path = tmp_path / "elu_backward.yaml"
    path.write_text(text, encoding="utf-8")
    return load_spec(path)


@pytest.mark.parametrize("spec", list(default_registry()), ids=lambda s: s.name)
def test_every_jax_binding_in_the_registry_is_valid(backend, spec):
    if "jax" in spec.bindings:
        assert backend.binding(spec) is not None, spec.name
    else:  # an op without one is skipped by this backend, with the reason
        assert backend.binding(spec) is None


GOOD = "    forward: scale * selfOrResult\n    input: selfOrResult\n    grad: gradOutput\n"


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ("    forward: selu(selfOrResult)\n    input: selfOrResult\n    grad: gradOutput\n",
         "bindings.jax.forward: unknown function 'selu'"),
        ("    forward: gradOutput * 2\n    input: selfOrResult\n    grad: gradOutput\n",
         "bindings.jax.forward: unknown name 'gradOutput'"),
        ("    forward: selfOrResult.real\n    input: selfOrResult\n    grad: gradOutput\n",
         "bindings.jax.forward"),
        ("    forward: selfOrResult\n    input: gradInput\n    grad: gradOutput\n",
         "bindings.jax.input"),
        (GOOD + "    output: selfOrResult\n", "bindings.jax.output"),
        ("    forward: half(selfOrResult, 0, 0)\n    input: selfOrResult\n    grad: gradOutput\n",
         "bindings.jax.forward: half()/concat() are not evaluated by the JAX adapter"),
        (GOOD + "    unsupported_when: isResult and __import__\n", "unsupported_when"),
    ],
)  # fmt: skip
def test_malformed_bindings_name_the_file_and_line(tmp_path, body, needle):
    spec = _spec_with(tmp_path, body)
    with pytest.raises(BindingError) as err:
        parse_jax_binding(spec)
    lines = Path(spec.path).read_text().splitlines()
    key = needle.split(":")[0].rsplit(".", 1)[-1] + ":"
    start = lines.index("bindings:")
    line = next(i for i, ln in enumerate(lines, 1) if i > start and ln.strip().startswith(key))
    assert str(err.value).startswith(f"{spec.path}:{line}: ") and needle in str(err.value)


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (GOOD + "    differentiate: twice\n", "differentiate"),
        ("    input: selfOrResult\n    grad: gradOutput\n", "forward"),
        ("    forward: [1, 2]\n    input: selfOrResult\n    grad: gradOutput\n", "forward"),
    ],
)
def test_a_binding_of_the_wrong_shape_is_a_schema_problem(tmp_path, body, needle):
    with pytest.raises(SpecError) as err:
        _spec_with(tmp_path, body)
    assert "bindings/jax" in str(err.value) and needle in str(err.value)


def test_a_wrong_binding_skips_its_op_only(tmp_path):
    from aclnn_conformance.conformance.spec.registry import Registry

    spec = _spec_with(tmp_path, "    forward: selu(selfOrResult)\n    input: selfOrResult\n"
                                "    grad: gradOutput\n")  # fmt: skip
    others = [s for s in default_registry() if s.name != spec.name]
    b = JaxBackend(registry=Registry([spec, *others]))
    call = Call(spec.op, "atlas-a2", {"gradOutput": t([1.0]), "alpha": ScalarArg("FLOAT", 1.0),
                "scale": ScalarArg("FLOAT", 1.0), "inputScale": ScalarArg("FLOAT", 1.0),
                "isResult": False, "selfOrResult": t([1.0]), "gradInput": out([1])})  # fmt: skip
    why = b.supports(call)
    assert why and "unknown function 'selu'" in why and spec.path in why
    hs = run(b, "hardshrink_backward", gradOutput=t([2.0]), self=t([1.0]),
             lambd=ScalarArg("FLOAT", 0.5), gradInput=out([1]))  # fmt: skip
    assert hs.status == 0 and hs.outputs["gradInput"].tolist() == [2.0]


def test_no_forward_function_is_written_in_python():
    from aclnn_conformance.conformance.run.backends import jax_backend as module

    assert not hasattr(module, "FORWARD_PARAMS") and not hasattr(module, "forwards")


# ---------------------------------------------------------------- through the CLI


def conform(*args) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("aclnn-conform")
    cmd = [str(exe)] if exe.exists() else [shutil.which("aclnn-conform") or "aclnn-conform"]
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run([*cmd, *map(str, args)], capture_output=True, text=True, env=env,
                          timeout=300, stdin=subprocess.DEVNULL, cwd=REPO)  # fmt: skip


@pytest.mark.gates
def test_cli_run_hardshrink_against_jax(tmp_path):
    results = tmp_path / "r.jsonl"
    proc = conform("run", "--backend", "jax", "--op", "hardshrink_backward", "--product",
                   "atlas-a2", "-q", "--results", results)  # fmt: skip
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stdout + proc.stderr
    recs = [json.loads(line) for line in results.read_text().splitlines()]
    allowed = {"pass", "fail", "skip", "xfail", "deviation"}
    assert {r["verdict"] for r in recs} <= allowed  # no adapter errors
    assert all(r["reason"] for r in recs if r["verdict"] == "skip")
    positive = [r for r in recs if r["kind"] == "positive"]
    assert len(positive) > 100 and all(r["verdict"] != "skip" for r in positive)
    # JAX, like PyTorch, does not clamp a negative lambda, and compares |x| with lambda rounded
    # to the tensor dtype (a weakly typed Python scalar takes the array's dtype)
    known = ("point=x-zero-negative-lambd", "point=x-at-unrepresentable-lambd")
    assert [r["id"] for r in positive if r["verdict"] == "fail" and not r["id"].endswith(known)] \
        == []  # fmt: skip
    # JAX checks no parameters: every negative case is skipped, saying so
    for r in recs:
        if r["kind"] == "negative":
            assert r["verdict"] == "skip", r["id"]


# ---------------------------------------------------------------- forward ops


INPLACE_FIXTURE = REPO / "tests" / "data" / "inplace" / "xelu.yaml"


def test_a_forward_binding_is_evaluated_not_differentiated():
    """bindings.jax with only `forward`: the op's output is the forward's value. xelu's forward
    is where(self > 0, self, alpha * self): -2 * 0.5 = -1, 3 stays, 0 * 0.5 = 0; its in-place
    variant gives the same numbers in its one tensor."""
    from aclnn_conformance.conformance.spec.registry import load_registry

    reg = load_registry([INPLACE_FIXTURE])
    b = JaxBackend(registry=reg)
    alpha = ScalarArg("FLOAT", 0.5)
    o = b.execute(Call("xelu", "atlas-a2", {"self": t([-2, 3, 0]), "alpha": alpha,
                                             "out": out([3])}))  # fmt: skip
    assert result(o, "out").tolist() == [-1.0, 3.0, 0.0]
    o = b.execute(Call("inplace_xelu", "atlas-a2", {"self": t([-2, 3, 0], "FLOAT16"),
                                                     "alpha": alpha}))  # fmt: skip
    assert o.outputs["self"].dtype == np.float16
    assert result(o, "self").tolist() == [-1.0, 3.0, 0.0]


def test_a_forward_binding_names_only_parameters(tmp_path):
    text = INPLACE_FIXTURE.read_text(encoding="utf-8")
    bad = text.replace('jax: {forward: "where(self > 0, self, alpha * self)"}',
                       'jax: {forward: "where(x > 0, x, alpha * x)"}')  # fmt: skip
    assert bad != text
    path = tmp_path / "xelu.yaml"
    path.write_text(bad, encoding="utf-8")
    spec = load_spec(path)
    with pytest.raises(BindingError, match="unknown name 'x'"):
        parse_jax_binding(spec)


@pytest.mark.parametrize("approximate", [0, 1])
def test_an_int_attribute_is_a_number_in_the_forward(backend, approximate):
    """gelu_v2's forward reads the int64_t approximate as a Python number: approximate 1 is
    jax.nn.gelu(approximate=True), 0 is approximate=False (compared in float64 to a relative
    1e-15: the forward is JAX's own expression)."""
    import jax

    x = [-3.0, -0.5, 0.0, 0.75, 2.0]
    o = run(backend, "gelu_v2", x=t(x, "DOUBLE"), approximate=approximate, y=out([5], "DOUBLE"))
    want = np.asarray(jax.nn.gelu(np.array(x), approximate=bool(approximate)))
    np.testing.assert_allclose(result(o, "y"), want, rtol=1e-15, atol=0)
    other = np.asarray(jax.nn.gelu(np.array(x), approximate=not approximate))
    assert not np.allclose(result(o, "y"), other, rtol=1e-9, atol=0)
