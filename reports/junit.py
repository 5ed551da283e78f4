"""JUnit XML in the Jenkins / Ant format that CI systems read (GitLab, Jenkins, GitHub actions).

One <testsuite> per op, one <testcase> per case: classname `op.product.dtypes`, name the case id.
fail -> <failure>; error, crash, timeout -> <error>; skip -> <skipped>; xfail -> <skipped> with
the expectation's reason; deviation -> <skipped message="deviation <op>/<id>: reason"> (a failure
the spec documents as a deviation of the library: no failure of the run); xpass -> <failure> (it
was expected to fail). Failure texts carry the statistics, the worst elements and the replay
command.
"""

from __future__ import annotations

import re
import tempfile
import xml.etree.ElementTree as ET
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ..conformance.judge.result import Result, as_result
from .output import write_atomic
from .run import (
    ERRORS,
    EXPLAINED,
    InfoTally,
    deviation_id,
    dtype_tag,
    fmt,
    num,
    or_,
    stats_of,
    worst_elements,
)
from .ulpnote import small_value_notes

# Characters XML 1.0 does not allow (control characters other than tab, LF, CR; lone surrogates)
_BAD_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
STATS_LINE = ("max_ulp", "max_rel", "max_abs", "mere", "mare", "mismatches", "compared",
              "mismatch_ratio", "nan_mismatches", "inf_mismatches")  # fmt: skip


def xml_text(value: Any) -> str:
    return _BAD_XML.sub("\ufffd", str(value if value is not None else ""))


def counts(records: Iterable[Result]) -> dict[str, int]:
    """tests / failures / errors / skipped as the JUnit attributes count them."""
    return _counts(Counter(r.verdict for r in records))


def details(rec: Result) -> str:
    """The body of a <failure>/<error>: what a person needs to understand and replay the case."""
    lines = [f"case: {rec.id}"]
    if rec.reason:
        lines.append(f"reason: {rec.reason}")
    if rec.message:
        lines.append(f"backend message: {rec.message}")
    if rec.expected_status is not None or rec.actual_status is not None:
        st = [getattr(rec, k) for k in ("expected_status", "oracle_status", "actual_status")]
        st = ["—" if x is None else x for x in st]
        lines.append(f"status: expected {st[0]}, oracle {st[1]}, actual {st[2]}")
    dtypes = rec.dtypes or {}
    for name, lay in (rec.layouts or {}).items():
        lines.append(
            f"  {name}: {dtypes.get(name, '?')} shape {lay.get('shape')} strides "
            f"{lay.get('strides')} offset {lay.get('offset')}"
        )
    st = stats_of(rec)
    if any(st[k] is not None for k in STATS_LINE):
        lines.append(
            "stats: " + ", ".join(f"{k} {fmt(st[k])}" for k in STATS_LINE if st[k] is not None)
        )
    for note in small_value_notes(rec):
        lines.append(f"note on {note.output}: {note.long()}")
    worst = worst_elements(rec, limit=5)
    if worst:
        lines.append("worst elements:")
        for w in worst:
            lines.append(
                f"  {w.get('output', '')}{w.get('index')}: expected {w.get('expected')} "
                f"actual {w.get('actual')} (abs {fmt(w.get('abs_err'))}, rel "
                f"{fmt(w.get('rel_err'))}, ulp {fmt(w.get('ulp'))})"
            )
    if rec.clauses:
        lines.append("clauses: " + ", ".join(rec.clauses))
    if rec.expectation:
        e = rec.expectation
        dev = f" (deviation {e['deviation']})" if e.get("deviation") else ""
        lines.append(f"expectation: {e.get('kind')} {e.get('match')!r}{dev}: {e.get('reason')}")
    if rec.replay:
        lines.append(f"replay: {rec.replay}")
    return "\n".join(lines)


def _message(rec: Result) -> str:
    v = rec.verdict
    reason = " ".join(str(rec.reason or "").split())
    st = stats_of(rec)
    tail = ""
    if st["max_ulp"] is not None:
        tail = f" [max_ulp {fmt(st['max_ulp'])}, max_rel {fmt(st['max_rel'])}]"
    text = f"{v}: {reason}" if reason else v
    return (text[:400] + tail) if v in ("fail", "xpass") else text[:400]


def testcase(rec: Result) -> ET.Element:
    op = str(or_(rec.op, "?"))
    classname = f"{op}.{or_(rec.product, '?')}.{dtype_tag(rec)}"
    total = (rec.durations or {}).get("total")
    attrs = {
        "classname": xml_text(classname),
        "name": xml_text(rec.id),
        "time": f"{float(total):.6f}" if isinstance(total, int | float) else "0",
    }
    tc = ET.Element("testcase", attrs)
    v = rec.verdict
    if v in ("fail", "xpass"):
        el = ET.SubElement(tc, "failure", {"message": xml_text(_message(rec)), "type": v})
        el.text = xml_text(details(rec))
    elif v in ERRORS:
        el = ET.SubElement(tc, "error", {"message": xml_text(_message(rec)), "type": v})
        el.text = xml_text(details(rec))
    elif v == "skip":
        ET.SubElement(tc, "skipped", {"message": xml_text(rec.reason or "skipped")})
    elif v == "xfail":
        e = rec.expectation or {}
        why = e.get("reason") or rec.reason or "expected failure"
        before = rec.verdict_before_expectation
        msg = f"xfail: {why}" + (f" (was {before}: {rec.reason})" if before else "")
        ET.SubElement(tc, "skipped", {"message": xml_text(msg[:1000])})
    elif v == "deviation":
        e = rec.expectation or {}
        why = e.get("reason") or "documented deviation of the library"
        before = rec.verdict_before_expectation or "fail"
        was = f"{before}: {rec.reason}" if rec.reason else before
        msg = f"deviation {deviation_id(rec) or '?'}: {why} (was {was})"
        el = ET.SubElement(tc, "skipped", {"message": xml_text(msg[:1000])})
        el.text = xml_text(details(rec))
    return tc


class JUnitSpill:
    """JUnit XML without holding the cases: each record's <testcase> is serialised as it arrives
    (`add`) into a temporary file, with its op, offset and length; `write` then assembles one
    <testsuite> per op (sorted by name; its cases in the order they came), copying the testcases
    back in bounded pieces. Per-op counts, durations and the aclnn name are tallied on the way."""

    INDENT = "  "

    def __init__(self) -> None:
        self.file = tempfile.TemporaryFile()  # noqa: SIM115 - closed in close()
        self.ops: dict[str, int] = {}
        self.where = array("q")  # (op index, offset, length) per case
        self.counts: dict[str, Counter] = {}
        self.seconds: Counter = Counter()
        self.aclnn: dict[str, str] = {}
        self.info = InfoTally()
        self._offset = 0

    def add(self, rec: Result | dict[str, Any]) -> None:
        rec = as_result(rec)
        op = str(or_(rec.op, "?"))
        k = self.ops.setdefault(op, len(self.ops))
        tc = testcase(rec)
        ET.indent(tc, space=" ", level=2)
        data = (self.INDENT + ET.tostring(tc, encoding="unicode") + "\n").encode("utf-8")
        self.file.write(data)
        self.where.extend((k, self._offset, len(data)))
        self._offset += len(data)
        self.counts.setdefault(op, Counter())[rec.verdict] += 1
        self.seconds[op] += float(num((rec.durations or {}).get("total")) or 0.0)
        if rec.aclnn_op and op not in self.aclnn:
            self.aclnn[op] = str(rec.aclnn_op)
        self.info.add(rec)

    def pieces(self, meta: dict[str, Any] | None = None) -> Iterator[str]:
        """The XML document, in pieces."""
        info = self.info.result(meta)
        total = _counts(sum(self.counts.values(), Counter()))
        root = ET.Element(
            "testsuites",
            {
                "name": xml_text(f"aclnn-conform {info['backend']}"),
                "tests": str(total["tests"]),
                "failures": str(total["failures"]),
                "errors": str(total["errors"]),
                "skipped": str(total["skipped"]),
                "time": _secs(info["seconds"]),
            },
        )
        yield '<?xml version="1.0" encoding="UTF-8"?>\n'
        empty = ET.tostring(root, encoding="unicode")  # `<testsuites ... />`: opened here
        yield empty[: -len(" />")] + ">\n"
        timestamp = _timestamp(meta)
        import numpy as np

        where = np.frombuffer(self.where, dtype=np.int64).reshape(-1, 3)
        order = np.argsort(where[:, 0], kind="stable")
        bounds = np.searchsorted(where[order, 0], np.arange(len(self.ops) + 1))
        self.file.flush()
        for i, (op, k) in enumerate(sorted(self.ops.items())):
            c = _counts(self.counts[op])
            attrs = {
                "name": xml_text(op),
                "tests": str(c["tests"]),
                "failures": str(c["failures"]),
                "errors": str(c["errors"]),
                "skipped": str(c["skipped"]),
                "time": _secs(self.seconds[op]),
                "id": str(i),
                "package": "aclnn",
            }
            if timestamp:
                attrs["timestamp"] = timestamp
            if info["host"]:
                attrs["hostname"] = xml_text(info["host"])
            suite = ET.Element("testsuite", attrs)
            props = ET.SubElement(suite, "properties")
            for key in (
                "backend",
                "backend_version",
                "oracle",
                "oracle_version",
                "seed",
                "spec_sha256",
                "tool_version",
                "scope",
            ):
                if info.get(key) not in (None, ""):
                    ET.SubElement(props, "property", {"name": key, "value": xml_text(info[key])})
            if op in self.aclnn:
                ET.SubElement(
                    props, "property", {"name": "aclnn_op", "value": xml_text(self.aclnn[op])}
                )
            ET.indent(suite, space=" ", level=1)
            head = ET.tostring(suite, encoding="unicode")
            yield " " + head[: head.rindex("</testsuite>")].rstrip() + "\n"
            for j in order[bounds[k] : bounds[k + 1]]:
                _, offset, length = (int(x) for x in where[j])
                self.file.seek(offset)
                yield self.file.read(length).decode("utf-8")
            yield " </testsuite>\n"
        yield "</testsuites>\n"

    def close(self) -> None:
        self.file.close()


def _counts(v: Counter) -> dict[str, int]:
    return {
        "tests": sum(v.values()),
        "failures": v["fail"] + v["xpass"],
        "errors": sum(v[x] for x in ERRORS),
        "skipped": v["skip"] + sum(v[x] for x in EXPLAINED),
    }


def render_junit(
    records: Iterable[Result | dict[str, Any]], meta: dict[str, Any] | None = None
) -> str:
    """The JUnit XML of `records` (a list: each op's cases sorted by id)."""
    spill = JUnitSpill()
    try:
        for rec in sorted(map(as_result, records), key=lambda r: str(r.id)):
            spill.add(rec)
        return "".join(spill.pieces(meta))
    finally:
        spill.close()


def _secs(s: Any) -> str:
    try:
        return f"{float(s):.3f}"
    except (TypeError, ValueError):
        return "0"


def _timestamp(meta: dict[str, Any] | None) -> str:
    """ISO 8601 without a zone, as the Ant format wants (the run writes UTC)."""
    from datetime import datetime, timezone

    text = str((meta or {}).get("date") or "")
    try:
        d = datetime.fromisoformat(text)
    except ValueError:
        return ""
    if d.tzinfo is not None:
        d = d.astimezone(timezone.utc).replace(tzinfo=None)
    return d.strftime("%Y-%m-%dT%H:%M:%S")


def write_junit(path: str | Path, records, meta=None) -> Path:
    """Write the JUnit XML of `records` (a list, or a JUnitSpill already fed) to `path`."""
    if isinstance(records, JUnitSpill):
        return write_atomic(path, records.pieces(meta))
    return write_atomic(path, render_junit(records, meta))
