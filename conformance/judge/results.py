"""Reading a results file back and summarising it: counts per op x product x dtype, failing
clauses, the failures themselves. Shared by the CLI summary and the report renderers."""

from __future__ import annotations

import json
import re
import stat
from array import array
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from ..files import safeio
from .result import Result, as_result
from .verdicts import FAILING

A = TypeVar("A")

MAX_META_BYTES = 16 << 20  # a .meta.json


#: Longest line read as one record: a longer one (a file that is not results, /dev/zero behind
#: a name) is counted as torn and skipped, never held whole.
MAX_LINE = 16 << 20

# Characters that must not reach a terminal, a Markdown file or a report raw: C0/C1 controls
# other than tab and newline (ESC starts terminal escapes, NUL breaks text tools), DEL, the
# bidirectional overrides that reorder what is shown, line separators, and lone surrogates
# (a non-UTF-8 file name read with surrogateescape; text that cannot be encoded at all).
_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2028\u2029"
    "\u2066-\u2069\ud800-\udfff]"
)


def _escape(m: re.Match) -> str:
    c = ord(m.group())
    if 0xDC80 <= c <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape): the byte itself
        return f"\\x{c - 0xDC00:02x}"
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def safe_text(value: Any) -> str:
    """`value` as text fit for a terminal and any report format: unsafe characters (see
    _UNSAFE) written as visible escapes (`\\x1b`, `\\xff` for a non-UTF-8 byte, `\\u202e`)."""
    s = value if isinstance(value, str) else str(value)
    return _UNSAFE.sub(_escape, s) if _UNSAFE.search(s) else s


def safe(obj: Any) -> Any:
    """A copy of a JSON value with every string (keys too) passed through safe_text."""
    if isinstance(obj, str):
        return safe_text(obj)
    if isinstance(obj, dict):
        return {safe_text(k): safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [safe(v) for v in obj]
    return obj


class ResultsFileError(ValueError):
    """A results file that cannot be read: missing, a directory, a FIFO or a device."""


def _parse(raw: bytes, i: int) -> tuple[dict[str, Any] | None, str]:
    """The record of one line, or None and why it is not one."""
    try:
        rec = json.loads(raw)
    except UnicodeDecodeError:  # bytes that are not UTF-8: kept as escapes, never fatal
        try:
            rec = json.loads(raw.decode("utf-8", "surrogateescape"))
        except (json.JSONDecodeError, RecursionError):
            return None, f"line {i}: not JSON (not UTF-8 text either)"
    except json.JSONDecodeError as exc:
        return None, f"line {i}: not JSON ({exc.msg})"
    except RecursionError:
        return None, f"line {i}: JSON nested too deeply"
    if not (isinstance(rec, dict) and "id" in rec and "verdict" in rec):
        return None, f"line {i}: not a result record (needs 'id' and 'verdict')"
    return rec, ""


def _lines(f: BinaryIO) -> Iterator[tuple[int, bytes | None]]:
    """(line number, bytes) of each line of f; None for a line over MAX_LINE (skipped)."""
    i = 0
    while True:
        raw = f.readline(MAX_LINE)
        if not raw:
            return
        i += 1
        if len(raw) == MAX_LINE and not raw.endswith(b"\n"):
            while (more := f.readline(MAX_LINE)) and not more.endswith(b"\n"):
                pass
            yield i, None
            continue
        yield i, raw


def check_readable(path: str | Path) -> Path:
    """path, once known to be a regular file: a FIFO would block and a device never ends."""
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise ResultsFileError(f"{p}: no such results file") from None
    if stat.S_ISDIR(st.st_mode):
        raise ResultsFileError(f"{p}: is a directory, not a results .jsonl file")
    if not stat.S_ISREG(st.st_mode):
        raise ResultsFileError(
            f"{p}: not a regular file ({safeio.kind_of(st.st_mode)}); give a results file"
        )
    return p


class Stream:
    """A results file read one line at a time, as often as needed, in memory that does not grow
    with the records (only by 16 bytes a record: a hash of its id and its line number, to find
    an id recorded twice). Iterating yields each line's record; `torn`, `first_bad`, `lines` and
    `records` describe the last complete pass. An id recorded twice (a file extended by hand or
    by a resumed run of an older version) counts once, by its last record: `fold` makes a second
    pass that skips the superseded lines when the first found any (`duplicates`).

    `clean`: strings made safe for display (safe_text) -- for reports, never for what is matched
    by id (resume, merge, diff keys). `opener`: where the bytes come from (the run's own file
    descriptor, so that its reports are of what it wrote even if the path was replaced)."""

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        opener: Callable[[], BinaryIO] | None = None,
        clean: bool = False,
    ):
        self.path = Path(path) if path is not None else None
        if opener is None:
            if self.path is None:
                raise ValueError("Stream needs a path or an opener")
            check_readable(self.path)
        # a FIFO or a device is refused again when opened (swapped after the check?)
        self._open = opener or (lambda: safeio.open_regular(self.path))  # type: ignore[arg-type]
        self.clean = clean
        self.torn = 0
        self.first_bad = ""
        self.lines = 0  # non-blank lines
        self.records = 0
        self.duplicates = 0  # records superseded by a later one of the same id
        self._skip: frozenset[int] = frozenset()
        self._resolved = False

    def __iter__(self) -> Iterator[Result]:
        track = not self._resolved
        hashes, where = array("q"), array("q")
        torn = lines = count = 0
        first_bad = ""
        skip = self._skip
        with self._open() as f:
            for i, raw in _lines(f):
                if raw is None:
                    lines += 1
                    torn += 1
                    first_bad = first_bad or f"line {i}: longer than {MAX_LINE >> 20} MiB"
                    continue
                if not raw.strip():
                    continue
                lines += 1
                if i in skip:
                    continue
                rec, why = _parse(raw, i)
                if rec is None:
                    torn += 1
                    first_bad = first_bad or why
                    continue
                if self.clean and not (raw.isascii() and b"\\u" not in raw):
                    rec = safe(rec)
                if track:
                    hashes.append(hash(str(rec["id"])))
                    where.append(i)
                count += 1
                yield Result.from_json(rec)
        self.torn, self.first_bad, self.lines, self.records = torn, first_bad, lines, count
        if track:
            self._find_duplicates(hashes, where)

    def _find_duplicates(self, hashes: array, where: array) -> None:
        """Mark the lines whose id a later line records again (exactly: ids of equal hash are
        read back and compared)."""
        import numpy as np

        self._resolved = True
        if len(hashes) < 2:
            return
        h = np.frombuffer(hashes, dtype=np.int64)
        order = np.argsort(h, kind="stable")
        hs = h[order]
        same = hs[1:] == hs[:-1]
        if not same.any():
            return
        member = np.zeros(len(hs), dtype=bool)
        member[1:] |= same
        member[:-1] |= same
        candidates = set(np.frombuffer(where, dtype=np.int64)[order[member]].tolist())
        last: dict[str, int] = {}
        superseded = set()
        with self._open() as f:
            for i, raw in _lines(f):
                if i not in candidates or raw is None:
                    continue
                rec, _ = _parse(raw, i)
                if rec is None:
                    continue
                key = str(rec["id"])
                if key in last:
                    superseded.add(last[key])
                last[key] = i
        self._skip = frozenset(superseded)
        self.duplicates = len(superseded)
        self.records -= len(superseded)

    def fold(self, new: Callable[[], A]) -> A:
        """An accumulator (new(), then .add(rec) for every record) over each case's last record:
        one pass, or two when the first found an id recorded twice."""
        acc = new()
        for rec in self:
            acc.add(rec)  # type: ignore[attr-defined]
        if self.duplicates:
            acc = new()
            for rec in self:
                acc.add(rec)  # type: ignore[attr-defined]
        return acc


@dataclass
class Read:
    """What a JSONL results file holds: each case's last record, and the lines that were not
    records (a line torn by a kill, or foreign text), with the first of them described."""

    records: list[Result]
    torn: int = 0
    first_bad: str = ""
    lines: int = 0  # non-blank lines


def read_jsonl(path: str | Path) -> Read:
    """All the records of a results file in memory (small files; tests): later records for an
    id replace earlier ones; a line that is not a JSON record with `id` and `verdict` is
    counted, never fatal. Reports and summaries use Stream instead."""
    stream = Stream(path)
    by_id: dict[str, Result] = {}
    for rec in stream:
        by_id[str(rec.id)] = rec
    return Read(list(by_id.values()), stream.torn, stream.first_bad, stream.lines)


def load(path: str | Path) -> list[Result]:
    """Records of a JSONL results file; later records for an id replace earlier ones."""
    return read_jsonl(path).records


def dtype_tag(rec: Result) -> str:
    """Short dtypes in parameter order (as in case ids); recorded by the runner."""
    if rec.dtype_tag:
        return str(rec.dtype_tag)
    from ..acl import dtypes as dt

    names = list((rec.dtypes or {}).values())
    try:
        return dt.tag(names)
    except ValueError:  # a dtype this version does not know: its name as written
        return names[0] if len(set(names)) == 1 else ".".join(names)


def matrix_column(rec: Result) -> str:
    """The dtype column of the summary matrix: the output dtype, or `neg` for negative cases."""
    if rec.kind == "negative":
        return "neg"
    out = rec.out_dtype
    if out:
        from ..acl import dtypes as dt

        try:
            return dt.get(out).short
        except ValueError:
            return str(out)
    return dtype_tag(rec)


#: Failures a Summary keeps (slim: id, verdict, reason, message, replay) for the console.
FAILURES_KEPT = 100


@dataclass
class Summary:
    """Counts of a run, kept as records arrive (`add`): the console summary and the exit code
    come from this, never from reading the results file back. Memory is bounded by the ops,
    products, dtypes and clauses, not by the cases: of the failures, the first FAILURES_KEPT
    are kept (slim) to be listed."""

    total: int = 0
    verdicts: Counter = field(default_factory=Counter)
    matrix: dict[tuple[str, str, str], Counter] = field(
        default_factory=lambda: defaultdict(Counter)
    )
    failing_clauses: Counter = field(default_factory=Counter)
    failures: list[Result] = field(default_factory=list)

    @property
    def failed(self) -> int:
        return sum(self.verdicts[v] for v in FAILING)

    def add(self, rec: Result | dict[str, Any]) -> None:
        rec = as_result(rec)
        v = rec.verdict
        self.total += 1
        self.verdicts[v] += 1
        key = (str(_or(rec.op, "?")), str(_or(rec.product, "?")), matrix_column(rec))
        self.matrix[key][v] += 1
        if v in FAILING:
            if len(self.failures) < FAILURES_KEPT:
                self.failures.append(
                    Result(rec.id, v, rec.reason, message=rec.message, replay=rec.replay)
                )
            for c in rec.clauses or ["(no clause)"]:
                self.failing_clauses[str(c)] += 1


def _or(value: Any, default: Any) -> Any:
    """`value`, or `default` where the record has none (unset, or null)."""
    return default if value is None else value


def summarise(records: Iterable[Result | dict[str, Any]]) -> Summary:
    s = Summary()
    for rec in records:
        s.add(rec)
    return s
