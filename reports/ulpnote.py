"""What a ULP figure means, and when it means nothing.

A ULP distance counts the representable values of the OUTPUT dtype between the expected value
(rounded to that dtype) and the actual one, so one ulp is as small as the expected value: next to
a tiny or zero expected value an error far inside the tolerance is millions or trillions of ulp.
The comparison does not use ULPs there: an element whose |expected| is below the policy's
`small_threshold` is judged by its absolute error (at most `small_atol`; conformance/judge/compare.py).
A max ULP from such an element says nothing about accuracy, and the reports say so next to it.

Which policy judged an output: the `policy` the record stores for it where it does, else the
defaults of the record's `tolerance_dtype` (or the output's dtype) with the op's spec overrides.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from typing import Any

from ..conformance.judge.result import Result
from .run import fmt, num, short

# What a ULP figure is, for legends and column tooltips.
MEANING = (
    "ULP distance: the number of representable values of the output dtype between the "
    "expected and the actual value, so it is measured at the expected value (≤ ½ ulp: "
    "correctly rounded). Next to a tiny or zero expected value it is huge and meaningless; "
    "there the comparison judges the absolute error instead (the small-value rule)."
)
LARGE = 1024.0  # a max ULP above this in a case with small expected values is probably one of them


def pow2(x: float) -> str:
    """`2^-14` for an exact power of two, else the number."""
    if x > 0 and math.isfinite(x):
        m, e = math.frexp(x)
        if m == 0.5:
            return f"2^{e - 1}"
    return fmt(x)


def fmt_ulp(x: Any) -> str:
    """A ULP figure: up to 3 significant digits, large ones as `1.27e13`."""
    v = num(x)
    if v is None or math.isnan(v) or math.isinf(v) or abs(v) < 1e6:
        return fmt(x)
    mant, exp = f"{v:.3g}".split("e")
    return f"{mant}e{int(exp)}"


@dataclass(frozen=True)
class SmallValues:
    """An output whose max ULP lies (or probably lies) in the small-value domain."""

    output: str
    dtype: str  # the dtype whose policy judged the output (short name)
    threshold: float
    atol: float
    max_ulp: float
    certain: bool  # the max-ULP element is among the recorded worst elements
    expected: float | None
    abs_err: float | None
    count: int  # compared elements in the small-value domain
    passed: bool

    def short(self) -> str:
        """For captions and tooltips."""
        where = "at an expected value" if self.certain else "probably at expected values"
        text = (
            f"{where} below the small-value threshold {pow2(self.threshold)} ({self.dtype} "
            f"policy), judged by absolute error instead"
        )
        if self.certain and self.abs_err is not None and self.passed:
            text += f": {fmt(self.abs_err)} ≤ {pow2(self.atol)}, passed"
        return text

    def long(self) -> str:
        """For the drill-down and the JUnit text."""
        u, thr, atol = fmt_ulp(self.max_ulp), pow2(self.threshold), pow2(self.atol)
        policy = f"the small-value threshold {thr} of the {self.dtype} policy"
        if self.certain:
            text = (
                f"max {u} ulp is at the expected value {fmt(self.expected, 6)}, below "
                f"{policy}: there the comparison judges the absolute error, not ULPs"
            )
            if self.abs_err is not None:
                ok = self.abs_err <= self.atol
                text += f" ({fmt(self.abs_err)} {'≤' if ok else '>'} {atol})"
            else:
                text += f" (at most {atol})"
            if self.passed:
                text += ", and the output passed by this small-value rule"
        else:
            n = self.count
            text = (
                f"max {u} ulp: {n} element{'s' if n != 1 else ''} {'have' if n != 1 else 'has'}"
                f" expected values below {policy}, judged by their absolute error (at most "
                f"{atol}), not ULPs; a ULP figure this large is almost surely one of them"
            )
        return (
            text + ". ULPs are counted in the output dtype at the expected value, so next to "
            "a tiny or zero value they are huge and say nothing about accuracy."
        )


@cache
def _policy(dtype: str) -> tuple[float, float] | None:
    """The default policy's small-value domain of `dtype` (a record of an older version, which
    did not record the policy that judged it; the op's own tolerances are not known here)."""
    from ..conformance.spec.tolerances import policy_for

    try:
        p = policy_for(dtype, None)
    except (ValueError, KeyError):
        return None
    return None if p.exact else (p.small_threshold, p.small_atol)


def policy_of(rec: Result, output: str) -> tuple[str, float, float] | None:
    """(dtype, small_threshold, small_atol) of the policy that judged `output`; None if unknown."""
    comp = (rec.comparisons or {}).get(output) or {}
    stored = comp.get("policy")
    dtype = str(rec.tolerance_dtype or (rec.dtypes or {}).get(output) or "")
    if isinstance(stored, dict):
        thr, atol = num(stored.get("small_threshold")), num(stored.get("small_atol"))
        if thr is not None and atol is not None:
            return short(str(stored.get("dtype") or dtype or "?")), thr, atol
    if not dtype:
        return None
    pol = _policy(dtype)
    return None if pol is None else (short(dtype), *pol)


def small_value_notes(rec: Result) -> list[SmallValues]:
    """The outputs of a case whose max ULP comes from the small-value domain."""
    out = []
    for name, comp in (rec.comparisons or {}).items():
        stats = comp.get("stats") or {}
        u = num(stats.get("max_ulp"))
        if u is None or not (1.0 < u < math.inf):
            continue
        count = int(num(stats.get("small_value_count")) or 0)
        worst = next((w for w in comp.get("worst") or () if num(w.get("ulp")) == u), None)
        if worst is None and (count == 0 or u <= LARGE):
            continue
        pol = policy_of(rec, name)
        if pol is None:
            continue
        dtype, thr, atol = pol
        expected = num(worst.get("expected")) if worst else None
        if worst is not None and not (expected is not None and abs(expected) < thr):
            continue  # the max ULP is at a normal value: it means what it says
        passed = comp.get("passed")
        if passed is None:
            passed = rec.verdict == "pass"
        out.append(
            SmallValues(
                name,
                dtype,
                thr,
                atol,
                u,
                worst is not None,
                expected,
                num(worst.get("abs_err")) if worst else None,
                count,
                bool(passed),
            )
        )
    return out
