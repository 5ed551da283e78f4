"""Tier 1, compiled: a chunk's values and flags from a numba kernel (kernel.py).

Three forms, one per kind of output: a DOUBLE output faithful by a double-double kernel
(ddgen.py: flags the elements it cannot certify); a FLOAT, FLOAT16 or BF16 output by the fused
float64 kernel (codegen.py: rounded values written straight into the output where it is
contiguous, flags near a midpoint, the flagged elements listed); any other output by the
float64 kernel with flags of plan.flags' kind. A kernel numba cannot type for these arguments
is given up (`chunk` returns None) and numpy (evaluate_numpy.py) evaluates from then on.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..conformance.acl.views import FlatView
from ..conformance.spec.model import OpSpec
from . import kernel
from .evaluate_numpy import Chunk
from .plan import Plan


class CompiledEvaluator:
    """`chunk(inputs) -> Chunk` by a compiled kernel; `make` returns None where none applies."""

    name = "compiled"

    def __init__(self, spec: OpSpec, env: dict[str, Any], plan: Plan, k: Any, dd: bool):
        self.spec, self.env, self.plan, self.k, self.dd = spec, env, plan, k, dd

    @classmethod
    def make(
        cls, spec: OpSpec, env: dict[str, Any], plan: Plan, total: int
    ) -> CompiledEvaluator | None:
        """The compiled evaluator of this call, or None (numpy wanted, or no kernel)."""
        if not kernel.wanted(total):
            return None
        if plan.faithful:
            k = None if plan.wide else kernel.get_dd(spec, env)
            return None if k is None else cls(spec, env, plan, k, True)
        if plan.complex_out:
            return None
        half = frozenset(n for n, d in plan.in_dtypes.items() if d == "FLOAT16")
        k = kernel.get(spec, env, approx=plan.fmt is not None, half=half)
        return None if k is None else cls(spec, env, plan, k, False)

    def writes(self, into: FlatView | None, flats: dict[str, FlatView]) -> tuple[bool, bool]:
        """(direct, narrow): whether the kernel writes into the output `into` itself, a FLOAT or
        DOUBLE one (direct) or, fused, the bits of a FLOAT16 or BF16 one (narrow)."""
        writable = (
            into is not None
            and into.contiguous
            and not self.plan.wide
            and not any(np.may_share_memory(into.storage, f.storage) for f in flats.values())
        )
        direct = writable and into.storage.dtype in (np.float32, np.float64)  # type: ignore[union-attr]
        narrow = (
            writable
            and not self.dd
            and self.plan.fused
            and into.storage.dtype.itemsize == 2  # type: ignore[union-attr]
            and into.storage.dtype.kind in "fV"  # type: ignore[union-attr]
        )
        return direct, narrow

    def chunk(
        self, raw: dict[str, np.ndarray], n: int, target: np.ndarray | None = None
    ) -> Chunk | None:
        """The chunk's Chunk; target: the output slice to write into (see `writes`)."""
        try:
            if self.dd:
                return self._faithful(raw, n, target)
            if self.plan.fused:
                return self._fused(raw, n, target)
            return self._plain(raw, n, target)
        except Exception as exc:  # numba cannot type these arguments: numpy from now on
            self.k.fail(exc)
            return None

    def _faithful(self, raw: dict[str, np.ndarray], n: int, target: Any) -> Chunk:
        buf = target if target is not None else np.empty(n, np.float64)
        flags = np.empty(n, np.bool_)
        self.k.run_dd(raw, self.env, buf, flags)
        return Chunk(buf, flags, target=target, buf=buf, faithful=True)

    def _fused(self, raw: dict[str, np.ndarray], n: int, target: Any) -> Chunk:
        buf = np.empty(n, np.float64) if target is None else target
        buf = buf.view(np.uint16) if buf.dtype.itemsize == 2 else buf
        flags = np.empty(n, np.uint8)
        listed = self.k.run_fused(raw, self.env, buf, flags, self.plan.fmt)
        values = buf if target is None else None
        return Chunk(values, flags, listed, target, buf)

    def _plain(self, raw: dict[str, np.ndarray], n: int, target: Any) -> Chunk:
        y, flags = np.empty(n, np.float64), np.empty(n, np.uint8)
        self.k.run(raw, self.env, y, flags, self.plan.flags, self.plan.fmt, target)
        return Chunk(y, flags, target=target, buf=y)
