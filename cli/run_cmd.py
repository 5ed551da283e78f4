"""`aclnn-conform run`: generate (or read) cases, run them against a backend, record, summarise."""

from __future__ import annotations

import json
import platform
import time
from datetime import datetime, timezone
from pathlib import Path

import click

from cli.console import heading, style
from cli.errors import EXIT_PROBLEMS, InfrastructureError, UserError
from conformance import expectations
from conformance import results as res
from conformance.backend import BackendError, backend_class
from conformance.registry import default_registry
from conformance.runner import (
    ResultsWriter,
    RunConfig,
    Selection,
    directory_items,
    execute,
    finished_ids,
    generated_items,
)


def parse_shard(value: str | None) -> tuple[int, int] | None:
    if not value:
        return None
    try:
        i, n = (int(x) for x in value.split("/"))
    except ValueError:
        raise UserError(f"--shard {value!r}: expected i/n, e.g. 1/4") from None
    if not 1 <= i <= n:
        raise UserError(f"--shard {value!r}: i must be between 1 and n")
    return i, n


def parse_backend_options(pairs, device, lib_dir, device_id, exec_cmd) -> dict:
    """--backend-opt KEY=VALUE plus the named shortcuts, as keyword options for the backend."""
    opts: dict = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UserError(f"--backend-opt {pair!r}: expected KEY=VALUE")
        opts[key.strip()] = value
    for key, value in (("device", device), ("lib_dir", lib_dir), ("device_id", device_id),
                       ("cmd", exec_cmd)):  # fmt: skip
        if value is not None:
            opts[key] = value
    return opts


def backend_options(f):
    """Options that configure the backend under test (shared by run, replay and probe)."""
    opts = [
        click.option("--backend-opt", "backend_opts", multiple=True, metavar="KEY=VALUE",
                     help="Option for the backend (repeatable), e.g. device=cuda."),
        click.option("--device", default=None, help="torch: cpu, cuda or npu."),
        click.option("--lib-dir", default=None, help="aclnn: folder holding the CANN libraries."),
        click.option("--device-id", type=int, default=None, help="aclnn: NPU device id."),
        click.option("--exec-cmd", default=None, help="exec: the harness command line."),
        click.option("--isolate/--no-isolate", default=None,
                     help="Run the backend in a worker process (default: on for aclnn and exec)."),
        click.option("--timeout", type=click.FloatRange(min=0.1), default=60.0, show_default=True,
                     help="Per-case time limit in seconds for an isolated backend."),
    ]  # fmt: skip
    for o in reversed(opts):
        f = o(f)
    return f


def selection_options(f):
    """The case filters shared by run, cases list and cases export."""
    opts = [
        click.option("--op", "ops", multiple=True, help="Operator (aclnnEluBackward or elu_backward); repeatable."),
        click.option("--product", "products", multiple=True, help="Product id, e.g. atlas-a2; repeatable."),
        click.option("--dtype", "dtypes", multiple=True, help="Keep cases with a tensor of this dtype (f16, BF16, ...)."),
        click.option("--clause", "clauses", multiple=True, help="Keep cases exercising this clause (id or op/id)."),
        click.option("-k", "keyword", default="", help="Keep cases whose id contains this text."),
        click.option("--max-cases", type=click.IntRange(min=1), default=None,
                     help="Budget: at most N cases, every clause kept covered."),
        click.option("--shard", default=None, metavar="I/N", help="Run only shard I of N (1-based)."),
    ]  # fmt: skip
    for o in reversed(opts):
        f = o(f)
    return f


def load_expectations(backend: str, path: Path | None, disabled: bool, update: bool):
    """The expectations in force for this run (None when there are none)."""
    if disabled:
        if update:
            raise UserError("--update-expectations and --no-expectations contradict each other")
        return None
    if update and path is None:
        raise UserError("--update-expectations needs --expectations FILE (the file to rewrite)")
    if path is None:
        path = expectations.shipped(backend)
        if path is None:
            return None
    if not path.exists():
        if update:
            return expectations.Expectations([], str(path), backend)
        raise UserError(f"--expectations {path}: no such file")
    try:
        expect = expectations.load(path)
    except expectations.ExpectationsError as exc:
        raise UserError(str(exc)) from None
    for w in expect.warnings:
        click.echo(f"warning: {w}", err=True)
    return expect


def backend_version(name: str, options: dict) -> str:
    """The version string of a backend class, without starting a device if avoidable."""
    try:
        b = backend_class(name)(**options)
    except Exception:
        return "unknown"
    try:
        return b.version()
    finally:
        b.close()


def check_backend(name: str, options: dict, option: str) -> None:
    """Fail early, with the reason, when a backend is unknown or cannot run here."""
    try:
        cls = backend_class(name)
    except BackendError as exc:
        raise UserError(f"{option}: {exc}") from None
    ok, reason = cls.availability(**options)
    if not ok:
        raise InfrastructureError(f"{option} {name}: not available: {reason}")


def build_selection(ops, products, dtypes, clauses, keyword, max_cases, shard) -> Selection:
    reg = default_registry()
    ops_norm = [reg.get(o).name for o in ops]
    from conformance.loader import products as known_products

    for p in products:
        if p not in known_products():
            raise UserError(
                f"--product {p!r}: unknown product (known: {', '.join(known_products())})"
            )
    sel = Selection(ops_norm, list(products), list(dtypes), list(clauses), keyword, max_cases,
                    parse_shard(shard))  # fmt: skip
    sel.dtype_names()  # raises DtypeError for an unknown dtype
    return sel


def print_summary(records: list[dict], backend: str, seconds: float, limit: int = 20) -> None:
    s = res.summarise(records)
    click.echo(heading(f"\n{backend}: {s.total} cases in {seconds:.1f} s"))
    click.echo("  ".join(f"{v} {n}" for v, n in sorted(s.verdicts.items())))
    click.echo(heading("\nop x product x dtype (output dtype; neg: status cases)"))
    click.echo(
        f"{'op':<20} {'product':<16} {'dtype':<6} {'pass':>5} {'fail':>5} {'xfail':>6} {'skip':>5}"
    )
    for (op, product, col), c in sorted(s.matrix.items()):
        bad = sum(c[v] for v in res.FAILING)
        line = f"{op:<20} {product:<16} {col:<6} {c['pass']:>5} {bad:>5} {c['xfail']:>6} {c['skip']:>5}"
        click.echo(style(line, fg="red") if bad else line)
    if s.failing_clauses:
        click.echo(heading("\nfailing clauses"))
        for clause, n in s.failing_clauses.most_common():
            click.echo(f"  {clause}: {n}")
    if s.failures:
        click.echo(heading(f"\nfirst {min(limit, len(s.failures))} of {len(s.failures)} failures"))
        for rec in s.failures[:limit]:
            click.echo(f"  {rec['verdict']}: {rec['id']}: {rec.get('reason', '')[:160]}")
            if rec.get("replay"):
                click.echo(f"    {rec['replay']}")


@click.command("run")
@click.option("--backend", default="reference", show_default=True, help="Backend to test.")
@click.option(
    "--oracle",
    default="reference",
    show_default=True,
    help="Backend that gives the expected results.",
)
@click.option(
    "--cases",
    "cases_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Run the case directories under DIR instead of generating cases.",
)
@click.option(
    "--results",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("results.jsonl"),
    show_default=True,
    help="JSONL file results are appended to.",
)
@click.option("--resume", is_flag=True, help="Skip cases already recorded in --results.")
@click.option(
    "--seed", type=int, default=0, show_default=True, help="Seed of the generated values."
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Worker processes.",
)
@click.option("--fail-fast", is_flag=True, help="Stop at the first failing case.")
@click.option(
    "--keep-outputs",
    type=click.Path(file_okay=False),
    default=None,
    help="Write each case's outputs and result.json under DIR/<case-id>/.",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress output.")
@click.option(
    "--expectations",
    "expectations_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Known failures (YAML). Default: the file shipped for the backend, if any.",
)
@click.option("--no-expectations", is_flag=True, help="Ignore every expectations file.")
@click.option("--strict", is_flag=True, help="An unexpected pass (xpass) fails the run.")
@click.option(
    "--update-expectations",
    is_flag=True,
    help="Rewrite --expectations from this run: keep entries that still fail, add new failures, drop fixed ones.",
)
@click.option(
    "--html",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write a self-contained HTML report.",
)
@click.option(
    "--junit",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write JUnit XML (one testsuite per op).",
)
@click.option(
    "--markdown",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write a Markdown summary (CI job summary, PR comment).",
)
@click.option(
    "--json",
    "json_report",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write a JSON summary (totals, matrix, coverage, failures).",
)
@backend_options
@selection_options
def run(backend, oracle, cases_dir, results, resume, seed, jobs, fail_fast, keep_outputs, quiet,
        expectations_file, no_expectations, strict, update_expectations,
        html, junit, markdown, json_report,
        backend_opts, device, lib_dir, device_id, exec_cmd, isolate, timeout,
        ops, products, dtypes, clauses, keyword, max_cases, shard):  # fmt: skip
    """Run the conformance suite against a backend.

    \b
    Exit codes: 0 everything passed (or failed as the expectations say);
    1 conformance failures (fail, error, crash, timeout; xpass under --strict);
    2 usage or setup error; 3 infrastructure failure (backend missing, worker not starting).
    """
    sel = build_selection(ops, products, dtypes, clauses, keyword, max_cases, shard)
    options = parse_backend_options(backend_opts, device, lib_dir, device_id, exec_cmd)
    check_backend(backend, options, "--backend")
    if oracle != backend:
        check_backend(oracle, {}, "--oracle")
    if cases_dir is not None:
        if not cases_dir.is_dir():
            raise UserError(f"--cases {cases_dir}: no such directory")
        items = directory_items(cases_dir, sel)
    else:
        items = generated_items(default_registry(), sel, seed)
    if not items:
        click.echo("warning: the filters select no case", err=True)
    expect = load_expectations(backend, expectations_file, no_expectations, update_expectations)
    if not resume and results.exists():
        results.unlink()
    done = finished_ids(results) if resume else set()
    todo = [it for it in items if it.id not in done]
    version = backend_version(backend, options)
    skipped = []
    if expect is not None:
        for it in todo:
            entry = expect.find(it.id, backend, version)
            if entry is not None and entry.kind == "skip":
                skipped.append({"id": it.id, "op": it.op, "verdict": "skip", "backend": backend,
                                "reason": f"expectations: {entry.reason}", "clauses": [],
                                "expectation": {"match": entry.match, "kind": "skip",
                                                "reason": entry.reason}})  # fmt: skip
        skip_ids = {r["id"] for r in skipped}
        todo = [it for it in todo if it.id not in skip_ids]
    cfg = RunConfig(backend=backend, oracle=oracle, backend_options=options, seed=seed, jobs=jobs,
                    fail_fast=fail_fast, keep_outputs=keep_outputs, isolate=isolate,
                    timeout=timeout)  # fmt: skip
    from conformance.runner import Progress

    progress = Progress(len(todo), enabled=not quiet)
    writer = ResultsWriter(results)
    t0 = time.perf_counter()
    state = {"stop": False}

    for rec in skipped:
        writer.write(rec)

    def sink(rec: dict) -> bool:
        if expect is not None:
            expect.apply(rec, backend, rec.get("backend_version", version))
        writer.write(rec)
        progress.update(rec)
        if fail_fast and rec.get("verdict") in res.FAILING:
            state["stop"] = True
            return False
        return True

    try:
        execute(todo, cfg, sink)
    except BackendError as exc:
        raise InfrastructureError(
            f"{exc} (results so far are in {results}; rerun with --resume)"
        ) from None
    finally:
        writer.close()
        progress.close()
    seconds = time.perf_counter() - t0
    meta = {"backend": backend, "oracle": oracle, "seed": seed, "cases": len(items),
            "run": len(todo), "seconds": seconds, "host": platform.node(),
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "spec_sha256": default_registry().sha256, "jobs": jobs}  # fmt: skip
    Path(str(results) + ".meta.json").write_text(
        json.dumps(meta, indent=1) + "\n", encoding="utf-8"
    )
    records = res.load(results)
    summary = res.summarise(records)
    if not quiet or summary.failed:
        print_summary(records, backend, seconds)
    click.echo(f"\nresults: {results}")
    if html or junit or markdown or json_report:
        from reports import write_reports

        for path in write_reports(records, meta, html=html, junit=junit, markdown=markdown,
                                  json=json_report):  # fmt: skip
            click.echo(f"report: {path}")
    if update_expectations and expect is not None:
        entries = expectations.updated(expect, records, backend, version)
        expectations.write(expectations_file, entries, backend)
        click.echo(f"expectations: wrote {len(entries)} entries to {expectations_file}")
    hard = sum(summary.verdicts[v] for v in ("fail", "error", "crash", "timeout"))
    if summary.verdicts["xpass"]:
        note = (
            "fails the run (--strict)" if strict else "reported; --strict makes them fail the run"
        )
        click.echo(f"{summary.verdicts['xpass']} unexpected pass(es): {note}", err=True)
    if hard or (strict and summary.verdicts["xpass"]):
        raise SystemExit(EXIT_PROBLEMS)
