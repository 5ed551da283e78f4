#!/usr/bin/env python3
"""An exec-protocol harness for the made-up op of weighted_hypot.yaml (tests/test_nulldefault.py):
a `{"kind": "null"}` weightOptional stands for a tensor of 2s; says in its message which it read.
Contiguous FLOAT tensors only (what the test hands it).

    python weighted_hypot_harness.py CASE_DIR OUT_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np


def main(argv: list[str]) -> int:
    case_dir, out_dir = Path(argv[1]), Path(argv[2])
    a = json.loads((case_dir / "case.json").read_text(encoding="utf-8"))["args"]
    x = np.load(case_dir / a["self"]["storage"]).astype(np.float64).reshape(a["self"]["shape"])
    w_arg = a["weightOptional"]
    if w_arg["kind"] == "null":
        w, message = np.float64(2.0), "weightOptional=null"
    else:
        w = np.load(case_dir / w_arg["storage"]).astype(np.float64).reshape(w_arg["shape"])
        message = "weightOptional=tensor"
    y = np.sqrt(x * x + w * w)
    np.save(out_dir / "out.npy", y.astype(np.float32).reshape(-1), allow_pickle=False)
    result = {"status": 0, "message": message}
    (out_dir / "result.json").write_text(json.dumps(result) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
