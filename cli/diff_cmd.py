"""`aclnn-conform diff OLD.jsonl NEW.jsonl`: what changed between two runs; exit 1 on a regression
or on cases found in one run only (unless --allow-missing)."""

from __future__ import annotations

from pathlib import Path

import click

from ..conformance.judge.results import safe_text
from ..reports.diff import (
    DEFAULT_THRESHOLD,
    DEFAULT_TIME_FLOOR_US,
    DEFAULT_TIME_THRESHOLD,
    diff_runs,
    render_html,
    render_markdown,
    write_text,
)
from ..reports.run import fmt
from .console import heading, style
from .errors import EXIT_PROBLEMS, UserError
from .options import finite
from .paths import check_outputs, results_family
from .report_cmd import read_results, warn_torn


def _label(path: Path, meta: dict) -> str:
    name = safe_text(path.name)
    return f"{name} ({safe_text(meta['backend'])})" if meta.get("backend") else name


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
@click.option(
    "--time-threshold",
    type=click.FloatRange(min=1),
    callback=finite,
    default=DEFAULT_TIME_THRESHOLD,
    show_default=True,
    metavar="FACTOR",
    help="List device times (phase 1, phase 2) that grew beyond FACTOR x the old time.",
)
@click.option(
    "--time-floor",
    "time_floor",
    type=click.FloatRange(min=0),
    callback=finite,
    default=DEFAULT_TIME_FLOOR_US,
    show_default=True,
    metavar="US",
    help="... and by at least US microseconds (smaller changes are noise).",
)
@click.option(
    "--fail-on-slower",
    is_flag=True,
    help="A device time slower beyond --time-threshold fails the diff (exit 1).",
)
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=20,
    show_default=True,
    help="Cases listed per section on the terminal.",
)
@click.option(
    "--allow-missing",
    is_flag=True,
    help="Cases found in one run only (added or removed) do not fail the diff; "
    "without it they do, as cases that were not compared.",
)
def diff(
    old,
    new,
    markdown_path,
    html_path,
    threshold,
    time_threshold,
    time_floor,
    fail_on_slower,
    limit,
    allow_missing,
):
    """Compare two results files case by case: regressions (a case that did not fail and now
    fails), fixes, other verdict changes, statistics that moved, cases added and removed.

    Exit codes: 0 no regression and the same cases in both runs (or --allow-missing);
    1 at least one regression, a case in one run only (not compared), or with --fail-on-slower
    a device time slower than --time-threshold (docs/timings.md); 2 usage error
    (unreadable results, an output that is an input, two runs with no case in common).
    """
    check_outputs(
        [("--markdown", markdown_path), ("--html", html_path)],
        [*results_family("OLD", old), *results_family("NEW", new)],
    )
    (a, a_meta), (b, b_meta) = read_results(old, clean=False), read_results(new, clean=False)
    d = diff_runs(a, b, threshold, time_threshold, time_floor)
    warn_torn(old, a)
    warn_torn(new, b)
    if not d.common:
        raise UserError(
            f"diff: {old} ({d.old_count} cases) and {new} ({d.new_count} cases) "
            "have no case in common: nothing was compared; diff runs of the same "
            "selection of cases"
        )
    old_label, new_label = _label(old, a_meta), _label(new, b_meta)
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
    if d.slower:
        click.echo(
            heading(
                f"\ndevice times slower than x{fmt(time_threshold)} and by >= "
                f"{fmt(time_floor)} us ({len(d.slower)} of {d.timed} timed)"
            )
        )
        for t in d.slower[:limit]:
            was, now, factor = t.text()
            line = f"  {t.phase} {was} -> {now} us (x{factor}): {t.id}"
            click.echo(style(line, fg="red") if fail_on_slower else line)
        if len(d.slower) > limit:
            click.echo(f"  ... and {len(d.slower) - limit} more")
    if markdown_path:
        click.echo(f"wrote {write_text(markdown_path, render_markdown(d, old_label, new_label))}")
    if html_path:
        click.echo(f"wrote {write_text(html_path, render_html(d, old_label, new_label))}")
    if d.missing:
        n = len(d.added) + len(d.removed)
        if allow_missing:
            click.echo(f"{n} case(s) in one run only were not compared (--allow-missing)", err=True)
        else:
            click.echo(
                f"{len(d.removed)} case(s) only in {safe_text(old)}, {len(d.added)} only "
                f"in {safe_text(new)}: not compared, which fails the diff; pass "
                "--allow-missing when the runs may differ in their cases",
                err=True,
            )
    if fail_on_slower and d.slower:
        click.echo(
            f"{len(d.slower)} device time(s) slower than x{fmt(time_threshold)}: "
            "--fail-on-slower fails the diff",
            err=True,
        )
    if d.regressed or (d.missing and not allow_missing) or (fail_on_slower and d.slower):
        raise SystemExit(EXIT_PROBLEMS)
