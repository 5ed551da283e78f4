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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..conformance.judge.result import Result
from ..conformance.judge.verdicts import VERDICTS
from .coverage import Coverage
from .digest import Digest, digest_of
from .output import write_atomic
from .run import dtype_tag, pass_rate, stats_of, worst_elements

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
    records: Any,
    meta: dict[str, Any] | None = None,
    *,
    coverage: Coverage | None = None,
    worst_limit: int = 5,
) -> dict[str, Any]:
    """The summary of `records` (a list, a Stream or a Digest)."""
    head, d = _head(records, meta, coverage)
    head["failures"] = [_safe(failure(rec, worst_limit)) for rec in d.iter_failures()]
    return head


def _head(
    records: Any, meta: dict[str, Any] | None, coverage: Coverage | None
) -> tuple[dict[str, Any], Digest]:
    """The summary without its failures, and the Digest they come from."""
    d: Digest = digest_of(
        records, cases=False, coverage=coverage is None, universe=(meta or {}).get("clauses")
    )
    if coverage is None:
        coverage = d.coverage()
    rate = pass_rate(d.verdicts)
    deviations = {
        dev: {"cases": x["cases"], "reason": x["reason"], "ids": list(x["ids"])}
        for dev, x in d.deviations.items()
    }
    return _safe(
        {
            "format": FORMAT,
            "version": VERSION,
            "run": d.run_info(meta),
            "totals": {
                "cases": d.total,
                "failed": d.failed,
                "pass_rate": None if rate is None else round(rate, 6),
                "verdicts": {v: d.verdicts[v] for v in VERDICTS},
            },
            "matrix": [
                {
                    "op": op,
                    "product": prod,
                    "dtypes": tag,
                    "column": col,
                    "total": sum(c.values()),
                    "verdicts": {v: c[v] for v in VERDICTS if c[v]},
                }
                for (op, prod, tag, col), c in sorted(d.tag_grid.items())
            ],
            "failing_clauses": dict(d.failing_clauses.most_common()),
            "deviations": dict(sorted(deviations.items())),
            "coverage": coverage.to_dict(),
        }
    ), d


def failure(rec: Result, worst_limit: int = 5) -> dict[str, Any]:
    out = {
        k: getattr(rec, k)
        for k in (
            "id",
            "op",
            "product",
            "kind",
            "verdict",
            "reason",
            "expected_status",
            "oracle_status",
            "actual_status",
            "clauses",
            "dtypes",
            "replay",
        )
    }
    out["dtype_tag"] = dtype_tag(rec)
    out["stats"] = stats_of(rec)
    out["outputs"] = {name: c.get("stats") for name, c in (rec.comparisons or {}).items()}
    out["worst"] = worst_elements(rec, worst_limit)
    for key in ("message", "expectation", "verdict_before_expectation"):
        if getattr(rec, key):
            out[key] = getattr(rec, key)
    return out


def _dump(obj: Any) -> str:
    return json.dumps(obj, indent=1, ensure_ascii=False, allow_nan=False)


def json_pieces(
    records: Any,
    meta: dict[str, Any] | None = None,
    *,
    coverage: Coverage | None = None,
    worst_limit: int = 5,
) -> Iterator[str]:
    """The summary JSON (as json.dumps(summary(...), indent=1) writes it), in pieces: the
    failures are rendered one at a time, never all held at once."""
    head, d = _head(records, meta, coverage)
    yield _dump(head)[: -len("\n}")] + ',\n "failures": ['
    for k, rec in enumerate(d.iter_failures()):
        text = _dump(_safe(failure(rec, worst_limit))).replace("\n", "\n  ")
        yield (",\n  " if k else "\n  ") + text
    yield ("\n ]" if d.failed else "]") + "\n}\n"


def render_json(records, meta=None, **kwargs) -> str:
    return "".join(json_pieces(records, meta, **kwargs))


def write_json(path: str | Path, records, meta=None, **kwargs) -> Path:
    return write_atomic(path, json_pieces(records, meta, **kwargs))
