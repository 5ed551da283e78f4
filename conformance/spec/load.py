"""Load operator specs: the entry point the rest of the suite imports.

The linter is conformance.spec.lint (`lint_file`), the shared tables of specs/ are conformance.spec.tables;
their public names are re-exported here because every part of the suite imports them from here.
"""

from __future__ import annotations

from pathlib import Path

from .lint import Problem, lint_file
from .model import OpSpec
from .tables import default_spec_files, planned_products, products, status_codes, status_name

__all__ = ["Problem", "SpecError", "default_spec_files", "lint_file", "load_spec",
           "planned_products", "products", "status_codes", "status_name"]  # fmt: skip


class SpecError(ValueError):
    """A spec file with problems; `problems` has them all, one `file:line: message` each."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


def load_spec(path: str | Path) -> OpSpec:
    """The spec of one file; SpecError lists every problem if there is any."""
    spec, problems = lint_file(path)
    if problems or spec is None:
        raise SpecError(problems)
    return spec
