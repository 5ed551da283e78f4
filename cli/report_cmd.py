"""`aclnn-conform report RESULTS.jsonl`: render a results file as HTML, JUnit XML, Markdown, JSON."""

from __future__ import annotations

from pathlib import Path

import click

from ..conformance.judge.results import Stream
from ..reports import write_reports
from ..reports.run import ResultsFileError, open_results
from .errors import UserError
from .paths import check_outputs, results_family


def read_results(path: Path, clean: bool = True) -> tuple[Stream, dict]:
    """A results file to stream, and its meta; a UserError (one line, exit 2) when unusable."""
    try:
        return open_results(path, clean)
    except ResultsFileError as exc:
        raise UserError(str(exc)) from None


def warn_torn(path: Path, stream: Stream) -> None:
    """After a full pass: say how many lines were not records (a run killed mid-write?)."""
    if stream.torn:
        click.echo(
            f"warning: {path}: {stream.torn} line(s) are not result records "
            "(a run killed mid-write?); reporting the rest",
            err=True,
        )


def output_option(name: str, what: str):
    return click.option(
        f"--{name}",
        f"{name}_path",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        metavar="FILE",
        help=f"Write {what} to FILE.",
    )


@click.command("report")
@click.argument("results", type=click.Path(path_type=Path), metavar="RESULTS.jsonl")
@output_option("html", "the HTML report (one self-contained file)")
@output_option("junit", "JUnit XML (a testsuite per op, a testcase per case)")
@output_option("markdown", "a Markdown summary (CI job summary, PR comment)")
@output_option("json", "a summary JSON (totals, matrix, clause coverage, failures)")
def report(results, html_path, junit_path, markdown_path, json_path):
    """Render the results of a run as reports.

    Reads RESULTS.jsonl.meta.json beside the results when present (backend, date, host,
    duration). The results are read as a stream (a million cases in bounded memory); each
    report is written to a temporary file and renamed, never left half-written. Exit codes:
    0 written, 2 usage error (no output asked for, unreadable results, an output that is the
    results file, its meta or another output).
    """
    if not any((html_path, junit_path, markdown_path, json_path)):
        raise UserError(
            "report: nothing to write; give at least one of --html FILE, "
            "--junit FILE, --markdown FILE, --json FILE"
        )
    check_outputs(
        [
            ("--html", html_path),
            ("--junit", junit_path),
            ("--markdown", markdown_path),
            ("--json", json_path),
        ],
        results_family("RESULTS", results),
    )
    stream, meta = read_results(results)
    written = write_reports(
        stream, meta, html=html_path, junit=junit_path, markdown=markdown_path, json=json_path
    )
    warn_torn(results, stream)
    for p in written:
        click.echo(f"wrote {p}")
