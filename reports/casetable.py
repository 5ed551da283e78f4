"""The case list of the HTML report: a compact table the page's script draws one page at a
time (strings interned into tables, per-case data the page does not show dropped, details only
for cases that did not pass), bounded in size whatever the number of passing cases."""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable
from typing import Any

from ..conformance.judge.result import Result, as_result
from .run import ORDER, STAT_KEYS, clip, column, dtype_tag, fmt, num, or_, short, sort_key, stats_of
from .ulpnote import policy_of, small_value_notes

WORST_LIMIT = 10  # worst elements kept per output
REASON_LIMIT = 240  # characters of a reason in the case list (details keep 4,000)
PASS_ROWS = 20_000  # passing (and skipped) cases listed at most; every other case is listed
FIELDS = ("id", "op", "product", "col", "verdict", "neg", "tag", "params", "clauses", "ulp",
          "rel", "abs", "es", "t", "reason", "replay", "detail")  # fmt: skip


def _round(x: float | None) -> float | int | str | None:
    """4 significant digits, JSON-safe (inf/nan as strings)."""
    if x is None:
        return None
    if x != x or x in (float("inf"), float("-inf")):
        return fmt(x)
    if x == int(x) and abs(x) < 1e15:
        return int(x)
    return float(f"{x:.4g}")


def _clean(obj: Any) -> Any:
    """A JSON-safe copy: non-finite floats become strings."""
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_clean(v) for v in obj]
    if isinstance(obj, float) and (obj != obj or obj in (float("inf"), float("-inf"))):
        return fmt(obj)
    return obj


class _Interner:
    def __init__(self) -> None:
        self.items: list[Any] = []
        self._index: dict[str, int] = {}

    def __call__(self, value: Any) -> int:
        key = value if isinstance(value, str) else repr(value)
        i = self._index.get(key)
        if i is None:
            i = self._index[key] = len(self.items)
            self.items.append(value)
        return i


class CaseTable:
    """The compact case table the page's script reads (see FIELDS), built one record at a time
    (`add`). Every case that did not pass is kept, with its details; of the passing and the
    skipped cases, at most `keep` each (the passes with the largest max ULP, the first skips),
    so a run of a million passing cases makes a page of bounded size. `omitted` says how many
    were left out; the counts, matrix, coverage and histograms of the page count every case."""

    BOUNDED = ("pass", "skip")

    def __init__(self, keep: int = PASS_ROWS):
        self.keep = keep
        self.ops, self.products, self.cols, self.tags = (
            _Interner(),
            _Interner(),
            _Interner(),
            _Interner(),
        )
        self.params, self.clause_names, self.clause_sets, self.replays = (
            _Interner(),
            _Interner(),
            _Interner(),
            _Interner(),
        )
        self.rows: list[tuple[tuple[int, str], list[Any], dict[str, Any] | None]] = []
        self.heaps: dict[str, list[tuple[float, int, tuple, list[Any], Any]]] = {
            v: [] for v in self.BOUNDED
        }
        self.omitted: Counter = Counter()
        self.aclnn: dict[str, str] = {}
        self._seq = 0

    def add(self, rec: Result | dict[str, Any]) -> None:
        rec = as_result(rec)
        if rec.aclnn_op:
            self.aclnn.setdefault(str(or_(rec.op, "?")), str(rec.aclnn_op))
        verdict = rec.verdict
        if verdict not in self.BOUNDED:
            self.rows.append(self._row(rec))
            return
        heap = self.heaps[verdict]
        st = stats_of(rec) if verdict == "pass" else {}
        ulp = st.get("max_ulp")
        priority = -1.0 if ulp is None or ulp != ulp else ulp  # NaN: lowest
        self._seq += 1
        entry_key = (priority, -self._seq)  # the larger ULP stays; at a tie, the earlier case
        if len(heap) >= self.keep:
            self.omitted[verdict] += 1
            if self.keep == 0 or entry_key <= heap[0][:2]:
                return
            heapq.heapreplace(heap, (*entry_key, *self._row(rec)))
        else:
            heapq.heappush(heap, (*entry_key, *self._row(rec)))

    def _row(self, rec: Result) -> tuple[tuple[int, str], list[Any], Any]:
        cid = str(rec.id)
        layouts = rec.layouts or {}
        p = {
            name: [short(dtype)]
            + (
                [lay.get("shape"), lay.get("strides"), lay.get("offset"), lay.get("storage")]
                if (lay := layouts.get(name))
                else []
            )
            for name, dtype in (rec.dtypes or {}).items()
        }
        st = stats_of(rec)
        replay = str(rec.replay or "")
        quoted = f"'{cid}'"
        template = replay.replace(quoted, "'{id}'", 1) if quoted in replay else replay
        verdict = rec.verdict
        long_reason = len(str(rec.reason or "")) > REASON_LIMIT
        detail = None
        if verdict != "pass" or rec.expectation or long_reason or small_value_notes(rec):
            detail = _detail(rec)
        row = [
            cid,
            self.ops(or_(rec.op, "?")),
            self.products(or_(rec.product, "?")),
            self.cols(column(rec)),
            ORDER.index(verdict) if verdict in ORDER else 0,
            1 if rec.kind == "negative" else 0,
            self.tags(dtype_tag(rec)),
            self.params(p),
            self.clause_sets([self.clause_names(c) for c in rec.clauses or []]),
            _round(st["max_ulp"]),
            _round(st["max_rel"]),
            _round(st["max_abs"]),
            rec.expected_status,
            _round(num((rec.durations or {}).get("total"))),
            clip(rec.reason, REASON_LIMIT),
            self.replays(template) if template else -1,
            -1,
        ]
        return sort_key(rec), row, detail

    def payload(self) -> dict[str, Any]:
        entries = self.rows + [e[2:] for h in self.heaps.values() for e in h]
        entries.sort(key=lambda e: e[0])
        details: list[dict[str, Any]] = []
        rows = []
        for _, row, detail in entries:
            if detail is not None:
                row = [*row[:-1], len(details)]
                details.append(detail)
            rows.append(row)
        return {
            "fields": list(FIELDS),
            "verdicts": list(ORDER),
            "ops": self.ops.items,
            "products": self.products.items,
            "cols": self.cols.items,
            "tags": self.tags.items,
            "params": self.params.items,
            "clauses": self.clause_names.items,
            "clauseSets": self.clause_sets.items,
            "replays": self.replays.items,
            "details": details,
            "cases": rows,
            "aclnn": self.aclnn,
            "statKeys": list(STAT_KEYS),
            "omitted": {v: n for v, n in self.omitted.items() if n},
        }


def case_payload(records: Iterable[Result], keep: int = PASS_ROWS) -> dict[str, Any]:
    """The compact case table of `records` (see CaseTable)."""
    table = CaseTable(keep)
    for rec in records:
        table.add(rec)
    return table.payload()


WORST_FIELDS = ("index", "expected", "actual", "abs_err", "rel_err", "ulp", "inputs")


def _detail(rec: Result) -> dict[str, Any]:
    """What the drill-down of a case that did not pass shows beyond its row (compact keys:
    st statuses, r full reason when the row's is cut, m backend message, c per output
    [statistics in STAT_KEYS order, worst elements in WORST_FIELDS order], d durations,
    x expectation, b verdict before the expectation, u per output: why its max ULP means
    nothing, where it comes from the small-value domain). A comparison's third item is its
    policy's [small_threshold, small_atol, dtype], so the page can mark small-value elements."""
    comps = {}
    for name, c in (rec.comparisons or {}).items():
        comps[name] = _comparison(c.get("stats") or {}, c.get("worst") or [])
        comps[name].append(list(pol[1:] + pol[:1]) if (pol := policy_of(rec, name)) else None)
    if not comps and rec.stats:
        comps["output"] = _comparison(rec.stats, rec.worst or [])
    out: dict[str, Any] = {
        "st": [rec.expected_status, rec.oracle_status, rec.actual_status],
        "c": comps,
        "d": {k: _round(num(v)) for k, v in (rec.durations or {}).items()},
    }
    reason = " ".join(str(rec.reason or "").split())
    if len(reason) > REASON_LIMIT:
        out["r"] = clip(reason, 4000)
    if rec.message:
        out["m"] = clip(rec.message, 4000)
    if rec.expectation:
        out["x"] = rec.expectation
    if rec.verdict_before_expectation:
        out["b"] = rec.verdict_before_expectation
    notes = small_value_notes(rec)
    if notes:
        out["u"] = {n.output: n.long() for n in notes}
    return _clean(out)


def _comparison(stats: dict[str, Any], worst: list[dict[str, Any]]) -> list[Any]:
    return [
        [_round(num(stats.get(k))) for k in STAT_KEYS],
        [[w.get(f) for f in WORST_FIELDS] for w in worst[:WORST_LIMIT]],
    ]
