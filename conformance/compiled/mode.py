"""The one switch between the numpy paths and the compiled (numba) ones, for evaluation and
comparison alike, and the one size threshold below which compiling would cost more than it saves.

ACLNN_CONFORM_KERNEL=numpy|numba|auto picks the path (auto: numba where installed, for outputs of
COMPILED_MIN elements and more); `set_mode` overrides the environment (tests force each path).
This module never imports numba: asking whether it is there is cheap.
"""

from __future__ import annotations

import os

COMPILED_MIN = 1 << 21  # elements: smaller outputs (the default suite's included) keep numpy
MODES = ("numpy", "numba", "auto")
_override: dict[str, str | None] = {"value": None}


def set_mode(mode: str | None) -> str | None:
    """'numpy', 'numba' or 'auto' (None: the environment's again); returns the previous
    override, for restoring it."""
    if mode is not None and mode not in MODES:
        raise ValueError(f"kernel mode must be numpy, numba or auto, not {mode!r}")
    old, _override["value"] = _override["value"], mode
    return old


def mode() -> str:
    """The mode in force: set_mode's, else ACLNN_CONFORM_KERNEL's, else auto."""
    return _override["value"] or os.environ.get("ACLNN_CONFORM_KERNEL", "auto")


def numba_version() -> str | None:
    """numba's version, None where it is not installed."""
    try:
        import numba
    except ImportError:
        return None
    return str(numba.__version__)


def wanted(total: int) -> bool:
    """Whether an output of `total` elements takes the compiled path (evaluation or comparison)."""
    m = mode()
    if m == "numpy" or (m == "auto" and total < COMPILED_MIN):
        return False
    return numba_version() is not None
