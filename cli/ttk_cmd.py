"""`aclnn-conform cases import-ttk FILE.csv|FILE.xlsx -o DIR` and `cases export-ttk DIR -o OUT`:
the vendor's TTK ACLNN case rows as case directories and back (conformance/vendor/ttk.py,
ttk_export.py), with each row's or case's fate printed."""

from __future__ import annotations

from pathlib import Path

import click

from ..conformance.run.backend import load_backend
from ..conformance.run.judging import DEFAULT_ORACLE
from ..conformance.vendor.ttk import MANUAL_DATA, TtkError, import_rows
from ..conformance.vendor.ttk_export import CSV_NAME, ExportError, export_ttk
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
@click.option(
    "--manual-data-dirs",
    "manual_dirs",
    multiple=True,
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="TTK manual-data root (repeatable, searched in order): each row's inputs are read from "
    "its folder there instead of drawn (as 'cases export-ttk' writes them).",
)
def import_ttk(
    file: Path, out_dir: Path, product: str | None, seed: int, manual_dirs: tuple[Path, ...]
) -> None:
    """Import a TTK ACLNN case file (CSV; .xlsx with the optional openpyxl) as case directories."""
    if not file.is_file():
        raise UserError(f"{file}: no such file")
    try:
        rows = import_rows(registry(), file, out_dir, product, seed, manual_dirs)
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


@click.command("export-ttk")
@click.argument("directory", type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option(
    "-o",
    "--output",
    "out",
    required=True,
    type=click.Path(path_type=Path),
    help=f"New folder for {CSV_NAME}, {MANUAL_DATA}/ and the sidecar.",
)
@click.option(
    "--exact",
    is_flag=True,
    help="Goldens evaluated now (cases without golden.json): DOUBLE correctly rounded (mpmath).",
)
def export_ttk_cmd(directory: Path, out: Path, exact: bool) -> None:
    """Write the case directories under DIRECTORY as a TTK ACLNN CSV plus TTK manual-data
    folders (our inputs and our golden), for `python3 -m ttk aclnn -i OUT/cases.csv
    --manual-data-dirs OUT/manual_data` on a device host."""
    reg = registry()
    oracle = load_backend(DEFAULT_ORACLE, reg, **({"exact": True} if exact else {}))
    try:
        done = export_ttk(
            reg, directory, out, oracle, lambda m: click.echo(f"warning: {m}", err=True)
        )
    except ExportError as exc:
        raise UserError(str(exc)) from None
    finally:
        oracle.close()
    for r in done:
        if r.reason:
            click.echo(f"skipped  {r.case_id or r.case_dir}: {r.reason}")
        else:
            click.echo(f"exported {r.case_id} -> {MANUAL_DATA}/{r.folder}")
    n = sum(not r.reason for r in done)
    click.echo(
        f"{n} of {len(done)} cases exported to {out / CSV_NAME}; replay on a device host: "
        f"python3 -m ttk aclnn -i {out / CSV_NAME} --manual-data-dirs {out / MANUAL_DATA} "
        "-o result.csv"
    )
