"""A Markdown summary for a CI job summary or a pull-request comment (GitHub-flavoured).

A totals line with every verdict count, a compact op x dtype table, the failing clauses, the
documented deviations the run hit and the first failures with their replay commands. Kept short: pull-request comments are limited to
65,536 characters, so the failure list is cut at `limit` cases.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from conformance.execute import VERDICTS
from reports.model import (
    EXPLAINED,
    FAILING,
    NEGATIVE,
    clip,
    column_order,
    deviation_id,
    fmt,
    fmt_seconds,
    grid,
    run_info,
    sort_key,
    stats_of,
)
from reports.ulpnote import fmt_ulp, small_value_notes

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


def esc(text: Any) -> str:
    """Text safe in a Markdown table cell or list item."""
    s = " ".join(str(text if text is not None else "").split())
    for ch in ("\\", "|", "*", "_", "<", ">", "[", "]", "`"):
        s = s.replace(ch, "\\" + ch)
    return s


def code(text: Any) -> str:
    s = " ".join(str(text).split())
    fence = "``" if "`" in s else "`"
    return f"{fence}{s}{fence}"


def totals_line(records: list[dict[str, Any]]) -> str:
    v = Counter(r.get("verdict", "error") for r in records)
    parts = [f"{ICON[x]} {x} **{v[x]}**" for x in VERDICTS]
    return f"**{len(records)} cases**: " + " · ".join(parts)


def render_markdown(
    records: list[dict[str, Any]], meta: dict[str, Any] | None = None, *, limit: int = 20
) -> str:
    info = run_info(records, meta)
    failures = sorted((r for r in records if r.get("verdict") in FAILING), key=sort_key)
    head = "❌" if failures else "✅"
    verdict = f"{len(failures)} failing" if failures else "all pass"
    out = [f"## {head} aclnn conformance: {esc(info['backend'])}: {verdict}", ""]
    out.append(totals_line(records))
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
    out += op_dtype_table(records)
    failing_clauses: Counter = Counter()
    for r in failures:
        for c in r.get("clauses") or ["(no clause)"]:
            failing_clauses[c] += 1
    if failing_clauses:
        out += ["", "### Failing clauses", ""]
        out += [f"- {code(c)}: {n}" for c, n in failing_clauses.most_common(limit)]
        if len(failing_clauses) > limit:
            out.append(f"- … and {len(failing_clauses) - limit} more")
    out += deviations_list(records, limit)
    if failures:
        shown = failures[:limit]
        title = f"First {len(shown)} of {len(failures)} failures" if len(failures) > limit else \
            f"Failures ({len(failures)})"  # fmt: skip
        out += ["", f"### {title}", ""]
        for r in shown:
            out += failure_item(r)
    return "\n".join(out).rstrip() + "\n"


def op_dtype_table(records: list[dict[str, Any]]) -> list[str]:
    """Op rows x output-dtype columns (`neg`: negative cases), summed over products."""
    by: dict[tuple[str, str], Counter] = {}
    for (op, _, col), c in grid(records).items():
        by.setdefault((op, col), Counter()).update(c)
    cols = column_order({col for _, col in by})
    ops = sorted({op for op, _ in by})
    header = ["op", *[("neg (status)" if c == NEGATIVE else c) for c in cols], "all"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" + "---:|" * (len(header) - 1)]
    for op in ops:
        row_total: Counter = Counter()
        cells = []
        for c in cols:
            cnt = by.get((op, c))
            row_total.update(cnt or {})
            cells.append(cell_text(cnt))
        lines.append(f"| {code(op)} | " + " | ".join(cells) + f" | {cell_text(row_total)} |")
    lines += ["", "Cells: passed/total over all products; columns are the output dtype, "
                  "`neg`: negative cases (status codes). ❌ some fail, ✅ none fails, "
                  "📘 none fails but `n dev` cases are documented deviations of the library, "
                  "⏭️ only skipped."]  # fmt: skip
    return lines


def failure_item(rec: dict[str, Any]) -> list[str]:
    v = rec.get("verdict", "error")
    st = stats_of(rec)
    stats = ""
    if st["max_ulp"] is not None:
        small = " at a small expected value, judged by absolute error" if any(
            n.max_ulp == st["max_ulp"] for n in small_value_notes(rec)) else ""  # fmt: skip
        stats = f" (max ULP {fmt_ulp(st['max_ulp'])}{small}, max rel {fmt(st['max_rel'])})"
    reason = clip(rec.get("reason") or rec.get("message") or "", 300)
    lines = [f"- {ICON.get(v, '')} **{v}** {code(rec.get('id'))}{stats}"]
    if reason:
        lines.append(f"  {esc(reason)}")
    if rec.get("replay"):
        lines += ["  ```sh", f"  {rec['replay']}", "  ```"]
    return lines


def deviations_list(records: list[dict[str, Any]], limit: int = 20) -> list[str]:
    """`### Documented deviations`: each deviation id the run hit, with its case count."""
    hits: Counter = Counter()
    reasons: dict[str, str] = {}
    for r in records:
        if r.get("verdict") == "deviation":
            dev = deviation_id(r) or "(no deviation id)"
            hits[dev] += 1
            reasons.setdefault(dev, str((r.get("expectation") or {}).get("reason") or ""))
    if not hits:
        return []
    n = sum(hits.values())
    out = ["", f"### {ICON['deviation']} Documented deviations ({n} case{'s' if n != 1 else ''})",
           "", "Failures the specs document as deviations of the library from its docs; they "
           "do not fail the run.", ""]  # fmt: skip
    for dev, k in hits.most_common(limit):
        why = f": {esc(clip(reasons[dev], 160))}" if reasons[dev] else ""
        out.append(f"- {code(dev)}: {k} case{'s' if k != 1 else ''}{why}")
    if len(hits) > limit:
        out.append(f"- … and {len(hits) - limit} more")
    return out


def write_markdown(path: str | Path, records, meta=None, **kwargs) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(render_markdown(records, meta, **kwargs), encoding="utf-8")
    return p
