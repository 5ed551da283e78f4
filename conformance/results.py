"""Reading a results file back and summarising it: counts per op x product x dtype, failing
clauses, the failures themselves. Shared by the CLI summary and the report renderers."""

from __future__ import annotations

import contextlib
import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance import safeio
from conformance.verdicts import FAILING

MAX_RECORD_BYTES = 16 << 20  # one results line; a longer one is counted as not a record
MAX_META_BYTES = 16 << 20  # a .meta.json


@dataclass
class Read:
    """What a JSONL results file holds: each case's last record, and the lines that were not
    records (a line torn by a kill, or foreign text), with the first of them described."""

    records: list[dict[str, Any]]
    torn: int = 0
    first_bad: str = ""
    lines: int = 0  # non-blank lines


def read_jsonl(path: str | Path) -> Read:
    """The one reader of results files: later records for an id replace earlier ones (resume);
    a line that is not a JSON record with `id` and `verdict` is counted, never fatal."""
    by_id: dict[str, dict[str, Any]] = {}
    out = Read([])
    with safeio.open_regular(path) as f:  # a FIFO or a device is refused, not read forever
        for i, raw in enumerate(safeio.iter_lines(f, MAX_RECORD_BYTES), 1):
            if raw is None:
                out.lines += 1
                out.torn += 1
                out.first_bad = out.first_bad or f"line {i}: longer than {MAX_RECORD_BYTES} bytes"
                continue
            line = raw.decode("utf-8").strip()
            if not line:
                continue
            out.lines += 1
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                out.torn += 1
                out.first_bad = out.first_bad or f"line {i}: not JSON ({exc.msg})"
                continue
            except RecursionError:
                out.torn += 1
                out.first_bad = out.first_bad or f"line {i}: not a record (JSON nested too deeply)"
                continue
            if not (isinstance(rec, dict) and "id" in rec and "verdict" in rec):
                out.torn += 1
                out.first_bad = out.first_bad or (
                    f"line {i}: not a result record (needs 'id' and 'verdict')"
                )
                continue
            by_id[str(rec["id"])] = rec
    out.records = list(by_id.values())
    return out


def load(path: str | Path) -> list[dict[str, Any]]:
    """Records of a JSONL results file; later records for an id replace earlier ones."""
    return read_jsonl(path).records


def dtype_tag(rec: dict[str, Any]) -> str:
    """Short dtypes in parameter order (as in case ids); recorded by the runner."""
    if rec.get("dtype_tag"):
        return str(rec["dtype_tag"])
    from conformance import dtypes as dt

    names = list(rec.get("dtypes", {}).values())
    try:
        return dt.tag(names)
    except ValueError:  # a dtype this version does not know: its name as written
        return names[0] if len(set(names)) == 1 else ".".join(names)


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
            with contextlib.suppress(OSError, ValueError, RecursionError):
                metas.append(json.loads(safeio.read_bytes(meta_path, MAX_META_BYTES)))
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
