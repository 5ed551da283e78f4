"""Each table and test the reference and the comparison share is defined once (issue 26): the
formula constants, the float-format table, the narrow rounding, the double-double range; and no
module imports another package's private names (a generated kernel's imports included)."""

from __future__ import annotations

import ast
import contextlib
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SOURCES = sorted(p for top in ("conformance", "reference") for p in (REPO / top).rglob("*.py"))


def _where(pattern: str) -> list[str]:
    rx = re.compile(pattern, re.M)
    return [str(p.relative_to(REPO)) for p in SOURCES if rx.search(p.read_text(encoding="utf-8"))]


@pytest.mark.parametrize(
    ("what", "pattern", "home"),
    [
        ("the formula constants", r"^_?CONSTANTS\s*[:=]", ["conformance/spec/expr/language.py"]),
        ("the float-format table (finfo)", r"finfo\((?!np\.(float64|longdouble)\))",
         ["conformance/acl/dtypes.py"]),
        ("a literal format table", r"\"(FLOAT16|BF16)\"\s*:\s*\(\s*-?\d", []),
        ("numpy's rounding to a dtype", r"^def round_to\b", ["conformance/acl/dtypes.py"]),
        ("the compiled narrow rounding", r"^def (round_narrow|_round|_narrow)\b",
         ["conformance/compiled/measure.py"]),
        ("the double-double range", r"2\.0\s*\*\*\s*(995|-969)", ["conformance/compiled/ranges.py"]),
    ],
)  # fmt: skip
def test_defined_once(what, pattern, home):
    assert _where(pattern) == home, f"{what}: defined in {_where(pattern)}, wanted only {home}"


def _package(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "conformance" and len(parts) > 2 else parts[0]


def test_no_module_imports_another_packages_private_names():
    wrong = []
    for p in SOURCES:
        rel = p.relative_to(REPO).with_suffix("")
        here = ".".join(rel.parts)
        text = p.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.ImportFrom) or not node.module and not node.level:
                continue
            base = rel.parts[: len(rel.parts) - node.level] if node.level else ()
            target = ".".join((*base, *(node.module or "").split("."))).strip(".")
            if node.level == 0:
                target = target.removeprefix("aclnn_conformance.")
            private = [a.name for a in node.names if a.name.startswith("_")]
            if private and _package(target) != _package(here):
                wrong.append(f"{here}: from {target} import {', '.join(private)}")
        # generated kernel sources name their imports in strings
        for m in re.finditer(r"from aclnn_conformance\.([\w.{}]+) import (.+)", text):
            if any(n.strip().split(" ")[0].startswith("_") for n in m.group(2).split(",")):
                wrong.append(f"{here}: generated 'from {m.group(1)} import {m.group(2)}'")
    assert not wrong, "\n".join(wrong)


# --- the formula's semantics (lets, first true branch, otherwise) are walked in one place ----

WALKER = "aclnn_conformance.conformance.spec.expr.walk"


def _tiers(spec, case):
    """Every tier that evaluates or writes a spec's formula, run once on `case`."""
    import mpmath
    import numpy as np
    from aclnn_conformance.conformance.spec.interpret import branch_hits, formula_env, lets_used
    from aclnn_conformance.reference import codegen, ddgen, errbound, precise, roundings
    from aclnn_conformance.reference.formula import evaluate_formula

    env = formula_env(spec, case.call)
    n = len(next(iter(v for v in env.values() if isinstance(v, np.ndarray))))
    evaluate_formula(spec, dict(env), n)
    errbound.faithful_mask(spec, dict(env), n)
    roundings.correctly_rounded(spec)
    lets_used(spec, branch_hits(spec, case.call))
    element = {k: (mpmath.mpf(float(v[0])) if isinstance(v, np.ndarray) else v)
               for k, v in env.items()}  # fmt: skip
    precise._formula_at(spec, element, mpmath)
    for gen in (codegen.generate, ddgen.generate):
        with contextlib.suppress(codegen.Unsupported):
            gen(spec, env)


def _first_case(spec):
    from aclnn_conformance.conformance.cases.generate import build, plan_op

    plans = [p for p in plan_op(spec) if p.kind == "positive" and p.expected_status == 0]
    for plan in plans:
        case = build(spec, plan, 0)
        if not case.call.tensor(spec.formula.output).dtype.startswith("COMPLEX"):
            return case
    return None


def _formula_specs():
    """Elementwise formulas with branches (a formula with reductions takes reference/rows.py,
    whose tier 1 and mpmath rows also walk through walk.Formula)."""
    from aclnn_conformance.conformance.spec.registry import default_registry
    from aclnn_conformance.reference.rows import reductions

    return [s for s in default_registry() if len(s.formula.branches) > 1 and not reductions(s)]


@pytest.mark.parametrize("spec", _formula_specs(), ids=lambda s: s.name)
def test_only_the_walker_evaluates_a_formulas_conditions(spec, monkeypatch):
    """Numpy, the error bound, the rounding count, mpmath, the branch census and both numba
    emitters read a branch condition only through walk.Formula: a tier that walked the
    branches itself (as codegen, ddgen and interpret did) calls the condition from its own
    module."""
    from aclnn_conformance.conformance.spec.expr import walk

    case = _first_case(spec)
    if case is None:
        pytest.skip("no real-valued positive case")
    conditions = {id(br.when) for br in spec.formula.branches if br.when is not None}
    callers: set[str] = set()
    real_run, real_staged = walk.Expression.run, walk.Expression.staged

    def run(self, env, ar):
        if id(self) in conditions:
            callers.add(sys._getframe(1).f_globals["__name__"])
        return real_run(self, env, ar)

    def staged(self, ar):
        if id(self) in conditions:
            callers.add(sys._getframe(1).f_globals["__name__"])
        return real_staged(self, ar)

    monkeypatch.setattr(walk.Expression, "run", run)
    monkeypatch.setattr(walk.Expression, "staged", staged)
    _tiers(spec, case)
    assert callers == {WALKER}, f"{spec.name}: conditions evaluated from {sorted(callers)}"


@pytest.mark.parametrize(
    "call",
    [r"\bprecise\.refine\(", r"(?<!def )\bexact_mask\(", r"\bddtier\.decide\(",
     r"(?<!def )\bget_exact\("],
)  # fmt: skip
def test_the_settling_tiers_are_called_from_settle_py_only(call):
    """Tiers 2-4 (the pair, exactness, rationals and mpmath) run in one pipeline,
    reference/settle.py, for the flags of either evaluator: no other module settles on its own
    (engine.chunks once held a second copy)."""
    assert _where(call) == ["reference/settle.py"], f"{call} called from {_where(call)}"
