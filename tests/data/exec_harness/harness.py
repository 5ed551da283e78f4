#!/usr/bin/env python3
"""An example external harness for `aclnn-conform run --backend exec` (see README.md here).

    python harness.py CASE_DIR OUT_DIR

Reads CASE_DIR/case.json and its .npy storages, runs the case, writes OUT_DIR/result.json and,
on success, OUT_DIR/<output>.npy with the output's whole storage. Plain Python + numpy; it
implements aclnnLeakyReluBackward only and answers 161002 "unsupported op" for anything else.
A real harness would call the library under test here instead of computing with numpy.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

SUCCESS, NULLPTR, INVALID = 0, 161001, 161002
FLOATS = {"FLOAT": np.float32, "FLOAT16": np.float16, "DOUBLE": np.float64}
INTS = {"INT8": np.int8, "UINT8": np.uint8, "INT16": np.int16, "UINT16": np.uint16,
        "INT32": np.int32, "UINT32": np.uint32, "INT64": np.int64, "UINT64": np.uint64}  # fmt: skip
# LeakyReluBackward's dtype lists (specs/ops/leaky_relu_backward.yaml); BF16 on Atlas A2, A3, 950
TENSOR = ["FLOAT", "FLOAT16", "DOUBLE"]
SLOPE = ["FLOAT", "FLOAT16", "DOUBLE", "INT32", "INT64", "INT8", "BOOL", "INT16", "UINT8"]
OUT = ["FLOAT", "FLOAT16", "DOUBLE", *INTS, "BOOL", "COMPLEX64", "COMPLEX128"]


class Reject(Exception):
    """A parameter check failed: the call returns this status and writes nothing."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


# -- BF16 is stored as uint16 bits (numpy has no bfloat16) --------------------------------------


def bf16_to_f64(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def f64_to_bf16(x: np.ndarray) -> np.ndarray:
    """Round float64 to bfloat16 bits, once and to nearest even (round-to-odd via float32)."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        f = x.astype(np.float32)
        inexact = np.isfinite(f) & (f.astype(np.float64) != x) & ((f.view(np.uint32) & 1) == 0)
    toward = np.where(f.astype(np.float64) < x, np.float32(np.inf), np.float32(-np.inf))
    f = np.where(inexact, np.nextafter(f, toward), f)
    b = f.view(np.uint32)
    rounded = (b + 0x7FFF + ((b >> 16) & 1)) >> 16
    nan = (b & 0x7FFFFFFF) > 0x7F800000
    return np.where(nan, (b >> 16) | 0x40, rounded).astype(np.uint16)


# -- reading the case ------------------------------------------------------------------------------


def load_storage(case_dir: Path, arg: dict) -> np.ndarray:
    return np.load(case_dir / arg["storage"], allow_pickle=False)


def view(storage: np.ndarray, arg: dict) -> np.ndarray:
    """The tensor's elements as float64, from its strides and offset (both in elements)."""
    shape = tuple(arg["shape"])
    if any(n == 0 for n in shape):
        return np.zeros(shape)
    item = storage.itemsize
    v = np.lib.stride_tricks.as_strided(storage[arg["offset"]:], shape=shape,
                                        strides=[s * item for s in arg["strides"]])  # fmt: skip
    return bf16_to_f64(v) if arg["dtype"] == "BF16" else v.astype(np.float64)


def scalar(arg: dict) -> float:
    """The scalar's value as its dtype holds it (FLOAT 0.01 is float32(0.01))."""
    v, d = arg["value"], arg["dtype"]
    v = float(v) if isinstance(v, str) else v  # "nan", "inf", "-inf"
    if d in FLOATS:
        return float(FLOATS[d](v))
    if d == "BF16":
        return float(bf16_to_f64(f64_to_bf16(np.array([v])))[0])
    if d == "BOOL":
        return float(bool(v))
    return float(np.array(v).astype(INTS[d]))


# -- aclnnLeakyReluBackward ------------------------------------------------------------------------


def leaky_relu_backward(case: dict, case_dir: Path) -> np.ndarray:
    a, a2 = case["args"], case["product"] in ("atlas-a2", "atlas-a3", "ascend950")
    for name in ("gradOutput", "self", "negativeSlope", "out"):
        if a[name]["kind"] == "null":
            raise Reject(NULLPTR, f"Expected a proper Tensor but got null for argument {name}.")
    g, x, s, out = a["gradOutput"], a["self"], a["negativeSlope"], a["out"]
    lists = [(g, "gradOutput", TENSOR), (x, "self", TENSOR), (s, "negativeSlope", SLOPE),
             (out, "out", OUT)]  # fmt: skip
    for arg, name, allowed in lists:
        if arg["dtype"] not in allowed + (["BF16"] if a2 else []):
            raise Reject(INVALID, f"{name} dtype {arg['dtype']} is not supported")
    for arg, name in ((g, "gradOutput"), (x, "self"), (out, "out")):
        if len(arg["shape"]) > 8:
            raise Reject(INVALID, f"{name} has more than 8 dims")
    try:
        shape = np.broadcast_shapes(tuple(g["shape"]), tuple(x["shape"]))
    except ValueError:
        raise Reject(INVALID, "gradOutput and self do not broadcast") from None
    if tuple(out["shape"]) != shape:
        raise Reject(INVALID, f"out shape {out['shape']} is not the broadcast shape {list(shape)}")
    slope = scalar(s)
    if a["selfIsResult"]["value"] and slope < 0:
        raise Reject(INVALID, "selfIsResult with a negative negativeSlope is not supported")
    if out["dtype"] in INTS or out["dtype"] == "BOOL":  # float -> int/bool is not castable
        raise Reject(INVALID, f"the promoted float dtype cannot be cast to {out['dtype']}")
    storage = load_storage(case_dir, out).copy()
    if any(n == 0 for n in x["shape"]):
        return storage  # an empty self: success, nothing written
    gv = np.broadcast_to(view(load_storage(case_dir, g), g), shape)
    xv = np.broadcast_to(view(load_storage(case_dir, x), x), shape)
    with np.errstate(all="ignore"):
        result = np.where(xv > 0, gv, gv * slope)
    if out["dtype"] == "BF16":
        result = f64_to_bf16(result)
    if any(n == 0 for n in shape):
        return storage
    item = storage.itemsize
    target = np.lib.stride_tricks.as_strided(storage[out["offset"]:], shape=shape,
                                             strides=[s * item for s in out["strides"]])  # fmt: skip
    with np.errstate(all="ignore"):
        target[...] = result  # numpy casts float64 -> float16/32 or complex, rounding once
    return storage


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: harness.py CASE_DIR OUT_DIR", file=sys.stderr)
        return 2
    case_dir, out_dir = Path(argv[1]), Path(argv[2])
    case = json.loads((case_dir / "case.json").read_text(encoding="utf-8"))
    outputs = {}
    if case["op"] in ("leaky_relu_backward", "aclnnLeakyReluBackward"):
        try:
            outputs["out"] = leaky_relu_backward(case, case_dir)
            status, message = SUCCESS, ""
        except Reject as r:
            status, message = r.status, str(r)
    else:
        status = INVALID
        message = f"unsupported op {case['op']}: this example implements leaky_relu_backward only"
    for name, storage in outputs.items():
        np.save(out_dir / f"{name}.npy", storage, allow_pickle=False)
    result = {"status": status, "message": message}
    (out_dir / "result.json").write_text(json.dumps(result) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
