"""Expectations: known failures of a backend, kept in a YAML file next to the run.

    format: 1
    backend: torch                 # default for the entries below (optional)
    entries:
      - match: "hardshrink_backward/*/point=x-zero-negative-lambd"   # case id or glob
        kind: xfail                # xfail | skip | flaky | waiver
        reason: PyTorch does not clamp a negative lambda
        deviation: hardshrink_backward/negative-lambd-torch           # optional link to a spec
        expires: 2027-06-30        # optional: after it the entry is ignored, with a warning
        version: "torch 2.*"       # optional glob on the backend's version string

The first entry whose match, backend and version fit a case decides. `skip`: the case is not
run. `xfail`: a failure becomes `xfail`, a pass becomes `xpass` (a failure under --strict).
`flaky` and `waiver`: a failure becomes `xfail`, a pass stays a pass.
"""

from __future__ import annotations

import datetime as _dt
import fnmatch
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from conformance.yamlpos import YamlError
from conformance.yamlpos import load as load_yaml

KINDS = ("xfail", "skip", "flaky", "waiver")
FAILING = ("fail", "error", "crash", "timeout")


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

    def applies(self, case_id: str, backend: str, version: str) -> bool:
        if self.backend and self.backend != backend:
            return False
        if self.version and not fnmatch.fnmatchcase(version, self.version):
            return False
        return case_id == self.match or fnmatch.fnmatchcase(case_id, self.match)

    def expired(self, today: _dt.date) -> bool:
        return self.expires is not None and self.expires < today

    def to_yaml(self) -> dict[str, Any]:
        out: dict[str, Any] = {"match": self.match, "kind": self.kind, "reason": self.reason}
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

    def find(self, case_id: str, backend: str, version: str) -> Entry | None:
        for e in self.entries:
            if e.applies(case_id, backend, version):
                return e
        return None

    def apply(self, rec: dict[str, Any], backend: str, version: str) -> dict[str, Any]:
        """Turn a record's verdict into xfail/xpass as its entry says (in place, returned)."""
        entry = self.find(rec["id"], backend, version)
        if entry is None or entry.kind == "skip":
            return rec
        v = rec.get("verdict")
        rec["expectation"] = {"match": entry.match, "kind": entry.kind, "reason": entry.reason}
        if v in FAILING:
            rec["verdict_before_expectation"] = v
            rec["verdict"] = "xfail"
        elif v == "pass" and entry.kind == "xfail":
            rec["verdict"] = "xpass"
            rec["reason"] = f"expected to fail ({entry.reason}) but passed"
        return rec


def _date(value: Any, where: str) -> _dt.date | None:
    if value is None:
        return None
    if isinstance(value, _dt.date):
        return value
    try:
        return _dt.date.fromisoformat(str(value))
    except ValueError:
        raise ExpectationsError(f"{where}: expires must be a date like 2027-06-30") from None


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
        where = f"{path}:{doc.line(('entries', i))}"
        if not isinstance(item, dict):
            raise ExpectationsError(f"{where}: an entry must be a mapping")
        unknown = set(item) - {
            "match",
            "kind",
            "reason",
            "backend",
            "version",
            "expires",
            "deviation",
        }
        if unknown:
            raise ExpectationsError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
        for key in ("match", "kind", "reason"):
            if not isinstance(item.get(key), str) or not item[key].strip():
                raise ExpectationsError(f"{where}: `{key}` is required (text)")
        if item["kind"] not in KINDS:
            raise ExpectationsError(f"{where}: kind must be one of {', '.join(KINDS)}")
        entry = Entry(item["match"], item["kind"], item["reason"].strip(),
                      item.get("backend", default_backend), item.get("version"),
                      _date(item.get("expires"), where), item.get("deviation"),
                      doc.line(("entries", i)))  # fmt: skip
        if entry.expired(today):
            out.warnings.append(f"{where}: expectation for {entry.match!r} expired on "
                                f"{entry.expires}; ignored")  # fmt: skip
            continue
        out.entries.append(entry)
    return out


def updated(old: Expectations, records: list[dict[str, Any]], backend: str, version: str,
            today: _dt.date | None = None) -> list[Entry]:  # fmt: skip
    """The entries a file should hold after a run: every entry that still matches a failing
    (or xfail) case keeps its reason; every failing case without one gets an exact entry."""
    today = today or _dt.date.today()
    failing = [r for r in records if r.get("verdict") in (*FAILING, "xfail")]
    skipped_by_entry = [r for r in records if r.get("verdict") == "skip" and r.get("expectation")]
    keep: list[Entry] = []
    for e in old.entries:
        if e.kind == "skip":
            if any(e.applies(r["id"], backend, version) for r in skipped_by_entry):
                keep.append(e)
        elif any(e.applies(r["id"], backend, version) for r in failing):
            keep.append(e)
    new = []
    for r in failing:
        if any(e.applies(r["id"], backend, version) for e in keep):
            continue
        reason = (r.get("reason") or r.get("verdict", "fail"))[:200]
        new.append(Entry(r["id"], "xfail", f"added {today.isoformat()}: {reason}", backend))
    return keep + new


def write(path: str | Path, entries: list[Entry], backend: str | None) -> None:
    doc: dict[str, Any] = {"format": 1}
    if backend:
        doc["backend"] = backend
    doc["entries"] = [{k: v for k, v in e.to_yaml().items() if not (k == "backend" and v == backend)}
                      for e in entries]  # fmt: skip
    header = "# Expectations (see README, 'Expectations'); rewritten by --update-expectations.\n"
    Path(path).write_text(header + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100),
                          encoding="utf-8")  # fmt: skip


def shipped(backend: str) -> Path | None:
    """The expectations file this project ships for `backend`, if any."""
    import specs

    p = specs.root() / "expectations" / f"{backend}.yaml"
    return p if p.exists() else None
