"""`aclnn-conform replay CASE-ID`: rebuild one generated case from its id and seed, run it, show all."""

from __future__ import annotations

import json

import click
import numpy as np

from ..conformance.acl.call import ScalarArg, TensorArg
from ..conformance.cases.generate import build, plan_op
from ..conformance.judge.verdicts import BROKEN
from ..conformance.run import config
from ..conformance.run.backend import BackendError, load_backend
from ..conformance.run.judging import first_line, judge
from ..conformance.run.runner import RunConfig, make_backend
from .console import heading
from .errors import EXIT_PROBLEMS, InfrastructureError, UserError
from .options import backend_options, checked_backend, registry


def find_case(case_id: str, seed: int):
    parts = case_id.split("/")
    if len(parts) < 3:
        raise UserError(
            f"{case_id!r} is not a case id (op/product/...; see 'aclnn-conform cases list')"
        )
    reg = registry()
    spec = reg.get(parts[0])
    if parts[1] not in spec.products:
        raise UserError(f"{case_id!r}: {spec.name} has no product {parts[1]!r}")
    for plan in plan_op(spec, [parts[1]]):
        if plan.id == case_id:
            return spec, build(spec, plan, seed)
    raise UserError(
        f"no generated case has the id {case_id!r} (see 'aclnn-conform cases list -k ...')"
    )


def _show_array(name: str, a: np.ndarray, limit: int = 24) -> str:
    flat = np.asarray(a, dtype=np.float64).reshape(-1) if a.dtype.kind != "c" else a.reshape(-1)
    head = np.array2string(flat[:limit], precision=9, separator=", ", max_line_width=100)
    more = f" ... ({flat.size} elements)" if flat.size > limit else ""
    return f"  {name} {list(a.shape)}: {head}{more}"


@click.command("replay")
@click.argument("case_id")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--backend", default="reference", show_default=True)
@click.option("--oracle", default="reference", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the result record as JSON.")
@backend_options
def replay(case_id, seed, backend, oracle, as_json, backend_opts, device, lib_dir, device_id,
           exec_cmd, isolate, timeout, max_memory):  # fmt: skip
    """Rebuild CASE-ID from its id and seed, run it, print inputs, expected, actual and verdict."""
    spec, case = find_case(case_id, seed)
    reg = registry()
    options = checked_backend(backend, backend_opts, device, lib_dir, device_id, exec_cmd)
    if oracle != backend:
        config.check_backend(oracle, {}, "--oracle")
    try:
        b = make_backend(RunConfig(backend=backend, backend_options=options, isolate=isolate,
                                   timeout=timeout, spec_dirs=reg.dirs,
                                   max_memory=config.max_memory(max_memory)), reg)  # fmt: skip
        o = load_backend(oracle, reg)
    except BackendError as exc:
        raise InfrastructureError(str(exc)) from None
    try:
        judged = judge(spec, case, b, o, oracle, timeout)
    finally:
        b.close()
    rec = judged.record
    if as_json:
        click.echo(json.dumps(rec, indent=1, default=str))
    else:
        click.echo(heading(f"{case.id}  (seed {seed})"))
        click.echo(f"clauses: {', '.join(spec.clause(c) for c in case.clauses)}")
        click.echo(heading("inputs"))
        for name, a in case.call.args.items():
            if isinstance(a, TensorArg) and spec.param(name).is_read:
                click.echo(
                    f"  {name}: {a.dtype} shape {list(a.shape)} strides {list(a.strides)} offset {a.offset}"
                )
                click.echo(_show_array("  values", a.view()))
            elif isinstance(a, ScalarArg):
                click.echo(f"  {name}: {a.dtype} scalar {a.value!r}")
            elif a is None:
                p = spec.param(name)
                means = {"default": f"stands for the default {p.default!r}",
                         "absent": "the parameter takes no part"}.get(p.null, "")  # fmt: skip
                click.echo(f"  {name}: null" + (f" (if_null: {p.null}: {means})" if means else ""))
            elif not isinstance(a, TensorArg):
                click.echo(f"  {name}: {a!r}")
        click.echo(heading("status"))
        actual = rec.get("actual_status")
        if rec.get("raised"):
            actual = f"none: the backend raised {first_line(rec.get('message', ''))}"
        elif rec.get("message"):
            actual = f"{actual} ({first_line(rec['message'])})"
        click.echo(f"  expected {rec.get('oracle_status')}  actual {actual}")
        for name, cmp in rec.get("comparisons", {}).items():
            click.echo(heading(f"output {name}"))
            for k, v in cmp["stats"].items():
                click.echo(f"  {k}: {v}")
            if cmp["worst"]:
                click.echo("  worst elements (index: expected / actual, ulp, inputs):")
                for w in cmp["worst"]:
                    click.echo(
                        f"    {w['index']}: {w['expected']} / {w['actual']}, {w['ulp']} ulp, {w['inputs']}"
                    )
        click.echo(heading("verdict"))
        click.echo(f"  {judged.verdict}{': ' + judged.reason if judged.reason else ''}")
    if judged.verdict in BROKEN:
        raise SystemExit(EXIT_PROBLEMS)
