#!/usr/bin/env python3
"""A harness with a known error, for `--cross` and `--dump-on-fail` tests (see README.md here).

    python noisy_harness.py REL CASE_DIR OUT_DIR

Runs harness.py's leaky_relu_backward, then multiplies every element of the float output storage
by (1 + REL) (in float64, rounded once to the output dtype): its relative error against the
exact result is REL, up to the output dtype's rounding.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import harness  # noqa: E402


def main(argv: list[str]) -> int:
    rel, case_dir, out_dir = float(argv[1]), argv[2], Path(argv[3])
    rc = harness.main(["harness.py", case_dir, str(out_dir)])
    out = out_dir / "out.npy"
    if out.exists():
        a = np.load(out)
        if a.dtype.kind == "f":
            a = (a.astype(np.float64) * (1.0 + rel)).astype(a.dtype)
            np.save(out, a, allow_pickle=False)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))
