"""Call builders for the aclnn backend tests (the double in this folder runs them on the CPU).

T/O/S build input tensors, NaN-filled outputs and scalars; leaky/hardshrink/softplus/gelu/elu
build a Call of each operator with the parameter names of its spec.
"""

from __future__ import annotations

import numpy as np
from aclnn_conformance.conformance.acl import dtypes as dt
from aclnn_conformance.conformance.acl.call import Call, ScalarArg, TensorArg

NULLPTR, INVALID = 161001, 161002
OUTPUTS = ("out", "gradInput")


def T(values, dtype="FLOAT") -> TensorArg:
    return TensorArg.from_array(np.asarray(values, dtype=np.float64), dtype)


def O(shape, dtype="FLOAT") -> TensorArg:  # noqa: E743 - an output, NaN-filled (77 for integers)
    fill = np.nan if dt.get(dtype).category in ("float", "complex") else 77
    return TensorArg.empty_like_shape(tuple(shape), dtype, fill=fill)


def S(value, dtype="FLOAT") -> ScalarArg:
    return ScalarArg(dtype, value)


def leaky(g, x, slope=None, is_result=False, out=None, product="atlas-a2") -> Call:
    out = out if out is not None else O(np.broadcast_shapes(g.shape, x.shape), g.dtype)
    slope = slope if slope is not None else S(0.01)
    return Call("leaky_relu_backward", product, {"gradOutput": g, "self": x, "negativeSlope": slope,
                                                 "selfIsResult": is_result, "out": out})  # fmt: skip


def hardshrink(g, x, lambd=None, out=None) -> Call:
    out = out if out is not None else O(np.broadcast_shapes(g.shape, x.shape), g.dtype)
    lambd = lambd if lambd is not None else S(0.5)
    return Call("hardshrink_backward", "atlas-a2",
                {"gradOutput": g, "self": x, "lambd": lambd, "gradInput": out})  # fmt: skip


def softplus(g, x, beta=None, threshold=None, out=None) -> Call:
    out = out if out is not None else O(g.shape, g.dtype)
    beta, threshold = beta or S(1.0), threshold or S(20.0)
    return Call("softplus_backward", "atlas-a2", {"gradOutput": g, "self": x, "beta": beta,
                                                  "threshold": threshold, "gradInput": out})  # fmt: skip


def gelu(g, x, approximate="none", out=None) -> Call:
    out = out if out is not None else O(np.broadcast_shapes(g.shape, x.shape), g.dtype)
    return Call("gelu_backward_v2", "atlas-a2",
                {"gradOutput": g, "self": x, "approximate": approximate, "gradInput": out})  # fmt: skip


def elu(g, x, alpha=None, scale=None, input_scale=None, is_result=False, out=None) -> Call:
    out = out if out is not None else O(g.shape, g.dtype)
    alpha, scale, input_scale = alpha or S(1.0), scale or S(1.0), input_scale or S(1.0)
    return Call("elu_backward", "atlas-a2", {"gradOutput": g, "alpha": alpha, "scale": scale,
                                             "inputScale": input_scale, "isResult": is_result,
                                             "selfOrResult": x, "gradInput": out})  # fmt: skip


def result(call: Call, outcome, name: str) -> np.ndarray:
    """The output view's values (float64) from the returned storage."""
    t = call.tensor(name)
    view = TensorArg(t.dtype, t.shape, t.strides, t.offset, outcome.outputs[name]).view()
    return np.asarray(view, dtype=np.float64)


def assert_untouched(call: Call, outcome, before: dict[str, bytes]) -> None:
    for name, raw in before.items():
        assert outcome.outputs[name].tobytes() == raw, f"{name} was written"


def outputs_before(call: Call) -> dict[str, bytes]:
    return {n: a.storage.tobytes() for n, a in call.args.items()
            if n in OUTPUTS and isinstance(a, TensorArg)}  # fmt: skip
