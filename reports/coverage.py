"""Clause coverage: for every clause of every spec, how many cases the suite generates for it, how
many ran, passed and failed. A clause no case exercises is flagged: the spec says something the
suite never checks.

"Generated" counts the static clauses of the suite's plans (`plan_suite`) together with the
clauses that only building a case reveals (formula lets and branches hit by the drawn values),
which are read back from the records. So a let or branch of an op these results do not hold is
"not run" (unknown), while one that none of the op's cases in the results hit has "no case".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from ..conformance.cases.generate import plan_suite
from .run import BROKEN, clip

NO_CASE = "no-case"  # the suite generates no case for the clause
NOT_RUN = "not-run"  # cases exist but none is in these results
SKIPPED = "skipped"  # every case that exercises it was skipped: untested
FAILING = "failing"
COVERED = "covered"
FLAGGED = (NO_CASE, SKIPPED)


@dataclass
class ClauseRow:
    op: str
    id: str
    kind: str
    text: str
    source: str
    generated: int = 0
    run: int = 0  # judged: every verdict but skip
    passed: int = 0
    failed: int = 0  # fail, error, crash, timeout
    xfail: int = 0
    deviation: int = 0  # failed as a documented deviation of the library: not a failure
    xpass: int = 0
    skipped: int = 0
    op_ran: bool = True  # the results hold cases of this op

    @property
    def dynamic(self) -> bool:
        """Lets and branches: only building a case (drawing its values) shows it hits them."""
        return self.kind in ("let", "branch")

    @property
    def qualified(self) -> str:
        return f"{self.op}/{self.id}"

    @property
    def status(self) -> str:
        if self.generated == 0:
            return NOT_RUN if self.dynamic and not self.op_ran else NO_CASE
        if self.failed or self.xpass:
            return FAILING
        if self.run:
            return COVERED
        return SKIPPED if self.skipped else NOT_RUN

    def to_dict(self) -> dict[str, Any]:
        return {"clause": self.qualified, "op": self.op, "id": self.id, "kind": self.kind,
                "text": self.text, "source": self.source, "generated": self.generated,
                "run": self.run, "passed": self.passed, "failed": self.failed,
                "xfail": self.xfail, "deviation": self.deviation, "xpass": self.xpass,
                "skipped": self.skipped,
                "status": self.status}  # fmt: skip


@dataclass
class OpCoverage:
    op: str
    aclnn_op: str
    rows: list[ClauseRow]
    cases: int = 0  # records of this op
    spec_changed: bool = False  # records were produced from another version of the spec

    @property
    def flagged(self) -> list[ClauseRow]:
        return [r for r in self.rows if r.status in FLAGGED]

    def count(self, status: str) -> int:
        return sum(1 for r in self.rows if r.status == status)


@dataclass
class Coverage:
    ops: list[OpCoverage] = field(default_factory=list)
    unknown: Counter = field(default_factory=Counter)  # clauses in records the specs lack

    @property
    def rows(self) -> list[ClauseRow]:
        return [r for o in self.ops for r in o.rows]

    def totals(self) -> dict[str, int]:
        rows = [r for o in self.ops if o.cases for r in o.rows]
        out = {"ops": len(self.ops), "ops_run": sum(1 for o in self.ops if o.cases),
               "clauses": len(rows)}  # fmt: skip
        for s in (COVERED, FAILING, SKIPPED, NOT_RUN, NO_CASE):
            out[s.replace("-", "_")] = sum(1 for r in rows if r.status == s)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "totals": self.totals(),
            "ops": [
                {
                    "op": o.op,
                    "aclnn_op": o.aclnn_op,
                    "cases": o.cases,
                    "spec_changed": o.spec_changed,
                    "clauses": [r.to_dict() for r in o.rows],
                }
                for o in self.ops
            ],  # fmt: skip
            "unknown_clauses": dict(sorted(self.unknown.items())),
        }


def describe(spec) -> list[tuple[str, str, str, str]]:
    """(clause id, kind, text, source) for each clause of a spec, in spec order."""
    out = []
    for c in spec.checks:
        text = c.summary or (f"{c.kind}({', '.join(c.params)})" if c.params else c.kind)
        if not c.summary and c.violated_if is not None:
            text = f"violated if {c.violated_if.source}"
        elif not c.summary and c.dtype_set:
            text += f" in {c.dtype_set}"
        out.append((c.id, c.kind, f"{text} → {c.status}" if c.status else text, c.source))
    for let in spec.formula.lets:
        out.append((let.id, "let", let.summary or f"{let.name} = {let.value.source}", let.source))
    for b in spec.formula.branches:
        when = f"when {b.when.source}" if b.when is not None else "otherwise"
        out.append((b.id, "branch", b.summary or when, b.source))
    for p in spec.special_points:
        out.append((p.id, "special point", p.summary or f"{p.param} = {p.value.source}", p.source))
    for p in spec.properties:
        out.append((p.id, p.kind, p.summary or p.kind, p.source))
    return [(i, k, clip(t, 160), clip(s, 160)) for i, k, t, s in out]


@cache
def _suite_plans(registry) -> list:
    return plan_suite(registry)


class CoverageTally:
    """What clause coverage needs from the records, gathered one record at a time (`add`) in
    memory bounded by the specs' clauses: verdicts per clause, cases and spec hashes per op, and
    per clause the cases no static plan of the suite names (lets and branches that only the
    drawn values hit) -- counted, given each case id once (a Stream's fold ensures that)."""

    def __init__(self, registry=None, plans=None):
        if registry is None:
            from ..conformance.spec.registry import default_registry

            registry = default_registry()
        self.registry = registry
        self.planned: dict[str, set[str]] = {}  # clause -> plan ids (the suite: bounded)
        for spec, plan in _suite_plans(registry) if plans is None else plans:
            for c in plan.clauses:
                self.planned.setdefault(spec.clause(c), set()).add(plan.id)
        self.extra: Counter = Counter()  # clause -> cases outside its plans
        self.tallies: dict[str, Counter] = {}
        self.per_op: Counter = Counter()
        self.hashes: dict[str, set[str]] = {}

    def add(self, rec: dict[str, Any]) -> None:
        op = str(rec.get("op", ""))
        self.per_op[op] += 1
        if rec.get("spec_sha256"):
            self.hashes.setdefault(op, set()).add(str(rec["spec_sha256"]))
        v = rec.get("verdict", "error")
        cid = str(rec.get("id"))
        for q in rec.get("clauses") or []:
            q = str(q)
            self.tallies.setdefault(q, Counter())[v] += 1
            if cid not in self.planned.get(q, ()):
                self.extra[q] += 1

    def result(self) -> Coverage:
        cov = Coverage()
        known: set[str] = set()
        for spec in sorted(self.registry, key=lambda s: s.name):
            rows = []
            for cid, kind, text, source in describe(spec):
                q = spec.clause(cid)
                known.add(q)
                t = self.tallies.get(q, Counter())
                generated = len(self.planned.get(q, ())) + self.extra[q]
                rows.append(ClauseRow(
                    spec.name, cid, kind, text, source, generated=generated,
                    run=sum(t.values()) - t["skip"], passed=t["pass"],
                    failed=sum(t[v] for v in BROKEN), xfail=t["xfail"],
                    deviation=t["deviation"], xpass=t["xpass"], skipped=t["skip"],
                    op_ran=self.per_op[spec.name] > 0))  # fmt: skip
            changed = bool(self.hashes.get(spec.name, set()) - {spec.sha256})
            cov.ops.append(OpCoverage(spec.name, spec.op, rows, self.per_op[spec.name], changed))
        for q, t in self.tallies.items():
            if q not in known:
                cov.unknown[q] = sum(t.values())
        return cov


def clause_coverage(records: Iterable[dict[str, Any]], registry=None, plans=None) -> Coverage:
    """Coverage of every clause of every spec in `registry` (default: the installed specs).

    `plans`: the (spec, plan) pairs of the suite; default plan_suite(registry). `records`:
    each case once (a list, or any iterable)."""
    tally = CoverageTally(registry, plans)
    by_id: dict[str, dict[str, Any]] = {}
    for rec in records:  # a list may hold an id twice: its last record counts, as in a file
        by_id[str(rec.get("id"))] = rec
    for rec in by_id.values():
        tally.add(rec)
    return tally.result()
