"""`aclnn-conform run`: generate (or read) cases, run them against a backend, record, summarise."""

from __future__ import annotations

import contextlib
import json
import platform
import shlex
import signal
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import click

from ..conformance.files.writelock import LockedError, ResultsLock
from ..conformance.judge import expectations, provenance
from ..conformance.judge import results as res
from ..conformance.judge.verdicts import BROKEN
from ..conformance.run import config
from ..conformance.run.backend import BackendError, backend_class, load_backend
from ..conformance.run.progress import Progress
from ..conformance.run.runner import (
    TOOL_VERSION,
    ResultsWriteError,
    ResultsWriter,
    RunConfig,
    directory_items,
    execute,
    generated_items,
    item_facts,
)
from ..reports.output import write_atomic
from .console import heading, style
from .errors import EXIT_INTERRUPTED, EXIT_PROBLEMS, InfrastructureError, UserError, one_line
from .options import backend_options, build_selection, checked_backend, registry, selection_options
from .paths import check_outputs, results_family, same_file


def backend_version(name: str, options: dict, reg, facts: dict | None = None) -> str:
    """The version string of the backend, which is started once for it: a backend that cannot
    start stops the run here, before a results file is touched (exit code 3). With `facts`,
    the backend's host facts (CANN version, device, ASCEND_OPP_PATH, ...) are added to it."""
    try:
        b = load_backend(name, reg, **options)
    except BackendError as exc:
        raise InfrastructureError(f"--backend {name}: {exc}") from None
    try:
        if facts is not None:
            facts.update(b.host_facts())
        return b.version()
    finally:
        b.close()


def totals_line(summary: res.Summary, backend: str, seconds: float) -> str:
    counts = "  ".join(f"{v} {n}" for v, n in sorted(summary.verdicts.items()))
    return f"{backend}: {summary.total} cases in {seconds:.1f} s: {counts or 'nothing ran'}"


def failure_line(rec: dict, width: int = 200) -> str:
    """A failing case's verdict, id and reason, with the backend's own words when it spoke."""
    reason = one_line(res.safe_text(rec["reason"])) if rec.get("reason") else ""
    said = one_line(res.safe_text(rec["message"])) if rec.get("message") else ""
    if said and said not in reason:
        reason = f"{reason} (backend said: {said})" if reason else f"backend said: {said}"
    if len(reason) > width:
        reason = reason[: width - 3] + "..."
    return f"  {res.safe_text(rec['verdict'])}: {res.safe_text(rec['id'])}: {reason}"


def print_summary(s: res.Summary, backend: str, seconds: float, limit: int = 20) -> None:
    click.echo(heading(f"\n{backend}: {s.total} cases in {seconds:.1f} s"))
    click.echo("  ".join(f"{v} {n}" for v, n in sorted(s.verdicts.items())))
    click.echo(heading("\nop x product x dtype (output dtype; neg: status cases)"))
    click.echo(f"{'op':<20} {'product':<16} {'dtype':<6} {'pass':>5} {'fail':>5} {'xfail':>6} "
               f"{'dev':>5} {'skip':>5}")  # fmt: skip
    for (op, product, col), c in sorted(s.matrix.items()):
        bad = sum(c[v] for v in res.FAILING)
        line = (f"{op:<20} {product:<16} {col:<6} {c['pass']:>5} {bad:>5} {c['xfail']:>6} "
                f"{c['deviation']:>5} {c['skip']:>5}")  # fmt: skip
        line = res.safe_text(line)
        click.echo(style(line, fg="red") if bad else line)
    if s.failing_clauses:
        click.echo(heading("\nfailing clauses"))
        for clause, n in s.failing_clauses.most_common():
            click.echo(f"  {res.safe_text(clause)}: {n}")
    if s.failures:
        click.echo(heading(f"\nfirst {min(limit, len(s.failures))} of {s.failed} failures"))
        for rec in s.failures[:limit]:
            click.echo(failure_line(rec))
            if rec.get("replay"):
                click.echo(f"    {res.safe_text(rec['replay'])}")


def oracle_options(backend: str, oracle: str, options: dict, given: tuple[str, ...],
                   exact: bool) -> dict:  # fmt: skip
    """The oracle's options, checked: the backend's own when the oracle is the backend under
    test, else --oracle-opt (and exact=1 for a reference oracle under --exact)."""
    if oracle == backend:
        if given:
            raise UserError(f"--oracle-opt: the oracle is the backend under test ({backend}): "
                            "it runs with the backend's options; drop --oracle-opt")  # fmt: skip
        return dict(options)
    opts = {**config.parse_backend_options(given, {}, "--oracle-opt"),
            **config.oracle_options(oracle, exact)}  # fmt: skip
    try:
        config.check_backend(oracle, opts, "--oracle", "--oracle-opt")
    except config.ConfigError as exc:
        if str(exc).startswith("--oracle"):
            raise
        raise UserError(f"--oracle {oracle}: {exc} (the oracle's options are given with "
                        "--oracle-opt KEY=VALUE)") from None  # fmt: skip
    return opts


EXIT_TERMINATED = 143  # SIGTERM, as shells report it


class Terminated(KeyboardInterrupt):
    """SIGTERM, handled as Ctrl-C is: the workers stopped, the meta written, the hint shown."""


@contextlib.contextmanager
def _terminate_as_interrupt():
    """While running: SIGTERM raises Terminated in the main thread; afterwards the handler is
    restored (a worker restores the default itself: runner._init_worker)."""

    def handler(signum, frame):
        raise Terminated()

    try:
        old = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread (click's test runner): nothing to install
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def resume_hint() -> str:
    args = [a for a in sys.argv[1:] if a != "--resume"]
    return "aclnn-conform " + " ".join(shlex.quote(a) for a in args) + " --resume"


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
    help="JSONL file results are written to (its meta beside it: FILE.meta.json).",
)
@click.option(
    "--resume",
    is_flag=True,
    help="Skip cases already recorded in --results (same "
    "backend, version, seed, specs and tool only).",
)
@click.option(
    "--force",
    is_flag=True,
    help="With --resume: continue a results file of another backend, version, seed, "
    "spec or tool version, recording the mix in the meta.",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Seed of the generated values.",
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
@click.option(
    "--max-case-bytes",
    default=None,
    metavar="SIZE",
    help="Memory budget of one case (e.g. 2G); a case above it is an error verdict, "
    "not run. Default: a quarter of physical memory divided by --jobs.",
)
@click.option(
    "--quiet",
    "-q",
    is_flag=True,
    help="No progress and no tables: one line of totals (failures are still listed).",
)
@click.option(
    "--expectations",
    "expectations_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Known failures (YAML). Default: the file shipped for the backend, if any.",
)
@click.option(
    "--no-expectations",
    is_flag=True,
    help="Ignore every expectations file and the spec deviations.",
)
@click.option(
    "--strict",
    is_flag=True,
    help="An unexpected pass (xpass) fails the run, and so does a run that proves nothing: "
    "no case judged, a backend judged by itself, an expectations entry fitting every case.",
)
@click.option(
    "--update-expectations",
    is_flag=True,
    help="Rewrite --expectations from this run: keep entries that still fail, add new "
    "failures, drop fixed ones; comments are kept.",
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
@click.option(
    "--exact",
    is_flag=True,
    help="The reference's DOUBLE outputs correctly rounded (mpmath for every element: slow) "
    "instead of faithful (within 1 ulp, float64 speed). Recorded in the results and reports.",
)
@click.option(
    "--oracle-opt",
    "oracle_opts_given",
    multiple=True,
    metavar="KEY=VALUE",
    help="Option for the --oracle backend (repeatable), e.g. cmd=./harness for --oracle exec. "
    "An oracle that is the backend under test gets the backend's options.",
)
@backend_options
@selection_options
def run(backend, oracle, cases_dir, results, resume, force, seed, jobs, fail_fast, keep_outputs,
        max_case_bytes, quiet, expectations_file, no_expectations, strict, update_expectations,
        html, junit, markdown, json_report, oracle_opts_given,
        backend_opts, device, lib_dir, device_id, exec_cmd, isolate, timeout, max_memory,
        ops, products, dtypes, clauses, keyword, max_cases, shard, profile, allow_empty,
        exact):  # fmt: skip
    """Run the conformance suite against a backend.

    \b
    Exit codes: 0 everything passed (or failed as the expectations say);
    1 conformance failures (fail, error, crash, timeout; xpass under --strict);
    2 usage or setup error (another run writing --results included);
    3 infrastructure failure (backend missing, worker not starting, results not writable);
    130 interrupted (Ctrl-C), 143 terminated (SIGTERM): the results so far are kept, with
    their meta: rerun with --resume.
    """
    # Everything the user can get wrong is checked before a results file is touched.
    reg = registry()
    reports = [("--html", html), ("--junit", junit), ("--markdown", markdown),
               ("--json", json_report)]  # fmt: skip
    check_outputs(reports, [*results_family("--results", results),
                            ("--expectations", expectations_file)],
                  output_dirs=[("--keep-outputs", keep_outputs)],
                  input_dirs=[("--cases", cases_dir)])  # fmt: skip
    if expectations_file is not None and same_file(expectations_file, results):
        raise UserError(f"--results {results} is the same file as --expectations "
                        f"{expectations_file}; give the results another file")  # fmt: skip
    sel = build_selection(ops, products, dtypes, clauses, keyword, max_cases, shard, profile)
    if cases_dir is not None and profile != "default":
        raise UserError("--profile chooses generated cases; it does not apply with --cases DIR")
    options = checked_backend(backend, backend_opts, device, lib_dir, device_id, exec_cmd)
    if exact:
        options = config.exact_options(backend, oracle, options)
    if keep_outputs is not None and not keep_outputs.strip():
        raise UserError("--keep-outputs '': give the folder to write the outputs to")
    oracle_opts = oracle_options(backend, oracle, options, oracle_opts_given, exact)
    if force and not resume:
        raise UserError("--force applies only with --resume")
    jobs, capped = config.checked_jobs(jobs)
    if capped:
        click.echo(f"warning: {capped}", err=True)
    memory = config.max_memory(max_memory, jobs)
    budget = (config.parse_bytes(max_case_bytes) if max_case_bytes is not None
              else config.default_case_bytes(jobs))  # fmt: skip
    expect = config.load_expectations(backend, expectations_file, no_expectations,
                                      update_expectations, reg)  # fmt: skip
    for w in expect.warnings if expect is not None else ():
        click.echo(f"warning: {w}", err=True)
    if strict:
        config.check_strict(expect, backend, oracle, oracle == backend)
    expect_sha = expectations.fingerprint(expect, reg, backend)
    if expect is not None and expect.path:  # the shipped file for the backend, when not given
        check_outputs(reports, [("--expectations", expect.path)])
    if cases_dir is not None:
        if not cases_dir.is_dir():
            raise UserError(f"--cases {cases_dir}: no such directory")
        items = directory_items(cases_dir, sel, reg,
                                warn=lambda m: click.echo(f"warning: {m}", err=True))  # fmt: skip
    else:
        items = generated_items(reg, sel, seed)
    config.require_cases(len(items), sel, allow_empty, f"--cases {cases_dir}" if cases_dir else "")
    host: dict = {}
    version = backend_version(backend, options, reg, host)
    if host.get("diagnosis"):  # recorded in the meta; a missing ASCEND_OPP_PATH stops the run
        click.echo(f"warning: {backend}: {host['diagnosis']}", err=True)  # at its first 561107
    oracle_version = (version if oracle == backend
                      else backend_version(oracle, oracle_opts, reg))  # fmt: skip
    meta = {"backend": backend, "backend_version": version, "oracle": oracle,
            "oracle_version": oracle_version, "exact": exact, "seed": seed,
            "cases": len(items), "spec_sha256": reg.sha256, "tool_version": TOOL_VERSION,
            "expectations": (expect.path or "spec deviations") if expect is not None else None,
            "expectations_sha256": expect_sha,
            "max_case_bytes": budget, "max_memory": memory, "jobs": jobs}  # fmt: skip
    if host:
        meta["backend_host"] = host  # what this host is, for judging the run elsewhere
    if sel.shard:
        meta["shard"] = "{}/{}".format(*sel.shard)
    meta_path = Path(str(results) + ".meta.json")
    # Every check is done. From here the results file is this run's alone: a second run on it
    # is refused while this one lives (the lock ends with the command or the process).
    ctx = click.get_current_context()
    try:
        ctx.call_on_close(ResultsLock(results, "--results").acquire().release)
    except LockedError as exc:
        raise UserError(str(exc)) from None
    summary = res.Summary()  # the run's own records: its summary and exit code come from here
    if resume:
        now = {**meta, "seed": None if cases_dir else seed,
               "spec_sha256": {s.name: s.sha256 for s in reg}}  # fmt: skip
        mixed = provenance.check_resume(results, now, force)
        if mixed:
            meta["mixed"] = mixed
            click.echo(f"warning: --force: {provenance.describe_mix(mixed)}", err=True)
        done = set()
        if results.exists():  # read under the lock: the records this run continues
            earlier = res.Stream(results)
            summary = earlier.fold(res.Summary)
            done = {str(r["id"]) for r in earlier}
    else:
        for stale in (results, meta_path):
            if stale.exists():
                stale.unlink()
        done = set()
    todo = [it for it in items if it.id not in done]
    skipped = []
    if expect is not None:
        family = backend_class(backend).binding_family
        for it in todo:
            facts = item_facts(it, reg, family)
            entry = expect.skip_entry(facts, backend, version)
            if entry is not None:
                skipped.append({"id": it.id, "op": it.op, "verdict": "skip", "backend": backend,
                                "reason": f"expectations: {entry.reason}", "clauses": [],
                                "dtypes": facts.get("dtypes") or {},
                                "expectations_sha256": expect_sha,
                                "expectation": {"match": entry.match, "kind": "skip",
                                                "reason": entry.reason}})  # fmt: skip
        skip_ids = {r["id"] for r in skipped}
        todo = [it for it in todo if it.id not in skip_ids]
    cfg = RunConfig(backend=backend, oracle=oracle, backend_options=options,
                    oracle_options=oracle_opts, seed=seed, jobs=jobs,
                    fail_fast=fail_fast, keep_outputs=keep_outputs, isolate=isolate,
                    timeout=timeout, max_case_bytes=budget, spec_dirs=reg.dirs, exact=exact,
                    max_memory=memory, deviations=expect is not None)  # fmt: skip
    progress = Progress(len(todo), enabled=not quiet)
    writer = ResultsWriter(results)
    ctx.call_on_close(writer.release)
    t0 = time.perf_counter()
    state = {"stop": False, "ran": 0}

    def record(rec: dict) -> None:
        writer.write(rec)
        summary.add(rec)

    def sink(rec: dict) -> bool:
        rec["expectations_sha256"] = expect_sha
        if expect is not None:
            expect.apply(rec, backend, rec.get("backend_version", version))
        record(rec)
        state["ran"] += 1
        progress.update(rec)
        if fail_fast and rec.get("verdict") in res.FAILING:
            state["stop"] = True
            return False
        return True

    def write_meta() -> None:
        meta.update(run=state["ran"], seconds=time.perf_counter() - t0, host=platform.node(),
                    date=datetime.now(timezone.utc).isoformat(timespec="seconds"))  # fmt: skip
        write_atomic(meta_path, json.dumps(meta, indent=1) + "\n")

    interrupted = 0
    try:
        for rec in skipped:
            record(rec)
        with _terminate_as_interrupt():
            execute(todo, cfg, sink)
    except BackendError as exc:
        raise InfrastructureError(
            f"{exc} (results so far are in {results}; rerun with --resume)"
        ) from None
    except ResultsWriteError as exc:
        with contextlib.suppress(OSError):
            write_meta()
        raise InfrastructureError(
            f"cannot write --results {results}: {exc.strerror}; the results recorded before "
            f"are kept: make room, then resume with: {resume_hint()}"
        ) from None
    except Terminated:
        interrupted = EXIT_TERMINATED
    except KeyboardInterrupt:
        interrupted = EXIT_INTERRUPTED
    finally:
        writer.close()
        progress.close()
    if interrupted:
        with _terminate_as_interrupt():  # a second signal must not cut the meta short
            write_meta()
        how = "terminated (SIGTERM)" if interrupted == EXIT_TERMINATED else "interrupted"
        with contextlib.suppress(OSError):  # stderr itself may be gone with the terminal
            click.echo(f"\n{how} after {state['ran']} of {len(todo)} cases; the results so far "
                       f"are in {results}. Resume with: {resume_hint()}", err=True)  # fmt: skip
        raise SystemExit(interrupted)
    seconds = time.perf_counter() - t0
    try:
        write_meta()
    except OSError as exc:
        raise InfrastructureError(
            f"cannot write {meta_path}: {exc.strerror}; the results are in {results}: make "
            f"room, then write the meta again with: {resume_hint()}"
        ) from None
    if quiet:
        click.echo(totals_line(summary, backend, seconds))
        for rec in summary.failures[:20]:
            click.echo(failure_line(rec))
    else:
        print_summary(summary, backend, seconds)
    if state["stop"]:
        left = len(todo) - state["ran"]
        click.echo(f"--fail-fast: stopped at the first failure; {left} of {len(todo)} selected "
                   "cases did not run", err=True)  # fmt: skip
    click.echo(f"results: {res.safe_text(results)}")
    if html or junit or markdown or json_report:
        from ..reports import write_reports

        try:  # from this run's own file descriptor: its records, whatever the path holds now
            written = write_reports(writer.records(clean=True), meta, html=html, junit=junit,
                                    markdown=markdown, json=json_report, registry=reg)  # fmt: skip
        except OSError as exc:
            again = " ".join(f"{o} {shlex.quote(str(p))}" for o, p in reports if p)
            raise InfrastructureError(
                f"cannot write {exc.filename or 'a report'}: {exc.strerror or exc}; the results "
                f"are complete in {results}: write the reports again with: aclnn-conform "
                f"report {shlex.quote(str(results))} {again}"
            ) from None
        for path in written:
            click.echo(f"report: {res.safe_text(path)}")
    if update_expectations and expect is not None:
        records = [
            r for r in writer.records() if r.get("verdict") in (*res.FAILING, "xfail", "skip")
        ]
        entries = expectations.updated(expect, records, backend, version)
        expectations.write(expectations_file, entries, backend)
        click.echo(f"expectations: wrote {len(entries)} entries to {expectations_file}")
    hard = sum(summary.verdicts[v] for v in BROKEN)
    if summary.verdicts["xpass"]:
        note = (
            "fails the run (--strict)" if strict else "reported; --strict makes them fail the run"
        )
        click.echo(f"{summary.verdicts['xpass']} unexpected pass(es): {note}", err=True)
    proved = strict_failures(summary, expect) if strict else []
    for line in proved:
        click.echo(line, err=True)
    if hard or proved or (strict and summary.verdicts["xpass"]):
        raise SystemExit(EXIT_PROBLEMS)


def strict_failures(summary: res.Summary, expect) -> list[str]:
    """--strict: why this run proved nothing (no case judged; an entry that excused every
    judged case by its message or failure kind alone), one line each."""
    judged = summary.total - summary.verdicts["skip"]
    if not judged:
        return [f"--strict: no case was judged ({summary.total} selected, all skipped): the run "
                "proves nothing; check the filters, the backend's capabilities and the skip "
                "entries"]  # fmt: skip
    out = []
    for e in expect.excused_everything(judged) if expect is not None else ():
        out.append(f"--strict: {e.where(expect.path)}: the {e.kind} entry ({e.describe()}) "
                   f"excused every one of the {judged} judged cases: the run proves nothing; "
                   "narrow it with match, binding or dtypes")  # fmt: skip
    return out
