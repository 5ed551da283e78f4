"""`aclnn-conform report RESULTS.jsonl`: render a results file as HTML, JUnit XML, Markdown, JSON."""

from __future__ import annotations

from pathlib import Path

import click

from cli.errors import UserError
from cli.options import registry
from reports import write_reports
from reports.model import ResultsFileError, read_run


def read_results(path: Path):
    """The records and meta of a results file; a UserError (one line, exit 2) when unusable."""
    try:
        run = read_run(path)
    except ResultsFileError as exc:
        raise UserError(str(exc)) from None
    if run.torn_lines:
        click.echo(f"warning: {path}: {run.torn_lines} line(s) are not result records "
                   "(a run killed mid-write?); reporting the rest", err=True)  # fmt: skip
    return run


def output_option(name: str, what: str):
    return click.option(f"--{name}", f"{name}_path", type=click.Path(dir_okay=False, path_type=Path),
                        default=None, metavar="FILE", help=f"Write {what} to FILE.")  # fmt: skip


@click.command("report")
@click.argument("results", type=click.Path(path_type=Path), metavar="RESULTS.jsonl")
@output_option("html", "the HTML report (one self-contained file)")
@output_option("junit", "JUnit XML (a testsuite per op, a testcase per case)")
@output_option("markdown", "a Markdown summary (CI job summary, PR comment)")
@output_option("json", "a summary JSON (totals, matrix, clause coverage, failures)")
def report(results, html_path, junit_path, markdown_path, json_path):
    """Render the results of a run as reports.

    Reads RESULTS.jsonl.meta.json beside the results when present (backend, date, host,
    duration). Exit codes: 0 written, 2 usage error (no output asked for, unreadable results).
    """
    if not any((html_path, junit_path, markdown_path, json_path)):
        raise UserError("report: nothing to write; give at least one of --html FILE, "
                        "--junit FILE, --markdown FILE, --json FILE")  # fmt: skip
    run = read_results(results)
    written = write_reports(run.records, run.meta, html=html_path, junit=junit_path,
                            markdown=markdown_path, json=json_path, registry=registry())  # fmt: skip
    for p in written:
        click.echo(f"wrote {p}")
