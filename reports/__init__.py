"""Renderers of results: HTML (one self-contained file), JUnit XML, Markdown, a summary JSON, and
the diff of two runs. Imports only `conformance`.

    from reports import write_reports
    written = write_reports(records, meta, html="report.html", junit="junit.xml")

`records` are result records (conformance.results.load), `meta` the run's RESULTS.meta.json
dict (or {}). Modules: model (shared facts), ulpnote (what a ULP figure means and when it means nothing),
coverage, plots, html, junit, markdown, jsonreport, diff.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["write_reports"]


def write_reports(
    records: list[dict[str, Any]],
    meta: dict[str, Any] | None = None,
    *,
    html: str | Path | None = None,
    junit: str | Path | None = None,
    markdown: str | Path | None = None,
    json: str | Path | None = None,
    registry: Any = None,
) -> list[Path]:
    """Write each report whose path is given; returns the paths written, in that order.

    Parent folders are created. Raises OSError when a file cannot be written."""
    from reports.coverage import clause_coverage

    meta = dict(meta or {})
    written: list[Path] = []
    coverage = clause_coverage(records, registry) if (html or json) else None
    if html:
        from reports.html import write_html

        written.append(write_html(html, records, meta, coverage=coverage))
    if junit:
        from reports.junit import write_junit

        written.append(write_junit(junit, records, meta))
    if markdown:
        from reports.markdown import write_markdown

        written.append(write_markdown(markdown, records, meta))
    if json:
        from reports.jsonreport import write_json

        written.append(write_json(json, records, meta, coverage=coverage))
    return written
