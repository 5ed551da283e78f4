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
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from typing import Any

from reports.model import (
    ERRORS,
    EXPLAINED,
    deviation_id,
    dtype_tag,
    fmt,
    run_info,
    stats_of,
    worst_elements,
)
from reports.ulpnote import small_value_notes

# Characters XML 1.0 does not allow (control characters other than tab, LF, CR; lone surrogates)
_BAD_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
STATS_LINE = ("max_ulp", "max_rel", "max_abs", "mere", "mare", "mismatches", "compared",
              "mismatch_ratio", "nan_mismatches", "inf_mismatches")  # fmt: skip


def xml_text(value: Any) -> str:
    return _BAD_XML.sub("\ufffd", str(value if value is not None else ""))


def counts(records: list[dict[str, Any]]) -> dict[str, int]:
    """tests / failures / errors / skipped as the JUnit attributes count them."""
    v = Counter(r.get("verdict", "error") for r in records)
    return {
        "tests": len(records),
        "failures": v["fail"] + v["xpass"],
        "errors": sum(v[x] for x in ERRORS),
        "skipped": v["skip"] + sum(v[x] for x in EXPLAINED),
    }


def details(rec: dict[str, Any]) -> str:
    """The body of a <failure>/<error>: what a person needs to understand and replay the case."""
    lines = [f"case: {rec.get('id')}"]
    if rec.get("reason"):
        lines.append(f"reason: {rec['reason']}")
    if rec.get("message"):
        lines.append(f"backend message: {rec['message']}")
    if rec.get("expected_status") is not None or rec.get("actual_status") is not None:
        st = [rec.get(k) for k in ("expected_status", "oracle_status", "actual_status")]
        st = ["—" if x is None else x for x in st]
        lines.append(f"status: expected {st[0]}, oracle {st[1]}, actual {st[2]}")
    dtypes = rec.get("dtypes") or {}
    for name, lay in (rec.get("layouts") or {}).items():
        lines.append(f"  {name}: {dtypes.get(name, '?')} shape {lay.get('shape')} strides "
                     f"{lay.get('strides')} offset {lay.get('offset')}")  # fmt: skip
    st = stats_of(rec)
    if any(st[k] is not None for k in STATS_LINE):
        lines.append("stats: " + ", ".join(f"{k} {fmt(st[k])}" for k in STATS_LINE
                                            if st[k] is not None))  # fmt: skip
    for note in small_value_notes(rec):
        lines.append(f"note on {note.output}: {note.long()}")
    worst = worst_elements(rec, limit=5)
    if worst:
        lines.append("worst elements:")
        for w in worst:
            lines.append(f"  {w.get('output', '')}{w.get('index')}: expected {w.get('expected')} "
                         f"actual {w.get('actual')} (abs {fmt(w.get('abs_err'))}, rel "
                         f"{fmt(w.get('rel_err'))}, ulp {fmt(w.get('ulp'))})")  # fmt: skip
    if rec.get("clauses"):
        lines.append("clauses: " + ", ".join(rec["clauses"]))
    if rec.get("expectation"):
        e = rec["expectation"]
        dev = f" (deviation {e['deviation']})" if e.get("deviation") else ""
        lines.append(f"expectation: {e.get('kind')} {e.get('match')!r}{dev}: {e.get('reason')}")
    if rec.get("replay"):
        lines.append(f"replay: {rec['replay']}")
    return "\n".join(lines)


def _message(rec: dict[str, Any]) -> str:
    v = rec.get("verdict", "error")
    reason = " ".join(str(rec.get("reason") or "").split())
    st = stats_of(rec)
    tail = ""
    if st["max_ulp"] is not None:
        tail = f" [max_ulp {fmt(st['max_ulp'])}, max_rel {fmt(st['max_rel'])}]"
    text = f"{v}: {reason}" if reason else v
    return (text[:400] + tail) if v in ("fail", "xpass") else text[:400]


def testcase(rec: dict[str, Any]) -> ET.Element:
    op = str(rec.get("op", "?"))
    classname = f"{op}.{rec.get('product', '?')}.{dtype_tag(rec)}"
    total = (rec.get("durations") or {}).get("total")
    attrs = {"classname": xml_text(classname), "name": xml_text(rec.get("id", "?")),
             "time": f"{float(total):.6f}" if isinstance(total, int | float) else "0"}  # fmt: skip
    tc = ET.Element("testcase", attrs)
    v = rec.get("verdict", "error")
    if v in ("fail", "xpass"):
        el = ET.SubElement(tc, "failure", {"message": xml_text(_message(rec)), "type": v})
        el.text = xml_text(details(rec))
    elif v in ERRORS:
        el = ET.SubElement(tc, "error", {"message": xml_text(_message(rec)), "type": v})
        el.text = xml_text(details(rec))
    elif v == "skip":
        ET.SubElement(tc, "skipped", {"message": xml_text(rec.get("reason") or "skipped")})
    elif v == "xfail":
        e = rec.get("expectation") or {}
        why = e.get("reason") or rec.get("reason") or "expected failure"
        before = rec.get("verdict_before_expectation")
        msg = f"xfail: {why}" + (f" (was {before}: {rec.get('reason')})" if before else "")
        ET.SubElement(tc, "skipped", {"message": xml_text(msg[:1000])})
    elif v == "deviation":
        e = rec.get("expectation") or {}
        why = e.get("reason") or "documented deviation of the library"
        before = rec.get("verdict_before_expectation") or "fail"
        was = f"{before}: {rec['reason']}" if rec.get("reason") else before
        msg = f"deviation {deviation_id(rec) or '?'}: {why} (was {was})"
        el = ET.SubElement(tc, "skipped", {"message": xml_text(msg[:1000])})
        el.text = xml_text(details(rec))
    return tc


def render_junit(records: list[dict[str, Any]], meta: dict[str, Any] | None = None) -> str:
    info = run_info(records, meta)
    by_op: dict[str, list[dict[str, Any]]] = {}
    for rec in sorted(records, key=lambda r: str(r.get("id", ""))):
        by_op.setdefault(str(rec.get("op", "?")), []).append(rec)
    total = counts(records)
    root = ET.Element("testsuites", {
        "name": xml_text(f"aclnn-conform {info['backend']}"), "tests": str(total["tests"]),
        "failures": str(total["failures"]), "errors": str(total["errors"]),
        "skipped": str(total["skipped"]), "time": _secs(info["seconds"]),
    })  # fmt: skip
    timestamp = _timestamp(meta)
    for i, (op, recs) in enumerate(sorted(by_op.items())):
        c = counts(recs)
        seconds = sum(float((r.get("durations") or {}).get("total") or 0) for r in recs)
        attrs = {"name": xml_text(op), "tests": str(c["tests"]), "failures": str(c["failures"]),
                 "errors": str(c["errors"]), "skipped": str(c["skipped"]),
                 "time": _secs(seconds), "id": str(i), "package": "aclnn"}  # fmt: skip
        if timestamp:
            attrs["timestamp"] = timestamp
        if info["host"]:
            attrs["hostname"] = xml_text(info["host"])
        suite = ET.SubElement(root, "testsuite", attrs)
        props = ET.SubElement(suite, "properties")
        for key in (
            "backend",
            "backend_version",
            "oracle",
            "oracle_version",
            "seed",
            "spec_sha256",
            "tool_version",
        ):
            if info.get(key) not in (None, ""):
                ET.SubElement(props, "property", {"name": key, "value": xml_text(info[key])})
        aclnn = next((r.get("aclnn_op") for r in recs if r.get("aclnn_op")), None)
        if aclnn:
            ET.SubElement(props, "property", {"name": "aclnn_op", "value": xml_text(aclnn)})
        for rec in recs:
            suite.append(testcase(rec))
    ET.indent(root, space=" ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


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
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(render_junit(records, meta), encoding="utf-8")
    return p
