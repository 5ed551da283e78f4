"""The `range_values` forms of a spec's `atk:` section and of the vendor's ATK test files, parsed
(the forms are listed in conformance/vendor/atk/values.py, which draws values from them)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

SPECIAL = {"nan": math.nan, "inf": math.inf, "+inf": math.inf, "-inf": -math.inf}
_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
INTERVAL = re.compile(rf"^\s*([\[(])\s*({_NUM})\s*,\s*({_NUM})\s*([\])])\s*$")
NULL_RANGE = (
    'range_values "null": what ATK draws for a null range is up to its data generator, which '
    "is not public (no executor in hicann/ops-nn, no code in hicann/ops-test-kit defines it); "
    "not imported rather than guessed"
)


class FormError(ValueError):
    """A `range_values` that is none of the known forms."""


@dataclass(frozen=True)
class Form:
    """One parsed `range_values`. kind: range | const | nd | mix. A range's ends are closed
    unless lo_open / hi_open (an interval string's `(` or `)`)."""

    kind: str
    lo: float = 0.0
    hi: float = 0.0
    lo_open: bool = False
    hi_open: bool = False
    value: Any = None  # const: a float, a bool or a string
    mean: tuple[float, float] = (0.0, 0.0)  # nd: the range the mean is drawn from (lo == hi: fixed)
    std: tuple[float, float] = (1.0, 1.0)
    forms: tuple[Form, ...] = field(default_factory=tuple)  # mix

    def describe(self) -> str:
        if self.kind == "range":
            return (
                f"{'(' if self.lo_open else '['}{show(self.lo)}, {show(self.hi)}"
                f"{')' if self.hi_open else ']'}"
            )
        if self.kind == "const":
            return show(self.value) if not isinstance(self.value, str) else repr(self.value)
        if self.kind == "nd":
            return f"normal(mean {_span(self.mean)}, std {_span(self.std)})"
        return "mix of " + ", ".join(f.describe() for f in self.forms)


def _span(p: tuple[float, float]) -> str:
    return show(p[0]) if p[0] == p[1] else f"[{show(p[0])}, {show(p[1])}]"


def show(v: Any) -> str:
    """A value as the reports write it (nan, inf, -inf, true, false, %g)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return f"{v:g}" if isinstance(v, float) else str(v)


def _finite_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _pair(v: Any, what: str) -> tuple[float, float]:
    if _finite_number(v):
        return float(v), float(v)
    if isinstance(v, list) and len(v) == 2 and all(_finite_number(x) for x in v):
        return float(min(v)), float(max(v))
    raise FormError(f"nd {what} must be a finite number or [lo, hi], not {v!r}")


def parse_form(v: Any) -> Form:
    """The Form of one `range_values` value; FormError when it is none of the known forms."""
    if isinstance(v, bool):
        return Form("const", value=v)
    if isinstance(v, int | float):
        return Form("const", value=float(v))
    if isinstance(v, str):
        m = INTERVAL.match(v)
        if m:
            lo, hi = float(m.group(2)), float(m.group(3))
            if lo > hi:
                raise FormError(f"interval {v!r}: its low end is above its high end")
            return Form("range", lo=lo, hi=hi, lo_open=m.group(1) == "(", hi_open=m.group(4) == ")")
        t = v.strip()
        if len(t) > 1 and t[0] in "[(" and t[-1] in "])":
            raise FormError(f"{v!r} is not an interval of two finite numbers, such as '[ -5, 0 )'")
        return Form("const", value=SPECIAL.get(v.strip().lower(), v))
    if isinstance(v, dict):
        if v.get("name") != "nd":
            raise FormError(f"unknown distribution {v.get('name')!r} (known: 'nd')")
        mean, std = _pair(v.get("mean", 0.0), "mean"), _pair(v.get("std", 1.0), "std")
        if std[0] < 0:
            raise FormError(f"nd std must not be negative: {v.get('std')!r}")
        return Form("nd", mean=mean, std=std)
    if isinstance(v, list):
        if len(v) == 2 and all(_finite_number(x) for x in v):
            return Form("range", lo=float(min(v)), hi=float(max(v)))
        if not v:
            raise FormError("an empty list")
        return Form("mix", forms=tuple(parse_form(x) for x in v))
    raise FormError(f"not a value form: {v!r}")


def leaves(form: Form) -> tuple[Form, ...]:
    """The forms a mix is made of (nested mixes flattened); the form itself otherwise."""
    if form.kind != "mix":
        return (form,)
    return tuple(x for f in form.forms for x in leaves(f))


def is_null(form: Form) -> bool:
    """A `"null"` range (alone or in a mix): see NULL_RANGE."""
    return any(
        f.kind == "const" and isinstance(f.value, str) and f.value.strip().lower() == "null"
        for f in leaves(form)
    )


def text_values(form: Form) -> list[str]:
    """The strings (other than nan/inf) in a form: none is allowed for a number."""
    return [f.value for f in leaves(form) if f.kind == "const" and isinstance(f.value, str)]
