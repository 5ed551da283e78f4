"""The report of an ATK import (conformance.vendor.atk.importer): which ATK cases the spec accepts, which
it rejects and by which clause, which were skipped and why; as JSON and as Markdown."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ...spec.model import OpSpec
from ...spec.tables import status_name
from .importer import ImportResult


# -- reports -----------------------------------------------------------------------------------
def _groups(res: ImportResult, spec: OpSpec) -> tuple[dict[str, Any], dict[str, Any]]:
    rejected: dict[str, Any] = {}
    for c in res.cases:
        if c.outcome == "rejected":
            chk = next(x for x in spec.checks if x.id == c.clause)
            g = rejected.setdefault(
                c.clause,
                {
                    "count": 0,
                    "status": c.status,
                    "status_name": status_name(c.status or 0),
                    "kind": chk.kind,
                    "summary": chk.summary,
                    "source": chk.source,
                    "atk_ids": [],
                },
            )
            g["count"] += 1
            g["atk_ids"].append(c.atk_id)
    skipped: dict[str, Any] = {}
    for c in res.cases:
        if c.outcome == "skipped":
            key = (
                "size"
                if c.reason.startswith("over --max-elements")
                else "reader-limit"
                if c.reason.startswith("over the case reader's limit")
                else c.reason
            )
            g = skipped.setdefault(key, {"count": 0, "atk_ids": [], "would_be": {}})
            g["count"] += 1
            g["atk_ids"].append(c.atk_id)
            if c.would_be:
                g["would_be"][c.would_be] = g["would_be"].get(c.would_be, 0) + 1
    return rejected, skipped


def report_json(res: ImportResult, spec: OpSpec) -> dict[str, Any]:
    rejected, skipped = _groups(res, spec)
    head = {k: v for k, v in asdict(res).items() if k != "cases"}
    totals = {
        "cases": len(res.cases),
        "accepted": res.count("accepted"),
        "rejected": res.count("rejected"),
        "skipped": res.count("skipped"),
    }
    return {
        "format": 1,
        **head,
        "totals": totals,
        "rejected_by_clause": rejected,
        "skipped_by_reason": skipped,
        "cases": [asdict(c) for c in res.cases],
    }


def report_markdown(res: ImportResult, spec: OpSpec) -> str:
    rep = report_json(res, spec)
    t = rep["totals"]
    lines = [
        f"# ATK import: {res.spec} ({res.op})",
        "",
        f"- file: `{res.file}` (sha256 {res.file_sha256[:16]}...)",
        f"- product {res.product}, seed {res.seed}, --max-elements {res.max_elements}",
        f"- mapping: {res.mapping}",
        f"- output: {res.output_rule}",
        "",
        f"**{t['cases']} ATK cases: {t['accepted']} accepted, {t['rejected']} rejected, "
        f"{t['skipped']} skipped.**",
        "",
    ]
    if rep["rejected_by_clause"]:
        lines += [
            "## Rejected by the spec",
            "",
            "| clause | cases | status | kind | rule | ATK ids |",
            "|---|---|---|---|---|---|",
        ]
        for clause, g in rep["rejected_by_clause"].items():
            rule = (g["summary"] or g["source"]).replace("|", "/")
            ids = ", ".join(g["atk_ids"][:12]) + (" ..." if g["count"] > 12 else "")
            lines.append(
                f"| {res.spec}/{clause} | {g['count']} | {g['status']} "
                f"{g['status_name']} | {g['kind']} | {rule} | {ids} |"
            )
        lines.append("")
    if rep["skipped_by_reason"]:
        lines += [
            "## Skipped",
            "",
            "| reason | cases | the spec would say | ATK ids |",
            "|---|---|---|---|",
        ]
        for reason, g in rep["skipped_by_reason"].items():
            would = ", ".join(f"{k}: {v}" for k, v in g["would_be"].items()) or "-"
            ids = ", ".join(g["atk_ids"][:12]) + (" ..." if g["count"] > 12 else "")
            text = (
                f"over --max-elements {res.max_elements}"
                if reason == "size"
                else "over the case reader's limit (casefile.MAX_ELEMENTS per storage): nothing "
                "written"
                if reason == "reader-limit"
                else reason
            )
            lines.append(f"| {text} | {g['count']} | {would} | {ids} |")
        lines.append("")
    return "\n".join(lines)


def write_reports(res: ImportResult, spec: OpSpec, out_dir: Path) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    jp = out_dir / f"atk-report-{res.spec}.json"
    mp = out_dir / f"atk-report-{res.spec}.md"
    jp.write_text(json.dumps(report_json(res, spec), indent=1, sort_keys=True) + "\n", "utf-8")
    mp.write_text(report_markdown(res, spec), "utf-8")
    return jp, mp
