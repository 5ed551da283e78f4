"""`aclnn-conform specs draft DOC` and `aclnn-conform specs check-doc SPEC DOC`: from a vendor doc
page to a spec skeleton, and every difference between a spec and its doc page."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from ..conformance.spec.model import OpSpec
from ..conformance.spec.registry import load_spec
from ..conformance.spec.yamlpos import Located
from ..conformance.spec.yamlpos import load as load_yaml
from ..conformance.vendor.checkdoc import CheckDocError, Difference, Report, compare
from ..conformance.vendor.docpage.load import load_page
from ..conformance.vendor.docpage.page import DocError, DocPage
from ..conformance.vendor.draft import draft
from .errors import EXIT_PROBLEMS, UserError
from .options import registry

SPEC_SUFFIXES = (".yaml", ".yml")
DTYPE_KINDS = ("dtype-missing-in-spec", "dtype-missing-in-doc")


def _page(path: str | Path) -> DocPage:
    try:
        return load_page(path)
    except DocError as exc:
        raise UserError(str(exc)) from None


def _shown(path: str | Path) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return str(path)
    return rel if not rel.startswith("..") else str(path)


# -- draft ---------------------------------------------------------------------------------------


@click.command(name="draft")
@click.argument("doc", metavar="DOC")
@click.option("-o", "--output", type=click.Path(path_type=Path), help="Write the YAML here.")
@click.option("--op", "op", metavar="NAME", help="The interface of a page with several (aclnnXxx).")
@click.option("--force", is_flag=True, help="Overwrite an existing --output file.")
def draft_cmd(doc: str, output: Path | None, op: str | None, force: bool) -> None:
    """Write a spec skeleton (YAML) from a vendor doc page (ops-nn Markdown or a text page).

    Products, parameters (C-signature order, roles, C types), dtype tables per product, ranks
    and the status-code table come from the page; TODO marks what a human must decide (check
    order, formula, defaults). Without -o the YAML goes to stdout and the TODO count to stderr.
    """
    page = _page(doc)
    try:
        text, todos = draft(page, op)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    summary = f"{todos} TODO marker{'s' if todos != 1 else ''} to resolve"
    if output is None:
        click.echo(text, nl=False)
        click.echo(f"{summary} (then: aclnn-conform specs lint FILE)", err=True)
        return
    if output.exists() and not force:
        raise UserError(f"{output}: exists; use --force to overwrite")
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UserError(f"{output}: cannot write: {exc.strerror or exc}") from None
    click.echo(f"wrote {output}: {summary} (then: aclnn-conform specs lint {output})")


# -- check-doc -----------------------------------------------------------------------------------


@click.command(name="check-doc")
@click.argument("spec", metavar="SPEC", required=False)
@click.argument("doc", metavar="DOC", required=False)
@click.option(
    "--seed-dir",
    type=click.Path(path_type=Path),
    metavar="DIR",
    help="Check every spec whose source names a seed against DIR/<seed>.",
)
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
def check_doc_cmd(spec: str | None, doc: str | None, seed_dir: Path | None, fmt: str) -> None:
    """Report every difference between a spec and a vendor doc page.

    SPEC: a spec name, an aclnn name or a YAML file; DOC: the page (ops-nn Markdown or text).
    Compared: products, parameters (names, order, C types, roles), dtypes per parameter and
    product, max ranks, the status codes and the parameters each status row names. A
    difference is explained by a spec deviation with a matching `doc:` field. Exit 1 if any
    difference is unexplained, 0 if none is.
    """
    if seed_dir is not None:
        if spec or doc:
            raise UserError("--seed-dir takes no SPEC or DOC")
        pairs = _seed_pairs(seed_dir)
    elif spec and doc:
        pairs = [(_spec(spec), doc)]
    else:
        raise UserError(
            "give SPEC and DOC, or --seed-dir DIR (see: aclnn-conform specs check-doc -h)"
        )
    reports = []
    for (s, raw), page_path in pairs:
        page = _page(page_path)
        try:
            reports.append(compare(s, raw, page, _shown(s.path)))
        except CheckDocError as exc:
            raise UserError(str(exc)) from None
    if fmt == "json":
        click.echo(json.dumps([_json(r) for r in reports], indent=2, ensure_ascii=False))
    else:
        for r in reports:
            for line in render(r):
                click.echo(line)
    if any(r.unexplained for r in reports):
        click.get_current_context().exit(EXIT_PROBLEMS)


def _spec(arg: str) -> tuple[OpSpec, Located]:
    path = Path(arg)
    if path.suffix in SPEC_SUFFIXES:
        if not path.is_file():
            raise UserError(f"{arg}: no such file")
        s = load_spec(path)
    else:
        s = registry().get(arg)
    return s, load_yaml(s.path)


def _seed_pairs(seed_dir: Path) -> list[tuple[tuple[OpSpec, Located], Path]]:
    if not seed_dir.is_dir():
        raise UserError(f"{seed_dir}: no such directory")
    pairs = []
    for s in sorted(registry(), key=lambda s: s.name):
        seed = s.source.get("seed")
        if not seed:
            continue
        path = seed_dir / seed
        if not path.is_file():
            raise UserError(f"{_shown(s.path)}: source.seed {seed!r} is not in {seed_dir}")
        pairs.append(((s, load_yaml(s.path)), path))
    if not pairs:
        raise UserError("no spec names a seed document (source.seed)")
    return pairs


def _grouped(diffs: list[Difference]) -> list[tuple[Difference, list[str]]]:
    """Dtype differences of one parameter, product and explanation on one line."""
    out: list[tuple[Difference, list[str]]] = []
    index: dict[tuple, int] = {}
    for d in diffs:
        if d.kind in DTYPE_KINDS:
            key = (d.kind, d.op, d.param, d.product, d.explained_by, d.doc_where, d.spec_where)
            if key in index:
                out[index[key]][1].append(str(d.dtype))
                continue
            index[key] = len(out)
            out.append((d, [str(d.dtype)]))
        else:
            out.append((d, []))
    return out


def render(r: Report) -> list[str]:
    n, bad = len(r.differences), len(r.unexplained)
    lines = [f"{r.spec} ({r.spec_file}) vs {_shown(r.page)} ({r.page_format} page)"]
    for d, dts in _grouped(r.differences):
        what = d.what
        if dts:
            side = "doc's" if d.kind == "dtype-missing-in-spec" else "spec's"
            other = "spec's" if side == "doc's" else "doc's"
            verb = "is" if len(dts) == 1 else "are"
            what = f"{d.param} on {d.product}: {', '.join(dts)} {verb} in the {side} list, not the {other}"
        verdict = f"explained by deviation {d.explained_by}" if d.explained_by else "UNEXPLAINED"
        lines.append(f"  {d.kind}: {what}  [doc {d.doc_where}; spec {d.spec_where}]  {verdict}")
    for note in r.notes:
        lines.append(f"  note: {note}")
    for m in r.unused:
        lines.append(
            f"  note: {r.spec_file}:{m.line}: deviation {m.deviation} (doc kind {m.kind}) "
            "explains no difference with this page"
        )
    lines.append(f"{n} difference{'s' if n != 1 else ''}: {n - bad} explained, {bad} unexplained")
    return lines


def _json(r: Report) -> dict:
    return {
        "spec": r.spec,
        "spec_file": r.spec_file,
        "page": r.page,
        "page_format": r.page_format,
        "differences": [
            {k: v for k, v in vars(d).items() if v is not None or k == "explained_by"}
            for d in r.differences
        ],
        "notes": r.notes,
        "unused_deviations": [
            {"deviation": m.deviation, "kind": m.kind, "line": m.line} for m in r.unused
        ],
        "explained": len(r.differences) - len(r.unexplained),
        "unexplained": len(r.unexplained),
    }
