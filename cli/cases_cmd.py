"""`aclnn-conform cases list|export`: the generated suite, without running it."""

from __future__ import annotations

from pathlib import Path

import click

from ..conformance.cases.casedir import write_case
from ..conformance.cases.generate import build
from ..conformance.cases.golden import write_golden
from ..conformance.run.backend import load_backend
from ..conformance.run.config import require_cases
from ..conformance.run.golden import compute_golden
from ..conformance.run.judging import DEFAULT_ORACLE
from ..conformance.run.runner import generated_items
from .atk_cmd import import_atk
from .errors import UserError
from .options import build_selection, registry, selection_options
from .ttk_cmd import export_ttk_cmd, import_ttk


@click.group("cases")
def cases() -> None:
    """List or export the generated cases; import the vendor's ATK cases."""


@cases.command("list")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--show-clauses", is_flag=True, help="Show the clauses each case exercises.")
@selection_options
def list_cases(
    seed,
    show_clauses,
    ops,
    products,
    dtypes,
    clauses,
    keyword,
    max_cases,
    shard,
    profile,
    allow_empty,
):
    """One line per case id (with --show-clauses: the clauses it exercises)."""
    sel = build_selection(ops, products, dtypes, clauses, keyword, max_cases, shard, profile)
    reg = registry()
    items = generated_items(reg, sel, seed)
    require_cases(len(items), sel, allow_empty)
    for it in items:
        if show_clauses:
            case = build(reg.get(it.op), it.plan, seed)
            click.echo(f"{it.id}  [{', '.join(case.clauses)}]")
        else:
            click.echo(it.id)
    click.echo(f"{len(items)} cases", err=True)


@cases.command("export")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option(
    "--golden",
    is_flag=True,
    help="Also write the reference's expected outputs and the comparison policy beside each "
    "case.json (golden.json), for 'run --cases DIR --golden stored'.",
)
@click.option(
    "--exact",
    is_flag=True,
    help="With --golden: DOUBLE goldens correctly rounded (mpmath) instead of faithful.",
)
@selection_options
def export(
    directory,
    seed,
    golden,
    exact,
    ops,
    products,
    dtypes,
    clauses,
    keyword,
    max_cases,
    shard,
    profile,
    allow_empty,
):
    """Write each selected case as DIRECTORY/<case-id>/case.json + <param>.npy."""
    sel = build_selection(ops, products, dtypes, clauses, keyword, max_cases, shard, profile)
    reg = registry()
    items = generated_items(reg, sel, seed)
    require_cases(len(items), sel, allow_empty)
    if directory.exists() and not directory.is_dir():
        raise UserError(f"{directory}: exists and is not a directory")
    if exact and not golden:
        raise UserError("--exact: only with --golden (it decides the stored DOUBLE goldens)")
    oracle = load_backend(DEFAULT_ORACLE, reg, **({"exact": True} if exact else {}))
    try:
        for it in items:
            spec = reg.get(it.op)
            case = build(spec, it.plan, seed)
            d = write_case(directory, case, spec.sha256)
            if golden:
                write_golden(d, compute_golden(spec, case, oracle))
    finally:
        oracle.close()
    what = " with their stored golden" if golden else ""
    click.echo(f"wrote {len(items)} cases{what} under {directory}")


cases.add_command(import_atk)
cases.add_command(import_ttk)
cases.add_command(export_ttk_cmd)
