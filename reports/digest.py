"""Everything the reports need from a run, gathered in one pass over its records.

A results file of a million cases is never held in memory: `Digest.add` takes one record at a
time and keeps counts (verdicts, the op x product x dtype matrix, failing clauses, deviations,
clause coverage, the ULP histograms, the header facts), the records of the failures (every one:
a report is complete for failures; each kept as its compact JSON text, a few times smaller than
the parsed record, and parsed again one at a time to be rendered) and, for the HTML case list, a
bounded table (every case that did not pass; at most `keep` passing ones, see casetable). Renderers take a Digest, or a list of
records, or a conformance.judge.results.Stream (read with `fold`, so each case counts once).
"""

from __future__ import annotations

import bisect
import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ..conformance.judge.result import Result, as_result
from ..conformance.judge.results import safe
from .casetable import PASS_ROWS, CaseTable
from .coverage import Coverage, CoverageTally
from .plots import Panel, PanelTally
from .run import FAILING, InfoTally, column, deviation_id, dtype_tag, or_, sort_key

DEVIATION_IDS = 50  # case ids listed per deviation (the first in id order)


class Digest:
    """The reports' view of a run (see the module docstring).

    `cases`: build the HTML case table; `coverage`: tally clause coverage of `universe` (the
    run's meta["clauses"]: the clauses the run recorded; see reports.coverage); `clean`: pass every record through conformance.judge.results.safe (records from
    memory; a Stream(clean=True) has done it already); `sinks`: more accumulators fed every
    record (the JUnit writer's spill)."""

    def __init__(
        self,
        universe: Any = None,
        *,
        cases: bool = True,
        coverage: bool = True,
        keep: int = PASS_ROWS,
        clean: bool = False,
        sinks: Iterable[Any] = (),
    ):
        self.universe = universe
        self.clean = clean
        self.total = 0
        self.verdicts: Counter = Counter()
        self.tag_grid: dict[tuple[str, str, str, str], Counter] = {}
        self.failing_clauses: Counter = Counter()
        self._failures: list[tuple[tuple[int, str], str]] = []  # (sort key, compact JSON)
        self.deviations: dict[str, dict[str, Any]] = {}
        self.info = InfoTally()
        self.panels = PanelTally()
        self.cases = CaseTable(keep) if cases else None
        self._coverage = CoverageTally(universe) if coverage else None
        self._coverage_result: Coverage | None = None
        self.sinks = list(sinks)
        self._sorted = True

    def add(self, rec: Result | dict[str, Any]) -> None:
        """Count one record (a Result, or its JSON object: records from memory)."""
        rec = as_result(rec)
        if self.clean:
            rec = Result.from_json(safe(rec.to_dict()))
        v = rec.verdict
        self.total += 1
        self.verdicts[v] += 1
        key = (str(or_(rec.op, "?")), str(or_(rec.product, "?")), dtype_tag(rec), column(rec))
        self.tag_grid.setdefault(key, Counter())[v] += 1
        if v in FAILING:
            self._failures.append((sort_key(rec), json.dumps(rec.to_dict(), separators=(",", ":"))))
            self._sorted = False
            for c in rec.clauses or ["(no clause)"]:
                self.failing_clauses[str(c)] += 1
        elif v == "deviation":
            self._deviation(rec)
        self.info.add(rec)
        self.panels.add(rec)
        if self.cases is not None:
            self.cases.add(rec)
        if self._coverage is not None:
            self._coverage.add(rec)
        for sink in self.sinks:
            sink.add(rec)

    def _deviation(self, rec: Result) -> None:
        """Count a deviation case; keep the first DEVIATION_IDS ids in id order and the reason
        of the first of them."""
        cid = str(rec.id)
        why = str((rec.expectation or {}).get("reason") or "")
        d = self.deviations.get(deviation_id(rec))
        if d is None:
            d = self.deviations[deviation_id(rec)] = {"cases": 0, "reason": why, "ids": []}
        d["cases"] += 1
        ids = d["ids"]
        if len(ids) < DEVIATION_IDS or cid < ids[-1]:
            if not ids or cid < ids[0]:
                d["reason"] = why
            bisect.insort(ids, cid)
            del ids[DEVIATION_IDS:]

    # -- views --------------------------------------------------------------------------------

    @property
    def failed(self) -> int:
        return sum(self.verdicts[v] for v in FAILING)

    def sorted_failures(self, limit: int | None = None) -> list[Result]:
        """The first `limit` failures (all when None), most severe first, then by id."""
        return list(self.iter_failures(limit))

    def iter_failures(self, limit: int | None = None) -> Iterator[Result]:
        """The failures' records, most severe first, then by id, parsed one at a time."""
        if not self._sorted:
            self._failures.sort(key=lambda f: f[0])
            self._sorted = True
        for _, text in self._failures[:limit]:
            yield Result.from_json(text)

    def grid(self) -> dict[tuple[str, str, str], Counter]:
        """Verdict counts per (op, product, dtype column)."""
        out: dict[tuple[str, str, str], Counter] = {}
        for (op, product, _, col), c in self.tag_grid.items():
            out.setdefault((op, product, col), Counter()).update(c)
        return out

    def coverage(self) -> Coverage:
        if self._coverage_result is None:
            tally = self._coverage or CoverageTally(self.universe)
            self._coverage_result = tally.result()
        return self._coverage_result

    def ulp_panels(self) -> list[Panel]:
        return self.panels.result()

    def run_info(self, meta: dict[str, Any] | None) -> dict[str, Any]:
        return self.info.result(meta)


def digest_of(records: Any, make: Callable[[], Digest] | None = None, **kwargs: Any) -> Digest:
    """`records` as a Digest: itself when it is one; a Stream folded (one pass, two when an id is
    recorded twice); any other iterable of records, cleaned, in one pass. `make` builds the
    empty Digest (default: Digest(**kwargs))."""
    if isinstance(records, Digest):
        return records
    if make is None:

        def make() -> Digest:
            return Digest(**kwargs)

    if hasattr(records, "fold"):
        return records.fold(make)
    digest = make()
    digest.clean = True
    for rec in records:
        digest.add(rec)
    return digest
