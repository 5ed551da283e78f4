"""The operator spec files in use, found and read without the loader (for tests that compare the
loader, the registry or the CLI with what the files say).

The files are the `*.yaml` of `specs.root() / "ops"` (the shipped folder, or the copy that
tests/test_one_yaml_per_op.py points it at), then those of each folder of ACLNN_CONFORM_SPECS
(a file there names itself). No test counts them: they grow with the registry.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml
from aclnn_conformance import specs

SPECS_ENV = "ACLNN_CONFORM_SPECS"


def spec_files() -> list[Path]:
    """Every spec file in use: the shipped folder's, then each extra folder's, sorted in each."""
    files = sorted((specs.root() / "ops").glob("*.yaml"))
    for part in os.environ.get(SPECS_ENV, "").split(os.pathsep):
        if not part.strip():
            continue
        p = Path(part)
        files.extend([p] if p.is_file() else sorted(p.glob("*.yaml")))
    return files


def raw_specs() -> dict[str, dict[str, Any]]:
    """{spec name: the YAML document} of every spec file in use, by yaml.safe_load."""
    out = {}
    for f in spec_files():
        data = yaml.safe_load(f.read_text(encoding="utf-8"))
        data["__file__"] = f
        out[data["name"]] = data
    return out


def count_clauses(data: dict) -> int:
    """Clause ids of one spec document counted straight from the YAML: checks, lets, branches,
    relations, special points and properties."""
    sections = [data["checks"]]
    for f in formulas(data):
        sections += [f.get("let", []), f["branches"], f.get("relation", [])]
    sections += [data.get("special_points", []), data.get("properties", [])]
    return sum(len(s) for s in sections)


def formulas(data: dict) -> list[dict]:
    """The formula mappings of a spec document: `formulas:` or the one `formula:`."""
    return list(data["formulas"]) if "formulas" in data else [data["formula"]]
