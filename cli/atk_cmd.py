"""`aclnn-conform cases import-atk FILE.json -o DIR`: the vendor's ATK test cases as case
directories, checked against the spec."""

from __future__ import annotations

from pathlib import Path

import click

from ..conformance.vendor.atk.files import AtkError, choose_spec, mapping_of, read_atk
from ..conformance.vendor.atk.importer import DEFAULT_MAX_ELEMENTS, import_cases
from ..conformance.vendor.atk.report import write_reports
from .errors import UserError
from .options import registry


def _default_product(products: tuple[str, ...]) -> str:
    return "atlas-a2" if "atlas-a2" in products else products[0]


@click.command("import-atk")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "-o",
    "--output",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory to write the case directories and the import report into.",
)
@click.option(
    "--op",
    default=None,
    help="The spec to import as (default: from the file name atk_aclnn<Op>.json, "
    "else from the cases' aclnn_name).",
)
@click.option(
    "--product",
    default=None,
    help="Product of the calls (default: atlas-a2 when the spec lists it, else its first product).",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Seed of the drawn values: the same seed writes the same files.",
)
@click.option(
    "--max-elements",
    type=click.IntRange(min=0),
    default=DEFAULT_MAX_ELEMENTS,
    show_default=True,
    help="Skip (and report) cases with a tensor of more elements, before allocating.",
)
def import_atk(
    file: Path, out_dir: Path, op: str | None, product: str | None, seed: int, max_elements: int
) -> None:
    """Import the vendor's ATK test cases (FILE: atk_aclnn<Op>.json) as case directories.

    The cases are written under DIR for `aclnn-conform run --cases DIR`.

    ATK input names are mapped to the spec's parameters by the spec's `atk:` section. The
    spec's checks give each case its expected status: cases the spec rejects are written as
    negative cases and reported with the deciding clause. The summary is printed and written to
    DIR/atk-report-<op>.json and .md.
    """
    try:
        cases = read_atk(file)
        reg = registry()
        spec = choose_spec(file, cases, reg, op)
        mapping = mapping_of(spec)
    except AtkError as exc:
        raise UserError(str(exc)) from None
    if product is None:
        product = _default_product(spec.products)
    elif product not in spec.products:
        raise UserError(f"--product {product}: {spec.name} documents {', '.join(spec.products)}")
    if out_dir.exists() and not out_dir.is_dir():
        raise UserError(f"{out_dir}: exists and is not a directory")
    named = {c.aclnn_name for c in cases if c.aclnn_name}
    if op and named and all(reg_name_differs(reg, n, spec.name) for n in named):
        click.echo(
            f"note: the file's cases name {', '.join(sorted(named))}; importing them as "
            f"{spec.name} (--op)",
            err=True,
        )
    try:
        res = import_cases(
            spec,
            mapping,
            cases,
            out_dir,
            file=file,
            product=product,
            seed=seed,
            max_elements=max_elements,
        )
    except AtkError as exc:
        raise UserError(str(exc)) from None
    json_path, md_path = write_reports(res, spec, out_dir)
    _summary(res, json_path, md_path)


def reg_name_differs(reg, name: str, spec_name: str) -> bool:
    try:
        return reg.get(name).name != spec_name
    except KeyError:
        return True


def _summary(res, json_path: Path, md_path: Path) -> None:
    acc, rej, skip = res.count("accepted"), res.count("rejected"), res.count("skipped")
    click.echo(f"{res.spec} ({res.op}) from {res.file}: product {res.product}, seed {res.seed}")
    click.echo(
        f"{len(res.cases)} ATK cases: {acc} accepted, {rej} rejected, {skip} skipped; "
        f"{acc + rej} case directories written"
    )
    by_clause: dict[str, list] = {}
    for c in res.cases:
        if c.outcome == "rejected":
            by_clause.setdefault(c.clause, []).append(c)
    for clause, items in by_clause.items():
        click.echo(
            f"  rejected by {res.spec}/{clause} ({items[0].status}): {len(items)}"
            f"  e.g. ATK case {items[0].atk_id}: {items[0].message}"
        )
    reasons: dict[str, list] = {}
    for c in res.cases:
        if c.outcome == "skipped":
            key = (
                f"over --max-elements {res.max_elements}"
                if c.reason.startswith("over --max-elements")
                else "over the case reader's limit (nothing written)"
                if c.reason.startswith("over the case reader's limit")
                else c.reason
            )
            reasons.setdefault(key, []).append(c)
    for reason, items in reasons.items():
        would = {}
        for c in items:
            if c.would_be:
                would[c.would_be] = would.get(c.would_be, 0) + 1
        tail = f" (the spec: {', '.join(f'{k} {v}' for k, v in would.items())})" if would else ""
        click.echo(f"  skipped, {reason}: {len(items)}{tail}")
    click.echo(f"report: {json_path}, {md_path}")
