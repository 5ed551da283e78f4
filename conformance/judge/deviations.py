"""Spec deviations at judging time: which failure a deviation excuses, and how that is checked.

A deviation that names the backend under test gates its verdict, but only for a failure of the
kind it records (`differs`), on a case that exercises its clause and fits its narrowing:

- status: a status mismatch where the spec's `clause` decided the expected status (for a call
  the spec accepts: a check the call passed), and the library's status is `actual_status` when
  one is stated;
- values: an output mismatch (statuses equal) that passes the op's tolerance against the oracle
  recomputed with the deviation's `formula` swapped in (a derived spec), or whose every element
  lies within the deviation's `bound` of the documented value, NaN/inf placement equal;
- nonfinite: an output mismatch confined to elements where the expected or the actual value is
  NaN or infinite.

A crash, a timeout or an error is never a deviation, and nothing here looks at case ids: a
generated, an imported and a hand-written case with the same values are judged alike. The
clause a case exercises is computed from its call (the check that decided its status, the
formula branches its values take); only special points and properties come from the case.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace

import numpy as np

from ..acl import dtypes as dt
from ..acl.call import Call, Outcome, ScalarArg, TensorArg
from ..spec.checks.base import attribute_env
from ..spec.interpret import branch_hits, lets_used, validate
from ..spec.model import Deviation, OpSpec
from .compare import ulp_distance

_DERIVED: dict[tuple[int, tuple[str, ...]], tuple[OpSpec, OpSpec]] = {}


def gating(spec: OpSpec, backend: str) -> list[Deviation]:
    """The deviations of `spec` that gate `backend`'s verdicts."""
    return [d for d in spec.deviations if backend in d.backends and d.differs and d.clause]


def fits(spec: OpSpec, dev: Deviation, call: Call) -> bool:
    """Whether `call` is in the deviation's narrowing (products, dtypes, when)."""
    if dev.products and call.product not in dev.products:
        return False
    if dev.dtypes is not None:
        dtypes = {n: a.dtype for n, a in call.args.items() if isinstance(a, TensorArg | ScalarArg)}
        if not dev.dtypes.matches(dtypes, [p.name for p in spec.outputs]):
            return False
    if dev.when is not None:
        try:
            return bool(np.all(dev.when.evaluate(attribute_env(spec, call))))
        except Exception:  # a null scalar, say: the condition cannot hold
            return False
    return True


def _status_is(got: Outcome, status: int, mode: str) -> bool:
    """Whether the backend's answer is `status`; a backend that only accepts or rejects
    (mode accept_reject) matches any non-zero status by rejecting."""
    if status == 0:
        return got.status == 0 and not got.raised
    if mode == "exact" and not got.raised:
        return got.status == status
    return got.raised or got.status != 0


def status_deviation(
    spec: OpSpec, devs: Iterable[Deviation], call: Call, want: Outcome, got: Outcome, mode: str
) -> Deviation | None:
    """The status deviation that excuses this status mismatch, if any."""
    reached: set[str] | None = None
    for d in devs:
        if d.differs != "status" or not fits(spec, d, call):
            continue
        if want.status != 0:
            if want.clause != spec.clause(d.clause or ""):
                continue
        else:
            if reached is None:  # the checks a call the spec accepts went through
                v = validate(spec, call)
                ids = [c.id for c in spec.checks]
                stop = ids.index(v.check.id) + 1 if v.empty and v.check else len(ids)
                reached = set(ids[:stop])
            if d.clause not in reached:
                continue
        if d.actual_status is not None and not _status_is(got, d.actual_status, mode):
            continue
        return d
    return None


@dataclass
class Exercised:
    """The clauses a valid case exercises, computed from its call once and on demand."""

    spec: OpSpec
    call: Call
    clauses: tuple[str, ...]
    _formula: set[str] | None = field(default=None, repr=False)

    def __contains__(self, clause: str) -> bool:
        lets = {x.id for f in self.spec.formulas for x in f.lets}
        branches = {b.id for f in self.spec.formulas for b in f.branches}
        if clause in lets or clause in branches:
            if self._formula is None:
                hits = branch_hits(self.spec, self.call)
                self._formula = set(hits) | set(lets_used(self.spec, hits))
            return clause in self._formula
        return clause in self.clauses or self.spec.clause(clause) in self.clauses


def value_deviations(
    spec: OpSpec, devs: Iterable[Deviation], call: Call, clauses: Iterable[str]
) -> list[Deviation]:
    """The values and nonfinite deviations this case exercises and fits, in spec order."""
    seen = Exercised(spec, call, tuple(clauses))
    return [
        d
        for d in devs
        if d.differs in ("values", "nonfinite") and fits(spec, d, call) and d.clause in seen
    ]


def derived(spec: OpSpec, devs: list[Deviation]) -> OpSpec:
    """`spec` with each deviation's formula swapped in for its branch or let (cached)."""
    key = (id(spec), tuple(d.id for d in devs))
    hit = _DERIVED.get(key)
    if hit is not None and hit[0] is spec:
        return hit[1]
    lets, branches = list(spec.formula.lets), list(spec.formula.branches)
    for d in devs:
        f = d.formula
        if f is None:
            continue
        lets = [replace(x, value=f.value or x.value) if x.id == d.clause else x for x in lets]
        branches = [
            replace(b, when=f.when or b.when, value=f.value or b.value) if b.id == d.clause else b
            for b in branches
        ]
    formula = replace(spec.formula, lets=tuple(lets), branches=tuple(branches))
    tag = "+".join(d.id for d in devs)
    out = replace(
        spec,
        formula=formula,
        formulas=(formula, *spec.formulas[1:]),
        sha256=f"{spec.sha256}+{tag}",
        variants=(),
    )
    _DERIVED[key] = (spec, out)
    return out


def formula_trials(devs: list[Deviation]) -> Iterator[list[Deviation]]:
    """The sets of formula deviations to try: each alone, then all of them together (a case
    may take two branches the library computes its own way)."""
    with_formula = [d for d in devs if d.formula is not None]
    for d in with_formula:
        yield [d]
    if len(with_formula) > 1:
        yield with_formula


@dataclass
class BoundCheck:
    """Streams (golden, actual) chunks: every finite element within `bound` of the documented
    value (any of rel, ulp in the output dtype, abs), NaN and +-inf where the golden has them."""

    dtype: str
    bound: dict[str, float]
    violations: int = 0
    worst: str = ""

    def add(self, golden: np.ndarray, actual: np.ndarray) -> None:
        info = dt.get(self.dtype)
        part = info
        if info.category == "complex":  # compared as real and imaginary parts
            part = dt.get("DOUBLE" if info.name == "COMPLEX128" else "FLOAT")
        g, a = np.asarray(golden).reshape(-1), np.asarray(actual).reshape(-1)
        if info.category == "complex":
            g = np.stack((g.real, g.imag), axis=-1).reshape(-1).astype(np.float64)
            a = np.stack((a.real, a.imag), axis=-1).reshape(-1)
        floating = part.is_float and not part.opaque
        with np.errstate(all="ignore"):
            g64 = np.asarray(g, dtype=np.float64)
            a64 = np.asarray(a, dtype=np.float64)
            g_store = dt.round_to(g64, part) if floating else g64
            gs64 = np.asarray(g_store, dtype=np.float64)
            bad = np.isnan(g64) != np.isnan(a64)
            special = ~np.isnan(g64) & ~np.isnan(a64) & (np.isinf(gs64) | np.isinf(a64))
            bad |= special & (gs64 != a64)
            finite = np.isfinite(gs64) & np.isfinite(a64)
            err = np.abs(a64 - g64)
            ok = np.zeros(g64.shape, bool)
            if "abs" in self.bound:
                ok |= err <= self.bound["abs"]
            if "rel" in self.bound:
                ok |= err <= self.bound["rel"] * np.abs(g64)
            if "ulp" in self.bound and floating:
                a_store = np.asarray(a, dtype=part.np) if a.dtype != part.np else a
                steps = np.full(g64.shape, np.inf)
                steps[finite] = ulp_distance(np.asarray(g_store)[finite], a_store[finite])
                ok |= steps <= self.bound["ulp"]
            bad |= finite & ~ok
        n = int(np.count_nonzero(bad))
        if n and not self.worst:
            i = int(np.flatnonzero(bad)[0])
            self.worst = f"expected {g64[i]!r}, got {a64[i]!r}"
        self.violations += n


def bound_text(bound: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:g}" for k, v in bound.items())


def mask_nonfinite(
    golden: np.ndarray, actual: np.ndarray, dtype: str
) -> tuple[np.ndarray, np.ndarray]:
    """Copies of a (golden, actual) chunk with both set to 0 wherever either is NaN or
    infinite (the golden as rounded to `dtype`): what is left compares the finite elements."""
    info = dt.get(dtype)
    g, a = np.array(golden), np.array(actual)
    with np.errstate(all="ignore"):
        if info.category == "complex":
            gm = ~np.isfinite(np.asarray(g, np.complex128))
        elif info.is_float and not info.opaque:
            gm = ~np.isfinite(np.asarray(dt.round_to(np.asarray(g, np.float64), info), np.float64))
        else:
            gm = ~np.isfinite(np.asarray(g, np.float64))
        am = ~np.isfinite(
            np.asarray(a, np.complex128 if info.category == "complex" else np.float64)
        )
    m = gm | am
    g[m] = 0
    a[m] = 0
    return g, a
