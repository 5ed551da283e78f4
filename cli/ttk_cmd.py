"""`aclnn-conform cases import-ttk FILE.csv -o DIR`: the vendor's TTK ACLNN case rows as case
directories (conformance/vendor/ttk.py), with each row's fate printed."""

from __future__ import annotations

from pathlib import Path

import click

from ..conformance.vendor.ttk import TtkError, import_rows
from .errors import UserError
from .options import registry


@click.command("import-ttk")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "-o",
    "--output",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder to write cases to.",
)
@click.option("--product", default=None, help="Product of the cases (default: the spec's first).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
def import_ttk(file: Path, out_dir: Path, product: str | None, seed: int) -> None:
    """Import a TTK ACLNN case file (CSV; .xlsx with openpyxl) as case directories."""
    if file.suffix.lower() == ".xlsx":
        try:
            import openpyxl  # noqa: F401
        except ImportError:
            raise UserError(
                f"{file}: reading .xlsx needs openpyxl (pip install openpyxl), or save the "
                "sheet as CSV"
            ) from None
        raise UserError(f"{file}: .xlsx is not read yet; save the sheet as CSV")
    if not file.is_file():
        raise UserError(f"{file}: no such file")
    try:
        rows = import_rows(registry(), file, out_dir, product, seed)
    except TtkError as exc:
        raise UserError(str(exc)) from None
    for r in rows:
        where = f"{file.name}:{r.line} {r.name} ({r.api})"
        if r.outcome == "refused":
            click.echo(f"refused   {where}: {r.reason}")
        else:
            said = f"status {r.status}" + (f" by {r.clause}" if r.clause else "")
            click.echo(f"{r.outcome:9} {where}: {said} -> {r.case_id}")
    counts = {k: sum(r.outcome == k for r in rows) for k in ("accepted", "rejected", "refused")}
    click.echo(
        f"{len(rows)} rows: {counts['accepted']} accepted, {counts['rejected']} rejected by the "
        f"spec, {counts['refused']} refused; cases under {out_dir}"
    )
