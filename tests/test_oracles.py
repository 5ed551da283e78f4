"""The per-operator oracles of tests/oracles/: which ops have one, none is stale, each is
independent of the code under test and has the documented interface (tests/oracles/__init__.py).

An op of the registry without an oracle is not a failure: it is checked by the op-generic tests
only, and test_ops_without_an_oracle_are_listed says which ops those are (a warning in pytest's
summary, and the `ops_without_oracle` property of the JUnit XML report).
"""

from __future__ import annotations

import ast
import warnings

import pytest
from aclnn_conformance.conformance.spec.registry import default_registry

from tests import oracles


class OpsWithoutOracle(UserWarning):
    """Ops checked by the op-generic tests only: no tests/oracles/<spec name>.py."""


REQUIRED = {
    "X": str,
    "OUT": str,
    "PRODUCTS": tuple,
    "DTYPES": tuple,
    "factor": callable,
    "BRANCHES": dict,
    "SPECIAL_SETTINGS": list,
    "special_x": callable,
    "SPECIAL_POINTS": dict,
    "MIXED": list,
    "REGRESSIONS": list,
    "NULLABLE": list,
    "allowed": callable,
    "base_scalars": callable,
    "SCALAR_RULES": list,
    "error_cases": callable,
    "UNREACHABLE": dict,
    "dtype_combos": callable,
    "scalar_dtypes": callable,
    "POINT_VALUES": dict,
}
# What an oracle may not import: the code under test and the specs it would be checked against.
FORBIDDEN = ("conformance", "reference", "reports", "cli", "specs")


def test_ops_without_an_oracle_are_listed(record_property):
    """Not a failure: lists the ops whose only checks are the op-generic tests."""
    names = default_registry().names()
    missing = sorted(n for n in names if oracles.load(n) is None)
    record_property("ops_without_oracle", ",".join(missing))
    have = len(names) - len(missing)
    print(f"{have} of {len(names)} ops have an independent oracle in tests/oracles/")
    if missing:
        msg = (f"{len(missing)} op(s) without an independent oracle (tests/oracles/<name>.py), "
               f"checked by the op-generic tests only: {', '.join(missing)}")  # fmt: skip
        print(msg)
        warnings.warn(OpsWithoutOracle(msg), stacklevel=1)


def test_no_oracle_is_stale():
    """Every module of tests/oracles/ names an op of the registry (a renamed or removed spec
    leaves its oracle behind otherwise, and its tests would silently stop running)."""
    stale = sorted(set(oracles.names()) - set(default_registry().names()))
    assert not stale, f"oracle modules for ops not in the registry: {stale}"


def test_load_finds_oracles_by_spec_name():
    assert oracles.load("no_such_op_backward") is None
    assert oracles.load("_common") is None  # helpers are not oracles
    for name in oracles.names():
        mod = oracles.load(name)
        assert mod is not None and mod.__name__ == f"tests.oracles.{name}"


def _imports(name: str) -> set[str]:
    tree = ast.parse((oracles.HERE / f"{name}.py").read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


@pytest.mark.parametrize("name", [*oracles.names(), "_common"])
def test_oracles_are_independent_of_the_code_under_test(name):
    bad = sorted(m for m in _imports(name) if m.split(".")[0] in FORBIDDEN)
    assert not bad, f"tests/oracles/{name}.py imports {bad}"


ELEMENTWISE = {
    "OUT": str,
    "INPUTS": tuple,
    "PRODUCTS": tuple,
    "value": callable,
    "SETTINGS": list,
    "DOMAIN": dict,
    "SPECIAL": list,
    "allowed": callable,
    "base_scalars": callable,
}


HALVES = {
    "SPLIT": str,
    "DIM": (str, int),  # its dim parameter, or the op's fixed dim
    "OUT": str,
    "FULL_OUT": bool,
    "PRODUCTS": tuple,
    "value": callable,
    "allowed": callable,
    "base_scalars": callable,
}
CLASSES = {
    "OUT": str,
    "PRODUCTS": tuple,
    "SHAPES": tuple,
    "DIM": int,
    "draw": callable,
    "value": callable,
    "allowed": callable,
}
ROWS = {
    "INPUTS": tuple,
    "OUTS": tuple,
    "PRODUCTS": tuple,
    "SHAPES": tuple,
    "draw": callable,
    "value": callable,
    "allowed": callable,
}
SMOOTHED_CLASSES = {
    "OUTS": tuple,
    "PRODUCTS": tuple,
    "SHAPES": tuple,
    "REDUCTIONS": tuple,
    "SMOOTHING": tuple,
    "draw": callable,
    "value": callable,
    "allowed": callable,
}
DIM_ROWS = {
    "INPUTS": tuple,
    "OUT": str,
    "DIM": str,
    "PRODUCTS": tuple,
    "SHAPES": tuple,
    "draw": callable,
    "value": callable,
    "allowed": callable,
}
TARGET_LISTS = {
    "OUTS": tuple,
    "PRODUCTS": tuple,
    "SHAPES": tuple,
    "REDUCTIONS": tuple,
    "HARD": list,
    "draw": callable,
    "value": callable,
    "allowed": callable,
}
KINDS = ("gradient", "elementwise", "loss", "halves", "classes", "rows", "smoothed_classes",
         "dim_rows", "target_lists")  # fmt: skip
TABLES = {"halves": HALVES, "classes": CLASSES, "rows": ROWS, "smoothed_classes": SMOOTHED_CLASSES,
          "dim_rows": DIM_ROWS, "target_lists": TARGET_LISTS}  # fmt: skip


@pytest.mark.parametrize("name", oracles.names())
def test_oracle_interface(name):
    mod = oracles.load(name)
    assert oracles.kind(mod) in KINDS, f"{name}: unknown KIND"
    if oracles.kind(mod) == "loss":
        for attr in ("OUT", "INPUTS", "PRODUCTS", "SETTINGS", "DOMAIN", "REDUCTION"):
            assert hasattr(mod, attr), f"tests/oracles/{name}.py has no {attr}"
        assert callable(mod.element) and callable(mod.allowed) and callable(mod.base_scalars)
        return
    if oracles.kind(mod) in TABLES:
        table = TABLES[oracles.kind(mod)]
        for attr, kind in table.items():
            assert hasattr(mod, attr), f"tests/oracles/{name}.py has no {attr}"
            value = getattr(mod, attr)
            assert callable(value) if kind is callable else isinstance(value, kind), attr
        assert set(mod.PRODUCTS) and (hasattr(mod, "GRAD") or table is not HALVES)
        return
    if oracles.kind(mod) == "elementwise":
        for attr, kind in ELEMENTWISE.items():
            assert hasattr(mod, attr), f"tests/oracles/{name}.py has no {attr}"
            value = getattr(mod, attr)
            assert callable(value) if kind is callable else isinstance(value, kind), attr
        assert set(mod.PRODUCTS) and mod.SETTINGS and set(mod.DOMAIN) == set(mod.INPUTS)
        return
    for attr, kind in REQUIRED.items():
        assert hasattr(mod, attr), f"tests/oracles/{name}.py has no {attr}"
        value = getattr(mod, attr)
        assert callable(value) if kind is callable else isinstance(value, kind), attr
    assert set(mod.PRODUCTS) and set(mod.DTYPES)
    for settings, gen in mod.BRANCHES.values():
        assert settings and callable(gen)
