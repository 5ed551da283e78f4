"""The kernel cache holds code the reference imports and pickles numba loads: it must be the
user's alone (issue 22, point 2). A planted folder (another owner, group/world-writable, a
symbolic link) is refused and the kernels are compiled in memory, with one warning."""

from __future__ import annotations

import os
import pickle
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from aclnn_conformance.conformance.acl import dtypes
from aclnn_conformance.reference import kernel

from tests.support.paths import HAVE_NUMBA
from tests.test_kernel import COMPILE

ROOT = str(Path(__file__).resolve().parent.parent)
needs_numba = pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed")


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """No cache chosen yet; no ACLNN_CONFORM_CACHE; $TMPDIR and the home cache under tmp_path."""
    monkeypatch.setattr(kernel, "_cache", {})
    monkeypatch.delenv("ACLNN_CONFORM_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    monkeypatch.setattr(tempfile, "tempdir", None)
    (tmp_path / "tmp").mkdir()
    return tmp_path


def mode(p: Path) -> int:
    return stat.S_IMODE(os.lstat(p).st_mode)


def leaf() -> str:
    return f"kernels-numba-{kernel.numba_version()}"


def test_every_level_created_is_0700(fresh, capsys):
    folder = kernel.private_cache()
    assert folder == fresh / "xdg" / "aclnn-conformance" / leaf()
    for p in (fresh / "xdg", fresh / "xdg" / "aclnn-conformance", folder):
        assert mode(p) == 0o700, (p, oct(mode(p)))
    assert capsys.readouterr().err == ""


def test_an_own_folder_readable_by_others_is_tightened_and_used(fresh):
    mine = fresh / "xdg" / "aclnn-conformance"
    mine.mkdir(parents=True)
    mine.chmod(0o755)
    assert kernel.private_cache() == mine / leaf()
    assert mode(mine) == 0o700


def test_the_tmp_fallback_is_per_user_and_private(fresh):
    (fresh / "home-is-a-file").write_text("")
    os.environ["XDG_CACHE_HOME"] = str(fresh / "home-is-a-file" / "cache")  # cannot be created
    folder = kernel.private_cache()
    top = fresh / "tmp" / f"aclnn-conformance-{os.getuid()}"
    assert folder == top / leaf()
    assert mode(top) == mode(folder) == 0o700


def _plant(fresh: Path, how: str, monkeypatch) -> None:
    if how == "world-writable":  # the fixed shared $TMPDIR folder an attacker made first
        (fresh / "home-is-a-file").write_text("")
        monkeypatch.setenv("XDG_CACHE_HOME", str(fresh / "home-is-a-file" / "cache"))
        top = fresh / "tmp" / f"aclnn-conformance-{os.getuid()}"
        (top / leaf()).mkdir(parents=True)
        top.chmod(0o777)
    elif how == "group-writable":
        top = fresh / "xdg" / "aclnn-conformance"
        top.mkdir(parents=True)
        top.chmod(0o770)
    elif how == "foreign-owner":  # another user's folder: the check's uid is not its owner's
        (fresh / "theirs").mkdir(mode=0o700)
        monkeypatch.setenv("ACLNN_CONFORM_CACHE", str(fresh / "theirs"))
        monkeypatch.setattr(kernel, "_uid", lambda: os.getuid() + 1)
    elif how == "symlink":
        (fresh / "target").mkdir(mode=0o700)
        (fresh / "link").symlink_to(fresh / "target")
        monkeypatch.setenv("ACLNN_CONFORM_CACHE", str(fresh / "link"))
    elif how == "writable-pycache":  # numba's index files, unpickled when loaded
        mine = fresh / "xdg" / "aclnn-conformance" / leaf()
        (mine / "__pycache__").mkdir(parents=True)
        (mine / "__pycache__").chmod(0o777)
    elif how == "not-a-directory":
        (fresh / "file").write_text("")
        monkeypatch.setenv("ACLNN_CONFORM_CACHE", str(fresh / "file"))


@pytest.mark.parametrize("how", ["world-writable", "group-writable", "foreign-owner", "symlink",
                                 "writable-pycache", "not-a-directory"])  # fmt: skip
def test_a_planted_folder_is_refused_with_one_warning(fresh, how, monkeypatch, capsys):
    _plant(fresh, how, monkeypatch)
    assert kernel.private_cache() is None
    assert kernel.private_cache() is None  # decided once
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("warning: kernel cache refused"), err
    assert "compiled in memory" in err[0]


@pytest.mark.kernels
@needs_numba
def test_refused_cache_compiles_in_memory_and_gives_the_same_bits(fresh, monkeypatch):
    """The in-memory module (no file, no cache) computes what the cached one computes."""
    import numpy as np
    from aclnn_conformance.conformance.spec.interpret import attribute_env
    from aclnn_conformance.conformance.spec.registry import default_registry

    from tests.test_kernel import _call_any

    spec = default_registry().get("softplus_backward")
    call = _call_any(spec)
    env = attribute_env(spec, call)
    raw = {p.name: call.tensor(p.name).storage for p in spec.tensor_inputs}
    src = kernel.generate(spec, env)
    n = raw[spec.tensor_inputs[0].name].size
    values = []
    for folder in (None, kernel.make_private(fresh / "own", fresh / "own")):
        monkeypatch.setattr(kernel, "_cache", {"folder": folder})
        module = kernel._load(f"memtest{folder is None}", src.text)
        assert (getattr(module, "__file__", None) is None) == (folder is None)
        y, f = np.empty(n), np.empty(n, np.uint8)
        kernel.Kernel("memtest", module, src).run(raw, env, y, f, 1, dtypes.float_format("FLOAT"))
        values.append(y)
    assert np.array_equal(values[0], values[1], equal_nan=True)
    assert not list(fresh.rglob("k_memtestTrue*"))  # nothing written for the in-memory one
    assert list(fresh.rglob("k_memtestFalse*.nbi"))


COMPILE_AND_SAY = COMPILE + 'print("ok", kernel.private_cache())\n'


class _Payload:
    """A pickle that runs a command when loaded: what an attacker plants as a numba index."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


@pytest.mark.kernels
@needs_numba
@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX owners and modes")
def test_a_planted_numba_index_in_the_shared_tmp_folder_is_never_unpickled(tmp_path):
    """The finding: $TMPDIR/aclnn-conformance-kernels was used as found and numba unpickled its
    __pycache__/*.nbi. Here the planted folder (world-writable) is refused; made private, the
    same plant would run (the control shows the test can fail)."""
    script = COMPILE_AND_SAY.format(root=ROOT)
    base = {k: v for k, v in os.environ.items() if k != "ACLNN_CONFORM_CACHE"}
    base["ACLNN_CONFORM_KERNEL"] = "numba"
    good = tmp_path / "good"
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=300, env={**base, "ACLNN_CONFORM_CACHE": str(good)})  # fmt: skip
    assert p.returncode == 0, p.stderr
    indexes = sorted((good / "__pycache__").glob("*.nbi"))
    assert indexes
    # the plant: the same sources, and an index whose first pickle runs a command
    (tmp_path / "home-is-a-file").write_text("")
    tmp = tmp_path / "tmp"
    top = tmp / f"aclnn-conformance-{os.getuid()}"
    planted = top / f"kernels-numba-{kernel.numba_version()}"
    (planted / "__pycache__").mkdir(parents=True)
    for src in good.glob("k_*.py"):
        shutil.copy(src, planted / src.name)
    marker = tmp_path / "pwned"
    for idx in indexes:
        (planted / "__pycache__" / idx.name).write_bytes(pickle.dumps(_Payload(str(marker))))
    top.chmod(0o777)
    env = {**base, "TMPDIR": str(tmp), "XDG_CACHE_HOME": str(tmp_path / "home-is-a-file" / "c")}
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=300, env=env)  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert not marker.exists(), "the planted pickle ran"
    assert p.stdout.strip().endswith("ok None")
    assert p.stderr.count("warning: kernel cache refused") == 1, p.stderr
    assert "writable by group or others" in p.stderr
    top.chmod(0o700)  # control: the same plant, in a folder that passes the check
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=300, env=env)  # fmt: skip
    assert marker.exists(), "control: the plant did not run in an accepted folder"
