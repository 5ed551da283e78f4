"""What every report needs from a run: verdict order and groups, the dtype column of a case, the
statistics of a case as numbers, the run's header facts, and reading a results file with clear
errors. Renderers import this module; it imports only `conformance`."""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from ..conformance.files import safeio
from ..conformance.judge.result import Result, as_result
from ..conformance.judge.results import MAX_META_BYTES, ResultsFileError, Stream
from ..conformance.judge.verdicts import BROKEN, ERRORS, EXPLAINED, FAILING, VERDICTS  # noqa: F401

# Most severe first: the order of tables, legends and sorting.
ORDER = ("crash", "timeout", "error", "fail", "xpass", "xfail", "deviation", "skip", "pass")
# The verdict groups (imported above, for the renderers) are defined in conformance/judge/verdicts.py;
# EXPLAINED ones (xfail, deviation) are left out of pass rates, like skips.
HELP = {  # one line per verdict, for legends and tooltips
    "pass": "the case passed",
    "fail": "the outputs or the status code differ from the spec",
    "error": "the case could not be run or judged (the backend or the harness raised)",
    "crash": "the backend process died (a signal)",
    "timeout": "the case ran past its time limit",
    "xpass": "expected to fail (an expectations entry) but passed",
    "xfail": "failed as an expectations entry says it does (not a failure of the run)",
    "deviation": "failed in a way the spec documents as a deviation of the real library from its "
    "docs (one of the spec's deviations); not a failure of the run",
    "skip": "not run",
}
NEGATIVE = "neg"  # the dtype column of negative (status-only) cases
STAT_KEYS = ("max_ulp", "max_rel", "max_abs", "mere", "mare", "mismatch_ratio", "mismatches",
             "compared", "n", "nan_mismatches", "inf_mismatches", "small_value_count")  # fmt: skip
DTYPE_ORDER = ("f16", "bf16", "f32", "f64", "c64", "c128")

assert set(ORDER) == set(VERDICTS), "a verdict was added: give it a place in reports.run.ORDER"
assert set(HELP) == set(VERDICTS), "a verdict was added: say what it means in reports.run.HELP"


@dataclass
class Run:
    path: Path | None
    records: list[Result]
    meta: dict[str, Any] = field(default_factory=dict)
    torn_lines: int = 0  # lines that were not JSON records (a run killed mid-write)


def open_results(path: str | Path, clean: bool = True) -> tuple[Stream, dict[str, Any]]:
    """A results file to read as a Stream (display-safe strings when `clean`), and its meta;
    ResultsFileError when it is missing, not a regular file, or holds no record (checked by
    reading up to its first record)."""
    p = Path(path)
    stream = Stream(p, clean=clean)
    for _ in stream:
        break
    else:
        if not stream.lines:
            raise ResultsFileError(f"{p}: empty results file (no records)")
        raise ResultsFileError(f"{p}: no result records; {stream.first_bad}")
    return stream, read_meta(p)


def read_run(path: str | Path) -> Run:
    """Records and meta of RESULTS.jsonl (+ RESULTS.jsonl.meta.json when present), in memory
    (small files; reports stream with open_results)."""
    p = Path(path)
    stream, meta = open_results(p, clean=False)
    by_id: dict[str, Result] = {}
    for rec in stream:
        by_id[str(rec.id)] = rec
    return Run(p, list(by_id.values()), meta, stream.torn)


def read_meta(results_path: Path) -> dict[str, Any]:
    meta_path = Path(str(results_path) + ".meta.json")
    if not meta_path.exists():
        return {}
    try:
        meta = json.loads(safeio.read_bytes(meta_path, MAX_META_BYTES))
    except OSError as exc:
        raise ResultsFileError(f"{meta_path}: cannot read: {exc.strerror or exc}") from None
    except (ValueError, RecursionError) as exc:
        raise ResultsFileError(f"{meta_path}: not valid JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise ResultsFileError(f"{meta_path}: expected a JSON object")
    return meta


# -- per case --------------------------------------------------------------------------------


def or_(value: Any, default: Any) -> Any:
    """A record's field, or `default` where the record has none (unset, or null)."""
    return default if value is None else value


def num(x: Any) -> float | None:
    """A statistic as a float: results write inf/nan as strings; None when absent."""
    if x is None or x is True or x is False:
        return None
    if type(x) is float:
        return x
    if isinstance(x, int | float):
        return float(x)
    try:
        return float(str(x))
    except ValueError:
        return None


_COUNTS = {"mismatches", "compared", "n", "nan_mismatches", "inf_mismatches", "small_value_count"}


def stats_of(rec: Result) -> dict[str, float | None]:
    """The case's statistics, the worst over its outputs (max of each; sums of counts)."""
    comps = [c.get("stats") or {} for c in (rec.comparisons or {}).values()]
    if not comps and rec.stats:
        comps = [rec.stats]
    if len(comps) == 1:
        only = comps[0]
        return {key: num(only.get(key)) for key in STAT_KEYS}
    out: dict[str, float | None] = {}
    for key in STAT_KEYS:
        vals = [v for v in (num(c.get(key)) for c in comps) if v is not None]
        if not vals:
            out[key] = None
        elif key in _COUNTS:
            out[key] = sum(vals)
        else:
            out[key] = max(vals, key=lambda v: -math.inf if math.isnan(v) else v)
    return out


def worst_elements(rec: Result, limit: int = 10) -> list[dict[str, Any]]:
    """The worst elements of each output, tagged with the output's name."""
    out = []
    comps = rec.comparisons or {}
    if comps:
        for name, c in comps.items():
            out += [dict(w, output=name) for w in (c.get("worst") or [])[:limit]]
    else:
        out = [dict(w) for w in (rec.worst or [])[:limit]]
    return out


@cache
def short(dtype: str) -> str:
    from ..conformance.acl import dtypes as dt

    try:
        return dt.get(dtype).short
    except ValueError:
        return str(dtype)


def column(rec: Result) -> str:
    """The dtype column of a case in matrices: its output dtype (what it is rounded to), or
    `neg` for a negative case (it checks a status code, not numbers)."""
    if rec.kind == "negative":
        return NEGATIVE
    dtypes = rec.dtypes or {}
    names = [dtypes[o] for o in rec.outputs or () if o in dtypes]
    if not names and rec.out_dtype:
        names = [rec.out_dtype]
    if not names:  # a record of an older version: its tensors, all of them
        names = list(dtypes.values())
    shorts = sorted({short(n) for n in names})
    if not shorts:
        return "-"
    return shorts[0] if len(shorts) == 1 else "mixed"


def column_order(cols: set[str] | list[str]) -> list[str]:
    known = [c for c in DTYPE_ORDER if c in cols]
    rest = sorted(c for c in cols if c not in DTYPE_ORDER and c != NEGATIVE)
    return known + rest + ([NEGATIVE] if NEGATIVE in cols else [])


def dtype_tag(rec: Result) -> str:
    """Short dtypes of the tensors in C signature order (as in case ids): `f32`, `f32.f32.f16`,
    as the runner recorded it (a record of an older version: its tensors by name)."""
    if rec.dtype_tag:
        return str(rec.dtype_tag)
    dtypes = rec.dtypes or {}
    shorts = [short(str(dtypes[p])) for p in dtypes]
    if not shorts:
        return "-"
    return shorts[0] if len(set(shorts)) == 1 else ".".join(shorts)


def grid(records: Iterable[Result | dict[str, Any]]) -> dict[tuple[str, str, str], Counter]:
    """Verdict counts per (op, product, dtype column)."""
    out: dict[tuple[str, str, str], Counter] = {}
    for r in map(as_result, records):
        key = (str(or_(r.op, "?")), str(or_(r.product, "?")), column(r))
        out.setdefault(key, Counter())[r.verdict] += 1
    return out


def pass_rate(c: Counter) -> float | None:
    """Passes over judged cases (skips and expected failures left out); None if none judged."""
    judged = sum(c.values()) - c["skip"] - sum(c[v] for v in EXPLAINED)
    return c["pass"] / judged if judged > 0 else None


# -- run facts -------------------------------------------------------------------------------


INFO_KEYS = ("backend", "backend_version", "oracle", "oracle_version", "seed", "spec_sha256",
             "tool_version")  # fmt: skip
DISTINCT_KEPT = 20  # distinct values of a header fact listed at most


class InfoTally:
    """The header facts the records hold, gathered one record at a time (`add`): per fact its
    distinct values (at most DISTINCT_KEPT) with their counts, the cases, their durations."""

    def __init__(self) -> None:
        self.values: dict[str, Counter] = {k: Counter() for k in INFO_KEYS}
        self.cases = 0
        self.seconds = 0.0

    def add(self, rec: Result | dict[str, Any]) -> None:
        rec = as_result(rec)
        self.cases += 1
        for key in INFO_KEYS:
            value = getattr(rec, key)
            if value is not None and value != "":
                c = self.values[key]
                text = str(value)
                if text in c or len(c) < DISTINCT_KEPT:
                    c[text] += 1
        self.seconds += num((rec.durations or {}).get("total")) or 0.0

    def common(self, key: str) -> str:
        """The value of `key` in the records; several (most frequent first) when they differ."""
        return ", ".join(v for v, _ in self.values[key].most_common())

    def result(self, meta: dict[str, Any] | None) -> dict[str, Any]:
        """Header facts: from the meta file where the run wrote one, else from the records."""
        meta = dict(meta or {})
        common = self.common
        seconds = num(meta.get("seconds"))
        if seconds is None:
            seconds = self.seconds
        return {
            "backend": meta.get("backend") or common("backend") or "?",
            "backend_version": common("backend_version"),
            "oracle": meta.get("oracle") or common("oracle"),
            "oracle_version": common("oracle_version") or meta.get("oracle_version", ""),
            "seed": meta.get("seed", common("seed")),
            "spec_sha256": meta.get("spec_sha256") or common("spec_sha256"),
            "tool_version": common("tool_version") or meta.get("tool_version", ""),
            "date": fmt_date(meta.get("date", "")),
            "host": meta.get("host", ""),
            "setup": setup_line(meta.get("backend_host")),
            "seconds": seconds,
            "seconds_from_meta": "seconds" in meta,
            "jobs": meta.get("jobs"),
            "planned": meta.get("cases"),
            "cases": self.cases,
            "scope": scope(meta),
        }


def scope(meta: dict[str, Any]) -> str:
    """What part of the suite a run covers when not all of it: `shard 2/4` for one shard,
    `shards 1/4, 2/4 (3/4, 4/4 missing)` for a merge that lacks some; '' for the whole."""
    missing = [str(x) for x in meta.get("shards_missing") or ()]
    if missing:
        have = ", ".join(str(x) for x in meta.get("shards") or ()) or "none"
        return f"shards {have} ({', '.join(missing)} missing)"
    if meta.get("shard"):
        return f"shard {meta['shard']}"
    return ""


def run_info(records: Iterable[Result], meta: dict[str, Any] | None) -> dict[str, Any]:
    """Header facts: from the meta file where the run wrote one, else from the records."""
    tally = InfoTally()
    for rec in records:
        tally.add(rec)
    return tally.result(meta)


def setup_line(host: Any) -> str:
    """The backend's host facts of the meta (CANN, SoC, devices, overflow mode, ASCEND_OPP_PATH)
    in one line, with the diagnosis of what was missing."""
    if not isinstance(host, dict):
        return ""
    line = str(host.get("summary") or "")
    if host.get("diagnosis"):
        line += f" — missing: {host['diagnosis']}" if line else str(host["diagnosis"])
    return line


def fmt(x: Any, digits: int = 3) -> str:
    """A statistic for people: integers as such, others with `digits` significant digits."""
    v = num(x)
    if v is None:
        return "" if x is None else str(x)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v == int(v) and abs(v) < 1e15:
        return str(int(v))
    return f"{v:.{digits}g}"


def fmt_date(value: Any) -> str:
    """An ISO timestamp as `2026-11-22 02:32 UTC`; anything else unchanged."""
    from datetime import datetime, timezone

    text = str(value or "")
    try:
        d = datetime.fromisoformat(text)
    except ValueError:
        return text
    if d.tzinfo is not None:
        d = d.astimezone(timezone.utc)
        return d.strftime("%Y-%m-%d %H:%M UTC")
    return d.strftime("%Y-%m-%d %H:%M")


def fmt_seconds(s: float | None) -> str:
    if s is None:
        return ""
    if s < 60:
        return f"{s:.1f} s"
    m, sec = divmod(int(round(s)), 60)
    return f"{m} min {sec:02d} s" if m < 60 else f"{m // 60} h {m % 60:02d} min"


def clip(text: Any, limit: int) -> str:
    s = " ".join(str(text or "").split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def deviation_id(rec: Result) -> str:
    """The `<op>/<deviation id>` a record's expectation names, "" when none."""
    return str((rec.expectation or {}).get("deviation") or "")


def sort_key(rec: Result) -> tuple[int, str]:
    v = rec.verdict
    return (ORDER.index(v) if v in ORDER else 0, str(rec.id))
