"""Expectations: known failures of a backend, kept in a YAML file next to the run.

    format: 1
    backend: torch                 # default for the entries below (optional)
    entries:
      - match: "some_op_backward/*/point=x-zero"   # case id or glob
        kind: xfail                # xfail | skip | flaky | waiver | deviation
        reason: PyTorch differs at x = 0 (see the spec's deviation)
        deviation: some_op_backward/x-zero-torch       # optional link to a spec deviation
        expires: 2027-06-30        # optional: after it the entry is ignored, with a warning
        version: "torch 2.*"       # optional glob on the backend's version string
      - match: "some_op_backward/*"                   # optional with `message` (default "*")
        message: could not create a primitive descriptor   # text in what the backend said
        kind: xfail
        reason: oneDNN bug of PyTorch 2.13 on some CPUs

The first entry whose match, backend, version and message fit a case decides. `skip`: the case
is not run. `xfail`: a failure becomes `xfail`, a pass becomes `xpass` (a failure under --strict).
`flaky` and `waiver`: a failure becomes `xfail`, a pass stays a pass. `deviation` (needs
`deviation:`): a failure becomes `deviation`, a pass stays a pass. An entry with `message` fits
only a case whose backend message or failure reason contains that text, so it can never turn a
pass into an xpass: it names a known bug wherever it shows up (any dtype, any CPU).

After the file's entries come the spec deviations that name the backend (`from_deviations`):
a failing case that exercises a deviation's clause (and fits its `cases` globs) becomes
`deviation`, so a gating run on the real library is not red for what the library knowingly does.
"""

from __future__ import annotations

import datetime as _dt
import fnmatch
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.verdicts import BROKEN
from conformance.yamlpos import YamlError
from conformance.yamlpos import load as load_yaml

KINDS = ("xfail", "skip", "flaky", "waiver", "deviation")
FAILING = BROKEN  # the verdicts an entry can explain
FIELDS = ("match", "message", "kind", "reason", "backend", "version", "expires", "deviation")


class ExpectationsError(ValueError):
    """A malformed expectations file (reported as file:line: message)."""


@dataclass(frozen=True)
class Entry:
    match: str
    kind: str
    reason: str
    backend: str | None = None
    version: str | None = None
    expires: _dt.date | None = None
    deviation: str | None = None
    line: int = 0
    message: str | None = None  # text the backend's message or the failure reason contains
    clause: str | None = None  # derived from a spec deviation: the case must exercise it
    cases: tuple[str, ...] = ()  # derived from a spec deviation: case-id globs (any fits)

    def applies(self, case_id: str, backend: str, version: str,
                rec: dict[str, Any] | None = None) -> bool:  # fmt: skip
        """Whether the entry fits a case; entries that look at what happened (message, clause)
        fit only when the record `rec` is given."""
        if self.backend and self.backend != backend:
            return False
        if self.version and not fnmatch.fnmatchcase(version, self.version):
            return False
        if not (case_id == self.match or fnmatch.fnmatchcase(case_id, self.match)):
            return False
        if self.cases and not any(fnmatch.fnmatchcase(case_id, g) for g in self.cases):
            return False
        if self.message is not None or self.clause is not None:
            if rec is None:
                return False
            if self.clause is not None and self.clause not in (rec.get("clauses") or ()):
                return False
            if self.message is not None:
                said = f"{rec.get('message') or ''}\n{rec.get('reason') or ''}"
                return self.message in said
        return True

    def expired(self, today: _dt.date) -> bool:
        return self.expires is not None and self.expires < today

    def to_yaml(self) -> dict[str, Any]:
        out: dict[str, Any] = {"match": self.match}
        if self.message is not None:
            out["message"] = self.message
        out.update(kind=self.kind, reason=self.reason)
        for key in ("backend", "version", "deviation"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        if self.expires:
            out["expires"] = self.expires.isoformat()
        return out


@dataclass
class Expectations:
    entries: list[Entry] = field(default_factory=list)
    path: str = ""
    backend: str | None = None
    warnings: list[str] = field(default_factory=list)
    # entries derived from the spec deviations naming the backend; consulted after `entries`
    derived: list[Entry] = field(default_factory=list)

    def find(self, case_id: str, backend: str, version: str,
             rec: dict[str, Any] | None = None) -> Entry | None:  # fmt: skip
        for e in (*self.entries, *self.derived):
            if e.applies(case_id, backend, version, rec):
                return e
        return None

    def apply(self, rec: dict[str, Any], backend: str, version: str) -> dict[str, Any]:
        """Turn a record's verdict into xfail/xpass/deviation as its entry says (in place)."""
        v = rec.get("verdict")
        if v not in (*FAILING, "pass"):
            return rec
        entry = self.find(rec["id"], backend, version, rec)
        if entry is None or entry.kind == "skip":
            return rec
        rec["expectation"] = {"match": entry.match, "kind": entry.kind, "reason": entry.reason}
        if entry.deviation:
            rec["expectation"]["deviation"] = entry.deviation
        if entry.message is not None:
            rec["expectation"]["message"] = entry.message
        if entry.line:
            rec["expectation"]["where"] = f"{self.path}:{entry.line}"
        if v in FAILING:
            rec["verdict_before_expectation"] = v
            rec["verdict"] = "deviation" if entry.kind == "deviation" else "xfail"
        elif entry.kind == "xfail":
            rec["verdict"] = "xpass"
            rec["reason"] = f"expected to fail ({entry.reason}) but passed"
        return rec


def from_deviations(registry: Any, backend: str) -> list[Entry]:
    """One `deviation` entry per spec deviation that names `backend` and a clause: a failing case
    exercising that clause (and fitting the deviation's `cases` globs) is that deviation."""
    out = []
    for spec in registry:
        for d in spec.deviations:
            if backend not in (d.backends or ()) or not d.clause:
                continue
            globs = tuple(f"{spec.name}/{g}" for g in d.cases)
            out.append(Entry(f"{spec.name}/*", "deviation", d.summary, backend,
                             deviation=spec.clause(d.id), clause=spec.clause(d.clause),
                             cases=globs))  # fmt: skip
    return out


def _date(value: Any, where: str) -> _dt.date | None:
    if value is None:
        return None
    if isinstance(value, _dt.date):
        return value
    try:
        return _dt.date.fromisoformat(str(value))
    except ValueError:
        raise ExpectationsError(f"{where}: expires must be a date like 2027-06-30") from None


def _entry(item: Any, where: str, default_backend: str | None, line: int) -> Entry:
    if not isinstance(item, dict):
        raise ExpectationsError(f"{where}: an entry must be a mapping")
    unknown = set(item) - set(FIELDS)
    if unknown:
        raise ExpectationsError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    required = ("kind", "reason") if "message" in item else ("match", "kind", "reason")
    for key in (*required, *(k for k in ("match", "message") if k in item)):
        if not isinstance(item.get(key), str) or not item[key].strip():
            raise ExpectationsError(f"{where}: `{key}` is required (text)")
    kind = item["kind"]
    if kind not in KINDS:
        raise ExpectationsError(f"{where}: kind must be one of {', '.join(KINDS)}")
    if kind == "skip" and "message" in item:
        raise ExpectationsError(f"{where}: a skip entry cannot match a message (a skipped case "
                                "never runs, so it says nothing); use xfail or waiver")  # fmt: skip
    if kind == "deviation" and not item.get("deviation"):
        raise ExpectationsError(f"{where}: kind deviation needs `deviation: <op>/<deviation id>`")
    return Entry(item.get("match", "*"), kind, item["reason"].strip(),
                 item.get("backend", default_backend), item.get("version"),
                 _date(item.get("expires"), where), item.get("deviation"), line,
                 item.get("message"))  # fmt: skip


def load(path: str | Path, today: _dt.date | None = None) -> Expectations:
    """Read an expectations file; expired entries are dropped with a warning each."""
    today = today or _dt.date.today()
    try:
        doc = load_yaml(path)
    except YamlError as exc:
        raise ExpectationsError(str(exc)) from None
    data = doc.data
    if not isinstance(data, dict) or data.get("format") != 1:
        raise ExpectationsError(f"{path}:1: not an expectations file (needs `format: 1`)")
    default_backend = data.get("backend")
    raw = data.get("entries") or []
    if not isinstance(raw, list):
        raise ExpectationsError(f"{path}:{doc.line(('entries',))}: entries must be a list")
    out = Expectations([], str(path), default_backend)
    for i, item in enumerate(raw):
        line = doc.line(("entries", i))
        entry = _entry(item, f"{path}:{line}", default_backend, line)
        if entry.expired(today):
            out.warnings.append(f"{path}:{line}: expectation for {entry.match!r} expired on "
                                f"{entry.expires}; ignored")  # fmt: skip
            continue
        out.entries.append(entry)
    return out


def updated(old: Expectations, records: list[dict[str, Any]], backend: str, version: str,
            today: _dt.date | None = None) -> list[Entry]:  # fmt: skip
    """The entries a file should hold after a run: every entry that still decides a failing
    (xfail) or skipped case keeps its reason; every unexplained failure gets an exact entry.
    Failures explained by a spec deviation need no entry."""
    today = today or _dt.date.today()
    keep: list[Entry] = []
    for e in old.entries:
        if any(_decided_by(r, e, old.path) for r in records):
            keep.append(e)
    new = []
    for r in records:
        if r.get("verdict") not in FAILING:
            continue
        reason = (r.get("reason") or r.get("verdict", "fail"))[:200]
        new.append(Entry(r["id"], "xfail", f"added {today.isoformat()}: {reason}", backend))
    return keep + new


def _decided_by(rec: dict[str, Any], e: Entry, path: str) -> bool:
    x = rec.get("expectation") or {}
    if rec.get("verdict") not in ("xfail", "skip") or x.get("match") != e.match:
        return False
    return x.get("where", f"{path}:{e.line}") == f"{path}:{e.line}" or not e.line


def write(path: str | Path, entries: list[Entry], backend: str | None) -> None:
    """Write `entries` to `path`. An existing file keeps its comments and the text of every
    entry still in `entries`: dropped entries are cut out, new ones appended."""
    from conformance.expectations_text import rewrite

    Path(path).write_text(rewrite(path, entries, backend), encoding="utf-8")


def shipped(backend: str) -> Path | None:
    """The expectations file this project ships for `backend`, if any."""
    import specs

    p = specs.root() / "expectations" / f"{backend}.yaml"
    return p if p.exists() else None
