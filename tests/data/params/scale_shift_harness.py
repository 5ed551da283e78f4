#!/usr/bin/env python3
"""An exec-protocol harness for the made-up op of scale_shift.yaml (tests/test_params.py):
reads case.json's int, float and array arguments by their kinds, computes the op on a
contiguous FLOAT self and says in its message what arrays it read.

    python scale_shift_harness.py CASE_DIR OUT_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np


def main(argv: list[str]) -> int:
    case_dir, out_dir = Path(argv[1]), Path(argv[2])
    a = json.loads((case_dir / "case.json").read_text(encoding="utf-8"))["args"]
    kinds = {n: a[n]["kind"] for n in ("mode", "alpha", "shift", "dims", "weights", "flags")}
    want = {"mode": "int", "alpha": "float", "shift": "int", "dims": "int_array",
            "weights": "float_array", "flags": "bool_array"}  # fmt: skip
    status, message = 0, ""
    if kinds != want:
        status, message = 161002, f"unexpected kinds {kinds}"
    elif a["mode"]["value"] not in (0, 1):
        status, message = 161002, "mode is not 0 or 1"
    else:
        mode, alpha, shift = a["mode"]["value"], a["alpha"]["value"], a["shift"]["value"]
        x = np.load(case_dir / a["self"]["storage"]).astype(np.float64)
        y = x * alpha + shift if mode == 1 else x + alpha + shift
        np.save(out_dir / "out.npy", y.astype(np.float32), allow_pickle=False)
        message = f"dims={a['dims']['values']} weights={a['weights']['values']} flags={a['flags']['values']}"
    result = {"status": status, "message": message}
    (out_dir / "result.json").write_text(json.dumps(result) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
