"""Reading a results file back and summarising it: counts per op x product x dtype, failing
clauses, the failures themselves. Shared by the CLI summary and the report renderers."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FAILING = ("fail", "error", "crash", "timeout", "xpass")


def load(path: str | Path) -> list[dict[str, Any]]:
    """Records of a JSONL results file; later records for an id replace earlier ones."""
    by_id: dict[str, dict[str, Any]] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line torn by a kill
            if isinstance(rec, dict) and "id" in rec and "verdict" in rec:
                by_id[rec["id"]] = rec
    return list(by_id.values())


def dtype_tag(rec: dict[str, Any]) -> str:
    from conformance import dtypes as dt

    names = list(rec.get("dtypes", {}).values())
    try:
        shorts = [dt.get(n).short for n in names]
    except ValueError:
        shorts = names
    if not shorts:
        return "-"
    return shorts[0] if len(set(shorts)) == 1 else ".".join(shorts)


@dataclass
class Summary:
    total: int = 0
    verdicts: Counter = field(default_factory=Counter)
    matrix: dict[tuple[str, str, str], Counter] = field(
        default_factory=lambda: defaultdict(Counter)
    )
    failing_clauses: Counter = field(default_factory=Counter)
    failures: list[dict[str, Any]] = field(default_factory=list)

    @property
    def failed(self) -> int:
        return sum(self.verdicts[v] for v in FAILING)


def summarise(records: list[dict[str, Any]]) -> Summary:
    s = Summary()
    for rec in records:
        v = rec.get("verdict", "error")
        s.total += 1
        s.verdicts[v] += 1
        key = (rec.get("op", "?"), rec.get("product", "?"), dtype_tag(rec))
        s.matrix[key][v] += 1
        if v in FAILING:
            s.failures.append(rec)
            for c in rec.get("clauses", []) or ["(no clause)"]:
                s.failing_clauses[c] += 1
    return s
