"""The runner: selects cases, runs them (in worker processes with --jobs), appends one JSON line
per finished case to the results file, and can resume a run from that file.

Work items are small and picklable: a generated case travels as (op, plan, seed) and is built in
the worker; a case directory travels as its path. Results are written by the parent only, one
flushed line per case, so a crash or kill loses at most the cases in flight.
"""

from __future__ import annotations

import json
import math
import multiprocessing.util
import os
import signal
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from ..acl import dtypes as dt
from ..acl.call import Outcome, TensorArg
from ..cases.casedir import CaseFileError, find_cases, read_case, read_meta, save_array, write_case
from ..cases.generate import CasePlan, build, plan_suite, select
from ..cases.golden import StoredGolden, read_golden, write_golden
from ..files import safeio
from ..judge.expectations import CaseFacts
from ..judge.result import Result
from ..judge.results import Stream
from ..judge.verdicts import BROKEN
from ..spec.bindings import binding_id
from ..spec.registry import Registry, UnknownOp, registry_for
from . import limits
from .backend import Backend, BackendError, backend_class, load_backend, takes_option
from .cross import cross_check
from .golden import golden_of
from .judging import DEFAULT_ORACLE, judge

TOOL_VERSION = "0.1.0"


@dataclass
class Selection:
    ops: list[str] = field(default_factory=list)
    products: list[str] = field(default_factory=list)
    dtypes: list[str] = field(default_factory=list)
    clauses: list[str] = field(default_factory=list)
    keyword: str = ""
    max_cases: int | None = None
    shard: tuple[int, int] | None = None  # (i, n), 1-based i
    profile: str = "default"  # "large" adds the model-scale shapes (generate.MODEL_SHAPES)

    def dtype_names(self) -> set[str]:
        return {dt.get(d).name for d in self.dtypes}


@dataclass
class Item:
    """One unit of work: a generated plan or a case directory."""

    id: str
    op: str
    plan: CasePlan | None = None
    path: str | None = None
    root: str | None = None


@dataclass
class RunConfig:
    backend: str = DEFAULT_ORACLE
    oracle: str = DEFAULT_ORACLE
    backend_options: dict[str, Any] = field(default_factory=dict)
    oracle_options: dict[str, Any] | None = None  # None: exact=1 under --exact, else none
    seed: int = 0
    jobs: int = 1
    fail_fast: bool = False
    keep_outputs: str | None = None
    isolate: bool | None = None  # None: the backend's own default (aclnn and exec isolate)
    timeout: float = 60.0  # per case: the oracle, the backend and the comparison together
    exact: bool = False  # the reference's DOUBLE outputs correctly rounded, not faithful
    max_case_bytes: int | None = None  # a case needing more memory is an error, not run
    max_memory: int | None = None  # RLIMIT_DATA of an isolated worker / exec harness (limits.py)
    spec_dirs: tuple[str, ...] = ()  # extra spec folders: worker processes load the same specs
    deviations: bool = False  # spec deviations naming the backend decide `deviation` verdicts
    # (before `replay`, after the case id) of each case's replay line (conformance.run.session)
    replay_args: tuple[str, str] | None = None
    # devices (docs/devices.md): the run's devices (conformance.run.fleet spreads cases over
    # them when there are several, or several workers per device), the device this process's
    # backend is bound to (recorded in each Result), and when a device is given up
    devices: tuple[int, ...] = ()
    device: int | None = None
    procs_per_device: int = 1
    device_failures: int = 3

    @property
    def fleet(self) -> bool:
        """Whether the run spreads its cases over devices (conformance.run.fleet)."""
        return len(self.devices) * self.procs_per_device > 1

    repeat: int = 1  # runs of each case by the backend: differing bits are `nondeterministic`
    dump_on_fail: str | None = None  # failing cases' inputs, outputs and golden under DIR
    cross: str | None = None  # a second backend: TTK's ratio verdict beside the absolute one
    cross_level: str = "L1"
    cross_options: dict[str, Any] = field(default_factory=dict)
    golden: str = "oracle"  # stored: each case directory's golden.json, no oracle evaluated


def _clause_match(wanted: list[str], op: str, clauses: tuple[str, ...]) -> bool:
    full = {f"{op}/{c}" for c in clauses} | set(clauses)
    return any(w in full for w in wanted)


def generated_items(
    registry: Registry, sel: Selection, seed: int = 0, planned: list[Any] | None = None
) -> list[Item]:
    """The selected generated cases; `planned` (a list) receives every (spec, plan) pair
    planned for them, before the filters."""
    pairs = plan_suite(registry, sel.ops or None, sel.products or None, sel.profile)
    if planned is not None:
        planned.extend(pairs)
    names = sel.dtype_names()
    out = []
    for spec, plan in pairs:
        if names and not names & set(plan.dtypes()):
            continue
        if sel.keyword and sel.keyword not in plan.id:
            continue
        if sel.clauses and not _clause_match(sel.clauses, spec.name, plan.clauses):
            # formula branches and lets are known only once the values exist
            dynamic = {x.id for f in spec.formulas for x in (*f.lets, *f.branches)}
            wanted = {
                c.split("/", 1)[-1] for c in sel.clauses if c.split("/", 1)[0] in (spec.name, c)
            }
            if not (dynamic & wanted) or plan.kind != "positive":
                continue
            if not _clause_match(sel.clauses, spec.name, build(spec, plan, seed).clauses):
                continue
        out.append((spec, plan))
    out = select(out, sel.max_cases)
    return _shard([Item(p.id, s.name, plan=p) for s, p in out], sel.shard)


def _dir_matches(d: Path, sel: Selection, registry: Registry, root: Path) -> bool:
    """Apply --op/--product/--dtype/--clause to a case directory from its case.json alone."""
    if not (sel.ops or sel.products or sel.dtypes or sel.clauses):
        return True
    try:
        meta = read_meta(d, root)
        op = registry.get(str(meta["op"])).name
        dtypes = {
            dt.get(a["dtype"]).name for a in meta["args"].values() if a.get("kind") == "tensor"
        }
        clauses = tuple(meta.get("clauses", []))
        product = meta["product"]
    except Exception:  # CaseFileError, a field of the wrong type, ...
        return True  # let the run report the broken case as its error
    if sel.ops and op not in sel.ops:
        return False
    if sel.products and product not in sel.products:
        return False
    if sel.dtypes and not sel.dtype_names() & dtypes:
        return False
    return not sel.clauses or _clause_match(sel.clauses, op, clauses)


def directory_items(
    root: Path, sel: Selection, registry: Registry, warn: Callable[[str], None] | None = None
) -> list[Item]:
    """The case directories under root that the selection keeps (`warn`: folders skipped)."""
    items = []
    for d in find_cases(root, warn):
        rel = d.relative_to(root).as_posix()
        if sel.keyword and sel.keyword not in rel:
            continue
        if not _dir_matches(d, sel, registry, root):
            continue
        items.append(Item(rel, rel.split("/", 1)[0], path=str(d), root=str(root)))
    if sel.max_cases is not None:
        items = items[: sel.max_cases]
    return _shard(items, sel.shard)


def item_facts(item: Item, registry: Registry, family: str | None) -> CaseFacts:
    """What is known of an item before it runs, for the expectations' skip entries: its id, and
    its binding, dtypes and output names (from the plan, or from a case directory's case.json);
    only the id when the case file cannot be read (the run then reports it)."""
    facts = CaseFacts(item.id)
    try:
        if item.plan is not None:
            spec = registry.get(item.op)
            dtypes = {n: a.dtype for n, a in item.plan.args if hasattr(a, "dtype")}
        else:
            meta = read_meta(Path(str(item.path)), Path(str(item.root)) if item.root else None)
            spec = registry.get(str(meta["op"]))
            dtypes = {
                str(n): dt.get(a["dtype"]).name
                for n, a in meta["args"].items()
                if a.get("kind") in ("tensor", "scalar")
            }
    except Exception:  # CaseFileError, a field of the wrong type, ...: the run reports the case
        return facts
    facts.dtypes, facts.outputs = dtypes, [p.name for p in spec.outputs]
    binding = binding_id(spec, family)
    if binding:
        facts.binding = binding
    return facts


def _shard(items: list[Item], shard: tuple[int, int] | None) -> list[Item]:
    if not shard:
        return items
    i, n = shard
    return [it for k, it in enumerate(items) if k % n == i - 1]


def finished_ids(results: Path) -> set[str]:
    """Ids already recorded in a results file (a torn last line is ignored)."""
    if not results.exists():
        return set()
    return {str(r.id) for r in Stream(results)}


# -- execution (runs in the parent or in worker processes) ------------------------------------

_STATE: dict[str, Any] = {}


def make_backend(cfg: RunConfig, registry: Registry | None = None) -> Backend:
    """The backend under test, in a worker process when isolation is on."""
    registry = registry or registry_for(cfg.spec_dirs)
    cls = backend_class(cfg.backend)
    isolate = cls.isolate_by_default if cfg.isolate is None else cfg.isolate
    options = dict(cfg.backend_options)
    if cfg.max_memory and "max_memory" not in options and takes_option(cfg.backend, "max_memory"):
        options["max_memory"] = cfg.max_memory  # a backend that starts programs bounds them
    if isolate:
        from .isolation import IsolatedBackend

        ok, reason = cls.availability(**options)
        if not ok:
            raise BackendError(f"backend {cfg.backend!r} is not available: {reason}")
        return IsolatedBackend(cfg.backend, options, cfg.timeout, registry, cfg.max_memory)
    return load_backend(cfg.backend, registry, **options)


def oracle_options(cfg: RunConfig) -> dict[str, Any]:
    """The oracle's options: those the run checked (`run` passes them: the backend's own for a
    backend judged by itself, --oracle-opt otherwise), else exact=1 for the reference under
    --exact."""
    from .backend import takes_option

    if cfg.oracle_options is not None:
        return dict(cfg.oracle_options)
    return {"exact": True} if cfg.exact and takes_option(cfg.oracle, "exact") else {}


def _init_worker(cfg: RunConfig, parent: int | None = None) -> None:
    """A worker process: Ctrl-C and SIGTERM are the parent's to handle (it stops the pool and
    reports; the worker keeps SIGTERM's default, by which the parent ends it), and it dies with
    the parent, were that killed outright."""
    limits.die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the parent's handler, inherited by fork
    _init(cfg)
    # a pool worker ends through multiprocessing's exit (atexit does not run there): close its
    # backends then, so their worker processes and scratch folders go with it
    multiprocessing.util.Finalize(None, _close_state, exitpriority=10)


def make_oracle(cfg: RunConfig, registry: Registry, backend: Backend) -> Backend:
    """The oracle: the backend under test itself when it is judged by itself (with no options
    of its own), else the oracle backend with its options."""
    if cfg.golden == "stored":
        from .golden import StoredOracle

        return StoredOracle(registry)
    if cfg.oracle == cfg.backend and not cfg.backend_options:
        return backend
    return load_backend(cfg.oracle, registry, **oracle_options(cfg))


def _close_state() -> None:
    """Close this process's backend and oracle (each once: the oracle may be the backend)."""
    for b in {id(b): b for b in (_STATE.get("backend"), _STATE.get("oracle")) if b}.values():
        b.close()


def _init(cfg: RunConfig) -> None:
    _STATE["cfg"] = cfg
    _STATE["registry"] = registry = registry_for(cfg.spec_dirs)
    _STATE["backend"] = make_backend(cfg, registry)
    _STATE["oracle"] = make_oracle(cfg, registry, _STATE["backend"])


def run_item(item: Item) -> Result:
    return _run(item, _STATE["cfg"], _STATE["registry"], _STATE["backend"], _STATE["oracle"])


def run_one(item: Item, cfg: RunConfig, reg: Registry, backend: Backend, oracle: Backend) -> Result:
    """One item's record (before expectations) with a started backend and oracle."""
    return _run(item, cfg, reg, backend, oracle)


def _run(item: Item, cfg: RunConfig, reg: Registry, backend: Backend, oracle: Backend) -> Result:
    t0 = time.perf_counter()
    try:
        if item.plan is not None:
            spec = reg.get(item.op)
            case = build(spec, item.plan, cfg.seed)
        else:
            case = read_case(Path(item.path), Path(item.root), cfg.max_case_bytes)  # type: ignore[arg-type]
            spec = reg.get(case.op)
    except (CaseFileError, UnknownOp, ValueError, OSError) as exc:
        return Result(
            id=item.id,
            op=item.op,
            verdict="error",
            reason=str(exc),
            backend=backend.name,
            clauses=[],
            dtypes={},
        )
    except Exception as exc:  # whatever a hostile case does, it is that case's error
        return Result(
            id=item.id,
            op=item.op,
            verdict="error",
            backend=backend.name,
            reason=f"cannot read the case: {type(exc).__name__}: {exc}",
            clauses=[],
            dtypes={},
        )
    outputs = frozenset(p.name for p in spec.outputs)
    work = oracle.working_bytes(case.call)
    if backend is not oracle:
        work = max(work, backend.working_bytes(case.call))
    refused = over_budget(case.call, cfg.max_case_bytes, outputs, work) or overlapping(
        case.call, outputs
    )
    if refused:
        rec = Result(
            id=item.id,
            op=spec.name,
            product=case.product,
            verdict="error",
            reason=refused,
            backend=backend.name,
            clauses=list(case.clauses),
            dtypes={},
        )
        if item.plan is not None:  # judged again by replay with the same budget
            rec.replay = replay_command(rec, cfg)
        return rec
    got = stored = None
    if cfg.golden == "stored":
        try:
            stored = read_golden(Path(str(item.path)), case.call.args, cfg.max_case_bytes)
        except CaseFileError as exc:
            return Result(
                id=item.id,
                op=spec.name,
                product=case.product,
                verdict="error",
                reason=str(exc),
                backend=backend.name,
                clauses=list(case.clauses),
                dtypes={},
            )
    try:
        oracle_name = oracle.name if stored is not None else cfg.oracle
        judged = judge(
            spec,
            case,
            backend,
            oracle,
            oracle_name,
            cfg.timeout,
            cfg.deviations,
            stored,
            cfg.repeat,
        )
        rec, got = judged.record, judged.outcome
        checked = rec.verdict not in ("skip", "error", "crash", "timeout")
        if cfg.cross and got is not None and judged.want is not None and checked:
            second = _second(cfg, reg)  # one that cannot start stops the run (exit 3)
            try:
                rec.cross = cross_check(spec, case, judged.want, got, second, cfg.cross_level)
            except Exception as exc:  # never the case's verdict: the ratio verdict's error
                rec.cross = {"backend": second.name, "level": cfg.cross_level, "outputs": {},
                             "verdict": "error", "reason": f"{type(exc).__name__}: {exc}"[:300]}  # fmt: skip
        if cfg.dump_on_fail and rec.verdict in BROKEN:
            rec.dump = dump_case(Path(cfg.dump_on_fail), spec, case, judged, stored, oracle)
    except BackendError:
        raise
    except Exception as exc:  # a bug in a backend adapter must not end the run
        rec = Result(
            id=case.id,
            op=spec.name,
            product=case.product,
            verdict="error",
            reason=f"{type(exc).__name__}: {exc}",
            clauses=list(case.clauses),
        )
    rec.id = item.id if item.path else rec.id
    if cfg.device is not None:
        rec.device = cfg.device
    rec.backend_version = backend.version()
    rec.oracle_version = oracle.version()
    if stored is not None:
        rec.oracle_version = f"{stored.oracle} {stored.oracle_version} (stored)".strip()
    rec.spec_sha256 = spec.sha256
    rec.tool_version = TOOL_VERSION
    rec.durations = {**(rec.durations or {}), "total": time.perf_counter() - t0}
    rec.replay = replay_command(rec, cfg) if item.plan is not None else ""
    if cfg.keep_outputs and rec.verdict not in ("skip",):
        try:
            _keep(cfg.keep_outputs, item.id, got, rec)
        except OSError as exc:  # e.g. a symlink planted in the folder: refused, said, run goes on
            rec.keep_outputs_error = f"--keep-outputs: not kept: {exc}"
    return rec


def case_bytes(call: Any, outputs: frozenset[str] = frozenset()) -> tuple[int, str, int]:
    """Memory a case needs to be judged: each tensor's whole storage (a backend copies all of
    it, however small the view) or its view when larger, and each output once more (the
    backend's own copy; the golden is streamed, never whole); and the largest view's name and
    element count."""
    total, largest, name = 0, -1, ""
    for n, a in call.args.items():
        if not isinstance(a, TensorArg):
            continue
        numel = math.prod(int(x) for x in a.shape)
        size = max(numel * dt.get(a.dtype).np.itemsize, int(getattr(a.storage, "nbytes", 0)))
        total += size * (2 if n in outputs else 1)
        if numel > largest:
            largest, name = numel, n
    return total, name, largest


def over_budget(
    call: Any, budget: int | None, outputs: frozenset[str] = frozenset(), work: int = 0
) -> str:
    """The reason a case is refused for its size ('' when it fits), decided before allocating;
    work: what evaluating it needs beyond its storages (Backend.working_bytes)."""
    if not budget:
        return ""
    need, name, numel = case_bytes(call, outputs)
    if need + work <= budget:
        return ""
    size = partial(safeio.size_text, exact=False)
    working = f" and {size(work)} to evaluate it" if work else ""
    return (
        f"case needs about {size(need + work)} of memory (its storages{working}; {numel:,} "
        f"elements in the view of {name}), above --max-case-bytes {size(budget)}; raise it if "
        "this machine has the memory"
    )


def overlapping(call: Any, outputs: frozenset[str]) -> str:
    """Why a case is malformed because an output's view covers an element twice ('' when none
    does): a backend writing it would race with itself, and no result is right. Inputs may
    overlap (a zero-stride broadcast view is legal)."""
    for n in sorted(outputs):
        a = call.args.get(n)
        if isinstance(a, TensorArg) and a.overlaps_itself():
            return (
                f"malformed case: output {n} has a view that overlaps itself (shape "
                f"{list(a.shape)}, strides {list(a.strides)}): two of its elements share "
                "one storage element"
            )
    return ""


def _keep(root: str, case_id: str, got: Outcome | None, rec: Result) -> None:
    """--keep-outputs: the backend's output storages as DIR/<case-id>/<param>.npy + result.json."""
    from ..cases.casedir import make_case_dir, save_array

    d = make_case_dir(Path(root), case_id)
    result: dict[str, Any] = {"status": None, "message": rec.reason or ""}
    if got is not None:
        for name, arr in got.outputs.items():
            save_array(d / f"{name}.npy", arr)
        result = {"status": got.status, "message": got.message}
    result["verdict"] = rec.verdict
    text = (json.dumps(result, indent=1) + "\n").encode("utf-8")
    safeio.write_file(d / "result.json", lambda f: f.write(text))


_SECONDS: dict[tuple[int, str], Backend] = {}  # --cross: one second backend per process


def _second(cfg: RunConfig, reg: Registry) -> Backend:
    key = (os.getpid(), str(cfg.cross))
    if key not in _SECONDS:
        _SECONDS[key] = load_backend(str(cfg.cross), reg, **cfg.cross_options)
    return _SECONDS[key]


DUMP_MAX_CASES = 100  # --dump-on-fail: cases dumped into one DIR, over every worker and run
DUMP_MAX_BYTES = 256 << 20  # and the storages of one case (inputs, outputs, golden)
_SLOTS = ".slots"


def dump_case(
    root: Path,
    spec: Any,
    case: Any,
    judged: Any,
    stored: StoredGolden | None,
    oracle: Backend,
) -> str:
    """--dump-on-fail: a failing case as root/<case-id>/: its case directory (the inputs as
    the call got them), golden.json (what the oracle expected, when it answered) and
    `actual_<output>.npy` (the backend's output storages, when it returned), so that
    `run --cases ROOT --golden stored` judges it again. Bounded: DUMP_MAX_CASES cases per
    root (a slot claimed atomically under root/.slots, so workers and later runs share the count) and
    DUMP_MAX_BYTES a case. Returns the folder, or why nothing was written."""
    size = sum(
        int(getattr(a.storage, "nbytes", 0)) * 2
        for a in case.call.args.values()
        if isinstance(a, TensorArg)
    )
    if size > DUMP_MAX_BYTES:
        return f"not dumped: {size} bytes, over the {DUMP_MAX_BYTES >> 20} MiB bound of a case"
    try:
        slots = safeio.make_dirs(root, [_SLOTS])
        for n in range(DUMP_MAX_CASES):
            try:
                fd = os.open(slots / str(n), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                continue
            os.close(fd)
            break
        else:
            return f"not dumped: {DUMP_MAX_CASES} failing cases were dumped already"
        d = write_case(root, case, spec.sha256)
        want, got = judged.want, judged.outcome
        if stored is not None:
            write_golden(d, stored)
        elif want is not None and want.status == case.expected_status:
            write_golden(d, golden_of(spec, case, want, oracle.name, oracle.version()))
        if got is not None:
            for name, arr in got.outputs.items():
                save_array(d / f"actual_{name}.npy", np.asarray(arr))
        return str(d)
    except (OSError, ValueError) as exc:
        return f"not dumped: {exc}"


def replay_command(rec: Result, cfg: RunConfig) -> str:
    """The command that judges the case again: the session's replay arguments (every option
    that decides a verdict, conformance.run.session), else the runner's own."""
    if cfg.replay_args is not None:
        before, after = cfg.replay_args
        head = f"aclnn-conform {before} replay" if before else "aclnn-conform replay"
        return f"{head} '{rec.id}' {after}"
    parts = ["aclnn-conform", "replay", f"'{rec.id}'", "--seed", str(cfg.seed)]
    if cfg.backend != DEFAULT_ORACLE:
        parts += ["--backend", cfg.backend]
    if cfg.oracle != DEFAULT_ORACLE:
        parts += ["--oracle", cfg.oracle]
    if cfg.exact:
        parts.append("--exact")
    return " ".join(parts)


def execute(items: list[Item], cfg: RunConfig, sink: Callable[[Result], bool]) -> None:
    """Run items, handing each record to `sink`; stop early when sink returns False."""
    if cfg.jobs <= 1 or len(items) < 2:
        _init(cfg)
        try:
            for it in items:
                if not sink(run_item(it)):
                    return
        finally:
            _close_state()
        return
    jobs = min(cfg.jobs, len(items))
    with ProcessPoolExecutor(
        max_workers=jobs, initializer=_init_worker, initargs=(cfg, os.getpid())
    ) as pool:
        size = max(1, min(64, len(items) // (jobs * 8) or 1))
        futures = [pool.submit(run_chunk, items[i : i + size]) for i in range(0, len(items), size)]
        try:
            for fut in futures:
                for rec in _result(fut):
                    if not sink(rec):
                        _stop_workers(pool)
                        return
        except BaseException:  # Ctrl-C, or the sink failing (a full disk): stop, do not drain
            _stop_workers(pool)
            raise


POLL_S = 0.25  # seconds: how long a Ctrl-C may wait for the main thread to see it


def run_chunk(items: list[Item]) -> list[Result]:
    return [run_item(it) for it in items]


def _result(fut: Future) -> list[Result]:
    """fut's records, waited for in short steps: the kernel may hand Ctrl-C to a thread other
    than the main one, whose wait it then does not interrupt; a step ends within POLL_S."""
    while True:
        try:
            return fut.result(timeout=POLL_S)
        except TimeoutError:
            continue


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    """End the workers now, not after their chunks in flight (--resume reruns those)."""
    workers = list((getattr(pool, "_processes", None) or {}).values())  # shutdown forgets them
    manager = getattr(pool, "_executor_manager_thread", None)
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in workers:
        proc.terminate()
    if manager is not None:  # let it finish closing its pipes: at exit, Python 3.11 wakes it
        manager.join(timeout=5)  # and, racing that close, printed "Bad file descriptor"


class ResultsWriteError(OSError):
    """The results file could not be written (a full disk, a quota): the message names it."""


class ResultsWriter:
    """Appends records to a JSONL file, one line per record in one write() call. It also keeps
    the file open for reading: `records()` reads back what this writer's file holds even when the
    path has since been replaced or removed (the run reports on its own records)."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o666)
        self._rfd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        size = os.fstat(self._fd).st_size
        if size and os.pread(self._rfd, 1, size - 1) != b"\n":
            self._put(b"\n")  # a line cut by a kill: end it, so the next record starts afresh

    def _put(self, data: bytes) -> None:
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._fd, view) :]
        except OSError as exc:
            raise ResultsWriteError(exc.errno, exc.strerror, str(self.path)) from None

    def write(self, rec: Result | dict[str, Any]) -> None:
        line = (
            rec.to_json()
            if isinstance(rec, Result)
            else json.dumps(rec, sort_keys=True, default=str)
        )
        self._put((line + "\n").encode("ascii"))
        if os.environ.get("ACLNN_CONFORM_FSYNC"):
            try:
                os.fsync(self._fd)
            except OSError as exc:
                raise ResultsWriteError(exc.errno, exc.strerror, str(self.path)) from None

    def records(self, clean: bool = False) -> Stream:
        """The records this writer's file holds, read from its own descriptor (see Stream)."""

        def opener() -> Any:
            f = os.fdopen(os.dup(self._rfd), "rb")
            f.seek(0)
            return f

        return Stream(opener=opener, clean=clean)

    def close(self) -> None:
        """Stop writing (records() still reads until release())."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def release(self) -> None:
        self.close()
        if self._rfd >= 0:
            os.close(self._rfd)
            self._rfd = -1
