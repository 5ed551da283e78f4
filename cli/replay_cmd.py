"""`aclnn-conform replay CASE-ID`: rebuild one generated case from its id and seed, run it, show all."""

from __future__ import annotations

import json

import click
import numpy as np

from ..conformance.acl.call import ArrayArg, ScalarArg, TensorArg
from ..conformance.cases.generate import build
from ..conformance.judge.verdicts import BROKEN
from ..conformance.run.backend import BackendError
from ..conformance.run.judging import first_line
from .console import heading
from .errors import EXIT_PROBLEMS, InfrastructureError
from .options import session, table_options


def _show_array(name: str, a: np.ndarray, limit: int = 24) -> str:
    flat = np.asarray(a, dtype=np.float64).reshape(-1) if a.dtype.kind != "c" else a.reshape(-1)
    head = np.array2string(flat[:limit], precision=9, separator=", ", max_line_width=100)
    more = f" ... ({flat.size} elements)" if flat.size > limit else ""
    return f"  {name} {list(a.shape)}: {head}{more}"


@click.command("replay")
@click.argument("case_id")
@click.option("--json", "as_json", is_flag=True, help="Print the result record as JSON.")
@table_options("replay")
def replay(case_id, as_json, **values):
    """Rebuild CASE-ID from its id and seed, run it, print inputs, expected, actual and verdict.

    It is judged as `aclnn-conform run` judges it with the same options (the oracle and its
    options, the expectations and spec deviations): a run's replay line repeats them."""
    s = session(values)
    item = s.find(case_id)
    spec = s.registry.get(item.op)
    seed = s.values["seed"]
    case = build(spec, item.plan, seed)
    try:
        rec = s.judge(item)
    except BackendError as exc:
        raise InfrastructureError(str(exc)) from None
    finally:
        s.close()
    if as_json:
        click.echo(json.dumps(rec.to_dict(), indent=1, default=str))
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
                means = {
                    "default": (
                        f"stands for a tensor filled with {p.default!r}, broadcast"
                        if p.is_tensor
                        else f"stands for the default {p.default!r}"
                    ),
                    "absent": "the parameter takes no part",
                }.get(p.null, "")
                click.echo(f"  {name}: null" + (f" (if_null: {p.null}: {means})" if means else ""))
            elif isinstance(a, ArrayArg) and a.kind == "tensor_list":
                click.echo(f"  {name}: tensor_list of {len(a.items)}")
                for i, t in enumerate(a.items):
                    click.echo(f"    [{i}]: {t.dtype} shape {list(t.shape)}")
                    click.echo(_show_array("      values", t.view()))
            elif isinstance(a, ArrayArg):
                shown = [x.value if isinstance(x, ScalarArg) else x for x in a.items]
                click.echo(f"  {name}: {a.kind} {shown!r}")
            elif not isinstance(a, TensorArg):
                kind = spec.param(name).kind
                click.echo(
                    f"  {name}: {kind} {a!r}" if kind in ("int", "float") else f"  {name}: {a!r}"
                )
        click.echo(heading("status"))
        actual = rec.actual_status
        if rec.raised:
            actual = f"none: the backend raised {first_line(rec.message or '')}"
        elif rec.message:
            actual = f"{actual} ({first_line(rec.message)})"
        click.echo(f"  expected {rec.oracle_status}  actual {actual}")
        for name, cmp in (rec.comparisons or {}).items():
            click.echo(heading(f"output {name}"))
            if "relations" in cmp:  # a random output: judged by its relations, not values
                held = "hold" if cmp["passed"] else "do not all hold"
                click.echo(f"  relations {', '.join(cmp['relations'])}: {held}")
                continue
            for k, v in cmp["stats"].items():
                click.echo(f"  {k}: {v}")
            if cmp["worst"]:
                click.echo("  worst elements (index: expected / actual, ulp, inputs):")
                for w in cmp["worst"]:
                    click.echo(
                        f"    {w['index']}: {w['expected']} / {w['actual']}, {w['ulp']} ulp, {w['inputs']}"
                    )
        if rec.device is not None or rec.phase1_us is not None:  # docs/timings.md
            click.echo(heading("device"))
            if rec.device is not None:
                click.echo(f"  device {rec.device}")
            if rec.phase1_us is not None:
                line = f"  phase 1 {rec.phase1_us:,.1f} us"
                if rec.phase2_us is not None:
                    line += f", phase 2 {rec.phase2_us:,.1f} us ({rec.phase2_clock} clock)"
                click.echo(
                    f"{line}; median of {rec.timed_runs} call(s) after {rec.warmup_runs} warm-up"
                )
        click.echo(heading("verdict"))
        click.echo(f"  {rec.verdict}{': ' + rec.reason if rec.reason else ''}")
    if rec.verdict in BROKEN:
        raise SystemExit(EXIT_PROBLEMS)
