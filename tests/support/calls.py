"""Small call builders shared by the backend adapter tests."""

from __future__ import annotations

import ml_dtypes
import numpy as np
from aclnn_conformance.conformance.acl.call import Call, ScalarArg, TensorArg


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


def assert_narrow_floats_move_bit_exactly(backend, dtype: str) -> None:
    """hardshrink with lambd 0 passes gradOutput through wherever x != 0 (x is kept normal, away
    from subnormals a CPU may flush): every bit of every gradOutput value (subnormals, the
    largest finite, infinities) must come back unchanged in `dtype` (BF16 or FLOAT16)."""
    np_type = np.dtype(ml_dtypes.bfloat16) if dtype == "BF16" else np.dtype(np.float16)
    info = ml_dtypes.finfo(np_type)
    special = [info.smallest_subnormal, -info.smallest_subnormal, info.max, -info.max, np.inf,
               -np.inf, 1.0, -3.140625, 1e-3]  # fmt: skip
    rng = np.random.default_rng(1)
    g_vals = np.concatenate([np.array(special, dtype=np.float64), rng.normal(0, 100, 55)])
    g = TensorArg.from_array(g_vals, dtype)
    x = TensorArg.from_array(rng.uniform(0.5, 2, g_vals.size) * rng.choice([-1, 1], g_vals.size),
                             dtype)  # fmt: skip
    o = run(backend, "hardshrink_backward", gradOutput=g, self=x,
            lambd=ScalarArg("FLOAT", 0.0), gradInput=out([g_vals.size], dtype))  # fmt: skip
    assert o.status == 0
    assert o.outputs["gradInput"].dtype == np_type
    assert o.outputs["gradInput"].view(np.uint16).tolist() == g.storage.view(np.uint16).tolist()
