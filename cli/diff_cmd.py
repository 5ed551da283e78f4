"""`aclnn-conform diff OLD.jsonl NEW.jsonl`: what changed between two runs; exit 1 on a regression."""

from __future__ import annotations

from pathlib import Path

import click

from cli.console import heading, style
from cli.errors import EXIT_PROBLEMS
from cli.options import finite
from cli.report_cmd import read_results
from reports.diff import DEFAULT_THRESHOLD, diff_runs, render_html, render_markdown, write_text
from reports.model import fmt


def _label(path: Path, meta: dict) -> str:
    return f"{path.name} ({meta['backend']})" if meta.get("backend") else path.name


@click.command("diff")
@click.argument("old", type=click.Path(path_type=Path), metavar="OLD.jsonl")
@click.argument("new", type=click.Path(path_type=Path), metavar="NEW.jsonl")
@click.option(
    "--markdown",
    "markdown_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="FILE",
    help="Write the diff as Markdown to FILE.",
)
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="FILE",
    help="Write the diff as one HTML file to FILE.",
)
@click.option(
    "--threshold",
    type=click.FloatRange(min=0),
    callback=finite,
    default=DEFAULT_THRESHOLD,
    show_default=True,
    metavar="REL",
    help="List max_ulp / max_rel of passing cases that moved by more than REL x the old value.",
)
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True,
              help="Cases listed per section on the terminal.")  # fmt: skip
def diff(old, new, markdown_path, html_path, threshold, limit):
    """Compare two results files case by case: regressions (a case that did not fail and now
    fails), fixes, other verdict changes, statistics that moved, cases added and removed.

    Exit codes: 0 no regression, 1 at least one regression, 2 usage error.
    """
    a, b = read_results(old), read_results(new)
    d = diff_runs(a.records, b.records, threshold)
    old_label, new_label = _label(old, a.meta), _label(new, b.meta)
    click.echo(heading(f"{old_label} -> {new_label}: {d.old_count} -> {d.new_count} cases"))
    click.echo(d.headline())
    for title, items, color in (
        ("regressions", d.regressions, "red"),
        ("fixes", d.fixes, "green"),
        ("other verdict changes", d.changed, None),
        ("added", d.added, None),
        ("removed", d.removed, None),
    ):
        if not items:
            continue
        click.echo(heading(f"\n{title} ({len(items)})"))
        for c in items[:limit]:
            line = f"  {c.old or '-'} -> {c.new or '-'}: {c.id}"
            click.echo(style(line, fg=color) if color else line)
            if title == "regressions":
                if c.reason:
                    click.echo(f"    {c.reason[:200]}")
                if c.replay:
                    click.echo(f"    {c.replay}")
        if len(items) > limit:
            click.echo(f"  ... and {len(items) - limit} more")
    if d.moved:
        click.echo(
            heading(f"\nstatistics moved by more than {fmt(threshold * 100)} % ({len(d.moved)})")
        )
        for m in d.moved[:limit]:
            arrow = "grew" if m.grew else "shrank"
            click.echo(f"  {m.stat} {arrow} {fmt(m.old)} -> {fmt(m.new)}: {m.id}")
        if len(d.moved) > limit:
            click.echo(f"  ... and {len(d.moved) - limit} more")
    if markdown_path:
        click.echo(f"wrote {write_text(markdown_path, render_markdown(d, old_label, new_label))}")
    if html_path:
        click.echo(f"wrote {write_text(html_path, render_html(d, old_label, new_label))}")
    if d.regressed:
        raise SystemExit(EXIT_PROBLEMS)
