"""Small call builders shared by the backend adapter tests."""

from __future__ import annotations

import numpy as np

from conformance.call import Call, TensorArg


def t(values, dtype: str = "FLOAT") -> TensorArg:
    """A contiguous tensor holding `values` (exactly converted to `dtype`)."""
    return TensorArg.from_array(np.asarray(values, dtype=np.float64), dtype)


def out(shape, dtype: str = "FLOAT") -> TensorArg:
    """An output tensor whose storage starts as NaN."""
    return TensorArg.empty_like_shape(tuple(shape), dtype, fill=np.nan)


def run(backend, op: str, **args):
    """Execute `op` on atlas-a2 through `backend` (which must be able to express the call)."""
    call = Call(op, "atlas-a2", args)
    assert backend.supports(call) is None
    return backend.execute(call)


def result(outcome, name: str) -> np.ndarray:
    """Output `name` of a successful outcome, as float64."""
    assert outcome.status == 0, outcome.message
    return outcome.outputs[name].astype(np.float64)
