"""Per op and dtype: the reference's elements/s against the torch CPU kernel, in one process.

    python tests/bench/bench_ops.py OP DTYPE LOG2N [--exact]   (prints one JSON line)
    python tests/bench/bench_ops.py --cross-entropy DTYPE ROWS CLASSES

bench.py runs this once per row in a fresh subprocess, so each row's peak RSS is its own. Inputs
are N(0, 2) values in DTYPE (the "normal" value kind), scalars at their spec defaults; the output
dtype is DTYPE. An op with a dim parameter (conformance.cases.generate.dim_params) gets a square
matrix, reduced along its last dim (the parameter's default, -1). Both sides are warmed once (the JIT compiles, torch allocates), then timed: the
reference best of 3, torch (milliseconds a run) best of 5. It asserts nothing.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def best_of(fn, k: int) -> float:
    best = np.inf
    for _ in range(k):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def make_call(op: str, dtype: str, n: int):
    """(spec, a contiguous call of n elements per tensor, its tensor bytes)."""
    import ml_dtypes  # noqa: F401 - bf16 for numpy
    from aclnn_conformance.conformance.acl import dtypes as dt
    from aclnn_conformance.conformance.acl.call import Call, ScalarArg, TensorArg
    from aclnn_conformance.conformance.cases.generate import dim_params
    from aclnn_conformance.conformance.spec.registry import default_registry
    from aclnn_conformance.conformance.spec.shapes import shape_of

    spec = default_registry().get(op)
    rng = np.random.default_rng(0)
    product = "atlas-a2" if "atlas-a2" in spec.products else spec.products[0]
    # an op reducing over a dim (softmax): a square matrix, reduced along its last dim
    rows = 1 << (n.bit_length() - 1) // 2 if dim_params(spec) else 1
    shape, strides = ((rows, n // rows), (n // rows, 1)) if rows > 1 else ((n,), (1,))
    args = {}
    for p in spec.params:
        if p.is_tensor:
            a = rng.standard_normal(n, dtype=np.float32)
            a *= 2
            a = a.astype(dt.get(dtype).np, copy=False)  # FLOAT: no second copy (peak RSS)
            args[p.name] = TensorArg(dtype, shape, strides, 0, a)
        elif p.kind == "scalar":
            args[p.name] = ScalarArg(p.default_dtype or "FLOAT", p.default)
        elif p.kind == "bool":
            args[p.name] = bool(p.default)
        else:
            args[p.name] = p.default
    for p in spec.params:  # a tensor with a shape rule (a loss's 0-d mean): the rule's shape
        if p.is_tensor and p.shape is not None:
            shapes = {k: v.shape for k, v in args.items() if isinstance(v, TensorArg)}
            ruled = shape_of(p.shape, shapes, args)
            m = int(np.prod(ruled, dtype=np.int64)) if ruled else 1
            strides = tuple(int(np.prod(ruled[i + 1 :], dtype=np.int64)) for i in range(len(ruled)))
            args[p.name] = TensorArg(dtype, ruled, strides, 0, np.zeros(m, dt.get(dtype).np))
    call = Call(spec.name, product, args)
    nbytes = sum(a.storage.nbytes for a in args.values() if isinstance(a, TensorArg))
    return spec, call, nbytes


def torch_fn(spec, call):
    """A no-argument callable running the spec's ATen binding on the call's tensors, or None."""
    import torch
    from aclnn_conformance.conformance.acl.call import ScalarArg, TensorArg
    from aclnn_conformance.conformance.run.backends.torch_backend import (
        parse_aten_binding,
        positional,
    )

    b = parse_aten_binding(spec)
    if b is None or spec.inplace_of:
        return None
    tensors = {}

    def conv(name):
        v = call.args[name]
        if isinstance(v, TensorArg):
            if name not in tensors:
                s = v.storage
                t = torch.from_numpy(s.view(np.uint16)).view(torch.bfloat16) if s.dtype.name == "bfloat16" else torch.from_numpy(s)  # fmt: skip
                tensors[name] = t
            t = tensors[name]
            return t.reshape(v.shape) if len(v.shape) > 1 else t
        return v.as_float64() if isinstance(v, ScalarArg) else v

    fn = getattr(torch.ops.aten, b.op).default
    names = [a.name for a in fn._schema.arguments if not a.kwarg_only]
    args = [v if how == "const" else conv(v) for how, v in positional(b, names)]
    kwargs = {k: conv(n) for k, n in b.kwargs}
    try:
        fn(*args, **kwargs)
    except Exception:  # torch lacks this dtype on the CPU
        return None
    return lambda: fn(*args, **kwargs)


def measure(op: str, dtype: str, log2n: int, exact: bool) -> dict:
    from aclnn_conformance.reference import engine

    n = 1 << log2n
    spec, call, nbytes = make_call(op, dtype, n)
    kwargs = {"exact": exact} if exact else {}
    if "in_place" in engine.evaluate.__code__.co_varnames:
        kwargs["in_place"] = True  # as the reference backend runs: into the call's output
    small = make_call(op, dtype, 64)[1]
    if engine.evaluate(small, **kwargs).status != 0:
        return {"op": op, "dtype": dtype, "log2n": log2n, "supported": False}
    t0 = time.perf_counter()
    engine.evaluate(call, **kwargs)  # warm: the first call compiles (or loads the cache)
    first = time.perf_counter() - t0
    ref_s = min(first, best_of(lambda: engine.evaluate(call, **kwargs), 3))
    row = {"op": op, "dtype": dtype, "log2n": log2n, "supported": True, "exact": exact,
           "ref_s": ref_s, "first_s": first, "tensor_bytes": nbytes,
           "kernel": getattr(engine, "kernel_name", lambda: "numpy")()}  # fmt: skip
    # the reference's peak, taken before torch runs (torch's temporaries are its own)
    row["peak_rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    fn = torch_fn(spec, call)
    if fn is not None:
        import torch

        fn()
        row["torch_threads"] = torch.get_num_threads()
        row["torch_s"] = best_of(fn, 5)
    row["peak_rss_with_torch"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return row


def measure_cross_entropy(dtype: str, rows: int, classes: int) -> dict:
    """The cross_entropy row: the shipped aclnnCrossEntropyLoss spec (reduction none, no
    weight, no smoothing: lossOut per row and logProbOut) on a [rows, classes] input of N(0, 2)
    values and targets in [0, classes), against torch's cross_entropy (reduction none, which
    computes the log_softmax too) on the same tensors, in this process."""
    import torch
    from aclnn_conformance.conformance.acl import dtypes as dt
    from aclnn_conformance.conformance.acl.call import Call, TensorArg
    from aclnn_conformance.conformance.spec.registry import default_registry
    from aclnn_conformance.reference import engine

    reg = default_registry()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((rows, classes), dtype=np.float32)
    x *= 2
    x = x.astype(dt.get(dtype).np, copy=False)  # FLOAT: no second copy
    t = rng.integers(0, classes, rows)
    loss = np.zeros(rows, x.dtype)
    logp = np.zeros(rows * classes, x.dtype)
    call = Call(
        "aclnnCrossEntropyLoss",
        "atlas-a2",
        {"input": TensorArg(dtype, (rows, classes), (classes, 1), 0, x.reshape(-1)),
         "target": TensorArg("INT64", (rows,), (1,), 0, t),
         "weightOptional": None, "reductionOptional": "none", "ignoreIndex": -100,
         "labelSmoothing": 0.0, "lseSquareScaleForZloss": 0.0, "returnZloss": False,
         "lossOut": TensorArg(dtype, (rows,), (1,), 0, loss),
         "logProbOut": TensorArg(dtype, (rows, classes), (classes, 1), 0, logp),
         "zlossOut": TensorArg(dtype, (rows,), (1,), 0, np.zeros(rows, x.dtype)),
         "lseForZlossOut": TensorArg(dtype, (rows,), (1,), 0, np.zeros(rows, x.dtype))},
    )  # fmt: skip
    out = loss
    kwargs = {"in_place": True} if "in_place" in engine.evaluate.__code__.co_varnames else {}
    t0 = time.perf_counter()
    engine.evaluate(call, reg, **kwargs)  # warm: the first call compiles (or loads the cache)
    first = time.perf_counter() - t0
    ref_s = min(first, best_of(lambda: engine.evaluate(call, reg, **kwargs), 3))
    ref_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # before torch's own
    tx = torch.from_numpy(x.view(np.uint16)).view(torch.bfloat16) if dtype == "BF16" else torch.from_numpy(x)  # fmt: skip
    tt = torch.from_numpy(t)
    fn = lambda: torch.nn.functional.cross_entropy(tx, tt, reduction="none")  # noqa: E731
    fn()
    row = {"op": "cross_entropy_loss (none)", "dtype": dtype, "log2n": None,
           "shape": [rows, classes], "supported": True, "ref_s": ref_s, "first_s": first,
           "tensor_bytes": x.nbytes + t.nbytes + out.nbytes + logp.nbytes,
           "torch_threads": torch.get_num_threads(), "torch_s": best_of(fn, 5)}  # fmt: skip
    row["peak_rss"] = ref_rss  # the reference's (torch's log_softmax holds another [N, C])
    row["peak_rss_with_torch"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return row


if __name__ == "__main__":
    if sys.argv[1] == "--cross-entropy":
        print(json.dumps(measure_cross_entropy(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))))
        sys.exit(0)
    op, dtype, log2n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    print(json.dumps(measure(op, dtype, log2n, "--exact" in sys.argv[4:])))
