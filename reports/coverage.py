"""Clause coverage: for every clause of every spec, how many cases the suite generates for it, how
many ran, passed and failed. A clause no case exercises is flagged: the spec says something the
suite never checks.

The clauses themselves (the universe, with what the suite plans for each) are recorded in the
run's meta header at run time (`meta["clauses"]`, conformance.run.session.clause_universe): a report
never loads the specs, so it says the same whichever spec folders exist when it is rendered.
"Generated" counts the static clauses of the suite's plans together with the clauses that only
building a case reveals (formula lets and branches hit by the drawn values), which are read back
from the records. So a let or branch of an op these results do not hold is "not run" (unknown),
while one that none of the op's cases in the results hit has "no case". Results whose meta has
no universe (older runs) get a row for each clause their records name.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..conformance.judge.result import Result, as_result
from .run import BROKEN, or_

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
    planned: bool = True  # the run recorded what the suite plans for this op

    @property
    def dynamic(self) -> bool:
        """Lets and branches: only building a case (drawing its values) shows it hits them."""
        return self.kind in ("let", "branch")

    @property
    def qualified(self) -> str:
        return f"{self.op}/{self.id}"

    @property
    def status(self) -> str:
        if self.generated == 0 and self.planned:
            return NOT_RUN if self.dynamic and not self.op_ran else NO_CASE
        if self.failed or self.xpass:
            return FAILING
        if self.run:
            return COVERED
        return SKIPPED if self.skipped else NOT_RUN

    def to_dict(self) -> dict[str, Any]:
        return {
            "clause": self.qualified,
            "op": self.op,
            "id": self.id,
            "kind": self.kind,
            "text": self.text,
            "source": self.source,
            "generated": self.generated,
            "run": self.run,
            "passed": self.passed,
            "failed": self.failed,
            "xfail": self.xfail,
            "deviation": self.deviation,
            "xpass": self.xpass,
            "skipped": self.skipped,
            "status": self.status,
        }


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
        out = {
            "ops": len(self.ops),
            "ops_run": sum(1 for o in self.ops if o.cases),
            "clauses": len(rows),
        }
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
            ],
            "unknown_clauses": dict(sorted(self.unknown.items())),
        }


DYNAMIC = ("let", "branch")  # clause kinds that only the drawn values of a case hit


class CoverageTally:
    """What clause coverage needs from the records, gathered one record at a time (`add`) in
    memory bounded by the specs' clauses: verdicts per clause, cases and spec hashes per op,
    and per let or branch the cases that hit it. `universe`: the run's meta["clauses"]."""

    def __init__(self, universe: dict[str, Any] | None = None):
        self.universe = universe if isinstance(universe, dict) else None
        self.kinds = {
            f"{o['op']}/{c['id']}": c.get("kind", "")
            for o in self._ops()
            for c in o.get("clauses") or ()
        }
        self.extra: Counter = Counter()  # let/branch clause -> cases that hit it
        self.tallies: dict[str, Counter] = {}
        self.per_op: Counter = Counter()
        self.hashes: dict[str, set[str]] = {}
        self.ops_seen: dict[str, str] = {}  # op -> aclnn op, from the records

    def _ops(self) -> list[dict[str, Any]]:
        return list((self.universe or {}).get("ops") or [])

    def add(self, rec: Result) -> None:
        op = str(or_(rec.op, ""))
        self.per_op[op] += 1
        self.ops_seen.setdefault(op, str(rec.aclnn_op or ""))
        if rec.spec_sha256:
            self.hashes.setdefault(op, set()).add(str(rec.spec_sha256))
        v = rec.verdict
        for q in rec.clauses or []:
            q = str(q)
            self.tallies.setdefault(q, Counter())[v] += 1
            if self.kinds.get(q) in DYNAMIC:
                self.extra[q] += 1

    def _row(self, op: str, c: dict[str, Any], planned: bool, ran: bool) -> ClauseRow:
        q = f"{op}/{c['id']}"
        t = self.tallies.get(q, Counter())
        generated = int(c.get("generated") or 0) + self.extra[q]
        return ClauseRow(
            op,
            str(c["id"]),
            str(c.get("kind", "")),
            str(c.get("text", "")),
            str(c.get("source", "")),
            generated=generated,
            run=sum(t.values()) - t["skip"],
            passed=t["pass"],
            failed=sum(t[v] for v in BROKEN),
            xfail=t["xfail"],
            deviation=t["deviation"],
            xpass=t["xpass"],
            skipped=t["skip"],
            op_ran=ran,
            planned=planned,
        )

    def result(self) -> Coverage:
        cov = Coverage()
        known: set[str] = set()
        ops = self._ops()
        if self.universe is None:  # an older run: the clauses its records name
            named: dict[str, list[str]] = {}
            for q in self.tallies:
                op, _, cid = q.rpartition("/")
                named.setdefault(op, []).append(cid)
            ops = [
                {
                    "op": op,
                    "aclnn_op": self.ops_seen.get(op, ""),
                    "planned": False,
                    "clauses": [{"id": c} for c in sorted(ids)],
                }
                for op, ids in named.items()
                if op
            ]
        for o in sorted(ops, key=lambda o: str(o["op"])):
            op = str(o["op"])
            ran, planned = self.per_op[op] > 0, bool(o.get("planned", True))
            rows = [self._row(op, c, planned, ran) for c in o.get("clauses") or ()]
            known.update(r.qualified for r in rows)
            changed = bool(o.get("sha256")) and bool(self.hashes.get(op, set()) - {o["sha256"]})
            cov.ops.append(
                OpCoverage(op, str(o.get("aclnn_op") or ""), rows, self.per_op[op], changed)
            )
        for q, t in self.tallies.items():
            if q not in known:
                cov.unknown[q] = sum(t.values())
        return cov


def clause_coverage(records: Iterable[Any], universe: dict[str, Any] | None = None) -> Coverage:
    """Coverage of every clause of `universe` (a run's meta["clauses"]; None: the clauses the
    records name). `records`: each case once (a list, or any iterable)."""
    tally = CoverageTally(universe)
    by_id: dict[str, Result] = {}
    # a list may hold an id twice: its last record counts, as in a file
    for rec in map(as_result, records):
        by_id[str(rec.id)] = rec
    for rec in by_id.values():
        tally.add(rec)
    return tally.result()
