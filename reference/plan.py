"""Which tiers a call's chunks take, decided once per call (engine.chunks reads it).

Tier 1 evaluates a chunk: the compiled kernel (evaluate_compiled.py) where it is wanted and
can express the formula, else numpy (evaluate_numpy.py); both return the chunk's values and
flags. Tiers 2-4 settle the flagged elements (settle.py): the double-double pair, exactness,
then exact rationals and mpmath. A DOUBLE output is faithful (the double-double kernel, long
double, or float64 with an error bound) unless --exact asks for it correctly rounded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..conformance.acl import dtypes as dt
from ..conformance.acl.call import Call, CallError, ScalarArg
from ..conformance.spec.expr.walk import tensors_read
from ..conformance.spec.model import OpSpec
from . import precise, roundings


@dataclass(frozen=True)
class Plan:
    """The route of every chunk of one call: what the output needs and what the inputs allow."""

    out_dtype: dt.DType
    in_dtypes: dict[str, str]
    complex_out: bool
    once: bool  # DOUBLE from a formula float64 rounds once: correctly rounded as it stands
    refine_all: bool  # every finite element to mpmath (--exact DOUBLE, a scalar past 2^53)
    faithful: bool  # DOUBLE within 1 ulp: double-double, long double or an error bound
    fmt: dt.FloatFormat | None  # FLOAT, FLOAT16, BF16: elements near a midpoint are settled
    wide: bool  # a 64-bit integer input: elements past 2^53 are refined from exact values

    @property
    def flags(self) -> int:
        """What tier 1 flags: 0 nothing, 1 elements near a midpoint of fmt, 2 every finite one."""
        if self.refine_all and precise.is_float_output(self.out_dtype.name):
            return 2
        return 1 if self.fmt else 0

    @property
    def fused(self) -> bool:
        """One compiled pass writes the rounded values and the flags (no float64 copy kept)."""
        return self.flags == 1 and not self.wide


def plan(spec: OpSpec, call: Call, exact: bool) -> Plan:
    """The route of `call`'s chunks; raises CallError for a complex input to a real output."""
    out_dtype = dt.get(call.tensor(spec.formula.output).dtype)
    in_dtypes = {n: call.tensor(n).dtype for n in tensors_read(spec)}
    scalars: dict[str, Any] = {
        p.name: call.args[p.name].typed()
        for p in spec.attributes
        if isinstance(call.args.get(p.name), ScalarArg)
    }
    complex_out = out_dtype.category == "complex"
    if not complex_out and any(dt.get(d).category == "complex" for d in in_dtypes.values()):
        raise CallError(
            f"{spec.name}: a complex input with the real output dtype {out_dtype.name} "
            "is not modelled"
        )
    # a formula float64 rounds once (roundings.py) is correctly rounded as it stands: its
    # DOUBLE output needs neither long double nor, with --exact, mpmath
    once = out_dtype.name == "DOUBLE" and roundings.correctly_rounded(spec)
    refine_all = precise.needs_all(scalars, out_dtype.name, exact and not once)
    return Plan(
        out_dtype=out_dtype,
        in_dtypes=in_dtypes,
        complex_out=complex_out,
        once=once,
        refine_all=refine_all,
        faithful=out_dtype.name == "DOUBLE" and not refine_all and not once,
        fmt=precise.narrow_format(out_dtype.name),
        wide=any(
            dt.get(d).category == "int" and dt.get(d).np.itemsize == 8 for d in in_dtypes.values()
        ),
    )
