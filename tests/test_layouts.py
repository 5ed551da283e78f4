"""Views: non-contiguous inputs and outputs give the values of their contiguous copies.

Every op accepts arbitrary strides and offsets for inputs and outputs (shared/research/
aclnn-facts.md §1.7; seeds "支持非连续的Tensor"). A tensor is (view shape, strides and offset in
elements, storage): here views are cut out of larger storages whose other elements hold NaN
(inputs: reading them would show) or a sentinel (outputs: it must survive bit for bit). Empty
tensors succeed without writing anything (facts §1.5) and 0-d tensors are ordinary elements.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from aclnn_conformance.conformance.acl import dtypes as dt
from aclnn_conformance.conformance.acl.call import Call, ScalarArg, TensorArg
from aclnn_conformance.reference.engine import evaluate

PRODUCT = "atlas-a2"
SENTINEL = -1232.0  # exact in FLOAT, FLOAT16 and BF16
OPS = {
    "leaky_relu_backward": (
        "self",
        "out",
        {"negativeSlope": ScalarArg("FLOAT", 0.2), "selfIsResult": False},
    ),
    "hardshrink_backward": ("self", "gradInput", {"lambd": ScalarArg("FLOAT", 0.5)}),
    "softplus_backward": (
        "self",
        "gradInput",
        {"beta": ScalarArg("FLOAT", 2.0), "threshold": ScalarArg("FLOAT", 3.0)},
    ),
    "gelu_backward_v2": ("self", "gradInput", {"approximate": "tanh"}),
    "elu_backward": (
        "selfOrResult",
        "gradInput",
        {
            "alpha": ScalarArg("FLOAT", 1.2),
            "scale": ScalarArg("FLOAT", 1.05),
            "inputScale": ScalarArg("FLOAT", 0.9),
            "isResult": False,
        },
    ),
}
DTYPES = ("FLOAT", "FLOAT16", "BF16")
BROADCASTING = ("leaky_relu_backward", "hardshrink_backward", "gelu_backward_v2")
SHAPE = (3, 4, 5)


def np_dtype(name: str) -> np.dtype:
    return dt.get(name).np


def bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.itemsize])


def geometry(base: np.ndarray, view: np.ndarray) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """(shape, strides, offset) in elements of a numpy view into the 1-D array `base`."""
    item = base.itemsize
    offset = (view.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // item
    assert offset >= 0
    return tuple(view.shape), tuple(s // item for s in view.strides), int(offset)


def strided(storage: np.ndarray, shape, strides, offset) -> np.ndarray:
    item = storage.itemsize
    return np.lib.stride_tricks.as_strided(
        storage[offset:], shape=shape, strides=tuple(s * item for s in strides), writeable=False
    )


# -- layouts: each returns (base storage, writeable view of the logical shape) -------------------


def contiguous(shape, dtype, fill):
    base = np.full(int(np.prod(shape)), fill, dtype=np.float64).astype(np_dtype(dtype))
    return base, base.reshape(shape)


def offset(shape, dtype, fill):
    n = int(np.prod(shape))
    base = np.full(n + 9, fill, dtype=np.float64).astype(np_dtype(dtype))
    return base, base[5 : 5 + n].reshape(shape)


def transposed(shape, dtype, fill):
    """Physically stored with the dimensions reversed: the view's strides are permuted."""
    base = np.full(int(np.prod(shape)), fill, dtype=np.float64).astype(np_dtype(dtype))
    return base, base.reshape(shape[::-1]).transpose()


def rotated(shape, dtype, fill):
    """Dimensions stored in the order (1, 2, 0) (for 3-d shapes)."""
    perm = (1, 2, 0)[: len(shape)] if len(shape) == 3 else tuple(reversed(range(len(shape))))
    base = np.full(int(np.prod(shape)), fill, dtype=np.float64).astype(np_dtype(dtype))
    phys = base.reshape(tuple(shape[p] for p in perm))
    return base, phys.transpose(np.argsort(perm))


def gaps(shape, dtype, fill):
    """Every dimension padded (a row gap, a plane gap, every other element) plus an offset."""
    padded = tuple(n + 1 for n in shape[:-1]) + (2 * shape[-1],)
    base = np.full(int(np.prod(padded)) + 11, fill, dtype=np.float64).astype(np_dtype(dtype))
    block = base[3 : 3 + int(np.prod(padded))].reshape(padded)
    index = tuple(slice(1, n + 1) for n in shape[:-1]) + (slice(1, None, 2),)
    return base, block[index]


def transposed_gaps(shape, dtype, fill):
    base, view = gaps(shape[::-1], dtype, fill)
    return base, view.transpose()


def zero_strides(shape, dtype, fill):
    """A broadcast-like input view: stride 0 in every dimension but the last (inputs only)."""
    base = np.full(shape[-1] + 4, fill, dtype=np.float64).astype(np_dtype(dtype))
    strides = (0,) * (len(shape) - 1) + (base.itemsize,)
    view = np.lib.stride_tricks.as_strided(base[2:], shape=shape, strides=strides)
    return base, view


LAYOUTS: dict[str, Callable] = {
    "contig": contiguous,
    "offset": offset,
    "transposed": transposed,
    "rotated": rotated,
    "gaps": gaps,
    "transposed-gaps": transposed_gaps,
    "zero-strides": zero_strides,
}

# (gradOutput layout, x layout, output layout)
COMBOS = [
    ("contig", "contig", "transposed"),
    ("transposed", "gaps", "contig"),
    ("gaps", "transposed", "gaps"),
    ("offset", "offset", "offset"),
    ("rotated", "transposed-gaps", "rotated"),
    ("zero-strides", "gaps", "transposed"),
    ("gaps", "zero-strides", "transposed-gaps"),
    ("transposed", "transposed", "transposed"),
]


def sample(shape, dtype, rng, specials=True) -> np.ndarray:
    v = rng.uniform(-4, 4, shape)
    if specials:
        flat = v.reshape(-1)
        special = [0.0, -0.0, np.inf, -np.inf, np.nan, 0.5]
        flat[: min(6, flat.size)] = special[: flat.size]
        rng.shuffle(flat)
    return v.astype(np_dtype(dtype))


def input_tensor(layout, shape, dtype, values) -> tuple[TensorArg, np.ndarray]:
    """The tensor and the logical values it holds (zero strides repeat some of `values`)."""
    base, view = LAYOUTS[layout](shape, dtype, np.nan)
    if view.size:
        view[...] = values  # overlapping (zero-stride) views keep the last write
    logical = np.array(view)
    shape_, strides, off = geometry(base, view)
    return TensorArg(dtype, shape_, strides, off, base), logical


def output_tensor(layout, shape, dtype) -> TensorArg:
    base, view = LAYOUTS[layout](shape, dtype, SENTINEL)
    shape_, strides, off = geometry(base, view)
    return TensorArg(dtype, shape_, strides, off, base)


def contiguous_tensor(values: np.ndarray, dtype: str) -> TensorArg:
    v = np.ascontiguousarray(values)
    strides, acc = [], 1
    for n in reversed(v.shape):
        strides.append(acc)
        acc *= max(n, 1)
    return TensorArg(dtype, v.shape, tuple(reversed(strides)), 0, v.reshape(-1).copy())


def run(op, g: TensorArg, x: TensorArg, out: TensorArg) -> np.ndarray:
    xname, oname, scalars = OPS[op]
    args: dict[str, Any] = {"gradOutput": g, xname: x, oname: out, **scalars}
    before = {k: v.storage.tobytes() for k, v in args.items() if isinstance(v, TensorArg)}
    outcome = evaluate(Call(op, PRODUCT, args))
    assert outcome.status == 0, outcome.message
    for k, v in args.items():  # the call's own storages are never modified
        if isinstance(v, TensorArg):
            assert v.storage.tobytes() == before[k], k
    return outcome.outputs[oname]


def reference(op, g_vals, x_vals, dtype, out_shape) -> np.ndarray:
    """The result of the same values in contiguous tensors."""
    out = contiguous_tensor(np.zeros(out_shape, dtype=np_dtype(dtype)), dtype)
    storage = run(op, contiguous_tensor(g_vals, dtype), contiguous_tensor(x_vals, dtype), out)
    return storage.reshape(out_shape)


def assert_output(storage_after: np.ndarray, out: TensorArg, expected: np.ndarray):
    """The view holds `expected` bit for bit; every other storage element is the sentinel."""
    got = strided(storage_after, out.shape, out.strides, out.offset)
    np.testing.assert_array_equal(bits(got), bits(expected))
    covered = np.zeros(storage_after.size, dtype=bool)
    index = strided(np.arange(storage_after.size), out.shape, out.strides, out.offset)
    covered[index.reshape(-1)] = True
    untouched = bits(storage_after)[~covered]
    sentinel = bits(np.array([SENTINEL], dtype=storage_after.dtype))[0]
    assert np.all(untouched == sentinel), "an element outside the output view was written"


def _params():
    out = []
    for op in OPS:
        for dtype in DTYPES:
            for combo in COMBOS:
                out.append(
                    pytest.param(
                        op, dtype, combo, id=f"{op}-{dt.get(dtype).short}-{'|'.join(combo)}"
                    )
                )
    return out


@pytest.mark.parametrize(("op", "dtype", "combo"), _params())
def test_views_match_contiguous_copies(op, dtype, combo):
    rng = np.random.default_rng(zlib.crc32("/".join((op, dtype, *combo)).encode()))
    g_layout, x_layout, o_layout = combo
    g, g_vals = input_tensor(g_layout, SHAPE, dtype, sample(SHAPE, dtype, rng))
    x, x_vals = input_tensor(x_layout, SHAPE, dtype, sample(SHAPE, dtype, rng))
    assert not (g.is_contiguous() and x.is_contiguous() and o_layout == "contig")
    out = output_tensor(o_layout, SHAPE, dtype)
    expected = reference(op, g_vals, x_vals, dtype, SHAPE)
    assert_output(run(op, g, x, out), out, expected)


@pytest.mark.parametrize("op", BROADCASTING)
@pytest.mark.parametrize("dtype", DTYPES)
def test_broadcast_views(op, dtype):
    """Broadcasting inputs that are themselves strided views, into a transposed output."""
    rng = np.random.default_rng(7)
    g_shape, x_shape = (3, 1, 5), (4, 1)
    g, g_vals = input_tensor("gaps", g_shape, dtype, sample(g_shape, dtype, rng, specials=False))
    x, x_vals = input_tensor("transposed", x_shape, dtype, sample(x_shape, dtype, rng))
    out = output_tensor("transposed-gaps", SHAPE, dtype)
    expected = reference(op, g_vals, x_vals, dtype, SHAPE)
    # the contiguous reference itself broadcasts: compare with materialised inputs too
    full = reference(
        op, np.broadcast_to(g_vals, SHAPE), np.broadcast_to(x_vals, SHAPE), dtype, SHAPE
    )
    np.testing.assert_array_equal(bits(expected), bits(full))
    assert_output(run(op, g, x, out), out, expected)


EMPTY_SHAPES = [(0,), (0, 3), (3, 0), (2, 0, 4)]


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", EMPTY_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_empty_tensors_leave_output_untouched(op, dtype, shape):
    nd = np_dtype(dtype)
    g = TensorArg(dtype, shape, tuple(range(len(shape), 0, -1)), 1, np.full(4, np.nan).astype(nd))
    x = TensorArg(dtype, shape, (0,) * len(shape), 0, np.zeros(0, dtype=nd))
    storage = np.full(6, SENTINEL, dtype=np.float64).astype(nd)
    out = TensorArg(dtype, shape, (1,) * len(shape), 2, storage)
    after = run(op, g, x, out)
    np.testing.assert_array_equal(bits(after), bits(storage))


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("dtype", DTYPES)
def test_zero_dim_tensors(op, dtype):
    """0-d tensors (shape (), strides ()) at offsets: one element, as a 1-element tensor gives."""
    nd = np_dtype(dtype)
    for gv, xv in ((1.5, -0.75), (-2.0, 3.0), (0.25, 0.0), (np.inf, -1.0), (3.0, np.nan)):
        g_st = np.array([np.nan, np.nan, gv, np.nan]).astype(nd)
        x_st = np.array([xv, np.nan]).astype(nd)
        storage = np.full(3, SENTINEL, dtype=np.float64).astype(nd)
        out = TensorArg(dtype, (), (), 1, storage)
        after = run(op, TensorArg(dtype, (), (), 2, g_st), TensorArg(dtype, (), (), 0, x_st), out)
        one = reference(op, np.array([gv]).astype(nd), np.array([xv]).astype(nd), dtype, (1,))
        assert_output(after, out, one.reshape(()))


@pytest.mark.parametrize("op", BROADCASTING)
def test_zero_dim_broadcasts(op):
    """A 0-d gradOutput broadcast against a 2-d x equals the materialised broadcast."""
    dtype = "FLOAT"
    rng = np.random.default_rng(3)
    x_vals = sample((2, 3), dtype, rng)
    g = TensorArg(dtype, (), (), 0, np.array([1.75], dtype=np.float32))
    x = contiguous_tensor(x_vals, dtype)
    out = output_tensor("gaps", (2, 3), dtype)
    expected = reference(op, np.full((2, 3), 1.75, dtype=np.float32), x_vals, dtype, (2, 3))
    assert_output(run(op, g, x, out), out, expected)


def test_bf16_sentinel_is_exact():
    assert float(np.float32(SENTINEL)) == float(ml_dtypes.bfloat16(SENTINEL)) == SENTINEL
