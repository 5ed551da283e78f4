"""`aclnn-conform probe`: the claimed-vs-actual dtype matrix of a backend (the spec-checker)."""

from __future__ import annotations

import json

import click

from ..conformance.acl import dtypes as dt
from ..conformance.run import config
from ..conformance.run.backend import BackendError
from ..conformance.run.probe import probe, to_json
from ..conformance.run.runner import RunConfig, make_backend
from .console import heading
from .errors import EXIT_PROBLEMS, InfrastructureError, UserError
from .options import backend_options, checked_backend, registry

SYMBOL = {"agree-accept": "+", "agree-reject": ".", "listed-but-rejected": "L",
          "accepted-not-listed": "A", "skip": " ", "crash": "C", "timeout": "T",
          "error": "E"}  # fmt: skip


@click.command("probe")
@click.option("--backend", required=True, help="Backend to probe.")
@click.option("--op", "ops", multiple=True, help="Operator(s); default all.")
@click.option("--product", "products", multiple=True, help="Product(s); default all of each op.")
@click.option("--json", "as_json", is_flag=True, help="Print the matrix as JSON.")
@backend_options
def probe_cmd(
    backend,
    ops,
    products,
    as_json,
    backend_opts,
    device,
    lib_dir,
    device_id,
    exec_cmd,
    isolate,
    timeout,
    max_memory,
):
    """Try every aclDataType on each tensor and scalar parameter; print claimed vs actual.

    Legend: + accepted as listed, . rejected as not listed, L listed but rejected,
    A accepted but not listed, blank: the backend cannot express it; C crashed, T timed out,
    E raised or failed (no answer: never counted as a rejection; exit code 1).
    """
    options = checked_backend(backend, backend_opts, device, lib_dir, device_id, exec_cmd)
    reg = registry()
    ops_n = [reg.get(o).name for o in ops]
    try:
        b = make_backend(
            RunConfig(
                backend=backend,
                backend_options=options,
                isolate=isolate,
                timeout=timeout,
                spec_dirs=reg.dirs,
                max_memory=config.max_memory(max_memory),
            ),
            reg,
        )
    except BackendError as exc:
        raise InfrastructureError(str(exc)) from None
    try:
        rows = probe(reg, b, ops_n or None, list(products) or None)
    except BackendError as exc:  # e.g. no operator package (561107): one setup error
        raise InfrastructureError(str(exc)) from None
    finally:
        b.close()
    if not rows:
        raise UserError("nothing to probe for the given --op/--product")
    broken = [(r, d, v) for r in rows for d, v in r.broken.items()]
    if as_json:
        click.echo(json.dumps(to_json(rows), indent=1))
        if broken:
            raise SystemExit(EXIT_PROBLEMS)
        return
    names = dt.tables().names()
    shorts = [dt.get(n).short for n in names]
    click.echo(heading(f"dtype probe of {backend}: claimed (spec) vs actual (backend)"))
    click.echo(
        "legend: + agree accept  . agree reject  L listed but rejected  A accepted not listed  "
        "C crash  T timeout  E error"
    )
    click.echo(" " * 44 + " ".join(s[:4].rjust(4) for s in shorts))
    for r in rows:
        label = f"{r.op}/{r.product}/{r.param}"[:43]
        click.echo(f"{label:<44}" + " ".join(SYMBOL[r.cells[n]].rjust(4) for n in names))
    bad = [(r, d, v) for r in rows for d, v in r.disagreements.items()]
    click.echo(heading(f"\n{len(bad)} disagreements"))
    for r in rows:
        for kind in ("listed-but-rejected", "accepted-not-listed"):
            names = [d for d, v in r.disagreements.items() if v == kind]
            if names:
                click.echo(
                    f"  {r.op} {r.product} {r.param}: {kind.replace('-', ' ')}: {', '.join(names)}"
                )
    if broken:
        click.echo(heading(f"\n{len(broken)} calls without an answer (not counted as rejected)"))
        for r in rows:
            for kind in ("crash", "timeout", "error"):
                names = [d for d, v in r.broken.items() if v == kind]
                if names:
                    click.echo(f"  {r.op} {r.product} {r.param}: {kind}: {', '.join(names)}")
        raise SystemExit(EXIT_PROBLEMS)
