"""Merging results files (the shards of a CI matrix, or reruns) into one, without losing a verdict.

- A case recorded in several inputs is taken once (from the last file holding it) when the
  records agree on what was judged (verdict, statuses, statistics; durations and reasons may
  differ) and refused otherwise
  (`MergeConflict`: one line naming the case and both files) -- a later file never silently
  turns a failure into a pass.
- Shards are recorded: a run with `--shard i/n` writes `"shard": "i/n"` in its meta; the merged
  meta lists the shards it holds and those missing (`ShardError` unless partial merges are
  allowed), so one shard of four is never mistaken for the whole suite.
- `cases` (the cases planned) is summed over distinct shards, not over inputs: two copies of a
  run plan its cases once.

Inputs are read as Streams (twice each: to check, then to write), so memory holds one small
entry per case id, never the records.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .provenance import label_merged, read_meta
from .result import Result
from .results import Stream, Summary, safe_text


class MergeConflict(ValueError):
    """Two inputs judge a case differently; the message is one line for the user."""


class ShardError(ValueError):
    """The inputs' shards do not make a whole (one missing, or splits that differ)."""


JUDGED = ("verdict", "expected_status", "oracle_status", "actual_status", "stats", "kind")


def judgement(rec: Result) -> bytes:
    """A digest of what a record says was judged: two records of one case agree when theirs
    are equal (timings, hosts and wording of reasons do not count)."""
    what = {k: getattr(rec, k) for k in JUDGED}
    what["comparisons"] = {
        str(n): (c or {}).get("stats") if isinstance(c, dict) else c
        for n, c in (rec.comparisons or {}).items()
    }
    text = json.dumps(what, sort_keys=True, default=str)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _shard(meta: dict[str, Any]) -> tuple[int, int] | None:
    value = meta.get("shard")
    if not value:
        return None
    try:
        i, n = (int(x) for x in str(value).split("/"))
    except ValueError:
        return None
    return (i, n) if 1 <= i <= n else None


@dataclass
class Merged:
    """What merge_files wrote: its case count, their summary, the merged meta."""

    cases: int
    summary: Summary
    meta: dict[str, Any]
    missing_shards: list[str] = field(default_factory=list)


def shards_of(
    paths: Sequence[Path], metas: Sequence[dict[str, Any]]
) -> tuple[list[str], list[str]]:
    """(shards held, shards missing) as `i/n`; ShardError when inputs split the suite in
    different numbers of shards. An input that is not a shard covers every shard."""
    found = {p: s for p, m in zip(paths, metas, strict=True) if (s := _shard(m))}
    if not found:
        return [], []
    (p1, (i1, n)), *rest = found.items()
    for p2, (i2, n2) in rest:
        if n2 != n:
            raise ShardError(
                f"merge: {p1} is shard {i1}/{n} but {p2} is shard {i2}/{n2}: "
                "merge the shards of one split"
            )
    have = sorted({i for i, _ in found.values()})
    whole = len(found) < len(paths)  # an input that is no shard holds the whole suite
    missing = [] if whole else [f"{i}/{n}" for i in range(1, n + 1) if i not in have]
    return [f"{i}/{n}" for i in have], missing


def planned_cases(metas: Sequence[dict[str, Any]]) -> int | None:
    """The cases the merged runs planned: summed over distinct shards (a shard given twice
    counts once), the largest of the unsharded runs; None when no meta says."""
    per_shard: dict[tuple[int, int], int] = {}
    whole = 0
    known = False
    for m in metas:
        c = m.get("cases")
        if not isinstance(c, int) or isinstance(c, bool):
            continue
        known = True
        s = _shard(m)
        if s is None:
            whole = max(whole, c)
        else:
            per_shard[s] = max(per_shard.get(s, 0), c)
    return max(whole, sum(per_shard.values())) if known else None


def merge_files(
    paths: Sequence[Path],
    write: Callable[[Iterator[str]], Path],
    allow_partial: bool = False,
) -> Merged:
    """Merge results files: check every input, then `write(lines)` the merged JSONL (an
    iterator of lines; e.g. reports.output.write_atomic bound to the output path). Raises
    MergeConflict, ShardError before anything is written."""
    paths = [Path(p) for p in paths]
    metas = [read_meta(p) for p in paths]
    held, missing = shards_of(paths, metas)
    if missing and not allow_partial:
        raise ShardError(
            f"merge: shard {', '.join(missing)} missing (the inputs hold shard "
            f"{', '.join(held)}); give every shard's results, or --partial to "
            "merge these and record the missing shards in the meta"
        )
    owner: dict[str, tuple[bytes, int]] = {}  # id -> (judgement, index of the last input)
    streams = [Stream(p) for p in paths]
    for k, stream in enumerate(streams):
        for rec in stream:
            cid = str(rec.id)
            fp = judgement(rec)
            seen = owner.get(cid)
            if seen is not None and seen[1] != k and seen[0] != fp:
                raise MergeConflict(
                    f"merge: case {safe_text(cid)} is judged differently in "
                    f"{safe_text(paths[seen[1]])} and {safe_text(paths[k])} (verdict, status "
                    "or statistics differ); merge runs that agree, or drop one of the files"
                )
            owner[cid] = (fp, k)  # a later line of the same file (resume) replaces its own
    summary = Summary()

    def lines() -> Iterator[str]:
        for k, stream in enumerate(streams):
            for rec in stream:
                if owner[str(rec.id)][1] == k:
                    summary.add(rec)
                    yield rec.to_json() + "\n"

    out = write(lines())  # a file holding an id twice gives its last record only
    meta = merged_meta(paths, metas, held, missing)
    label_merged(meta, Stream(out), [m for m in metas if m])
    return Merged(summary.total, summary, meta, missing)


def merged_meta(
    paths: Sequence[Path], metas: Sequence[dict[str, Any]], held: list[str], missing: list[str]
) -> dict[str, Any]:
    """The meta of the merged file: the first input's facts, then the sums and unions."""
    given = [m for m in metas if m]
    meta: dict[str, Any] = {"merged_from": [str(p) for p in paths]}
    if given:
        meta.update(
            {
                k: v
                for k, v in given[0].items()
                if k not in ("cases", "run", "seconds", "host", "shard")
            }
        )
        meta["run"] = sum(m.get("run", 0) for m in given if isinstance(m.get("run", 0), int))
        secs = [m.get("seconds") for m in given if isinstance(m.get("seconds"), int | float)]
        meta["seconds"] = max(secs, default=0.0)  # shards run side by side
        meta["host"] = ", ".join(sorted({str(m.get("host", "")) for m in given}))
        hashes = {m.get("spec_sha256") for m in given}
        meta["spec_sha256"] = (
            hashes.pop() if len(hashes) == 1 else "mixed: " + ", ".join(sorted(map(str, hashes)))
        )
    planned = planned_cases(given)
    if planned is not None:
        meta["cases"] = planned
    if held:
        meta["shards"] = held
    if missing:
        meta["shards_missing"] = missing
    return meta
