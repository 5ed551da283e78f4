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
from ..conformance.judge.result import Result
from ..conformance.judge.verdicts import BROKEN
from ..conformance.run.backend import BackendError
from ..conformance.run.progress import Progress
from ..conformance.run.runner import TOOL_VERSION, ResultsWriteError, ResultsWriter
from ..conformance.run.session import Session, backend_version
from ..reports.output import write_atomic
from .console import heading, style
from .errors import EXIT_INTERRUPTED, EXIT_PROBLEMS, InfrastructureError, UserError, one_line
from .options import registry, session, table_options
from .paths import check_outputs, results_family, same_file


def _version(s: Session, facts: dict | None = None, oracle: bool = False) -> str:
    """The backend's (or the oracle's) version, started once for it: a backend that cannot start
    stops the run here, before a results file is touched (exit code 3). With `facts`, its host
    facts (CANN version, device, ASCEND_OPP_PATH, ...) are added."""
    try:
        return backend_version(s, facts, oracle)
    except BackendError as exc:
        flag, name = (
            ("--oracle", s.values["oracle"]) if oracle else ("--backend", s.values["backend"])
        )
        raise InfrastructureError(f"{flag} {name}: {exc}") from None


def totals_line(summary: res.Summary, backend: str, seconds: float) -> str:
    counts = "  ".join(f"{v} {n}" for v, n in sorted(summary.verdicts.items()))
    return f"{backend}: {summary.total} cases in {seconds:.1f} s: {counts or 'nothing ran'}"


def failure_line(rec: Result, width: int = 200) -> str:
    """A failing case's verdict, id and reason, with the backend's own words when it spoke."""
    reason = one_line(res.safe_text(rec.reason)) if rec.reason else ""
    said = one_line(res.safe_text(rec.message)) if rec.message else ""
    if said and said not in reason:
        reason = f"{reason} (backend said: {said})" if reason else f"backend said: {said}"
    if len(reason) > width:
        reason = reason[: width - 3] + "..."
    return f"  {res.safe_text(rec.verdict)}: {res.safe_text(rec.id)}: {reason}"


def print_summary(s: res.Summary, backend: str, seconds: float, limit: int = 20) -> None:
    click.echo(heading(f"\n{backend}: {s.total} cases in {seconds:.1f} s"))
    click.echo("  ".join(f"{v} {n}" for v, n in sorted(s.verdicts.items())))
    click.echo(heading("\nop x product x dtype (output dtype; neg: status cases)"))
    click.echo(
        f"{'op':<20} {'product':<16} {'dtype':<6} {'pass':>5} {'fail':>5} {'xfail':>6} "
        f"{'dev':>5} {'skip':>5}"
    )
    for (op, product, col), c in sorted(s.matrix.items()):
        bad = sum(c[v] for v in res.FAILING)
        line = (
            f"{op:<20} {product:<16} {col:<6} {c['pass']:>5} {bad:>5} {c['xfail']:>6} "
            f"{c['deviation']:>5} {c['skip']:>5}"
        )
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
            if rec.replay:
                click.echo(f"    {res.safe_text(rec.replay)}")


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
@table_options("run")
def run(**values):
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
    v = values
    backend, oracle, results, resume = v["backend"], v["oracle"], v["results"], v["resume"]
    cases_dir, expectations_file, quiet = v["cases_dir"], v["expectations"], v["quiet"]
    html, junit, markdown, json_report = v["html"], v["junit"], v["markdown"], v["json_report"]
    strict, update_expectations, fail_fast = v["strict"], v["update_expectations"], v["fail_fast"]
    reports = [
        ("--html", html),
        ("--junit", junit),
        ("--markdown", markdown),
        ("--json", json_report),
    ]
    check_outputs(
        reports,
        [*results_family("--results", results), ("--expectations", expectations_file)],
        output_dirs=[("--keep-outputs", v["keep_outputs"])],
        input_dirs=[("--cases", cases_dir)],
    )
    if expectations_file is not None and same_file(expectations_file, results):
        raise UserError(
            f"--results {results} is the same file as --expectations "
            f"{expectations_file}; give the results another file"
        )
    if v["force"] and not resume:
        raise UserError("--force applies only with --resume")
    s = session(values)
    for w in s.warnings:
        click.echo(f"warning: {w}", err=True)
    sel, expect, expect_sha, seed = s.selection, s.expect, s.expect_sha, v["seed"]
    if expect is not None and expect.path:  # the shipped file for the backend, when not given
        check_outputs(reports, [("--expectations", expect.path)])
    items = s.items(warn=lambda m: click.echo(f"warning: {m}", err=True))
    host: dict = {}
    version = _version(s, host)
    if host.get("diagnosis"):  # recorded in the meta; a missing ASCEND_OPP_PATH stops the run
        click.echo(f"warning: {backend}: {host['diagnosis']}", err=True)  # at its first 561107
    oracle_version = version if oracle == backend else _version(s, oracle=True)
    meta = {
        "backend": backend,
        "backend_version": version,
        "oracle": oracle,
        "oracle_version": oracle_version,
        "exact": v["exact"],
        "seed": seed,
        "cases": len(items),
        "spec_sha256": reg.sha256,
        "tool_version": TOOL_VERSION,
        "expectations": (expect.path or "spec deviations") if expect is not None else None,
        "expectations_sha256": expect_sha,
        "max_case_bytes": s.max_case_bytes,
        "max_memory": s.max_memory,
        "jobs": s.jobs,
    }
    meta["clauses"] = s.clause_universe()  # what the coverage table needs: reports load no spec
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
        now = {
            **meta,
            "seed": None if cases_dir else seed,
            "spec_sha256": {s.name: s.sha256 for s in reg},
        }
        mixed = provenance.check_resume(results, now, v["force"])
        if mixed:
            meta["mixed"] = mixed
            click.echo(f"warning: --force: {provenance.describe_mix(mixed)}", err=True)
        done = set()
        if results.exists():  # read under the lock: the records this run continues
            earlier = res.Stream(results)
            summary = earlier.fold(res.Summary)
            done = {str(r.id) for r in earlier}
    else:
        for stale in (results, meta_path):
            if stale.exists():
                stale.unlink()
        done = set()
    todo = [it for it in items if it.id not in done]
    progress = Progress(len(todo), enabled=not quiet)
    writer = ResultsWriter(results)
    ctx.call_on_close(writer.release)
    t0 = time.perf_counter()
    state = {"stop": False, "ran": 0}

    def record(rec: Result) -> None:
        writer.write(rec)
        summary.add(rec)

    def sink(rec: Result) -> bool:  # a final record: the session applied the expectations
        record(rec)
        state["ran"] += 1
        progress.update(rec)
        if fail_fast and rec.verdict in res.FAILING:
            state["stop"] = True
            return False
        return True

    def write_meta() -> None:
        meta.update(
            run=state["ran"],
            seconds=time.perf_counter() - t0,
            host=platform.node(),
            date=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        )
        write_atomic(meta_path, json.dumps(meta, indent=1) + "\n")

    interrupted = 0
    try:
        with _terminate_as_interrupt():
            s.run(todo, sink, version)
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
            click.echo(
                f"\n{how} after {state['ran']} of {len(todo)} cases; the results so far "
                f"are in {results}. Resume with: {resume_hint()}",
                err=True,
            )
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
        click.echo(
            f"--fail-fast: stopped at the first failure; {left} of {len(todo)} selected "
            "cases did not run",
            err=True,
        )
    click.echo(f"results: {res.safe_text(results)}")
    if html or junit or markdown or json_report:
        from ..reports import write_reports

        try:  # from this run's own file descriptor: its records, whatever the path holds now
            written = write_reports(
                writer.records(clean=True),
                meta,
                html=html,
                junit=junit,
                markdown=markdown,
                json=json_report,
            )
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
        records = [r for r in writer.records() if r.verdict in (*res.FAILING, "xfail", "skip")]
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
        return [
            f"--strict: no case was judged ({summary.total} selected, all skipped): the run "
            "proves nothing; check the filters, the backend's capabilities and the skip "
            "entries"
        ]
    out = []
    for e in expect.excused_everything(judged) if expect is not None else ():
        out.append(
            f"--strict: {e.where(expect.path)}: the {e.kind} entry ({e.describe()}) "
            f"excused every one of the {judged} judged cases: the run proves nothing; "
            "narrow it with match, binding or dtypes"
        )
    return out
