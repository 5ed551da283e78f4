"""Point `specs.root()` at another copy of the specs/ folder, in every Python process.

tests/test_one_yaml_per_op.py puts this folder first on PYTHONPATH and names a copy of specs/
(with one extra operator in ops/) in ACLNN_CONFORM_TEST_SPECS_ROOT: Python imports this module at
start-up, so pytest, its xdist workers and every `aclnn-conform` or `python -m cli.main` process
they start see the same specs. Nothing happens when the variable is unset. (The project's own
`--specs DIR` / ACLNN_CONFORM_SPECS add a folder of specs; this replaces the shipped folder, so
that spec files found by path, `specs.root() / "ops"`, change too.)
"""

import os
from pathlib import Path

_ROOT = os.environ.get("ACLNN_CONFORM_TEST_SPECS_ROOT")
if _ROOT:
    from aclnn_conformance import specs

    def _root(_path: Path = Path(_ROOT)) -> Path:
        return _path

    specs.root = _root
