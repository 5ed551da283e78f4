"""A made-up operator of one formula, written as a spec file for a test (tests whose fixture is
a few parameters, checks and one formula value, written where the test runs)."""

from __future__ import annotations

from pathlib import Path


def fixture_spec(
    folder: Path,
    op: str,
    name: str,
    params: list[str],
    dtype_sets: list[str],
    checks: list[str],
    value: str,
) -> Path:
    """Write `folder`/<name>.yaml: the op `op` (aclnn...) named `name`, on atlas-a2, with the
    `params`, `dtype_sets` and `checks` given as YAML lines (flow mappings, `key: {...}` for a
    dtype set), every source `t`, and one formula branch for the output `out` whose value is
    `value`; returns its path."""
    lines = [
        "format: 1",
        f"op: {op}",
        f"name: {name}",
        f"summary: a {name} fixture",
        "source:",
        "  doc: none",
        "products: [atlas-a2]",
        "params:",
        *(f"  - {p}" for p in params),
        "dtype_sets:",
        *(f"  {d}" for d in dtype_sets),
        "checks:",
        *(f"  - {c}" for c in checks),
        "formula:",
        "  output: out",
        "  source: t",
        "  branches:",
        f'    - {{id: v, when: otherwise, value: "{value}", source: t}}',
    ]
    path = folder / f"{name}.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
