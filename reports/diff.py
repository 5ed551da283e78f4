"""The difference between two runs (an old release or baseline and a new one), case by case.

- regressions: a case that did not fail before (pass, xpass, xfail, deviation, skip) and fails
  now (fail, error, crash, timeout); `aclnn-conform diff` exits 1 when there is one;
- fixes: a case that failed (fail, error, crash, timeout, xfail, deviation) and passes now
  (pass, xpass);
- other verdict changes (fail -> error, pass -> skip, fail -> deviation: a failure the spec now
  documents as a deviation of the library is no regression, ...);
- statistics that moved: max_ulp or max_rel of a case passing in both runs changed by more than
  the threshold, relative to the old value (growth above `threshold` * old, and for ULPs by at
  least half an ulp, since below that both runs round correctly);
- cases added and removed (an added case that fails is listed with its verdict, but is new
  coverage, not a regression). A case in one run only was not compared: `aclnn-conform diff`
  exits 1 when there is one, unless --allow-missing says the runs may differ in their cases,
  and refuses two runs with no case in common (nothing was compared).

Each run is held as one small entry per case (verdict, reason, replay, two statistics), read
from a stream, never as its records. Ids are matched as recorded; what is shown is made safe
for its format (conformance.results.safe_text; markdown.code for ids in Markdown).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.results import safe_text
from reports.markdown import code, esc, fenced
from reports.model import BROKEN, EXPLAINED, clip, dtype_tag, fmt, num, sort_key, stats_of
from reports.output import write_atomic

WAS_OK = ("pass", "xpass", *EXPLAINED, "skip")  # did not fail the run
PASSED = ("pass", "xpass")
WAS_BAD = (*BROKEN, *EXPLAINED)  # did not pass
STATS = ("max_ulp", "max_rel")
FLOOR = {"max_ulp": 0.5, "max_rel": 0.0}  # smallest absolute change worth listing
DEFAULT_THRESHOLD = 0.5


@dataclass
class Change:
    id: str
    op: str
    old: str
    new: str
    reason: str = ""
    replay: str = ""
    tag: str = ""


@dataclass
class StatMove:
    id: str
    stat: str
    old: float
    new: float

    @property
    def grew(self) -> bool:
        return self.new > self.old

    @property
    def factor(self) -> float:
        """new / old (inf from 0)."""
        return math.inf if self.old == 0 else self.new / self.old

    @property
    def size(self) -> float:
        """How far it moved, either way, as a factor >= 1 (inf to or from 0)."""
        lo, hi = sorted((abs(self.old), abs(self.new)))
        return math.inf if lo == 0 else hi / lo


@dataclass
class Diff:
    threshold: float
    old_count: int = 0
    new_count: int = 0
    common: int = 0  # cases in both runs: the ones compared
    regressions: list[Change] = field(default_factory=list)
    fixes: list[Change] = field(default_factory=list)
    changed: list[Change] = field(default_factory=list)
    moved: list[StatMove] = field(default_factory=list)
    added: list[Change] = field(default_factory=list)
    removed: list[Change] = field(default_factory=list)

    @property
    def regressed(self) -> bool:
        return bool(self.regressions)

    @property
    def missing(self) -> bool:
        """A case is in one run only (added or removed): it was not compared."""
        return bool(self.added or self.removed)

    def headline(self) -> str:
        grew = sum(1 for m in self.moved if m.grew)
        return (f"{len(self.regressions)} regression{_s(self.regressions)}, {len(self.fixes)} "
                f"fix{'es' if len(self.fixes) != 1 else ''}, {len(self.changed)} other verdict "
                f"change{_s(self.changed)}, {grew} statistic{'s' if grew != 1 else ''} grew, "
                f"{len(self.moved) - grew} shrank (threshold {fmt(self.threshold)}), "
                f"{len(self.added)} added, {len(self.removed)} removed, {self.common} "
                "compared")  # fmt: skip


def _s(items: list) -> str:
    return "" if len(items) == 1 else "s"


def light(rec: dict[str, Any]) -> dict[str, Any]:
    """What the diff keeps of a record: verdict, display-safe id, op, reason, replay and dtype
    tag, and the two statistics it compares."""
    st = stats_of(rec)
    return {"id": safe_text(rec.get("id")), "op": safe_text(rec.get("op", "?")),
            "verdict": safe_text(rec.get("verdict", "")), "tag": safe_text(dtype_tag(rec)),
            "reason": clip(safe_text(rec.get("reason") or ""), 300),
            "replay": safe_text(rec.get("replay") or ""),
            "stats": {k: st[k] for k in STATS}}  # fmt: skip


def _index(records: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each case's last record, kept light, by id as recorded."""
    out: dict[str, dict[str, Any]] = {}
    for rec in records:
        out[str(rec.get("id"))] = light(rec)
    return out


def _change(old: dict[str, Any] | None, new: dict[str, Any] | None) -> Change:
    rec = new or old or {}
    return Change(str(rec.get("id")), str(rec.get("op", "?")),
                  (old or {}).get("verdict", ""), (new or {}).get("verdict", ""),
                  clip(rec.get("reason") or "", 300), str(rec.get("replay") or ""),
                  str(rec.get("tag", "")))  # fmt: skip


def moved_stats(old: dict[str, Any], new: dict[str, Any], threshold: float) -> list[StatMove]:
    a, b = stats_of(old), stats_of(new)
    out = []
    for key in STATS:
        x, y = num(a.get(key)), num(b.get(key))
        if x is None or y is None or math.isnan(x) or math.isnan(y):
            continue
        if x == y or abs(y - x) <= FLOOR[key]:
            continue
        if max(x, y) > min(x, y) * (1 + threshold):  # grew, or shrank, by more than the threshold
            out.append(StatMove(str(new.get("id")), key, x, y))
    return out


def diff_runs(
    old: Iterable[dict[str, Any]],
    new: Iterable[dict[str, Any]],
    threshold: float = DEFAULT_THRESHOLD,
) -> Diff:
    """The difference of two runs' records (lists, or Streams read once each)."""
    before, after = _index(old), _index(new)
    d = Diff(threshold, len(before), len(after))
    for cid in sorted(set(before) | set(after)):
        o, n = before.get(cid), after.get(cid)
        if o is None:
            d.added.append(_change(None, n))
            continue
        if n is None:
            d.removed.append(_change(o, None))
            continue
        d.common += 1
        vo, vn = o.get("verdict"), n.get("verdict")
        if vo in WAS_OK and vn in BROKEN:
            d.regressions.append(_change(o, n))
        elif vo in WAS_BAD and vn in PASSED:
            d.fixes.append(_change(o, n))
        elif vo != vn:
            d.changed.append(_change(o, n))
        elif vn == "pass":
            d.moved += moved_stats(o, n, threshold)
    d.regressions.sort(key=lambda c: sort_key({"verdict": c.new, "id": c.id}))
    d.moved.sort(key=lambda m: (not m.grew, -m.size, m.id))
    return d


# -- rendering --------------------------------------------------------------------------------


def _md_code(text: str) -> str:
    return code(text, table=True)


_md_text = esc


def render_markdown(
    d: Diff, old_label: str = "old", new_label: str = "new", limit: int = 50
) -> str:
    icon = "❌" if d.regressed else "⚠️" if d.missing else "✅"
    out = [f"## {icon} aclnn conformance diff: {_md_text(old_label)} → {_md_text(new_label)}", "",
           f"{d.old_count} → {d.new_count} cases · {d.headline()}", ""]  # fmt: skip
    sections = [("Regressions", d.regressions, True), ("Fixes", d.fixes, False),
                ("Other verdict changes", d.changed, False), ("Added", d.added, False),
                ("Removed", d.removed, False)]  # fmt: skip
    for title, items, replay in sections:
        if not items:
            continue
        out += [
            f"### {title} ({len(items)})",
            "",
            "| case | old | new | reason |",
            "|---|---|---|---|",
        ]
        for c in items[:limit]:
            out.append(f"| {_md_code(c.id)} | {esc(c.old) or '—'} | **{esc(c.new) or '—'}** | "
                       f"{_md_text(clip(c.reason, 160))} |")  # fmt: skip
        if len(items) > limit:
            out.append(f"| … {len(items) - limit} more | | | |")
        if replay and any(c.replay for c in items[:limit]):
            out += ["", *fenced([c.replay for c in items[:limit] if c.replay], "sh")]
        out.append("")
    if d.moved:
        out += [f"### Statistics that moved by more than {fmt(d.threshold * 100)} % ({len(d.moved)})",
                "", "| case | statistic | old | new | change |", "|---|---|---:|---:|---:|"]  # fmt: skip
        for m in d.moved[:limit]:
            change = "new" if m.old == 0 else f"×{fmt(m.factor)}"
            out.append(f"| {_md_code(m.id)} | {m.stat} | {fmt(m.old)} | {fmt(m.new)} | "
                       f"{'▲' if m.grew else '▼'} {change} |")  # fmt: skip
        if len(d.moved) > limit:
            out.append(f"| … {len(d.moved) - limit} more | | | | |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def render_html(d: Diff, old_label: str = "old", new_label: str = "new", limit: int = 5000) -> str:
    """One self-contained page; at most `limit` rows per section."""
    from reports.html import TEMPLATES, environment

    sections = [("regressions", "Regressions", d.regressions), ("fixes", "Fixes", d.fixes),
                ("changed", "Other verdict changes", d.changed), ("added", "Added", d.added),
                ("removed", "Removed", d.removed)]  # fmt: skip
    template = environment().get_template("diff.html.j2")
    css = (TEMPLATES / "report.css").read_text("utf-8")
    return template.render(d=d, old_label=old_label, new_label=new_label, sections=sections,
                           limit=limit, css=css)  # fmt: skip


def write_text(path: str | Path, text: str) -> Path:
    """Write a rendered diff (a temporary file renamed once whole)."""
    return write_atomic(path, text)
