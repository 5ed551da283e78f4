"""Renderers of results: HTML (one self-contained file), JUnit XML, Markdown, a summary JSON, and
the diff of two runs. Imports only `conformance`.

    from aclnn_conformance.reports import write_reports
    written = write_reports(records, meta, html="report.html", junit="junit.xml")

`records` are result records (conformance.judge.results.load), `meta` the run's RESULTS.meta.json
dict (or {}). Modules: model (shared facts), ulpnote (what a ULP figure means and when it means nothing),
coverage, plots, html, junit, markdown, jsonreport, diff.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["write_reports"]


def write_reports(
    records: Any,
    meta: dict[str, Any] | None = None,
    *,
    html: str | Path | None = None,
    junit: str | Path | None = None,
    markdown: str | Path | None = None,
    json: str | Path | None = None,
    registry: Any = None,  # unused: reports never load specs (kept for older callers)
) -> list[Path]:
    """Write each report whose path is given; returns the paths written, in that order.

    `records`: a list of records, or a conformance.judge.results.Stream, read once for all the
    reports together (twice when it records an id twice) in memory bounded by the failures,
    not the cases. Each file is written to a temporary file and renamed (never left half
    written); parent folders are created. Raises OSError naming the file that cannot be
    written."""
    from .digest import Digest, digest_of
    from .junit import JUnitSpill, write_junit

    if not (html or junit or markdown or json):
        return []
    meta = dict(meta or {})
    spills: list[JUnitSpill] = []

    def make() -> Digest:
        for old in spills:  # a second pass (an id recorded twice) starts afresh
            old.close()
        spills[:] = [JUnitSpill()] if junit else []
        return Digest(
            meta.get("clauses"), cases=bool(html), coverage=bool(html or json), sinks=spills
        )

    written: list[Path] = []
    try:
        digest = digest_of(records, make)
        if html:
            from .html import write_html

            written.append(write_html(html, digest, meta))
        if junit:
            written.append(write_junit(junit, spills[0], meta))
        if markdown:
            from .markdown import write_markdown

            written.append(write_markdown(markdown, digest, meta))
        if json:
            from .jsonreport import write_json

            written.append(write_json(json, digest, meta))
    finally:
        for spill in spills:
            spill.close()
    return written
