"""Each table and test the reference and the comparison share is defined once (issue 26): the
formula constants, the float-format table, the narrow rounding, the double-double range; and no
module imports another package's private names (a generated kernel's imports included)."""

from __future__ import annotations

import ast
import re
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
