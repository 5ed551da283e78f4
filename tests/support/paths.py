"""Running the reference through both of its evaluation paths: the compiled kernel (numba) and
the numpy evaluator, which must agree bit for bit (and each be correctly rounded)."""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Iterator

import numpy as np
from aclnn_conformance.conformance.acl.call import Call, Outcome
from aclnn_conformance.conformance.compiled import mode as compiled_mode
from aclnn_conformance.reference import engine, kernel

HAVE_NUMBA = importlib.util.find_spec("numba") is not None
PATHS = ("numpy", "numba") if HAVE_NUMBA else ("numpy",)


def evaluate_both(call: Call, **kwargs) -> Outcome:
    """engine.evaluate through every available path; asserts that the outputs are the same bits
    (any NaN equal to any NaN) and returns the numpy path's outcome."""
    outcomes = {}
    for path in PATHS:
        old = kernel.set_mode(path)
        try:
            outcomes[path] = engine.evaluate(call, **kwargs)
        finally:
            kernel.set_mode(old)
    first = outcomes["numpy"]
    for path, other in outcomes.items():
        assert other.status == first.status, (path, other.message)
        for name, arr in first.outputs.items():
            assert_same_bits(arr, other.outputs[name], f"{call.op}: {path} vs numpy, {name}")
    return first


def assert_same_bits(a: np.ndarray, b: np.ndarray, context: str) -> None:
    ua, ub = a.view(f"u{a.dtype.itemsize}"), b.view(f"u{b.dtype.itemsize}")
    nan = np.isnan(a.astype(np.float64)) & np.isnan(b.astype(np.float64))
    bad = np.flatnonzero((ua != ub) & ~nan)
    assert not bad.size, (
        f"{context}: {bad.size} elements differ, first at {bad[0]}: {a[bad[0]]!r} vs {b[bad[0]]!r}"
    )


@contextlib.contextmanager
def kernel_mode(mode: str) -> Iterator[None]:
    """The compiled/numpy switch (conformance/compiled/mode.py) set to `mode` inside the block,
    restored after it."""
    old = compiled_mode.set_mode(mode)
    try:
        yield
    finally:
        compiled_mode.set_mode(old)
