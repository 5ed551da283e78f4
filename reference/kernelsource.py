"""What every generated kernel module shares (codegen.py's, rowgen.py's, ddgen.py's): the Source
record, the Unsupported exception a generator raises for a formula it cannot write, the scalar
helpers each module defines, the digest of the compiled functions they import, and numbers
rendered as source."""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from pathlib import Path

from ..conformance import compiled

COMPILED = Path(compiled.__file__).parent  # the compiled functions the kernels import

# the scalar helpers every generated kernel module defines (codegen's and rowgen's), numpy's
# semantics: a NaN operand wins minimum/maximum, sign(+-0) is +0
PRELUDE = """\
@njit(inline="always", error_model="numpy")
def _minimum(a, b):
    return a if (a < b or a != a) else b


@njit(inline="always", error_model="numpy")
def _maximum(a, b):
    return a if (a > b or a != a) else b


@njit(inline="always", error_model="numpy")
def _sign(a):
    return 1.0 if a > 0.0 else (-1.0 if a < 0.0 else (a if a != a else 0.0))


@njit(inline="always", error_model="numpy")
def _pow(a, b):
    return a ** b
"""

# numba's cache follows the kernel file only: the text of the compiled functions the kernels
# import (vecmath's, the intrinsics', the narrow rounding's, the bounded arithmetic's) is part
# of every kernel's key
VECMATH = hashlib.sha256(
    b"".join(
        (COMPILED / f).read_bytes()
        for f in ("vecmath.py", "intrinsics.py", "measure.py", "rowmath.py", "ddmath.py")
    )
).hexdigest()[:16]


class Unsupported(ValueError):
    """A formula the compiled path cannot express (the numpy evaluator runs it instead)."""


@dataclass(frozen=True)
class Source:
    """A generated kernel module's text and its arguments' order."""

    text: str
    tensors: tuple[str, ...]  # argument order: the spec's tensor inputs, then the attributes
    attrs: tuple[str, ...]
    half: frozenset[str] = frozenset()  # FLOAT16 tensors, passed as their bits (uint16)


def number(v: float) -> str:
    """A float as source (NaN and the infinities as the modules' constants)."""
    if math.isnan(v):
        return "_NAN"
    if math.isinf(v):
        return "_INF" if v > 0 else "(-_INF)"
    return repr(v)
