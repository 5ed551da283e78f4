#!/usr/bin/env python3
"""A deliberately nondeterministic harness for `--repeat` tests (see README.md here).

    python flaky_harness.py MODE COUNTER_FILE CASE_DIR OUT_DIR

Runs harness.py's leaky_relu_backward, then, counting its calls in COUNTER_FILE:
MODE=same changes nothing (it only counts); MODE=bits flips the lowest bit of the output storage's first element on every even call (a race
that loses one write); MODE=status answers 161002 on every even call instead of the result.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import harness  # noqa: E402


def main(argv: list[str]) -> int:
    mode, counter, case_dir, out_dir = argv[1], Path(argv[2]), argv[3], Path(argv[4])
    calls = int(counter.read_text() or 0) + 1 if counter.exists() else 1
    counter.write_text(str(calls))
    rc = harness.main(["harness.py", case_dir, str(out_dir)])
    if calls % 2:
        return rc
    out = out_dir / "out.npy"
    if mode == "bits" and out.exists():
        a = np.load(out)
        bits = a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.itemsize])
        bits[0] ^= 1
        np.save(out, a, allow_pickle=False)
    elif mode == "status":
        out.unlink(missing_ok=True)
        result = {"status": 161002, "message": "flaky: rejected on this call"}
        (out_dir / "result.json").write_text(json.dumps(result) + "\n", encoding="utf-8")
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))
