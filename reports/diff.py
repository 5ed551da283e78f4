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

Each run is held as one small entry per case (its verdict and the two statistics compared),
read from a stream, never as its records; the reasons and replay commands of the cases listed
are read in a second pass. Ids are matched as recorded; what is shown is made safe
for its format (conformance.judge.results.safe_text; markdown.code for ids in Markdown).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..conformance.judge.result import Result, as_result
from ..conformance.judge.results import safe_text
from .markdown import code, esc, fenced
from .output import write_atomic
from .run import BROKEN, EXPLAINED, clip, dtype_tag, fmt, num, or_, sort_key, stats_of

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
        return (
            f"{len(self.regressions)} regression{_s(self.regressions)}, {len(self.fixes)} "
            f"fix{'es' if len(self.fixes) != 1 else ''}, {len(self.changed)} other verdict "
            f"change{_s(self.changed)}, {grew} statistic{'s' if grew != 1 else ''} grew, "
            f"{len(self.moved) - grew} shrank (threshold {fmt(self.threshold)}), "
            f"{len(self.added)} added, {len(self.removed)} removed, {self.common} "
            "compared"
        )


def _s(items: list) -> str:
    return "" if len(items) == 1 else "s"


Entry = tuple[str, float | None, float | None]  # verdict, max_ulp, max_rel


def _entry(rec: Result) -> Entry:
    st = stats_of(rec)
    return (sys.intern(str(rec.verdict)), st["max_ulp"], st["max_rel"])


def _index(records: Iterable[Result | dict[str, Any]]) -> dict[str, Entry]:
    """Each case's last verdict and compared statistics, by id as recorded: a small tuple a
    case (reasons and replay commands are read again only for the cases listed)."""
    out: dict[str, Entry] = {}
    for rec in map(as_result, records):
        out[str(rec.id)] = _entry(rec)
    return out


def _details(
    records: Iterable[Result | dict[str, Any]], wanted: set[str]
) -> dict[str, dict[str, str]]:
    """Display-safe id, op, dtype tag, reason and replay of the `wanted` cases."""
    out: dict[str, dict[str, str]] = {}
    for rec in map(as_result, records):
        cid = str(rec.id)
        if cid in wanted:
            out[cid] = {
                "id": safe_text(cid),
                "op": safe_text(or_(rec.op, "?")),
                "tag": safe_text(dtype_tag(rec)),
                "reason": clip(safe_text(rec.reason or ""), 300),
                "replay": safe_text(rec.replay or ""),
            }
    return out


def _change(cid: str, old: Entry | None, new: Entry | None, info: dict[str, str]) -> Change:
    return Change(
        info.get("id", safe_text(cid)),
        info.get("op", "?"),
        old[0] if old else "",
        new[0] if new else "",
        info.get("reason", ""),
        info.get("replay", ""),
        info.get("tag", ""),
    )


def moved_stats(old: Result, new: Result, threshold: float) -> list[StatMove]:
    """max_ulp / max_rel of a case that moved by more than `threshold` between two records."""
    return _moved(safe_text(new.id), _entry(old), _entry(new), threshold)


def _moved(cid: str, old: Entry, new: Entry, threshold: float) -> list[StatMove]:
    out = []
    for k, key in enumerate(STATS, 1):
        x, y = num(old[k]), num(new[k])
        if x is None or y is None or math.isnan(x) or math.isnan(y):
            continue
        if x == y or abs(y - x) <= FLOOR[key]:
            continue
        if max(x, y) > min(x, y) * (1 + threshold):  # grew, or shrank, by more than the threshold
            out.append(StatMove(cid, key, x, y))
    return out


def diff_runs(
    old: Iterable[Result | dict[str, Any]],
    new: Iterable[Result | dict[str, Any]],
    threshold: float = DEFAULT_THRESHOLD,
) -> Diff:
    """The difference of two runs' records: lists, or Streams (each read once, and again for
    the reasons of the cases listed)."""
    before, after = _index(old), _index(new)
    d = Diff(threshold, len(before), len(after))
    kinds: list[tuple[str, str]] = []  # (list name, id), in id order
    for cid in sorted(set(before) | set(after)):
        o, n = before.get(cid), after.get(cid)
        if o is None:
            kinds.append(("added", cid))
            continue
        if n is None:
            kinds.append(("removed", cid))
            continue
        d.common += 1
        vo, vn = o[0], n[0]
        if vo in WAS_OK and vn in BROKEN:
            kinds.append(("regressions", cid))
        elif vo in WAS_BAD and vn in PASSED:
            kinds.append(("fixes", cid))
        elif vo != vn:
            kinds.append(("changed", cid))
        elif vn == "pass":
            d.moved += _moved(safe_text(cid), o, n, threshold)
    from_new = {cid for kind, cid in kinds if kind != "removed"}
    info = _details(new, from_new) if from_new else {}
    gone = {cid for kind, cid in kinds if kind == "removed"}
    info.update(_details(old, gone) if gone else {})
    for kind, cid in kinds:
        getattr(d, kind).append(_change(cid, before.get(cid), after.get(cid), info.get(cid, {})))
    d.regressions.sort(key=lambda c: sort_key(Result(c.id, c.new)))
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
    out = [
        f"## {icon} aclnn conformance diff: {_md_text(old_label)} → {_md_text(new_label)}",
        "",
        f"{d.old_count} → {d.new_count} cases · {d.headline()}",
        "",
    ]
    sections = [
        ("Regressions", d.regressions, True),
        ("Fixes", d.fixes, False),
        ("Other verdict changes", d.changed, False),
        ("Added", d.added, False),
        ("Removed", d.removed, False),
    ]
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
            out.append(
                f"| {_md_code(c.id)} | {esc(c.old) or '—'} | **{esc(c.new) or '—'}** | "
                f"{_md_text(clip(c.reason, 160))} |"
            )
        if len(items) > limit:
            out.append(f"| … {len(items) - limit} more | | | |")
        if replay and any(c.replay for c in items[:limit]):
            out += ["", *fenced([c.replay for c in items[:limit] if c.replay], "sh")]
        out.append("")
    if d.moved:
        out += [
            f"### Statistics that moved by more than {fmt(d.threshold * 100)} % ({len(d.moved)})",
            "",
            "| case | statistic | old | new | change |",
            "|---|---|---:|---:|---:|",
        ]
        for m in d.moved[:limit]:
            change = "new" if m.old == 0 else f"×{fmt(m.factor)}"
            out.append(
                f"| {_md_code(m.id)} | {m.stat} | {fmt(m.old)} | {fmt(m.new)} | "
                f"{'▲' if m.grew else '▼'} {change} |"
            )
        if len(d.moved) > limit:
            out.append(f"| … {len(d.moved) - limit} more | | | | |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def render_html(d: Diff, old_label: str = "old", new_label: str = "new", limit: int = 5000) -> str:
    """One self-contained page; at most `limit` rows per section."""
    from .html import TEMPLATES, environment

    sections = [
        ("regressions", "Regressions", d.regressions),
        ("fixes", "Fixes", d.fixes),
        ("changed", "Other verdict changes", d.changed),
        ("added", "Added", d.added),
        ("removed", "Removed", d.removed),
    ]
    template = environment().get_template("diff.html.j2")
    css = (TEMPLATES / "report.css").read_text("utf-8")
    return template.render(
        d=d, old_label=old_label, new_label=new_label, sections=sections, limit=limit, css=css
    )


def write_text(path: str | Path, text: str) -> Path:
    """Write a rendered diff (a temporary file renamed once whole)."""
    return write_atomic(path, text)
