"""Build the aclnn TEST DOUBLE (a CPU stand-in for CANN, not the real library) into DIR/lib64.

It keeps the real layout: libascendcl.so (runtime, memory, aclGetRecentErrMsg), libnnopbase.so
(aclCreateTensor/aclCreateScalar) and libopapi_nn.so (the five operators), each linked against
the ones before it with an $ORIGIN rpath. Usage: `python tests/aclnn_double/build.py DIR`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FLAGS = ["-shared", "-fPIC", "-O2", "-Wall", "-ffp-contract=off", "-std=gnu11"]
LIBS = (  # output, source, extra link arguments
    ("libascendcl.so", "runtime.c", []),
    ("libnnopbase.so", "meta.c", ["-lascendcl"]),
    ("libopapi_nn.so", "ops.c", ["-lnnopbase", "-lascendcl", "-lm"]),
)


class BuildError(RuntimeError):
    pass


def compiler() -> str | None:
    """The system C compiler ($CC, cc, gcc or clang), or None."""
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def build(dest: Path, cc: str | None = None) -> Path:
    """Compile the double into dest/lib64 and return that directory."""
    cc = cc or compiler()
    if cc is None:
        raise BuildError("no C compiler found (set $CC or install cc/gcc/clang)")
    lib = Path(dest) / "lib64"
    lib.mkdir(parents=True, exist_ok=True)
    for out, src, extra in LIBS:
        cmd = [cc, *FLAGS, f"-I{HERE}", "-o", str(lib / out), str(HERE / src),
               f"-Wl,-soname,{out}", f"-L{lib}", "-Wl,-rpath,$ORIGIN", *extra]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if proc.returncode != 0 or "warning" in proc.stderr:
            raise BuildError(f"{' '.join(cmd)}\n{proc.stderr}")
    return lib


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python tests/aclnn_double/build.py DIR")
    print(build(Path(sys.argv[1])))
