"""The compiled kernels (numba) against the numpy evaluator, and how they are built and cached.

The kernels are generated from the spec's formula (reference/codegen.py); the numpy evaluator
(reference/formula.evaluate_formula) is the fallback. For every spec in the registry and every
float output dtype it takes, both paths must give the same bits on the same inputs (random values
over many decades, the special values, and values near the branch points), after the near-midpoint
test and the mpmath refinement. The correct-rounding tests against the hand-written oracles
(tests/test_family_oracles.py, tests/test_engine_vs_mpmath.py) run both paths as well.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from aclnn_conformance.conformance.acl.call import Call, ScalarArg, TensorArg
from aclnn_conformance.conformance.spec.interpret import attribute_env, validate
from aclnn_conformance.conformance.spec.registry import default_registry
from aclnn_conformance.conformance.spec.shapes import ShapeError, rule_order, shape_of
from aclnn_conformance.reference import codegen, kernel

from tests.support.paths import HAVE_NUMBA, assert_same_bits, evaluate_both

REG = default_registry()
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLOATS = ("FLOAT", "FLOAT16", "BF16", "DOUBLE")
needs_numba = pytest.mark.skipif(
    not HAVE_NUMBA, reason="numba is not installed (pip install .[fast])"
)


def _shapes(spec, n: int) -> dict[str, tuple[int, ...]]:
    """Every tensor (n,), but a tensor a shape rule splits (2n,) and a ruled tensor the shape
    its rule gives (the halves of a GLU-like op) with the parameters' defaults."""
    shapes = {p.name: (n,) for p in spec.params if p.is_tensor}
    for p in spec.params:
        for term in p.shape.terms() if p.shape is not None else ():
            if term.form == "split" and term.names:
                shapes[term.names[0]] = (term.n * n,)
    attrs = {p.name: p.default for p in spec.params if not p.is_tensor}
    for p in rule_order(spec.params):
        shapes[p.name] = shape_of(p.shape, shapes, attrs)
    return shapes


def _call(spec, product: str, dtype: str, n: int, rng) -> Call | None:
    """A valid call with every tensor of `dtype` (None when the spec does not take it)."""
    args = {}
    try:
        shapes = _shapes(spec, n)
    except ShapeError:  # its rules want ranks a 1-d call lacks (NLL's target: self without dim 1)
        return None
    for p in spec.params:
        if p.is_tensor:
            if p.is_output and not p.is_read:
                args[p.name] = TensorArg.empty_like_shape(shapes[p.name], dtype, fill=np.nan)
                continue
            m = int(np.prod(shapes[p.name]))
            mags = 10.0 ** rng.uniform(-8, 3, m) * rng.choice([-1.0, 1.0], m)
            v = np.where(rng.random(m) < 0.5, rng.normal(0, 3, m), mags)
            special = [0.0, -0.0, 1.0, -1.0, 3.0, -3.0, 6.0, 20.0, np.inf, -np.inf, np.nan, 0.5]
            v[: min(m, 12)] = special[: min(m, 12)]
            with np.errstate(all="ignore"):
                args[p.name] = TensorArg.from_array(v.reshape(shapes[p.name]), dtype)
        elif p.kind == "scalar":
            args[p.name] = ScalarArg(p.default_dtype or "FLOAT", p.default)
        elif p.kind == "bool":
            args[p.name] = bool(p.default)
        else:
            args[p.name] = p.default if p.default is not None else p.values[0]
    for p in spec.params:  # an output with a shape rule (a loss's 0-d mean): the rule's shape
        if p.is_output and not p.is_read and p.shape is not None:
            shapes = {k: v.shape for k, v in args.items() if isinstance(v, TensorArg)}
            ruled = shape_of(p.shape, shapes, args)
            args[p.name] = TensorArg.empty_like_shape(ruled, dtype, fill=np.nan)
    call = Call(spec.name, product, args)
    return call if validate(spec, call).status == 0 else None


def _params():
    out = []
    for spec in REG:
        for dtype in FLOATS:
            product = next((p for p in spec.products
                            if _call(spec, p, dtype, 16, np.random.default_rng(0))), None)  # fmt: skip
            if product:
                out.append(pytest.param(spec.name, product, dtype, id=f"{spec.name}-{product}-{dtype}"))  # fmt: skip
    return out


@needs_numba
@pytest.mark.kernels
@pytest.mark.parametrize("name,product,dtype", _params())
def test_compiled_and_numpy_paths_agree_bit_for_bit(name, product, dtype):
    spec = REG.get(name)
    call = _call(spec, product, dtype, 4096, np.random.default_rng(7))
    evaluate_both(call, registry=REG, exact=True)  # DOUBLE: correctly rounded on both paths
    if dtype != "DOUBLE":
        evaluate_both(call, registry=REG)


@pytest.mark.kernels
def test_generated_source_names_nothing_from_the_spec():
    """The kernel's text is made of generated names and the whitelist: no spec text is executed."""
    allowed = {"math", "np", "njit", "prange", "kernel", "y", "flags", "mode", "drop", "guard",
               "emin", "k", "r", "f", "e", "b", "low", "float", "bool", "abs", "a", "near_midpoint",
               "yb", "mask", "half", "out", "near", "max", "_bits", "_flag", "kernel_flags", "kernel_narrow", "_narrow", "_round", "p", "femin", "all_ones", "nbits", "sign", "m", "mag", "_INF", "_NAN", "_minimum", "_maximum", "_sign", "_pow", "_vexp", "_verfc", "_h2d", "_vexpm1", "_vlog1p", "_vtanh", "tie",
               "BLOCK", "counts", "starts", "blk", "c", "n", "min", "range",
               # the flagging kernels' bounded statements (rowgen.Bounded.element)
               "rv", "re", "q", "_sel", "sum_err", "prod_err", "div_err", "flag_far"}  # fmt: skip
    for spec in REG:
        call = _call_any(spec)
        if call is None:  # no all-float call: its kernels are built from no such environment
            continue
        env = attribute_env(spec, call)
        try:
            half = frozenset(p.name for p in spec.tensor_inputs)
            texts = [codegen.generate(spec, env, approx, h).text
                     for approx in (False, True) for h in (frozenset(), half)]  # fmt: skip
        except codegen.Unsupported:
            continue
        tree = ast.parse("\n".join(texts))
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                ok = node.id in allowed or node.id[:1] in "vtapwx" and node.id[1:].isdigit()
                assert ok, f"{spec.name}: {node.id!r} in the generated kernel"
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if node.value in ("numpy", "always"):  # numba's own options in the header
                    continue
                raise AssertionError(f"{spec.name}: a string constant in the generated kernel")
            if isinstance(node, ast.Attribute):
                assert isinstance(node.value, ast.Name) and node.value.id in (
                    "math",
                    "np",
                    "y",
                    "yb",
                    "flags",
                    "counts",
                    "starts",
                    "out",
                )


def _call_any(spec) -> Call | None:
    """A valid call with every tensor of one float dtype, or None where the spec has none (an
    integer index tensor: NLL's target)."""
    for product in spec.products:
        for dtype in FLOATS:
            c = _call(spec, product, dtype, 4, np.random.default_rng(0))
            if c is not None:
                return c
    return None


@needs_numba
def test_a_string_parameter_selects_its_branch_at_generation():
    spec = REG.get("gelu_backward_v2")
    texts = {a: codegen.generate(spec, {"approximate": a}).text for a in ("none", "tanh")}
    assert texts["none"] != texts["tanh"]
    # the comparison approximate == "tanh" became a constant; nothing else differs
    same = {k: v.replace("True", "?").replace("False", "?") for k, v in texts.items()}
    assert same["none"] == same["tanh"]
    assert '"tanh"' not in texts["tanh"] and "approximate" not in texts["tanh"]


def test_approximate_kernels_multiply_by_the_reciprocal_of_an_irrational_divisor_only():
    """x / sqrt(2) becomes x * (1 / sqrt(2)) where midpoints are settled anyway (FLOAT, FLOAT16,
    BF16 outputs): never exact, within 1 ulp. x / 6 keeps its division (its quotient can be an
    exact tie that the exactness tier finds), and so does every DOUBLE kernel."""
    from aclnn_conformance.conformance.spec.expr.language import compile_expr

    def irrational(text: str) -> bool:  # the emitter's walk knows it of each value it writes
        return (
            compile_expr(text, ["x"]).run({"x": codegen.Code("v0")}, codegen.EMIT_APPROX).irrational
        )

    assert all(map(irrational, ["sqrt(2)", "sqrt(2 * pi)", "pi", "2 * e", "exp(1)"]))
    assert not any(map(irrational, ["6", "0.5", "2 * 3", "x", "sqrt(x)", "x * pi", "inf"]))
    gelu = REG.get("gelu_backward_v2")
    # the value-only kernel (the flagging kernels' bounded statements divide: rowgen.Bounded)
    approx = _function(codegen.generate(gelu, {"approximate": "none"}, approx=True).text, "kernel")
    plain = _function(codegen.generate(gelu, {"approximate": "none"}).text, "kernel")
    assert "* (1.0 / math.sqrt(" in approx and ") / math.sqrt(" not in approx
    assert "* (1.0 / math.sqrt(" not in plain and ") / math.sqrt(" in plain
    hardsigmoid = codegen.generate(REG.get("hardsigmoid"), {}, approx=True).text
    assert "(v0 / 6.0)" in hardsigmoid


def _function(text: str, name: str) -> str:
    """The source of the generated module's function `name`."""
    tree = ast.parse(text)
    return next(ast.get_source_segment(text, f) for f in tree.body
                if isinstance(f, ast.FunctionDef) and f.name == name)  # fmt: skip


# A child process that compiles (or loads) softplus_backward's kernel `k` and runs it once.
COMPILE = """
import sys
sys.path.insert(0, {root!r})
import numpy as np
from aclnn_conformance.conformance.spec.registry import default_registry
from aclnn_conformance.conformance.spec.interpret import attribute_env
from aclnn_conformance.conformance.acl import dtypes
from aclnn_conformance.reference import kernel
from tests.test_kernel import _call_any
spec = default_registry().get("softplus_backward")
call = _call_any(spec)
env = attribute_env(spec, call)
k = kernel.get(spec, env)
raw = {{p.name: call.tensor(p.name).storage for p in spec.tensor_inputs}}
y, f = np.empty(4), np.empty(4, np.uint8)
k.run(raw, env, y, f, 1, dtypes.float_format("FLOAT"))
"""


@pytest.mark.kernels
@needs_numba
def test_the_kernel_is_compiled_once_and_then_loaded_from_the_cache(tmp_path):
    """A second process finds the machine code on disk: numba reports a cache hit, no miss."""
    script = COMPILE.format(root=ROOT) + textwrap.dedent("""
        import json
        s = k.fused_fn.stats  # run's mode 1: the flagging kernel
        print(json.dumps({"hits": sum(s.cache_hits.values()), "misses": sum(s.cache_misses.values())}))
    """)
    env = {**os.environ, "ACLNN_CONFORM_CACHE": str(tmp_path), "ACLNN_CONFORM_KERNEL": "numba"}
    runs = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                              text=True, timeout=300)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert runs[0]["misses"] >= 1
    assert runs[1] == {"hits": runs[1]["hits"], "misses": 0} and runs[1]["hits"] >= 1
    assert any(p.suffix == ".nbi" for p in tmp_path.rglob("*"))


def test_without_numba_the_numpy_path_runs_and_says_so(tmp_path):
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {ROOT!r})
        sys.modules["numba"] = None  # as if not installed
        import numpy as np
        from aclnn_conformance.reference import kernel
        from aclnn_conformance.reference.backend import ReferenceBackend
        from tests.support.calls import t, out, run, result
        assert kernel.name() == "numpy", kernel.name()
        assert not kernel.wanted(1 << 30)
        b = ReferenceBackend()
        x = np.linspace(-4, 4, 70000)
        got = result(run(b, "leaky_relu_backward", gradOutput=t(np.ones_like(x)), self=t(x),
                         negativeSlope=__import__("aclnn_conformance.conformance.acl.call").conformance.acl.call.ScalarArg("FLOAT", 0.5),
                         selfIsResult=False, out=out(x.shape)), "out")
        want = np.where(x > 0, 1.0, np.float32(0.5))
        assert np.array_equal(got, want)
        print("numpy" in b.version())
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "ACLNN_CONFORM_KERNEL": "auto"})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith("True")


def test_kernel_mode_rejects_an_unknown_path():
    with pytest.raises(ValueError, match="numpy, numba or auto"):
        kernel.set_mode("fortran")


@needs_numba
def test_a_kernel_that_fails_to_compile_falls_back_to_numpy(monkeypatch):
    """A numba failure is never a wrong answer or a crash: the chunk runs through numpy."""
    spec = REG.get("leaky_relu_backward")
    call = _call_any(spec)

    class Broken:
        key = "broken"
        failed = False

        def run(self, *a):
            raise TypeError("no typing for this")

        def fail(self, exc):
            Broken.failed = True

    monkeypatch.setattr(kernel, "get", lambda spec, env, approx=False, half=frozenset(): Broken())
    old = kernel.set_mode("numba")
    try:
        from aclnn_conformance.reference.engine import evaluate

        got = evaluate(call)
    finally:
        kernel.set_mode(old)
    kernel.set_mode("numpy")
    try:
        want = evaluate(call)
    finally:
        kernel.set_mode(old)
    assert Broken.failed
    assert_same_bits(got.outputs["out"], want.outputs["out"], "fallback")


def test_exact_float64_values_round_without_mpmath_and_still_correctly(monkeypatch):
    """hardsigmoid's x / 6 + 0.5 is exact in float64 for a float32 x whose mantissa is a
    multiple of 3, and then often an exact tie of FLOAT: the error-free check decides it (no
    mpmath), and the result is still the oracle's correctly rounded value, ties to even."""
    from aclnn_conformance.reference import precise

    from tests.support.rounding import NP
    from tests.test_family_oracles import ORACLES, _expected

    rng = np.random.default_rng(11)
    m = rng.integers(1, 2**22, 6000) * 3  # mantissas divisible by 3
    x = (m * 2.0 ** rng.integers(-30, -19, m.size) * rng.choice([-1.0, 1.0], m.size)).astype(
        np.float32
    )
    calls = []
    real = precise._value_at
    monkeypatch.setattr(precise, "_value_at", lambda *a: calls.append(1) or real(*a))
    spec = REG.get("hardsigmoid")
    product = spec.products[0]
    call = Call("hardsigmoid", product, {"self": TensorArg.from_array(x, "FLOAT"),
                "out": TensorArg.empty_like_shape(x.shape, "FLOAT", fill=np.nan)})  # fmt: skip
    got = evaluate_both(call, registry=REG).outputs["out"]
    want = _expected(ORACLES["hardsigmoid"], {"self": x}, {}, "FLOAT")
    assert np.array_equal(got.view(np.uint32), want.view(NP["FLOAT"]).view(np.uint32))
    assert len(calls) < 60  # of 6000 elements, most of them exact ties
