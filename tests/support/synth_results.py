"""Synthetic results files for scale tests and measurements: N small records shaped like a real
run's (ops, products, dtypes and clauses of the shipped specs; a failure every `fail_every`
cases, with worst elements), written line by line so that a million records need no memory.

    python -m tests.support.synth_results OUT.jsonl N [FAIL_EVERY]

Not committed as data: the files are made where a test or a measurement needs them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

OPS = ("relu", "gelu", "sigmoid", "silu", "softplus", "mish", "elu", "hardswish")
PRODUCTS = ("atlas-a2", "atlas-training", "ascend950")
DTYPES = (("FLOAT", "f32", 1e-4), ("FLOAT16", "f16", 1e-3), ("BFLOAT16", "bf16", 4e-3))
CLAUSES = ("dtype-self", "dtype-same", "shape-equal")


def record(k: int, fail_every: int = 100) -> dict:
    """The k-th synthetic record: a pass, or a fail when k % fail_every == fail_every - 1."""
    op = OPS[k % len(OPS)]
    product = PRODUCTS[(k // len(OPS)) % len(PRODUCTS)]
    dtype, tag, rel = DTYPES[(k // 24) % len(DTYPES)]
    fail = fail_every > 0 and k % fail_every == fail_every - 1
    n = 15 + k % 7
    ulp = 0.5 * (k % 5)
    stats = {"compared": n, "inf_mismatches": 0, "mare": 0.0, "max_abs": ulp * 1e-7,
             "max_rel": ulp * 6e-8, "max_ulp": ulp, "mere": 0.0, "mismatch_ratio": 0.0,
             "mismatches": 0, "n": n, "nan_mismatches": 0, "small_value_count": k % 3}  # fmt: skip
    worst: list[dict] = []
    if fail:
        stats.update(max_ulp=4096.0, max_rel=0.25, max_abs=0.5, mismatches=3,
                     mismatch_ratio=3 / n)  # fmt: skip
        worst = [{"index": [0, i], "expected": 1.0 + i, "actual": 1.25 + i, "abs_err": 0.25,
                  "rel_err": 0.25 / (1 + i), "ulp": 4096.0, "inputs": {"self": 1.0 + i}}
                 for i in range(3)]  # fmt: skip
    layout = {"offset": 0, "shape": [3, n // 3], "storage": n, "strides": [n // 3, 1]}
    return {
        "id": f"{op}/{product}/{tag}/synthetic/case{k:07d}", "op": op, "product": product,
        "kind": "positive", "verdict": "fail" if fail else "pass", "backend": "reference",
        "backend_version": "synthetic 1.0", "oracle": "reference", "oracle_version": "synthetic 1.0",
        "seed": 0, "tool_version": "0.1.0", "spec_sha256": "0" * 64, "dtype_tag": tag,
        "dtypes": {"out": dtype, "self": dtype}, "out_dtype": dtype,
        "clauses": [f"{op}/{c}" for c in CLAUSES],
        "comparisons": {"out": {"passed": not fail, "policy": {"dtype": dtype, "rel": rel},
                                "reasons": [], "stats": stats, "worst": worst}},
        "layouts": {"out": layout, "self": layout}, "expected_status": 0, "actual_status": 0,
        "oracle_status": 0, "message": "",
        "reason": f"max_ulp 4096 above the tolerance of out ({k})" if fail else "",
        "durations": {"backend": 0.0005, "oracle": 0.0001, "compare": 0.005, "total": 0.007},
        "replay": f"aclnn-conform replay '{op}/{product}/{tag}/synthetic/case{k:07d}' --seed 0",
    }  # fmt: skip


def write(path: str | Path, n: int, fail_every: int = 100) -> Path:
    """Write n synthetic records to path (JSONL, as the runner writes them) and a meta beside."""
    p = Path(path)
    with open(p, "w", encoding="utf-8") as f:
        for k in range(n):
            f.write(json.dumps(record(k, fail_every), sort_keys=True) + "\n")
    meta = {"backend": "reference", "oracle": "reference", "seed": 0, "cases": n,
            "tool_version": "0.1.0", "host": "synthetic", "seconds": 0.007 * n}  # fmt: skip
    Path(str(p) + ".meta.json").write_text(json.dumps(meta) + "\n", encoding="utf-8")
    return p


if __name__ == "__main__":
    write(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 100)
