"""The promise: adding an operator is adding one YAML file, and no test that is not about that
operator breaks.

A copy of specs/ (the shipped folder: products, dtypes, schema, ops/...) gets ONE extra spec,
tests/data/spec_folder/tanh_backward.yaml (no oracle), and the op-generic test files
run against it in a subprocess: tests/support/specs_root_hook/sitecustomize.py, first on
PYTHONPATH, points `specs.root()` at the copy in that process and in every process it starts
(xdist workers, `aclnn-conform`, `python -m cli.main`).

The subprocess runs every test of those files that is not parametrized over one of the other
ops (whose items the extra file cannot change; the whole files are still collected, so a table
built at import fails there): the op's own items and every registry-wide test. Set
ACLNN_CONFORM_TEST_PROMISE_FULL=1 to run the files whole (about 1.5 times as long).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from aclnn_conformance import specs
from aclnn_conformance.conformance.spec.registry import default_registry

from tests.support.runcli import REPO

pytestmark = pytest.mark.promise

EXTRA = REPO / "tests" / "data" / "spec_folder" / "tanh_backward.yaml"
HOOK = REPO / "tests" / "support" / "specs_root_hook"
OP_GENERIC = [
    "tests/test_lint.py",
    "tests/test_cli_specs.py",
    "tests/test_engine_vs_mpmath.py",
    "tests/test_error_rules.py",
    "tests/test_generate.py",
    "tests/test_oracles.py",
    "tests/test_products.py",
    "tests/test_family_oracles.py",
    "tests/test_layouts.py",
    "tests/test_doc_tools.py",
    "tests/test_spec_folders.py",
    "tests/test_backend_jax.py",
    "tests/test_backend_torch.py",
    "tests/test_kernel.py",
    "tests/test_double_faithful.py",
    "tests/test_inplace.py",
]
FULL = os.environ.get("ACLNN_CONFORM_TEST_PROMISE_FULL") == "1"


def extra_spec() -> tuple[str, str]:
    """(spec name, YAML text) of the extra op; renamed when the registry already has a
    tanh_backward (a checkout that ships one, or ACLNN_CONFORM_SPECS naming a folder with it)."""
    text = EXTRA.read_text(encoding="utf-8")
    if "tanh_backward" not in default_registry().names():
        return "tanh_backward", text
    text = text.replace("\nname: tanh_backward\n", "\nname: tanh_extra_backward\n")
    text = text.replace("\nop: aclnnTanhBackward\n", "\nop: aclnnTanhExtraBackward\n")
    return "tanh_extra_backward", text


def specs_with_one_more_op(tmp: Path) -> tuple[Path, str]:
    root = tmp / "specs"
    shutil.copytree(specs.root(), root, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    name, text = extra_spec()
    (root / "ops" / f"{name}.yaml").write_text(text, encoding="utf-8")
    return root, name


def env_for(root: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["ACLNN_CONFORM_TEST_SPECS_ROOT"] = str(root)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(HOOK), str(REPO), env.get("PYTHONPATH", "")) if p
    )
    for k in ("ACLNN_CONFORM_DEBUG", "PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER"):
        env.pop(k, None)
    return env


def deselect_other_ops(name: str) -> list[str]:
    """`-k`: items parametrized over another op are left out (not the new op's, not the
    registry-wide ones). `-k` matches substrings (elu_backward also matches gelu_backward_v2's
    items), which is harmless here: both are other ops, and the new op's name comes first."""
    others = [n for n in default_registry().names() if n != name]
    return [] if FULL or not others else ["-k", f"{name} or not ({' or '.join(others)})"]


def test_adding_one_spec_file_breaks_no_op_generic_test(tmp_path):
    root, name = specs_with_one_more_op(tmp_path)
    env = env_for(root)
    # the copy is what every process there sees: the registry has exactly one more op
    probe = subprocess.run(
        [sys.executable, "-c", "from aclnn_conformance.conformance.spec.registry import default_registry as r; "
         "print(' '.join(r().names()))"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert probe.returncode == 0, probe.stderr
    assert sorted(probe.stdout.split()) == sorted([*default_registry().names(), name])

    # cwd is the copy's parent, so that spec paths show as specs/ops/... as in the checkout
    junit = tmp_path / "junit.xml"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2",
         "--rootdir", str(REPO), "-c", str(REPO / "pyproject.toml"), "--junitxml", str(junit),
         "-W", "default", "-W", "ignore::pytest.PytestAssertRewriteWarning",
         *deselect_other_ops(name), *(str(REPO / f) for f in OP_GENERIC)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1800,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    # the new op went through the op-generic tests, and is listed as having no oracle
    cases = ET.parse(junit).getroot().iter("testcase")
    ran = {c.get("classname", "") + "::" + c.get("name", ""): c for c in cases}
    mine = [k for k in ran if f"[{name}" in k or f"-{name}" in k]
    assert len(mine) >= 10, sorted(ran)
    assert not [k for k, c in ran.items() if c.find("failure") is not None or
                c.find("error") is not None]  # fmt: skip
    listed = [p.get("value", "") for p in ET.parse(junit).iter("property")
              if p.get("name") == "ops_without_oracle"]  # fmt: skip
    assert listed and name in listed[0].split(","), listed
    assert re.search(rf"without an independent oracle.*{name}", out), out[-3000:]
