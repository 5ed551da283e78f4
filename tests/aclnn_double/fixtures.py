"""pytest fixtures over the aclnn TEST DOUBLE, shared by the aclnn backend's test files.

`lib_dir` is the built double's lib64; building it also makes an operator-package directory
and points ASCEND_OPP_PATH at it for the session (the double, like the real library, answers
561107 without one). `counter(name)` reads the double's counters through its own handle.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

import pytest
from aclnn_conformance.conformance.run.backends.aclnn_backend import AclnnBackend

from tests.aclnn_double.build import build, compiler


@pytest.fixture(scope="session")
def double_root(tmp_path_factory) -> Path:
    """DIR with DIR/lib64/{libascendcl,libnnopbase,libopapi_nn}.so and DIR/opp; ASCEND_OPP_PATH
    names DIR/opp while the session lasts."""
    if compiler() is None:
        pytest.skip("no C compiler (cc/gcc/clang) to build the aclnn test double")
    root = tmp_path_factory.mktemp("aclnn_double")
    build(root)
    (root / "opp").mkdir()
    old = os.environ.get("ASCEND_OPP_PATH")
    os.environ["ASCEND_OPP_PATH"] = str(root / "opp")
    yield root
    if old is None:
        os.environ.pop("ASCEND_OPP_PATH", None)
    else:
        os.environ["ASCEND_OPP_PATH"] = old


@pytest.fixture(scope="session")
def lib_dir(double_root) -> Path:
    return double_root / "lib64"


@pytest.fixture
def backend(lib_dir):
    b = AclnnBackend(lib_dir=str(lib_dir))
    yield b
    b.close()


@pytest.fixture(scope="session")
def double_lib(lib_dir) -> ctypes.CDLL:
    """The double's runtime (the same handle the backend loaded: RTLD_GLOBAL, same path)."""
    return ctypes.CDLL(str(lib_dir / "libascendcl.so"), mode=ctypes.RTLD_GLOBAL)


@pytest.fixture(scope="session")
def counter(double_lib):
    """counter(name): a live-object / call counter of the double (same handle as the backend's)."""
    fn = double_lib.aclnnTestDoubleCounter
    fn.restype, fn.argtypes = ctypes.c_int64, [ctypes.c_char_p]

    def get(name: str) -> int:
        value = fn(name.encode())
        assert value >= 0, f"unknown counter {name}"
        return value

    return get
