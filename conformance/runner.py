"""The runner: selects cases, runs them (in worker processes with --jobs), appends one JSON line
per finished case to the results file, and can resume a run from that file.

Work items are small and picklable: a generated case travels as (op, plan, seed) and is built in
the worker; a case directory travels as its path. Results are written by the parent only, one
flushed line per case, so a crash or kill loses at most the cases in flight.
"""

from __future__ import annotations

import json
import math
import os
import signal
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance import dtypes as dt
from conformance.backend import Backend, BackendError, backend_class, load_backend
from conformance.call import Outcome, TensorArg
from conformance.casefile import CaseFileError, find_cases, read_case
from conformance.execute import DEFAULT_ORACLE, judge
from conformance.generate import CasePlan, build, plan_suite, select
from conformance.registry import Registry, UnknownOp, registry_for
from conformance.results import Stream

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
    timeout: float = 60.0  # per case, for the backend (when isolated) and the oracle
    exact: bool = False  # the reference's DOUBLE outputs correctly rounded, not faithful
    max_case_bytes: int | None = None  # a case needing more memory is an error, not run
    spec_dirs: tuple[str, ...] = ()  # extra spec folders: worker processes load the same specs


def _clause_match(wanted: list[str], op: str, clauses: tuple[str, ...]) -> bool:
    full = {f"{op}/{c}" for c in clauses} | set(clauses)
    return any(w in full for w in wanted)


def generated_items(registry: Registry, sel: Selection, seed: int = 0) -> list[Item]:
    pairs = plan_suite(registry, sel.ops or None, sel.products or None, sel.profile)
    names = sel.dtype_names()
    out = []
    for spec, plan in pairs:
        if names and not names & set(plan.dtypes()):
            continue
        if sel.keyword and sel.keyword not in plan.id:
            continue
        if sel.clauses and not _clause_match(sel.clauses, spec.name, plan.clauses):
            # formula branches and lets are known only once the values exist
            dynamic = {x.id for x in spec.formula.lets} | {b.id for b in spec.formula.branches}
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


def _dir_matches(d: Path, sel: Selection, registry: Registry) -> bool:
    """Apply --op/--product/--dtype/--clause to a case directory from its case.json alone."""
    if not (sel.ops or sel.products or sel.dtypes or sel.clauses):
        return True
    try:
        meta = json.loads((d / "case.json").read_text(encoding="utf-8"))
        op = registry.get(str(meta["op"])).name
        dtypes = {
            dt.get(a["dtype"]).name for a in meta["args"].values() if a.get("kind") == "tensor"
        }
        clauses = tuple(meta.get("clauses", []))
        product = meta["product"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError, UnknownOp):
        return True  # let the run report the broken case as an error
    if sel.ops and op not in sel.ops:
        return False
    if sel.products and product not in sel.products:
        return False
    if sel.dtypes and not sel.dtype_names() & dtypes:
        return False
    return not sel.clauses or _clause_match(sel.clauses, op, clauses)


def directory_items(root: Path, sel: Selection, registry: Registry) -> list[Item]:
    items = []
    for d in find_cases(root):
        rel = d.relative_to(root).as_posix()
        if sel.keyword and sel.keyword not in rel:
            continue
        if not _dir_matches(d, sel, registry):
            continue
        items.append(Item(rel, rel.split("/", 1)[0], path=str(d), root=str(root)))
    if sel.max_cases is not None:
        items = items[: sel.max_cases]
    return _shard(items, sel.shard)


def _shard(items: list[Item], shard: tuple[int, int] | None) -> list[Item]:
    if not shard:
        return items
    i, n = shard
    return [it for k, it in enumerate(items) if k % n == i - 1]


def finished_ids(results: Path) -> set[str]:
    """Ids already recorded in a results file (a torn last line is ignored)."""
    if not results.exists():
        return set()
    return {str(r["id"]) for r in Stream(results)}


# -- execution (runs in the parent or in worker processes) ------------------------------------

_STATE: dict[str, Any] = {}


def make_backend(cfg: RunConfig, registry: Registry | None = None) -> Backend:
    """The backend under test, in a worker process when isolation is on."""
    registry = registry or registry_for(cfg.spec_dirs)
    cls = backend_class(cfg.backend)
    isolate = cls.isolate_by_default if cfg.isolate is None else cfg.isolate
    if isolate:
        from conformance.isolate import IsolatedBackend

        ok, reason = cls.availability(**cfg.backend_options)
        if not ok:
            raise BackendError(f"backend {cfg.backend!r} is not available: {reason}")
        return IsolatedBackend(cfg.backend, cfg.backend_options, cfg.timeout, registry)
    return load_backend(cfg.backend, registry, **cfg.backend_options)


def oracle_options(cfg: RunConfig) -> dict[str, Any]:
    """The oracle's options: those the run checked (`run` passes them: the backend's own for a
    backend judged by itself, --oracle-opt otherwise), else exact=1 for the reference under
    --exact."""
    from conformance.backend import takes_option

    if cfg.oracle_options is not None:
        return dict(cfg.oracle_options)
    return {"exact": True} if cfg.exact and takes_option(cfg.oracle, "exact") else {}


def _init_worker(cfg: RunConfig) -> None:
    """A worker process: Ctrl-C is the parent's to handle (it stops the pool and reports)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _init(cfg)


def _init(cfg: RunConfig) -> None:
    _STATE["cfg"] = cfg
    _STATE["registry"] = registry = registry_for(cfg.spec_dirs)
    _STATE["backend"] = make_backend(cfg, registry)
    _STATE["oracle"] = (_STATE["backend"] if cfg.oracle == cfg.backend and not cfg.backend_options
                        else load_backend(cfg.oracle, registry, **oracle_options(cfg)))  # fmt: skip


def run_item(item: Item) -> dict[str, Any]:
    return _run(item, _STATE["cfg"], _STATE["registry"], _STATE["backend"], _STATE["oracle"])


def run_with(item: Item, cfg: RunConfig, backend: Backend) -> dict[str, Any]:
    """Run one item with an already started backend (the pytest plugin's entry)."""
    key = ("oracle", cfg.oracle)
    if key not in _STATE:
        _STATE[key] = (backend if cfg.oracle == cfg.backend and not cfg.backend_options
                       else load_backend(cfg.oracle, backend.registry, **oracle_options(cfg)))  # fmt: skip
    return _run(item, cfg, backend.registry, backend, _STATE[key])


def _run(
    item: Item, cfg: RunConfig, reg: Registry, backend: Backend, oracle: Backend
) -> dict[str, Any]:
    t0 = time.perf_counter()
    try:
        if item.plan is not None:
            spec = reg.get(item.op)
            case = build(spec, item.plan, cfg.seed)
        else:
            case = read_case(Path(item.path), Path(item.root))  # type: ignore[arg-type]
            spec = reg.get(case.op)
    except (CaseFileError, UnknownOp, ValueError, OSError) as exc:
        return {"id": item.id, "op": item.op, "verdict": "error", "reason": str(exc),
                "backend": backend.name, "clauses": [], "dtypes": {}}  # fmt: skip
    too_big = over_budget(case.call, cfg.max_case_bytes, frozenset(p.name for p in spec.outputs))
    if too_big:
        return {"id": item.id, "op": spec.name, "product": case.product, "verdict": "error",
                "reason": too_big, "backend": backend.name, "clauses": list(case.clauses),
                "dtypes": {}}  # fmt: skip
    got = None
    try:
        judged = judge(spec, case, backend, oracle, cfg.oracle, cfg.timeout)
        rec, got = judged.record, judged.outcome
    except BackendError:
        raise
    except Exception as exc:  # a bug in a backend adapter must not end the run
        rec = {"id": case.id, "op": spec.name, "product": case.product, "verdict": "error",
               "reason": f"{type(exc).__name__}: {exc}", "clauses": list(case.clauses)}  # fmt: skip
    rec["id"] = item.id if item.path else rec["id"]
    rec["backend_version"] = backend.version()
    rec["oracle_version"] = oracle.version()
    rec["spec_sha256"] = spec.sha256
    rec["tool_version"] = TOOL_VERSION
    rec["durations"] = {**rec.get("durations", {}), "total": time.perf_counter() - t0}
    rec["replay"] = replay_command(rec, cfg) if item.plan is not None else ""
    if cfg.keep_outputs and rec.get("verdict") not in ("skip",):
        _keep(cfg.keep_outputs, item.id, got, rec)
    return rec


def case_bytes(call: Any, outputs: frozenset[str] = frozenset()) -> tuple[int, str, int]:
    """Memory a case needs to be judged, estimated from its views (not its storages): each
    tensor's elements in its dtype, and each output once more (the backend's own copy; the
    golden is streamed, never whole); and the largest view's name and element count."""
    total, largest, name = 0, -1, ""
    for n, a in call.args.items():
        if not isinstance(a, TensorArg):
            continue
        numel = math.prod(int(x) for x in a.shape)
        total += numel * dt.get(a.dtype).np.itemsize * (2 if n in outputs else 1)
        if numel > largest:
            largest, name = numel, n
    return total, name, largest


def over_budget(call: Any, budget: int | None, outputs: frozenset[str] = frozenset()) -> str:
    """The reason a case is refused for its size ('' when it fits), decided before allocating."""
    if not budget:
        return ""
    need, name, numel = case_bytes(call, outputs)
    if need <= budget:
        return ""
    return (f"case needs about {_size(need)} of memory ({numel:,} elements in the view of "
            f"{name}), above --max-case-bytes {_size(budget)}; raise it if this machine has the "
            "memory")  # fmt: skip


def _size(n: int) -> str:
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def _keep(root: str, case_id: str, got: Outcome | None, rec: dict[str, Any]) -> None:
    """--keep-outputs: the backend's output storages as DIR/<case-id>/<param>.npy + result.json."""
    from conformance.casefile import case_dir, save_array

    d = case_dir(Path(root), case_id)
    d.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"status": None, "message": rec.get("reason", "")}
    if got is not None:
        for name, arr in got.outputs.items():
            save_array(d / f"{name}.npy", arr)
        result = {"status": got.status, "message": got.message}
    result["verdict"] = rec.get("verdict")
    (d / "result.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


def replay_command(rec: dict[str, Any], cfg: RunConfig) -> str:
    parts = ["aclnn-conform", "replay", f"'{rec['id']}'", "--seed", str(cfg.seed)]
    if cfg.backend != DEFAULT_ORACLE:
        parts += ["--backend", cfg.backend]
    if cfg.oracle != DEFAULT_ORACLE:
        parts += ["--oracle", cfg.oracle]
    if cfg.exact:
        parts.append("--exact")
    return " ".join(parts)


def execute(items: list[Item], cfg: RunConfig, sink: Callable[[dict[str, Any]], bool]) -> None:
    """Run items, handing each record to `sink`; stop early when sink returns False."""
    if cfg.jobs <= 1 or len(items) < 2:
        _init(cfg)
        try:
            for it in items:
                if not sink(run_item(it)):
                    return
        finally:
            _STATE["backend"].close()
        return
    with ProcessPoolExecutor(max_workers=cfg.jobs, initializer=_init_worker,
                             initargs=(cfg,)) as pool:  # fmt: skip
        size = max(1, min(64, len(items) // (cfg.jobs * 8) or 1))
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


def run_chunk(items: list[Item]) -> list[dict[str, Any]]:
    return [run_item(it) for it in items]


def _result(fut: Future) -> list[dict[str, Any]]:
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

    def write(self, rec: dict[str, Any]) -> None:
        self._put((json.dumps(rec, sort_keys=True, default=str) + "\n").encode("ascii"))
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
