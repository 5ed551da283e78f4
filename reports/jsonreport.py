"""The summary JSON: totals, the op x product x dtype matrix, clause coverage and the failures
with their statistics. For dashboards and scripts; the per-case results stay in RESULTS.jsonl.

    {"format": "aclnn-conformance-summary", "version": 1, "run": {...},
     "totals": {"cases", "failed", "pass_rate", "verdicts": {verdict: n}},
     "matrix": [{"op", "product", "dtypes", "column", "total", "verdicts"}],
     "failing_clauses": {clause: n}, "deviations": {"<op>/<deviation id>": {"cases", "reason",
     "ids"}}, "coverage": {...}, "failures": [...]}

`dtypes` in the matrix is the dtype tag of the case ids (`f32`, `f32.f32.f16`); `column` the
output dtype the HTML and Markdown matrices group by (`neg` for negative cases). `deviations`:
the cases whose verdict is `deviation` (failures the specs document as deviations of the library,
not failures of the run), by deviation id, with the first 50 case ids. Non-finite
numbers are written as the strings "inf", "-inf" and "nan", as in the results file.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

from conformance.execute import VERDICTS
from reports.coverage import Coverage, clause_coverage
from reports.model import (
    FAILING,
    column,
    deviation_id,
    dtype_tag,
    pass_rate,
    run_info,
    sort_key,
    stats_of,
    worst_elements,
)

FORMAT = "aclnn-conformance-summary"
VERSION = 1


def _safe(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_safe(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return "nan" if math.isnan(obj) else "inf" if obj > 0 else "-inf"
    return obj


def summary(
    records: list[dict[str, Any]],
    meta: dict[str, Any] | None = None,
    *,
    coverage: Coverage | None = None,
    worst_limit: int = 5,
) -> dict[str, Any]:
    verdicts = Counter(r.get("verdict", "error") for r in records)
    failed = sum(verdicts[v] for v in FAILING)
    matrix: dict[tuple[str, str, str, str], Counter] = {}
    failing_clauses: Counter = Counter()
    failures = []
    deviations: dict[str, dict[str, Any]] = {}
    for rec in sorted(records, key=sort_key):
        key = (str(rec.get("op", "?")), str(rec.get("product", "?")), dtype_tag(rec), column(rec))
        matrix.setdefault(key, Counter())[rec.get("verdict", "error")] += 1
        if rec.get("verdict") in FAILING:
            for c in rec.get("clauses") or ["(no clause)"]:
                failing_clauses[c] += 1
            failures.append(failure(rec, worst_limit))
        elif rec.get("verdict") == "deviation":
            why = str((rec.get("expectation") or {}).get("reason") or "")
            d = deviations.setdefault(deviation_id(rec), {"cases": 0, "reason": why, "ids": []})
            d["cases"] += 1
            if len(d["ids"]) < 50:
                d["ids"].append(rec.get("id"))
    if coverage is None:
        coverage = clause_coverage(records)
    rate = pass_rate(verdicts)
    return _safe({
        "format": FORMAT, "version": VERSION, "run": run_info(records, meta),
        "totals": {"cases": len(records), "failed": failed,
                   "pass_rate": None if rate is None else round(rate, 6),
                   "verdicts": {v: verdicts[v] for v in VERDICTS}},
        "matrix": [{"op": op, "product": prod, "dtypes": tag, "column": col,
                    "total": sum(c.values()), "verdicts": {v: c[v] for v in VERDICTS if c[v]}}
                   for (op, prod, tag, col), c in sorted(matrix.items())],
        "failing_clauses": dict(failing_clauses.most_common()),
        "deviations": dict(sorted(deviations.items())),
        "coverage": coverage.to_dict(),
        "failures": failures,
    })  # fmt: skip


def failure(rec: dict[str, Any], worst_limit: int = 5) -> dict[str, Any]:
    out = {k: rec.get(k) for k in ("id", "op", "product", "kind", "verdict", "reason",
                                   "expected_status", "oracle_status", "actual_status",
                                   "clauses", "dtypes", "replay")}  # fmt: skip
    out["dtype_tag"] = dtype_tag(rec)
    out["stats"] = stats_of(rec)
    out["outputs"] = {name: c.get("stats") for name, c in (rec.get("comparisons") or {}).items()}
    out["worst"] = worst_elements(rec, worst_limit)
    for key in ("message", "expectation", "verdict_before_expectation"):
        if rec.get(key):
            out[key] = rec[key]
    return out


def render_json(records, meta=None, **kwargs) -> str:
    return json.dumps(summary(records, meta, **kwargs), indent=1, ensure_ascii=False,
                      allow_nan=False) + "\n"  # fmt: skip


def write_json(path: str | Path, records, meta=None, **kwargs) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(render_json(records, meta, **kwargs), encoding="utf-8")
    return p
