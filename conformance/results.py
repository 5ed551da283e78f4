"""Reading a results file back and summarising it: counts per op x product x dtype, failing
clauses, the failures themselves. Shared by the CLI summary and the report renderers."""

from __future__ import annotations

import contextlib
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
    """Short dtypes in parameter order (as in case ids); recorded by the runner."""
    if rec.get("dtype_tag"):
        return str(rec["dtype_tag"])
    from conformance import dtypes as dt

    names = list(rec.get("dtypes", {}).values())
    try:
        shorts = [dt.get(n).short for n in names]
    except ValueError:
        shorts = names
    if not shorts:
        return "-"
    return shorts[0] if len(set(shorts)) == 1 else ".".join(shorts)


def matrix_column(rec: dict[str, Any]) -> str:
    """The dtype column of the summary matrix: the output dtype, or `neg` for negative cases."""
    if rec.get("kind") == "negative":
        return "neg"
    out = rec.get("out_dtype")
    if out:
        from conformance import dtypes as dt

        try:
            return dt.get(out).short
        except ValueError:
            return str(out)
    return dtype_tag(rec)


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
        key = (rec.get("op", "?"), rec.get("product", "?"), matrix_column(rec))
        s.matrix[key][v] += 1
        if v in FAILING:
            s.failures.append(rec)
            for c in rec.get("clauses", []) or ["(no clause)"]:
                s.failing_clauses[c] += 1
    return s


def merge(paths: list[str | Path]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Records of several results files (shards), each id once (later files win), and their
    merged run metadata: sums of cases and seconds, the union of hosts, one spec hash; backend,
    backend version, oracle, seed and tool version as the merged records say, and `mixed`
    listing every one of those that differs (callers refuse that unless forced: provenance)."""
    from conformance.provenance import label_merged

    by_id: dict[str, dict[str, Any]] = {}
    metas = []
    for p in paths:
        for rec in load(p):
            by_id[rec["id"]] = rec
        meta_path = Path(str(p) + ".meta.json")
        if meta_path.exists():
            with contextlib.suppress(OSError, json.JSONDecodeError):
                metas.append(json.loads(meta_path.read_text(encoding="utf-8")))
    meta: dict[str, Any] = {"merged_from": [str(p) for p in paths]}
    if metas:
        meta.update(
            {k: v for k, v in metas[0].items() if k not in ("cases", "run", "seconds", "host")}
        )
        meta["cases"] = sum(m.get("cases", 0) for m in metas)
        meta["run"] = sum(m.get("run", 0) for m in metas)
        meta["seconds"] = max(m.get("seconds", 0.0) for m in metas)  # shards run side by side
        meta["host"] = ", ".join(sorted({str(m.get("host", "")) for m in metas}))
        hashes = {m.get("spec_sha256") for m in metas}
        meta["spec_sha256"] = (
            hashes.pop() if len(hashes) == 1 else "mixed: " + ", ".join(sorted(map(str, hashes)))
        )
    label_merged(meta, list(by_id.values()), metas)
    return list(by_id.values()), meta
