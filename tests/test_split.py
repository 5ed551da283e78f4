"""Named halves of a split in formulas: `half(x, dim, k)` and `concat(a, b, dim)`.

The language (what parses, what is refused, what lint says), the views split_call makes, and the
reference's results on fixture specs written here (a GLU-like forward whose output is one half,
and a backward whose output of the full size is written per half), on every dim of ranks 1 to 4
(negative dims too), in every tier: numpy, the compiled float64 kernel, the double-double kernel
(DOUBLE outputs) and the golden stream (mpmath settles what they flag). The oracle is mpmath at
60 digits per element on halves cut with numpy slicing, rounded by
tests/support/rounding.round_exact; it never reads the fixture's formula.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import mpmath
import numpy as np
import pytest
from aclnn_conformance.conformance.acl.call import Call, CallError, TensorArg
from aclnn_conformance.conformance.spec.expr import ir
from aclnn_conformance.conformance.spec.expr.language import ExprError, compile_expr
from aclnn_conformance.conformance.spec.lint import lint_file
from aclnn_conformance.conformance.spec.registry import Registry, load_spec
from aclnn_conformance.conformance.spec.split import split_call
from aclnn_conformance.reference import engine

from tests.support.paths import evaluate_both
from tests.support.rounding import NP, round_exact

mp = mpmath.mp

# -- the language ---------------------------------------------------------------------------------


def test_half_and_concat_lower_to_their_nodes():
    e = compile_expr("concat(half(x, -1, 0), g * half(x, d, 1), d)", ["x", "g", "d"])
    assert isinstance(e.ir, ir.Concat) and e.ir.param == "d"
    halves = [n for n in ir.walk(e.ir) if isinstance(n, ir.Half)]
    assert {(h.x, h.k, h.dim, h.param) for h in halves} == {("x", 0, -1, None), ("x", 1, None, "d")}
    # the walker binds each half and the concatenation's index under its key
    assert {"half(x, -1, 0)", "half(x, d, 1)", "concat(d)", "x", "g", "d"} <= e.names


@pytest.mark.parametrize(
    "text, message",
    [
        ("half(x, 0)", "takes 3 argument"),
        ("half(x, 0, 2)", "the third argument is 0"),
        ("half(x, 0, k)", "the third argument is 0"),
        ("half(x + 1, 0, 0)", "tensor parameter's name"),
        ("half(y, 0, 0)", "tensor parameter's name"),
        ("half(x, (0, 1), 0)", "one dim"),
        ("half(x, z, 0)", "not a parameter"),
        ("half(x, 9, 0)", "out of range"),
        ("concat(x, x, 1.5)", "int literal"),
    ],
)
def test_bad_splits_are_rejected(text, message):
    with pytest.raises(ExprError, match=message):
        compile_expr(text, ["x", "k"])


# -- fixture specs ---------------------------------------------------------------------------------

FORWARD = "half(self, dim, 0) / (1 + exp(-half(self, dim, 1)))"
BACKWARD = "concat(grad * sb, grad * sb * (half(self, dim, 0) - half(self, dim, 0) * sb), dim)"


def _text(value: str, let: str = "", grad: bool = False, dim_kind: str = "int") -> str:
    grad_param = '  - {name: grad, kind: tensor, role: input, c_type: "const aclTensor*"}\n'
    lets = f'  let:\n    - {{id: l, name: sb, value: "{let}", source: t}}\n' if let else ""
    head = textwrap.dedent(
        """\
        format: 1
        op: aclnnSplitFixture
        name: split_fixture
        summary: a split fixture
        source:
          doc: none
        products: [atlas-a2]
        params:
        """
    )
    rest = textwrap.dedent(
        f"""\
          - {{name: self, kind: tensor, role: input, c_type: "const aclTensor*"}}
          - {{name: dim, kind: {dim_kind}, role: input, c_type: int64_t, default: -1}}
          - {{name: out, kind: tensor, role: output, c_type: "aclTensor*"}}
        dtype_sets:
          float:
            source: t
            default: [FLOAT, FLOAT16, BF16, DOUBLE]
        checks:
          - {{id: null-ptr, kind: not_null, params: [self, out], status: ACLNN_ERR_PARAM_NULLPTR, source: t}}
          - {{id: dtype-self, kind: dtype_in, params: [self], set: float, source: t}}
          - {{id: dim-range, kind: dim_in_range, params: [self], dim: dim, source: t}}
          - {{id: dim-even, kind: dim_divisible, params: [self], dim: dim, by: 2, source: t}}
        formula:
          output: out
          source: t
        """  # noqa: E501
    )
    branch = f'  branches:\n    - {{id: v, when: otherwise, value: "{value}", source: t}}\n'
    return head + (grad_param if grad else "") + rest + lets + branch


def _registry(tmp_path: Path, value: str, let: str = "", grad: bool = False) -> Registry:
    path = tmp_path / "split_fixture.yaml"
    path.write_text(_text(value, let, grad))
    return Registry([load_spec(path)])


SIGMOID_B = "1 / (1 + exp(-half(self, dim, 1)))"


def _sigmoid(b):
    return 1 / (1 + mp.exp(-b))


def _halves(x: np.ndarray, dim: int) -> tuple[np.ndarray, np.ndarray]:
    return tuple(np.split(x, 2, axis=dim))  # type: ignore[return-value]


def _round_all(values: np.ndarray, dtype: str) -> np.ndarray:
    return np.array([round_exact(v, dtype) for v in values.reshape(-1)], NP[dtype]).reshape(
        values.shape
    )


def _mp(a: np.ndarray) -> np.ndarray:
    return np.vectorize(lambda v: mp.mpf(float(v)), otypes=[object])(a.astype(np.float64))


def _forward_oracle(x: np.ndarray, dim: int, dtype: str) -> np.ndarray:
    a, b = _halves(x, dim)
    with mpmath.workdps(60):
        exact = np.vectorize(lambda p, q: p * _sigmoid(q), otypes=[object])(_mp(a), _mp(b))
        return _round_all(exact, dtype)


def _backward_oracle(g: np.ndarray, x: np.ndarray, dim: int, dtype: str) -> np.ndarray:
    a, b = _halves(x, dim)
    with mpmath.workdps(60):
        ga = np.vectorize(lambda gg, q: gg * _sigmoid(q), otypes=[object])(_mp(g), _mp(b))
        gb = np.vectorize(
            lambda gg, p, q: gg * _sigmoid(q) * p * (1 - _sigmoid(q)), otypes=[object]
        )(_mp(g), _mp(a), _mp(b))
        return _round_all(np.concatenate([ga, gb], axis=dim), dtype)


SHAPES = {1: (6,), 2: (4, 6), 3: (2, 4, 6), 4: (2, 2, 4, 2)}


def _dims():
    """(rank, dim, shape): every dim of ranks 1 to 4, each as written and negative; the shape
    has an even size along it."""
    out = []
    for rank, shape in SHAPES.items():
        for d in range(rank):
            s = list(shape)
            s[d] = 2 * (d + 1)  # even, and a different size per dim
            for dim in (d, d - rank):
                out.append(pytest.param(dim, tuple(s), id=f"r{rank}-dim{dim}"))
    return out


def _call(x: TensorArg, dim: int, out_shape: tuple[int, ...], dtype: str, grad=None) -> Call:
    args = {"self": x, "dim": dim, "out": TensorArg.empty_like_shape(out_shape, dtype, 7.0)}
    if grad is not None:
        args["grad"] = grad
    return Call("aclnnSplitFixture", "atlas-a2", args)


def _same(got: np.ndarray, want: np.ndarray) -> bool:
    g, w = got.astype(np.float64), want.astype(np.float64)
    return bool(np.all((g == w) | (np.isnan(g) & np.isnan(w))))


@pytest.mark.kernels  # evaluate_both: numba compiles the fixture's kernels (plain, double-double)
@pytest.mark.parametrize("dim, shape", _dims())
def test_the_first_half_times_sigmoid_of_the_second_on_every_dim(tmp_path, dim, shape):
    reg = _registry(tmp_path, FORWARD)
    rng = np.random.default_rng(abs(dim) * 10 + len(shape))
    x = rng.normal(size=shape) * 6
    out_shape = list(shape)
    out_shape[dim] //= 2
    for dtype in ("FLOAT", "BF16", "DOUBLE"):
        t = TensorArg.from_array(x, dtype)
        got = evaluate_both(_call(t, dim, tuple(out_shape), dtype), registry=reg)
        assert got.status == 0, got.message
        want = _forward_oracle(t.view().astype(np.float64), dim, dtype)
        assert _same(got.outputs["out"].reshape(out_shape), want), (dtype, dim, shape)


@pytest.mark.kernels  # evaluate_both: numba compiles the fixture's kernels (plain, double-double)
@pytest.mark.parametrize("dim, shape", _dims())
def test_a_full_size_output_is_written_per_half_on_every_dim(tmp_path, dim, shape):
    reg = _registry(tmp_path, BACKWARD, let=SIGMOID_B, grad=True)
    rng = np.random.default_rng(100 + abs(dim) * 10 + len(shape))
    x = rng.normal(size=shape) * 6
    g_shape = list(shape)
    g_shape[dim] //= 2
    g = rng.normal(size=g_shape)
    for dtype in ("FLOAT", "FLOAT16", "DOUBLE"):
        tx, tg = TensorArg.from_array(x, dtype), TensorArg.from_array(g, dtype)
        got = evaluate_both(_call(tx, dim, shape, dtype, tg), registry=reg)
        assert got.status == 0, got.message
        want = _backward_oracle(
            tg.view().astype(np.float64), tx.view().astype(np.float64), dim, dtype
        )
        assert _same(got.outputs["out"].reshape(shape), want), (dtype, dim, shape)


def _strided(x: np.ndarray, dtype: str) -> TensorArg:
    """x as a transposed (non-contiguous) view of a padded storage."""
    t = TensorArg.from_array(np.ascontiguousarray(x.T), dtype)
    pad = np.concatenate([np.full(3, 99, t.storage.dtype), t.storage])
    strides = tuple(reversed(t.strides))
    return TensorArg(dtype, x.shape, strides, 3, pad)


@pytest.mark.kernels  # evaluate_both: numba compiles the fixture's kernels
def test_strided_views_and_the_golden_stream(tmp_path):
    """A non-contiguous self (transposed, offset) and output; the lazy golden (float64 values,
    chunk by chunk in the output's C order) holds the exact values before the last rounding."""
    reg = _registry(tmp_path, BACKWARD, let=SIGMOID_B, grad=True)
    rng = np.random.default_rng(7)
    x, g = rng.normal(size=(6, 8)) * 5, rng.normal(size=(3, 8))
    tx, tg = _strided(x, "FLOAT"), TensorArg.from_array(g, "FLOAT")
    out = _strided(np.zeros((6, 8)), "FLOAT")
    call = Call("aclnnSplitFixture", "atlas-a2", {"self": tx, "grad": tg, "dim": 0, "out": out})
    got = evaluate_both(call, registry=reg)
    view = TensorArg(out.dtype, out.shape, out.strides, out.offset, got.outputs["out"]).view()
    want = _backward_oracle(tg.view().astype(np.float64), x.astype(np.float32), 0, "FLOAT")
    assert _same(np.asarray(view), want)
    assert np.all(got.outputs["out"][:3] == 99)  # the padding is left alone
    lazy = engine.evaluate(call, reg, lazy=True)
    gold = np.concatenate([c for _, _, c in lazy.golden["out"].chunks()])
    assert _same(gold.astype(np.float32), want.reshape(-1))  # rounds to the same values


def test_an_odd_size_or_a_wrong_half_is_a_call_error(tmp_path):
    reg = _registry(tmp_path, FORWARD)
    spec = reg.get("split_fixture")
    odd = _call(TensorArg.from_array(np.zeros((3, 5)), "FLOAT"), -1, (3, 2), "FLOAT")
    with pytest.raises(CallError, match="not twice the half"):
        split_call(spec, odd)
    # validation first: dim_divisible rejects the odd size with its status
    assert engine.evaluate(odd, reg).status == 161002
    wrong = _call(TensorArg.from_array(np.zeros((3, 6)), "FLOAT"), -1, (3, 2), "FLOAT")
    with pytest.raises(CallError, match="not twice the half 2"):
        split_call(spec, wrong)


def test_split_call_views_share_the_storage(tmp_path):
    reg = _registry(tmp_path, FORWARD)
    spec = reg.get("split_fixture")
    x = TensorArg.from_array(np.arange(24.0).reshape(2, 6, 2), "FLOAT")
    call = split_call(spec, _call(x, 1, (2, 3, 2), "FLOAT"))
    second = call.tensor("half(self, dim, 1)")
    assert second.storage is x.storage
    assert second.shape == (2, 1, 3, 2) and call.tensor("out").shape == (2, 1, 3, 2)
    # element [1, 0, 2, 1] of the second half is x[1, 3 + 2, 1]
    assert second.view()[1, 0, 2, 1] == x.view()[1, 5, 1]


# -- lint ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, dim_kind, message",
    [
        ("half(self, dim, 0)", "float", "the dim of half(self, dim, 0) must be an int"),
        ("half(dim, 0, 0) + half(self, 0, 0)", "int", "half() splits a tensor input"),
        ("half(self, -1, 0) + sum(self, -1)", "int", "cannot both split tensors in halves"),
    ],
)
def test_lint_refuses_splits_it_cannot_evaluate(tmp_path, value, dim_kind, message):
    path = tmp_path / "split_fixture.yaml"
    text = _text(value, dim_kind=dim_kind)
    if dim_kind == "float":  # the dim checks want an int: left out
        text = "".join(ln for ln in text.splitlines(True) if "dim: dim" not in ln)
    path.write_text(text)
    _, problems = lint_file(path)
    assert any(message in p.message for p in problems), [p.message for p in problems]


# -- the shipped specs with halves against their oracles (tests/oracles, KIND "halves") ----------


def _oracle_params():
    from aclnn_conformance.conformance.spec.registry import default_registry

    from tests import oracles

    reg = default_registry()
    out = []
    for name, mod in oracles.of(reg.names(), "halves").items():
        for d in ("FLOAT", "FLOAT16", "BF16", "DOUBLE"):  # each dtype on the first product
            product = next(  # listing it (the formula is the same on every product)
                (
                    p
                    for p in mod.PRODUCTS
                    if d in mod.allowed(mod.OUT, p) & mod.allowed(mod.SPLIT, p)
                ),
                None,
            )
            if product is not None:
                out.append(pytest.param(name, product, d, id=f"{name}-{product}-{d}"))
    return out


SPECIAL = [0.0, -0.0, 1.0, -1.0, 20.0, -20.0, 100.0, -100.0, 1e-30, -1e-30]


def _exact_outputs(mod, a, b, gv, s: dict, dim: int) -> dict:
    """{output: exact values} of an oracle of KIND halves (mpmath, 60 digits)."""
    settings = getattr(mod, "SETTINGS", None)
    call = (lambda p, q, r: mod.value(p, q, r, s)) if settings else mod.value
    exact = np.vectorize(call, otypes=[object])(_mp(a), _mp(b), _mp(gv))
    first = exact.reshape(-1)[0] if exact.size else None
    if isinstance(first, dict):
        return {k: np.vectorize(lambda t, k=k: t[k], otypes=[object])(exact) for k in first}
    if mod.FULL_OUT:
        parts = [np.vectorize(lambda t, i=i: t[i], otypes=[object])(exact) for i in (0, 1)]
        return {mod.OUT: np.concatenate(parts, axis=dim)}
    return {mod.OUT: exact}


@pytest.mark.registry  # the per-op oracles over spec x product x dtype, as test_family_oracles
@pytest.mark.parametrize("name, product, dtype", _oracle_params())
def test_shipped_halves_are_the_correctly_rounded_oracle(name, product, dtype):
    """Each spec with an oracle of KIND "halves", in each of its settings: the reference's
    result on every dim of ranks 1-3 (random values, and the oracle's special values paired
    across the halves) is the oracle's exact value rounded once, for every output; an output of
    the full size has the first half's values first along dim."""
    from aclnn_conformance.conformance.spec.registry import default_registry

    from tests import oracles

    reg, mod = default_registry(), oracles.load(name)
    spec = reg.get(name)
    rng = np.random.default_rng(len(name) + len(product))
    fixed = isinstance(mod.DIM, int)  # an op that always splits its last dim: no dim parameter
    cases = [((2 * len(SPECIAL),), 0, True)] + [
        (shape, dim, False)
        for shape, dims in (((4, 6), (0, 1, -1)), ((2, 4, 2), (0, 1, 2, -2)))
        for dim in dims
    ]
    if fixed:  # rank 2 and 3 along the fixed dim only (the special values as one row)
        cases = [((1, 2 * len(SPECIAL)), mod.DIM, True), ((4, 6), mod.DIM, False)]
        cases += [((2, 4, 2), mod.DIM, False)]
    for s in getattr(mod, "SETTINGS", [{}]):
        for shape, dim, special in cases:
            # special: a = each special value, b = each too (the reverse order)
            x = np.array(SPECIAL + SPECIAL[::-1]) if special else rng.normal(size=shape) * 5
            tx = TensorArg.from_array(x.reshape(shape), dtype)
            half = list(shape)
            half[dim] //= 2
            args = {mod.SPLIT: tx, **mod.base_scalars(), **s}
            if not fixed:
                args[mod.DIM] = dim
            for t, tshape in getattr(mod, "TENSORS", {}).items():  # a one-value tensor input
                args[t] = TensorArg.from_array(np.full(tshape, s[t]), dtype)
            a, b = _halves(tx.view().astype(np.float64), dim)
            gv = np.zeros(half)
            if mod.GRAD:
                g = TensorArg.from_array(rng.normal(size=half), dtype)
                args[mod.GRAD] = g
                gv = g.view().astype(np.float64)
            out_shape = tuple(shape) if mod.FULL_OUT else tuple(half)
            for p in spec.outputs:
                args[p.name] = TensorArg.empty_like_shape(out_shape, dtype, 7.0)
            got = evaluate_both(Call(name, product, args), registry=reg)
            assert got.status == 0, got.message
            with mpmath.workdps(60):
                exact = _exact_outputs(mod, a, b, gv, s, dim)
                for out, values in exact.items():
                    want = _round_all(values, dtype)
                    ok = _same(got.outputs[out].reshape(out_shape), want)
                    assert ok, (name, out, s, shape, dim, dtype)


# -- case generation -------------------------------------------------------------------------------


HALF, WHOLE = "half", "whole"


@pytest.mark.parametrize(
    "name, split, odd_check, ruled",
    [
        ("glu", "self", "dim-even", {"out": HALF}),
        ("ge_glu_backward", "self", "grad-shape",
         {"gradOutput": HALF, "gelu": HALF, "gradInput": WHOLE}),
    ],
)  # fmt: skip
def test_every_dim_of_every_rank_is_a_positive_and_odd_sizes_are_negatives(
    name, split, odd_check, ruled
):
    """The dim cases of a spec with halves: for every dim of ranks 1-4 (negative ones too) a
    positive case whose split tensor is even along the dim and whose ruled tensors have the
    half's (or the whole) shape; where the plain dim case has an odd size along the dim, a
    negative case of the check that rejects it (dim_divisible, or shape_is of a split rule)."""
    from aclnn_conformance.conformance.cases.generate import DIM_SHAPES, plan_op
    from aclnn_conformance.conformance.spec.registry import default_registry

    spec = default_registry().get(name)
    plans = plan_op(spec, ["atlas-a2"])
    positive = {p.id.split("/-/")[-1]: dict(p.args) for p in plans if p.kind == "positive"}
    negative = {p.id.rsplit("/", 1)[-1]: p for p in plans if p.kind == "negative"}
    for shp in DIM_SHAPES:
        for d in range(-len(shp), len(shp)):
            tag = f"dim=dim:{d}@{'x'.join(map(str, shp))}"
            hits = [a for t, a in positive.items() if t.endswith(tag)]
            assert hits, (name, tag)
            args = hits[0]
            x = tuple(args[split].shape)
            assert x[d] % 2 == 0 and x[d] in (shp[d], 2 * shp[d]), (tag, x)
            half = list(x)
            half[d] //= 2
            for t, size in ruled.items():
                want = tuple(half) if size == HALF else x
                assert tuple(args[t].shape) == want, (tag, t, args[t].shape, want)
            if shp[d] % 2:
                neg = negative.get(tag)
                assert neg is not None and neg.clauses == (odd_check,), (tag, neg)
