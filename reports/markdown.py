"""A Markdown summary for a CI job summary or a pull-request comment (GitHub-flavoured).

A totals line with every verdict count, a compact op x dtype table, the failing clauses, the
documented deviations the run hit and the first failures with their replay commands. Kept short: pull-request comments are limited to
65,536 characters, so the failure list is cut at `limit` cases.

Every string from a record is made safe: control characters and lone surrogates become visible
escapes (conformance.judge.results.safe_text), Markdown punctuation is backslash-escaped, and a code
span or fence is always longer than any run of backticks inside it, so no id or message can
break out of its span, its table cell or its code block.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from ..conformance.judge.result import Result
from ..conformance.judge.results import safe_text
from ..conformance.judge.verdicts import VERDICTS
from .digest import Digest, digest_of
from .output import write_atomic
from .run import EXPLAINED, FAILING, NEGATIVE, clip, column_order, fmt, fmt_seconds, stats_of
from .ulpnote import fmt_ulp, small_value_notes

ICON = {"pass": "✅", "fail": "❌", "error": "⚠️", "crash": "💥", "timeout": "⏱️", "skip": "⏭️",
        "xfail": "🔕", "xpass": "❗", "deviation": "📘"}  # fmt: skip


def cell_text(c: Counter | None) -> str:
    """`passed/total`, marked ❌ when any fails, 📘 when none fails but some are documented
    deviations (counted after: `(n dev)`), ⏭️ when nothing ran, else ✅."""
    if not c:
        return "·"
    total = sum(c.values())
    if any(c[v] for v in FAILING):
        mark = "❌"
    elif c["deviation"]:
        mark = ICON["deviation"]
    elif c["pass"] == 0 and not any(c[v] for v in EXPLAINED):
        mark = ICON["skip"]
    else:
        mark = "✅"
    dev = f" ({c['deviation']} dev)" if c["deviation"] else ""
    return f"{mark} {c['pass']}/{total}{dev}"


_PUNCT = re.compile(r"([\\`*_\[\]<>|~&])")


def _one_line(text: Any) -> str:
    return " ".join(safe_text(text if text is not None else "").split())


def esc(text: Any) -> str:
    """Text safe in a Markdown table cell or list item: one line, control characters as
    escapes, every character Markdown could read as markup backslash-escaped."""
    return _PUNCT.sub(r"\\\1", _one_line(text))


def _ticks(s: str) -> int:
    return max((len(m) for m in re.findall("`+", s)), default=0)


def code(text: Any, table: bool = False) -> str:
    """`text` as a code span whose fence is longer than any backtick run inside it (padded with
    a space when it starts or ends with a backtick). `table`: inside a table cell, where GFM
    splits cells at `|` even in code, so it is escaped."""
    s = _one_line(text)
    if table:
        s = s.replace("|", "\\|")
    fence = "`" * (_ticks(s) + 1)
    pad = " " if s.startswith("`") or s.endswith("`") or not s.strip() else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def fenced(lines: list[str], lang: str = "", indent: str = "") -> list[str]:
    """A fenced code block of `lines` (each made one safe line), its fence longer than any
    backtick run in them."""
    body = [_one_line(x) for x in lines]
    fence = "`" * max(3, max((_ticks(x) for x in body), default=0) + 1)
    return [f"{indent}{fence}{lang}", *(indent + x for x in body), f"{indent}{fence}"]


def totals_line(records: Any) -> str:
    d = digest_of(records, cases=False, coverage=False)
    parts = [f"{ICON[x]} {x} **{d.verdicts[x]}**" for x in VERDICTS]
    return f"**{d.total} cases**: " + " · ".join(parts)


def render_markdown(records: Any, meta: dict[str, Any] | None = None, *, limit: int = 20) -> str:
    """The summary of `records` (a list, a Stream or a Digest)."""
    d: Digest = digest_of(records, cases=False, coverage=False)
    info = d.run_info(meta)
    failures = d.sorted_failures(limit)
    head = "❌" if d.failed else "⚠️" if info["scope"] else "✅"
    verdict = f"{d.failed} failing" if d.failed else "all pass"
    if info["scope"]:  # a shard, or a merge missing shards, is not the whole suite
        verdict += f" ({esc(info['scope'])} only: not the whole suite)"
    out = [f"## {head} aclnn conformance: {esc(info['backend'])}: {verdict}", ""]
    out.append(totals_line(d))
    out.append("")
    facts = [f"backend {code(info['backend'])}"]
    if info["backend_version"]:
        facts[0] += f" ({esc(info['backend_version'])})"
    if info["oracle"]:
        facts.append(f"oracle {code(info['oracle'])}")
        if info.get("oracle_version"):
            facts[-1] += f" ({esc(info['oracle_version'])})"
    if info["spec_sha256"]:
        facts.append(f"spec {code(str(info['spec_sha256'])[:12])}")
    if info["tool_version"]:
        facts.append(f"tool {esc(info['tool_version'])}")
    if info["seconds"]:
        facts.append(fmt_seconds(info["seconds"]))
    if info["date"]:
        facts.append(esc(info["date"]))
    if info["host"]:
        facts.append(f"on {esc(info['host'])}")
    out += [" · ".join(facts), ""]
    if info.get("setup"):
        out += [f"setup: {esc(info['setup'])}", ""]
    out += op_dtype_table(d)
    failing_clauses = d.failing_clauses
    if failing_clauses:
        out += ["", "### Failing clauses", ""]
        out += [f"- {code(c)}: {n}" for c, n in failing_clauses.most_common(limit)]
        if len(failing_clauses) > limit:
            out.append(f"- … and {len(failing_clauses) - limit} more")
    out += deviations_list(d, limit)
    if failures:
        shown = failures[:limit]
        title = (
            f"First {len(shown)} of {d.failed} failures"
            if d.failed > limit
            else f"Failures ({d.failed})"
        )
        out += ["", f"### {title}", ""]
        for r in shown:
            out += failure_item(r)
    return "\n".join(out).rstrip() + "\n"


def op_dtype_table(records: Any) -> list[str]:
    """Op rows x output-dtype columns (`neg`: negative cases), summed over products."""
    by: dict[tuple[str, str], Counter] = {}
    for (op, _, col), c in digest_of(records, cases=False, coverage=False).grid().items():
        by.setdefault((op, col), Counter()).update(c)
    cols = column_order({col for _, col in by})
    ops = sorted({op for op, _ in by})
    header = ["op", *[("neg (status)" if c == NEGATIVE else esc(c)) for c in cols], "all"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" + "---:|" * (len(header) - 1)]
    for op in ops:
        row_total: Counter = Counter()
        cells = []
        for c in cols:
            cnt = by.get((op, c))
            row_total.update(cnt or {})
            cells.append(cell_text(cnt))
        lines.append(
            f"| {code(op, table=True)} | " + " | ".join(cells) + f" | {cell_text(row_total)} |"
        )
    lines += [
        "",
        "Cells: passed/total over all products; columns are the output dtype, "
        "`neg`: negative cases (status codes). ❌ some fail, ✅ none fails, "
        "📘 none fails but `n dev` cases are documented deviations of the library, "
        "⏭️ only skipped.",
    ]
    return lines


def failure_item(rec: Result) -> list[str]:
    v = rec.verdict
    st = stats_of(rec)
    stats = ""
    if st["max_ulp"] is not None:
        small = (
            " at a small expected value, judged by absolute error"
            if any(n.max_ulp == st["max_ulp"] for n in small_value_notes(rec))
            else ""
        )
        stats = f" (max ULP {fmt_ulp(st['max_ulp'])}{small}, max rel {fmt(st['max_rel'])})"
    reason = clip(rec.reason or rec.message or "", 300)
    lines = [f"- {ICON.get(v, '')} **{esc(v)}** {code(rec.id)}{stats}"]
    if reason:
        lines.append(f"  {esc(reason)}")
    if rec.replay:
        lines += fenced([str(rec.replay)], "sh", "  ")
    return lines


def deviations_list(records: Any, limit: int = 20) -> list[str]:
    """`### Documented deviations`: each deviation id the run hit, with its case count."""
    found = digest_of(records, cases=False, coverage=False).deviations
    hits = Counter({dev or "(no deviation id)": d["cases"] for dev, d in found.items()})
    reasons = {dev or "(no deviation id)": d["reason"] for dev, d in found.items()}
    if not hits:
        return []
    n = sum(hits.values())
    out = [
        "",
        f"### {ICON['deviation']} Documented deviations ({n} case{'s' if n != 1 else ''})",
        "",
        "Failures the specs document as deviations of the library from its docs; they "
        "do not fail the run.",
        "",
    ]
    for dev, k in hits.most_common(limit):
        why = f": {esc(clip(reasons[dev], 160))}" if reasons[dev] else ""
        out.append(f"- {code(dev)}: {k} case{'s' if k != 1 else ''}{why}")
    if len(hits) > limit:
        out.append(f"- … and {len(hits) - limit} more")
    return out


def write_markdown(path: str | Path, records, meta=None, **kwargs) -> Path:
    return write_atomic(path, render_markdown(records, meta, **kwargs))
