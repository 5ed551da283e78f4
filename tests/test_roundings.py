"""Formulas float64 evaluates correctly rounded (reference/roundings.py), and that it holds.

A formula whose every branch value makes at most one IEEE rounding on exact operands, with
conditions that compare exact operands, takes the plain float64 path for DOUBLE outputs, in the
default mode and in --exact. The classification rules are checked on hand-written formulas; the
claim itself on every such spec in the registry: its DOUBLE outputs, through the numpy and the
compiled paths, equal the exact value (mpmath at 300 bits) rounded to nearest, on inputs over
the whole float64 range (subnormals, overflowing products, ties of a halving).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from aclnn_conformance.conformance.spec.expr.language import compile_expr
from aclnn_conformance.conformance.spec.registry import default_registry
from aclnn_conformance.reference.roundings import correctly_rounded

from tests.support.paths import evaluate_both
from tests.support.rounding import round_exact
from tests.test_kernel import _call

REG = default_registry()
NAMES = ("x", "y", "s")


def _spec(value: str, when: str | None = None, lets: dict[str, str] | None = None):
    lets = lets or {}
    known = (*NAMES, *lets)
    let_objs = [SimpleNamespace(name=n, value=compile_expr(v, known)) for n, v in lets.items()]
    branches = []
    if when is not None:
        branches.append(
            SimpleNamespace(when=compile_expr(when, known), value=compile_expr(value, known))
        )
        branches.append(SimpleNamespace(when=None, value=compile_expr("0", known)))
    else:
        branches.append(SimpleNamespace(when=None, value=compile_expr(value, known)))
    formula = SimpleNamespace(lets=tuple(let_objs), branches=tuple(branches))
    return SimpleNamespace(formula=formula, attributes=[])


@pytest.mark.parametrize("value, when, lets, want", [
    ("x * s", None, None, True),                    # one rounding
    ("x / 6", None, None, True),                    # division is correctly rounded too
    ("-abs(x - y)", None, None, True),              # negation and abs after it are exact
    ("minimum(x * y, s)", None, None, True),        # rounding is monotonic: min commutes
    ("where(x > 0, y, y * s)", None, None, True),   # each alternative rounds once
    ("sqrt(x)", None, None, True),                  # IEEE sqrt rounds once
    ("x - 0.5", None, None, True),                  # 0.5 is a binary fraction
    ("x - 0.1", None, None, False),                 # 0.1 is not: its literal is a rounding
    ("x * y * s", None, None, False),               # two roundings
    ("x * pi", None, None, False),                  # pi is rounded
    ("exp(x)", None, None, False),                  # a library function
    ("x ** 2", None, None, False),
    ("y", "x * s > 1", None, False),                # a rounded comparison may decide wrongly
    ("y * s", "x > 1 and x < 3", None, True),
    ("t + 1", None, {"t": "x * y"}, False),         # a let's rounding counts where it is used
    ("t * s", None, {"t": "-x"}, True),
])  # fmt: skip
def test_a_formula_is_correctly_rounded_when_it_rounds_at_most_once(value, when, lets, want):
    assert correctly_rounded(_spec(value, when, lets)) is want


def _once_specs():
    out = []
    for spec in REG:
        if spec.inplace_of or not correctly_rounded(spec):
            continue
        product = next((p for p in spec.products
                        if _call(spec, p, "DOUBLE", 4, np.random.default_rng(0))), None)  # fmt: skip
        if product:
            out.append(pytest.param(spec.name, product, id=spec.name))
    return out


def _wide_doubles(rng, n: int) -> np.ndarray:
    """float64 values over the whole exponent range, with the specials and odd significands."""
    mant = rng.integers(1 << 52, 1 << 53, n, dtype=np.int64).astype(np.float64)
    v = np.ldexp(mant, rng.integers(-1126, 970, n)) * rng.choice([-1.0, 1.0], n)
    v[:10] = [0.0, -0.0, 1.0, -1.0, 3.0, -3.0, np.inf, -np.inf, np.nan, 5e-324]
    return v


@pytest.mark.parametrize("name, product", _once_specs())
def test_double_outputs_of_such_formulas_are_the_exact_value_rounded(name, product):
    from aclnn_conformance.reference import precise

    spec = REG.get(name)
    rng = np.random.default_rng(20261125)
    call = _call(spec, product, "DOUBLE", 400, rng)
    for p in spec.tensor_inputs:
        t = call.args[p.name]
        t.storage[:] = _wide_doubles(rng, t.storage.size)
    attrs = {p.name: call.args[p.name].typed() if hasattr(call.args[p.name], "typed") else call.args[p.name]
             for p in spec.attributes}  # fmt: skip
    out = spec.formula.output
    for exact in (False, True):
        got = evaluate_both(call, registry=REG, exact=exact).outputs[out]
        assert got.dtype == np.float64
        checked = 0
        for i in range(got.size):
            inputs = {p.name: float(call.args[p.name].storage[i]) for p in spec.tensor_inputs}
            v = precise._value_at(spec, attrs, inputs, 300)
            if v is None:  # a special input or result: IEEE's, tested with the specials
                continue
            want = float(round_exact(v, "DOUBLE"))  # mpmath keeps no sign of zero: 0 == -0
            assert got[i] == want, f"{name} exact={exact}: {inputs} gives {got[i]!r}, not {want!r}"
            checked += 1
        assert checked > got.size // 2
