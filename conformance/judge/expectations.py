"""Expectations: known failures of a backend, kept in a YAML file next to the run.

    format: 1
    backend: torch                 # default for the entries below (optional)
    entries:
      - binding: aten::some_op_backward                     # the kernel the backend called
        message: could not create a primitive descriptor  # text in what the backend said
        kind: xfail                # xfail | skip | flaky | waiver | deviation
        reason: oneDNN bug of PyTorch 2.13 on some CPUs
      - binding: aten::some_op_backward
        dtypes: {any: [BF16], mixed: true}   # the call's dtypes (conformance/spec/dtypecond.py)
        differs: values            # only an output mismatch (status | values | nonfinite)
        kind: waiver
        reason: ...
      - match: "some_op/*/point=x-zero"   # case id or glob (user files; default "*")
        kind: xfail
        reason: ...
        verdicts: [fail, crash]    # what it excuses (default [fail])
        deviation: some_op/x-zero-torch   # optional link to a spec deviation
        expires: 2027-06-30        # optional: after it the entry is ignored, with a warning
        version: "torch 2.*"       # optional glob on the backend's version string

An entry selects by what fails, not by our spec names: `binding` (the backend's binding of the
call, `aten::<op>` from the spec's `bindings:`, `jax::<name>`), `dtypes`, `message` (text in the
backend's message or the failure reason), `differs` (the kind of failure) and `verdicts`; `match`
(a case-id glob) remains for hand-made files. The first entry that fits a case decides. `skip`:
the case is not run. `xfail`: a failure becomes `xfail`, a pass becomes `xpass` (a failure under
--strict). `flaky` and `waiver`: a failure becomes `xfail`, a pass stays a pass. `deviation`
(needs `deviation:`): a failure becomes `deviation`, a pass stays a pass. A crash, timeout or
error is excused only by an entry whose `verdicts` names it. An entry that looks at what
happened (message, differs) fits only a failing case, so it never turns a pass into an xpass.

The spec deviations that name the backend are applied by the judge itself
(conformance/judge/deviations.py): they need the case's values, not only its record.
"""

from __future__ import annotations

import datetime as _dt
import fnmatch
import hashlib
import json
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from ..spec import dtypecond
from ..spec.yamlpos import YamlError
from ..spec.yamlpos import load as load_yaml
from .deviations import gating
from .result import Result, as_result
from .verdicts import BROKEN

KINDS = ("xfail", "skip", "flaky", "waiver", "deviation")
FAILING = BROKEN  # the verdicts an entry can explain
DIFFERS = ("status", "values", "nonfinite")
FIELDS = ("match", "message", "kind", "reason", "backend", "version", "expires", "deviation",
          "binding", "dtypes", "verdicts", "differs", "within")  # fmt: skip
WITHIN = ("abs", "rel")  # bounds on a failed output's largest error (its stats' max_abs, max_rel)


class ExpectationsError(ValueError):
    """A malformed expectations file (reported as file:line: message)."""


def _catch_all(glob: str) -> bool:
    """A glob that every case id fits (`*`, `*/*`, `**`)."""
    return set(glob) <= {"*", "/"}


@dataclass
class CaseFacts:
    """What is known of a case before it runs (the runner's `item_facts`): what a skip entry
    selects by. A Result has the same fields, so an entry fits either."""

    id: str
    binding: str | None = None
    dtypes: dict[str, str] | None = None
    outputs: list[str] | None = None


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
    binding: str | None = None  # glob on the record's binding (aten::some_op_backward)
    dtypes: dtypecond.DtypeCondition | None = None
    verdicts: tuple[str, ...] = ("fail",)  # the failing verdicts it excuses
    differs: str | None = None  # only a failure of this kind (status | values | nonfinite)
    # only a values failure whose every failed output errs by at most these (max_abs, max_rel),
    # with NaN/inf where expected: a known imprecision, not any wrong value
    within: tuple[tuple[str, float], ...] | None = None
    raw_dtypes: Any = field(default=None, compare=False, repr=False)

    @property
    def looks_at_outcome(self) -> bool:
        """Fits only a case that failed (it reads the backend's message or the failure)."""
        return self.message is not None or self.differs is not None

    @property
    def narrowing(self) -> list[str]:
        """The keys by which the entry selects cases (none: it fits every case)."""
        keys = [] if _catch_all(self.match) else ["match"]
        keys += [
            k
            for k in ("message", "binding", "dtypes", "version", "differs", "within")
            if getattr(self, k) is not None
        ]
        return keys

    @cached_property
    def _literal(self) -> str:
        """The match glob's literal start: every id it fits begins with it (a cheap first test)."""
        return re.split(r"[*?\[]", self.match, maxsplit=1)[0]

    def fits_call(self, rec: Result | CaseFacts, backend: str, version: str) -> bool:
        """Whether the entry selects this case before anything ran: backend, version, match,
        binding and dtypes (`rec`: at least id, and binding/dtypes/outputs when known)."""
        if self.backend and self.backend != backend:
            return False
        if self.version and not fnmatch.fnmatchcase(version, self.version):
            return False
        case_id = str(rec.id)
        if not case_id.startswith(self._literal):
            return False
        if not (case_id == self.match or fnmatch.fnmatchcase(case_id, self.match)):
            return False
        if self.binding is not None:
            bound = rec.binding
            if not bound or not fnmatch.fnmatchcase(str(bound), self.binding):
                return False
        if self.dtypes is not None:
            dtypes = rec.dtypes
            if not isinstance(dtypes, dict) or not dtypes:
                return False
            if not self.dtypes.matches(dtypes, rec.outputs or ()):
                return False
        return True

    def fits_outcome(self, rec: Result) -> bool:
        """Whether the entry explains what happened to a judged case."""
        verdict = rec.verdict
        if verdict == "pass":
            return not self.looks_at_outcome
        if verdict not in self.verdicts:
            return False
        if self.differs is not None:
            got = rec.differs
            kinds = ("values", "nonfinite") if self.differs == "values" else (self.differs,)
            if verdict != "fail" or got not in kinds:
                return False
        if self.within is not None and not self._within(rec):
            return False
        if self.message is not None:
            said = f"{rec.message or ''}\n{rec.reason or ''}"
            return self.message in said
        return True

    def _within(self, rec: Result) -> bool:
        """Every output that failed errs by no more than the entry's bounds, and places NaN and
        inf where the expected values have them (a record without statistics does not fit)."""
        failed = [
            c
            for c in (rec.comparisons or {}).values()
            if isinstance(c, dict) and not c.get("passed", True)
        ]
        if rec.differs != "values" or not failed:
            return False
        for comp in failed:
            stats = comp.get("stats") or {}
            if stats.get("nan_mismatches", 1) or stats.get("inf_mismatches", 1):
                return False
            for key, limit in self.within or ():
                err = stats.get(f"max_{key}")
                if not isinstance(err, int | float) or not err <= limit:
                    return False
        return True

    def applies(self, case_id: str, backend: str, version: str, rec: Result | None = None) -> bool:
        """Whether the entry fits a case; with no record, only entries that need nothing but
        the id fit (a skip decided before the run)."""
        if rec is None:
            if self.looks_at_outcome or self.binding or self.dtypes:
                return False
            return self.fits_call(CaseFacts(case_id), backend, version)
        facts = CaseFacts(case_id, rec.binding, rec.dtypes, rec.outputs)
        return self.fits_outcome(rec) and self.fits_call(facts, backend, version)

    def expired(self, today: _dt.date) -> bool:
        return self.expires is not None and self.expires < today

    def where(self, path: str) -> str:
        return f"{path}:{self.line}" if self.line else path

    def describe(self) -> str:
        """The entry's keys for a message: `match '*'`, `message 'e'`."""
        keys = self.narrowing or ["match"]
        return ", ".join(f"{k} {self._show(k)}" for k in keys)

    def _show(self, key: str) -> str:
        value = getattr(self, key)
        if key == "dtypes":
            return json.dumps(value.to_json())
        if key == "within":
            return json.dumps(dict(value))
        return repr(value)

    def to_yaml(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.match != "*" or not (self.binding or self.message or self.dtypes):
            out["match"] = self.match
        for key in ("binding", "message"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.dtypes is not None:
            out["dtypes"] = self.raw_dtypes or self.dtypes.to_json()
        if self.differs:
            out["differs"] = self.differs
        if self.within is not None:
            out["within"] = dict(self.within)
        out.update(kind=self.kind, reason=self.reason)
        if self.verdicts != ("fail",):
            out["verdicts"] = list(self.verdicts)
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
    sha256: str = ""  # of the file's bytes ("" when there is no file)
    # how many judged cases each entry decided (by index), for --strict's "proves nothing"
    decided: dict[int, int] = field(default_factory=dict)

    def find(
        self, case_id: str, backend: str, version: str, rec: Result | dict[str, Any] | None = None
    ) -> Entry | None:
        """The first entry that fits the case (`rec`: its record, or that record's JSON object)."""
        rec = None if rec is None else as_result(rec)
        for e in self.entries:
            if e.applies(case_id, backend, version, rec):
                return e
        return None

    def skip_entry(self, facts: CaseFacts, backend: str, version: str) -> Entry | None:
        """The `skip` entry that keeps a case from running, decided before it runs from what is
        known of it (`facts`: id, and binding, dtypes and outputs where known)."""
        for e in self.entries:
            if e.kind == "skip" and e.fits_call(facts, backend, version):
                return e
        return None

    def apply(self, rec: Result | dict[str, Any], backend: str, version: str) -> Result:
        """Turn a record's verdict into xfail/xpass/deviation as its entry says (in place; a
        record given as its JSON object is read into a Result first, which is returned)."""
        rec = as_result(rec)
        v = rec.verdict
        if v not in (*FAILING, "pass"):
            return rec
        entry = None
        for i, e in enumerate(self.entries):
            if e.kind != "skip" and e.applies(rec.id, backend, version, rec):
                entry = e
                if v in FAILING:
                    self.decided[i] = self.decided.get(i, 0) + 1
                break
        if entry is None:
            return rec
        said = rec.expectation = {"match": entry.match, "kind": entry.kind, "reason": entry.reason}
        for key in ("deviation", "message", "binding", "differs"):
            if getattr(entry, key) is not None:
                said[key] = getattr(entry, key)
        if entry.within is not None:
            said["within"] = dict(entry.within)
        if entry.line:
            said["where"] = f"{self.path}:{entry.line}"
        if v in FAILING:
            rec.verdict_before_expectation = v
            rec.verdict = "deviation" if entry.kind == "deviation" else "xfail"
        elif entry.kind == "xfail":
            rec.verdict = "xpass"
            rec.reason = f"expected to fail ({entry.reason}) but passed"
        return rec

    def unnarrowed(self) -> list[Entry]:
        """Entries that fit every case (no match glob, binding, dtypes, message, version or
        differs): under --strict they would make any run green."""
        return [e for e in self.entries if not e.narrowing]

    def excused_everything(self, judged: int) -> list[Entry]:
        """Entries with no selection of their own but a message or a failure kind that
        decided every one of the `judged` cases: under --strict such a run proved nothing."""
        out = []
        for i, e in enumerate(self.entries):
            own = [k for k in e.narrowing if k not in ("message", "differs")]
            if judged and not own and self.decided.get(i, 0) >= judged:
                out.append(e)
        return out


def fingerprint(expect: Expectations | None, registry: Any, backend: str) -> str:
    """The sha256 of everything in the expectations that decides a verdict of `backend`: the
    expectations file's bytes and the spec deviations that gate this backend ("none" when the
    expectations are off). Recorded with the results, so --resume never keeps verdicts that
    other expectations decided."""
    if expect is None:
        return "none"
    h = hashlib.sha256(b"expectations\0" + expect.sha256.encode() + b"\0")
    for spec in sorted(registry, key=lambda s: s.name) if registry is not None else ():
        for d in gating(spec, backend):
            h.update(json.dumps([spec.name, spec.sha256, d.id], sort_keys=True).encode())
    return h.hexdigest()


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
    selects = [k for k in ("match", "message", "binding", "dtypes") if k in item]
    if not selects:
        raise ExpectationsError(
            f"{where}: an entry needs `match` (a case-id glob), `binding`, "
            "`dtypes` or `message` to say which cases it is about"
        )
    for key in ("kind", "reason", *(k for k in ("match", "message", "binding") if k in item)):
        if not isinstance(item.get(key), str) or not item[key].strip():
            raise ExpectationsError(f"{where}: `{key}` is required (text)")
    for key in ("backend", "version", "deviation"):
        if key in item and (not isinstance(item[key], str) or not item[key].strip()):
            raise ExpectationsError(f"{where}: `{key}` must be text")
    kind = item["kind"]
    if kind not in KINDS:
        raise ExpectationsError(f"{where}: kind must be one of {', '.join(KINDS)}")
    if kind == "skip" and ("message" in item or "differs" in item or "verdicts" in item):
        raise ExpectationsError(
            f"{where}: a skip entry cannot match a message, a failure kind or "
            "verdicts (a skipped case never runs, so it says nothing); use "
            "xfail or waiver"
        )
    if kind == "deviation" and not item.get("deviation"):
        raise ExpectationsError(f"{where}: kind deviation needs `deviation: <op>/<deviation id>`")
    cond = None
    if "dtypes" in item:
        try:
            cond = dtypecond.parse(item["dtypes"])
        except dtypecond.DtypeConditionError as exc:
            raise ExpectationsError(f"{where}: {exc}") from None
    verdicts = item.get("verdicts", ["fail"])
    if isinstance(verdicts, str):
        verdicts = [verdicts]
    if not isinstance(verdicts, list) or not verdicts or any(v not in FAILING for v in verdicts):
        raise ExpectationsError(
            f"{where}: verdicts must list some of {', '.join(FAILING)} (what "
            "the entry excuses; default [fail])"
        )
    differs = item.get("differs")
    if differs is not None:
        if differs not in DIFFERS:
            raise ExpectationsError(f"{where}: differs must be one of {', '.join(DIFFERS)}")
        if "fail" not in verdicts:
            raise ExpectationsError(
                f"{where}: differs says what kind of failure is excused, so "
                "verdicts must include fail"
            )
    within = _within(item.get("within"), differs, where) if "within" in item else None
    return Entry(
        item.get("match", "*"),
        kind,
        item["reason"].strip(),
        item.get("backend", default_backend),
        item.get("version"),
        _date(item.get("expires"), where),
        item.get("deviation"),
        line,
        item.get("message"),
        item.get("binding"),
        cond,
        tuple(verdicts),
        differs,
        within,
        item.get("dtypes"),
    )


def _within(value: Any, differs: str | None, where: str) -> tuple[tuple[str, float], ...]:
    """`within: {abs: X, rel: Y}`: finite positive bounds, on an entry about values."""
    if differs != "values":
        raise ExpectationsError(
            f"{where}: `within` bounds a values failure, so it needs `differs: values`"
        )
    if not isinstance(value, dict) or not value or set(value) - set(WITHIN):
        raise ExpectationsError(
            f"{where}: within must map some of {', '.join(WITHIN)} to a "
            "number (the largest error excused)"
        )
    out = []
    for key in WITHIN:
        if key in value:
            x = value[key]
            if isinstance(x, bool) or not isinstance(x, int | float) or not 0 < x < float("inf"):
                raise ExpectationsError(f"{where}: within.{key} must be a finite number > 0")
            out.append((key, float(x)))
    return tuple(out)


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
    if default_backend is not None and (
        not isinstance(default_backend, str) or not default_backend
    ):
        raise ExpectationsError(f"{path}:{doc.line(('backend',))}: backend must be text")
    raw = data.get("entries") or []
    if not isinstance(raw, list):
        raise ExpectationsError(f"{path}:{doc.line(('entries',))}: entries must be a list")
    out = Expectations([], str(path), default_backend)
    out.sha256 = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    for i, item in enumerate(raw):
        line = doc.line(("entries", i))
        entry = _entry(item, f"{path}:{line}", default_backend, line)
        if entry.expired(today):
            out.warnings.append(
                f"{path}:{line}: expectation for {entry.match!r} expired on "
                f"{entry.expires}; ignored"
            )
            continue
        out.entries.append(entry)
    return out


def updated(
    old: Expectations,
    records: list[Result] | list[dict[str, Any]],
    backend: str,
    version: str,
    today: _dt.date | None = None,
) -> list[Entry]:
    """The entries a file should hold after a run: every entry that still decides a failing
    (xfail) or skipped case keeps its reason; every unexplained failure gets an exact entry.
    Failures explained by a spec deviation need no entry."""
    today = today or _dt.date.today()
    records = [as_result(r) for r in records]
    keep: list[Entry] = []
    for e in old.entries:
        if any(_decided_by(r, e, old.path) for r in records):
            keep.append(e)
    new = []
    for r in records:
        if r.verdict not in FAILING:
            continue
        reason = (r.reason or r.verdict or "fail")[:200]
        new.append(Entry(r.id, "xfail", f"added {today.isoformat()}: {reason}", backend))
    return keep + new


def _decided_by(rec: Result, e: Entry, path: str) -> bool:
    x = rec.expectation or {}
    if rec.verdict not in ("xfail", "skip") or x.get("match") != e.match:
        return False
    return x.get("where", f"{path}:{e.line}") == f"{path}:{e.line}" or not e.line


def write(path: str | Path, entries: list[Entry], backend: str | None) -> None:
    """Write `entries` to `path`. An existing file keeps its comments and the text of every
    entry still in `entries`: dropped entries are cut out, new ones appended."""
    from .expectations_text import rewrite

    Path(path).write_text(rewrite(path, entries, backend), encoding="utf-8")


def shipped(backend: str) -> Path | None:
    """The expectations file this project ships for `backend`, if any."""
    from ... import specs

    p = specs.root() / "expectations" / f"{backend}.yaml"
    return p if p.exists() else None
