"""Forcing the reference's compiled row tiers in a test, and seeing that they ran.

`row_path("numba")` sets the one numpy/compiled switch (conformance/compiled/mode.py) for the
block and records each chunk rows.Compiled's tier 1 evaluated (rows, columns), so a test of the
compiled tiers can fail where a formula silently fell back to the numpy tiers; "auto" leaves the
switch as it is (small calls take numpy) and records the same.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
from aclnn_conformance.conformance.compiled import mode as compiled_mode
from aclnn_conformance.reference import rows

# the paths a row-tier test runs: numpy's as the switch picks for small calls, and the
# compiled one (numba compiles a kernel per formula: CI's kernels tier)
PATHS = ["auto", pytest.param("numba", marks=pytest.mark.kernels)]


@contextlib.contextmanager
def row_path(path: str) -> Iterator[list[tuple[int, int]]]:
    """Within the block, the row tiers take `path` ("auto" or "numba"); yields the list of the
    chunk shapes the compiled tier 1 evaluated (empty: the numpy tiers ran)."""
    seen: list[tuple[int, int]] = []
    orig = rows.Compiled.tier1

    def spy(self, raw, shape, *rest):
        got = orig(self, raw, shape, *rest)
        if got is not None:
            seen.append(tuple(shape))
        return got

    old = compiled_mode.set_mode(path) if path != "auto" else None
    rows.Compiled.tier1 = spy  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        rows.Compiled.tier1 = orig  # type: ignore[method-assign]
        if old is not None:
            compiled_mode.set_mode(old)
