"""`aclnn-conform specs ...`: list, show and lint the operator specs."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import click

from ..conformance.cases.generate import base_rejection
from ..conformance.run.backend import check_bindings
from ..conformance.spec.lint import Problem, lint_file, lint_tolerances
from ..conformance.spec.model import Check, OpSpec
from ..conformance.spec.registry import (
    SpecError,
    env_spec_dirs,
    load_registry,
    load_spec,
    name_key,
    spec_files,
)
from ..conformance.spec.tables import status_name
from ..conformance.spec.yamlpos import YamlError
from ..conformance.spec.yamlpos import load as load_yaml
from ..specs import root as specs_root
from . import console
from .console import field, heading, style, table
from .errors import DEBUG_ENV, EXIT_PROBLEMS, UserError
from .options import registry

SPEC_SUFFIXES = (".yaml", ".yml")


@click.group(name="specs")
def specs() -> None:
    """List, show and lint the operator specs (specs/ops/*.yaml)."""


# -- list --------------------------------------------------------------------------------------


@specs.command(name="list")
@click.option("--markdown", is_flag=True, help="A Markdown table with each op's bindings.")
def list_cmd(markdown: bool) -> None:
    """One line per operator: name, aclnn op, products, clauses, deviations."""
    specs_ = sorted(registry(), key=lambda s: s.name)
    if markdown:
        click.echo("| API | spec | products | clauses | deviations | torch | JAX |")
        click.echo("|---|---|---|---|---|---|---|")
        for s in specs_:
            click.echo(
                f"| `{s.op}` | `{s.name}` | {', '.join(s.products)} | "
                f"{len(s.clause_ids())} | {len(s.deviations)} | {_binding_text(s)} |"
            )
        return
    rows = [
        [s.name, s.op, str(len(s.clause_ids())), str(len(s.deviations)), ", ".join(s.products)]
        for s in specs_
    ]
    headers = ["NAME", "OP", "CLAUSES", "DEVIATIONS", "PRODUCTS"]
    for line in table(headers, rows, indent=0, right=(2, 3), total=200):
        click.echo(line)


def _binding_text(spec) -> str:
    """The torch and JAX columns: the ATen op, and how JAX computes it (vjp or forward)."""
    aten = spec.bindings.get("aten")
    jax = spec.bindings.get("jax")
    torch_text = f"`aten::{aten.data.get('op')}`" if aten else "-"
    if jax is None:
        jax_text = "-"
    else:
        jax_text = "vjp of the forward" if jax.data.get("grad") else "forward"
        if jax.data.get("unsupported_when"):
            jax_text += f" (not when `{jax.data['unsupported_when']}`)"
    return f"{torch_text} | {jax_text}"


# -- show --------------------------------------------------------------------------------------


@specs.command(name="show")
@click.argument("op", metavar="OP")
def show_cmd(op: str) -> None:
    """Show one operator's spec. OP: the aclnn name (aclnnXxx), the spec name or a YAML file."""
    path = Path(op)
    if path.suffix in SPEC_SUFFIXES and path.is_file():
        spec = load_spec(path)
    else:
        spec = registry().get(op)
    for line in render_spec(spec):
        click.echo(line)


def _display_path(path: str | Path) -> str:
    """`path` relative to the current directory when it lies below it, else absolute."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return str(path)
    return rel if not rel.startswith("..") else str(path)


def render_spec(spec: OpSpec) -> list[str]:
    w = console.width()
    out: list[str] = []
    title = f"{spec.op}  ({spec.name})"
    out.append(style(title, bold=True, fg="cyan"))
    if spec.summary:
        out.extend("  " + line for line in console.wrap(spec.summary, w - 2))
    out.append("")
    meta = [("aten", spec.aten or "-"), ("seed doc", spec.source.get("seed", "-"))]
    meta += [(k, v) for k, v in spec.source.items() if k != "seed"]
    meta += [("products", ", ".join(spec.products))]
    for label, text in meta:
        out.append(field(label + ":", str(text), label_width=10, total=w))
    out.append(f"  {'file:':<10} {_display_path(spec.path)}")  # never wrapped: copy-pastable

    out += ["", heading("Parameters") + " (C signature order)"]
    rows = []
    for i, p in enumerate(spec.params, 1):
        default = "-" if p.default is None else _scalar_text(p.default)
        if p.kind == "scalar" and p.default_dtype:
            default += f" ({p.default_dtype})" if p.default is not None else p.default_dtype
        if p.values:
            default += f"  of {{{', '.join(_scalar_text(v) for v in p.values)}}}"
        if p.null:
            default += f"; null: {p.null}"  # what a null pointer does (if_null)
        name = f"{p.name} (C: {p.c_name})" if p.c_name else p.name
        rows.append([str(i), name, p.kind, p.role, p.c_type or "-", default])
    out += table(["#", "NAME", "KIND", "ROLE", "C TYPE", "DEFAULT"], rows, right=(0,), total=w)

    out += ["", heading("Dtypes per product") + " (from the dtype_in checks)"]
    out += table(["PARAM", "SET", "PRODUCTS", "DTYPES"], _dtype_rows(spec), total=w)

    out += ["", heading("Checks") + " (in order; the first violation decides the status)"]
    id_w = max(len(c.id) for c in spec.checks)
    kind_w = max(len(c.kind) for c in spec.checks)
    for i, c in enumerate(spec.checks, 1):
        status = f"{c.status} {status_name(c.status)}"
        cid = style(c.id.ljust(id_w), fg="yellow")
        out.append(f"  {i:>2}  {cid}  {c.kind.ljust(kind_w)}  {status}".rstrip())
        for label, text in _check_fields(c):
            out.append(field(label + ":", text, indent=6, label_width=12, total=w))

    for f in spec.formulas:
        out += ["", heading("Formula") + f" for {f.output}"]
        how = "float64: lets in order, then the first branch whose `when` holds; rounded once"
        out.append(field("", how + " to the output dtype", indent=2, total=w))
        if f.source:
            out.append(field("source:", f.source, indent=2, label_width=8, total=w))
        for let in f.lets:
            out.append(f"  let  {style(let.id, fg='yellow')}")
            out.append(field("value:", f"{let.name} = {let.value.source}", 7, 8, w))
            out += _optional(("summary", let.summary), ("source", let.source), indent=7, total=w)
        for i, b in enumerate(f.branches, 1):
            out.append(f"  {i:>2}.  {style(b.id, fg='yellow')}")
            when = "otherwise" if b.when is None else b.when.source
            out.append(field("when:", when, 7, 8, w))
            out.append(field("value:", f"{f.output} = {b.value.source}", 7, 8, w))
            out += _optional(("summary", b.summary), ("source", b.source), indent=7, total=w)

    unused = [p.name for p in spec.outputs if p.unused]
    if unused:
        out += ["", heading("Unused outputs") + f": {', '.join(unused)} (never written)"]

    if spec.special_points:
        out += ["", heading("Special points") + " (values case generation puts in a tensor)"]
        id_w = max(len(s.id) for s in spec.special_points)
        for s in spec.special_points:
            out.append(f"  {style(s.id.ljust(id_w), fg='yellow')}  {s.param} = {s.value.source}")
            with_ = ", ".join(f"{k}={_scalar_text(v)}" for k, v in s.with_.items())
            out += _optional(
                ("with", with_), ("summary", s.summary), ("source", s.source), indent=6, total=w
            )

    if spec.properties:
        out += ["", heading("Properties")]
        rows = [[p.id, p.kind, ", ".join(p.params) or "-", p.source] for p in spec.properties]
        out += table(["ID", "KIND", "PARAMS", "SOURCE"], rows, total=w)

    if spec.tolerance:
        out += ["", heading("Tolerance overrides")]
        for dname, pol in spec.tolerance.items():
            text = ", ".join(f"{k}={v:g}" for k, v in pol.items())
            out.append(field(dname + ":", text, label_width=10, total=w))

    out += ["", heading("Deviations") + " (where the real library differs from the doc)"]
    if not spec.deviations:
        out.append("  none recorded")
    for d in spec.deviations:
        extra = []
        if d.clause:
            extra.append(f"clause {d.clause}")
        if d.backends:
            extra.append(f"backends {', '.join(d.backends)}")
        tail = f"  ({'; '.join(extra)})" if extra else ""
        out.append(f"  {style(d.id, fg='magenta')}{tail}")
        differs = f"{d.differs}{_excuse_text(d)}" if d.differs else ""
        out += _optional(
            ("differs", differs),
            ("summary", d.summary),
            ("actual", d.actual),
            ("source", d.source),
            indent=6,
            total=w,
        )
    return out


def _excuse_text(d: Any) -> str:
    """How a deviation's difference is checked, for `specs show`."""
    if d.formula is not None:
        return ": against the library's formula"
    if d.bound:
        return ": within " + ", ".join(f"{k} {v:g}" for k, v in d.bound.items())
    if d.actual_status is not None:
        return f": the library returns {d.actual_status}"
    return ""


def _scalar_text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dict) and "dtype" in v:  # a typed example scalar
        return f"{v.get('value')} ({v['dtype']})"
    return str(v)


def _optional(*pairs: tuple[str, str], indent: int, total: int) -> list[str]:
    return [
        field(label + ":", text, indent=indent, label_width=8, total=total)
        for label, text in pairs
        if text
    ]


def _grouped(spec: OpSpec, lists: dict[str, str]) -> list[tuple[str, str]]:
    """(products, dtypes) with the products that share a list on one row, in spec order."""
    groups: dict[str, list[str]] = {}
    for prod in spec.products:
        groups.setdefault(lists[prod], []).append(prod)
    return [(", ".join(prods), dtypes) for dtypes, prods in groups.items()]


def _dtype_rows(spec: OpSpec) -> list[list[str]]:
    """Rows of (param, set, products, dtypes): one per term of each dtype_in check and group of
    products with the same list, then one per tensor that no dtype_in names."""
    rows: list[list[str]] = []
    named: set[str] = set()

    def add(term: str, set_name: str, lists: dict[str, str]) -> None:
        for i, (prods, dtypes) in enumerate(_grouped(spec, lists)):
            rows.append([term if i == 0 else "", set_name if i == 0 else "", prods, dtypes])

    for c in spec.checks:
        if c.kind != "dtype_in":
            continue
        for term in c.terms:
            named.update(term.params())
            if c.dtype_set:
                add(
                    str(term),
                    c.dtype_set,
                    {p: ", ".join(spec.dtypes_for(c.dtype_set, p)) for p in spec.products},
                )
            else:
                add(str(term), "(listed)", dict.fromkeys(spec.products, ", ".join(c.dtypes)))
    used_sets = {c.dtype_set for c in spec.checks if c.dtype_set}
    for p in spec.params:
        if p.is_tensor and p.name not in named:
            rows.append([p.name, "-", ", ".join(spec.products), "(no dtype_in check)"])
    for name in spec.dtype_sets:
        if name not in used_sets:
            add(
                f"(set {name})",
                name,
                {p: ", ".join(spec.dtypes_for(name, p)) for p in spec.products},
            )
    return rows


def _check_fields(c: Check) -> list[tuple[str, str]]:
    shown = [str(t) for t in c.terms] if c.terms else list(c.params)
    fields = [("params", ", ".join(shown))] if shown else []
    if c.dtype_set:
        fields.append(("set", c.dtype_set))
    if c.dtypes:
        fields.append(("dtypes", ", ".join(c.dtypes)))
    if c.to is not None:
        fields.append(("to", str(c.to)))
    if c.max is not None:
        fields.append(("max rank", str(c.max)))
    if c.axis is not None:
        fields.append(("nonempty dim", str(c.axis)))
    if c.of:
        fields.append(("broadcast of", ", ".join(c.of)))
    if c.violated_if is not None:
        fields.append(("violated if", c.violated_if.source))
    if c.values:
        fields.append(("values", ", ".join(c.values)))
    if c.examples:
        ex = "; ".join(
            ", ".join(f"{k}={_scalar_text(v)}" for k, v in e.items()) for e in c.examples
        )
        fields.append(("examples", ex))
    if c.summary:
        fields.append(("summary", c.summary))
    fields.append(("source", c.source))
    return fields


# -- lint --------------------------------------------------------------------------------------


@specs.command(name="lint")
@click.argument("paths", nargs=-1, metavar="[PATH]...")
def lint_cmd(paths: tuple[str, ...]) -> None:
    """Check spec files against the schema and the semantic rules.

    PATH is a spec file or a directory (its *.yaml files); default: every shipped spec.
    Prints `file:line: message` per problem and exits 1, or one summary line and exits 0.
    """
    files = _spec_files(paths)
    problems: list[Problem] = []
    good: list[tuple[str, OpSpec]] = []
    bad_files = 0
    for f in files:
        shown = _display_path(f)
        spec, found = _lint_one(shown)
        if spec is not None and not found:
            found = [_binding_problem(shown, e) for e in check_bindings(spec)]
        if found:
            bad_files += 1
            problems.extend(found)
        elif spec is not None:
            good.append((shown, spec))
    dup = _duplicates(good)
    if paths:  # a file named on the command line must not take a shipped (or --specs) op's name
        dup += _clashes(good)
    dup += _impossible(good)
    problems.extend(dup)
    bad_files += len({p.file for p in dup})
    if not paths:
        tables = lint_tolerances()
        problems.extend(tables)
        bad_files += len({p.file for p in tables})
    if problems:
        for p in problems:
            click.echo(_problem_line(p))
        n = len(problems)
        click.echo(
            f"{n} problem{'s' if n != 1 else ''} in {bad_files} of {len(files)} "
            f"spec file{'s' if len(files) != 1 else ''}",
            err=True,
        )
        click.get_current_context().exit(EXIT_PROBLEMS)
    clauses = sum(len(s.clause_ids()) for _, s in good)
    n = len(good)
    click.echo(f"{n} spec{'s' if n != 1 else ''} OK ({clauses} clauses)")


def _binding_problem(shown: str, exc: Exception) -> Problem:
    """A BindingError (`file:line: bindings.x: message`) as a Problem of the shown file."""
    m = re.match(r"^(.*?):(\d+): (.*)$", str(exc), re.S)
    if m is None:
        return Problem(shown, 1, str(exc))
    return Problem(shown, int(m.group(2)), m.group(3))


def _problem_line(p: Problem) -> str:
    """`file:line: message` on one line (a message from PyYAML may carry a multi-line excerpt)."""
    lines = [x.strip() for x in str(p.message).splitlines() if x.strip()]
    return f"{p.file}:{p.line}: {lines[0] if lines else 'invalid spec'}"


def _spec_files(paths: tuple[str, ...]) -> list[Path]:
    if not paths:
        ctx = click.get_current_context().find_root()
        files = spec_files((*env_spec_dirs(), *(ctx.obj or {}).get("spec_dirs", ())))
        if not files:
            raise UserError(f"no spec files found in {specs_root() / 'ops'}")
        return files
    files: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = sorted(q for q in p.iterdir() if q.suffix in SPEC_SUFFIXES and q.is_file())
            if not found:
                raise UserError(f"{raw}: directory has no *.yaml spec files")
            files.extend(found)
        elif p.exists():
            files.append(p)
        else:
            raise UserError(f"{raw}: no such file or directory")
    unique: dict[str, Path] = {}
    for f in files:
        unique.setdefault(os.path.realpath(f), f)
    return list(unique.values())


def _lint_one(shown: str) -> tuple[OpSpec | None, list[Problem]]:
    try:
        return lint_file(shown)
    except Exception as exc:  # a loader bug must not hide the other files' problems
        if os.environ.get(DEBUG_ENV):
            raise
        msg = f"internal error while checking this file: {type(exc).__name__}: {exc}"
        return None, [Problem(shown, 1, msg + f" (a bug in aclnn-conform; {DEBUG_ENV}=1 shows it)")]


def _names(spec: OpSpec) -> list[tuple[str, str, str]]:
    """(normalised key, field, name) of the names a spec (and its in-place variant) takes."""
    out = []
    for s in (spec, *spec.variants):
        out += [(name_key(s.name), "name", s.name), (name_key(s.op), "op", s.op)]
    return out


def _line(shown: str, label: str) -> int:
    try:
        return load_yaml(shown).line((label,))
    except YamlError:
        return 1


def _duplicates(good: list[tuple[str, OpSpec]]) -> list[Problem]:
    """Two files may not define the same operator (by name or aclnn op name, spelled in any of
    the ways `--op` accepts)."""
    seen: dict[str, str] = {}
    problems = []
    for shown, spec in good:
        for key, label, name in _names(spec):
            if key in seen and seen[key] != shown:
                problems.append(
                    Problem(
                        shown,
                        _line(shown, label),
                        f"{label} {name!r} is also defined in {seen[key]}",
                    )
                )
            seen.setdefault(key, shown)
    return problems


def _clashes(good: list[tuple[str, OpSpec]]) -> list[Problem]:
    """Files given to `specs lint` whose op the suite already has (shipped, ACLNN_CONFORM_SPECS,
    --specs): loading them beside it would fail, so linting them must not say OK."""
    try:
        known = list(registry())
    except SpecError:  # a broken extra folder: compare with the shipped specs at least
        known = list(load_registry(dirs=()))
    owner: dict[str, OpSpec] = {}
    for spec in known:
        for key, _label, _name in _names(spec):
            owner.setdefault(key, spec)
    problems = []
    for shown, spec in good:
        for key, label, name in _names(spec):
            other = owner.get(key)
            if other is None or os.path.realpath(other.path) == os.path.realpath(shown):
                continue
            problems.append(
                Problem(
                    shown,
                    _line(shown, label),
                    f"{label} {name!r} clashes with operator {other.name} "
                    f"({other.op}) of {_display_path(other.path)}; rename it",
                )
            )
            break
    return problems


def _impossible(good: list[tuple[str, OpSpec]]) -> list[Problem]:
    """A spec whose checks reject every call on a product (e.g. `max_rank: 0`, which the base
    2x3 case already breaks) would generate no positive case there: a lint problem naming the
    check that rejects the base case (an in-place variant is named only when its op is fine)."""
    problems = []
    for shown, spec in good:
        for s in (spec, *spec.variants):
            found: dict[str, list[str]] = {}
            for product in s.products:
                rejected = base_rejection(s, product)
                if rejected is None:
                    continue
                combo, v = rejected
                why = (
                    f"check {v.check.id} rejects it ({v.message})"
                    if v.check is not None
                    else "the reference cannot compute it"
                )
                line = v.check.line if v.check is not None and v.check.line else 1
                key = f"{line}\0{', '.join(sorted(set(combo.values())))}\0{why}"
                found.setdefault(key, []).append(product)
            for key, prods in found.items():
                line, dtypes, why = key.split("\0")
                problems.append(
                    Problem(
                        shown,
                        int(line),
                        f"{s.name}: no valid call on {', '.join(prods)}, so no "
                        f"positive case: the base case (shape 2x3, {dtypes}) "
                        f"fails: {why}",
                    )
                )
            if found:
                break  # the in-place variant inherits the same checks
    return problems
