"""Checking a run's configuration before anything runs: the backend and its options, the case
filters, the expectations, the memory budget of one case.

The CLI and the pytest plugin both call these, so a mistake reads the same in both and is
reported before a results file is created or a backend is started. `ConfigError` is the user's
to fix (CLI exit 2, pytest UsageError); `Unavailable` is a backend that cannot run on this machine
(CLI exit 3, pytest UsageError).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

from ..acl import dtypes as dt
from ..judge import expectations
from ..spec.registry import Registry, UnknownOp
from . import limits
from .backend import Backend, BackendError, BackendOptionError, backend_class, takes_option
from .limits import physical_memory
from .runner import Selection

# The CLI flag of each named backend option: messages name what the user typed.
OPTION_FLAGS = {"device": "--device", "lib_dir": "--lib-dir", "device_id": "--device-id",
                "cmd": "--exec-cmd", "warmup": "--warmup",
                "time_repeat": "--time-repeat"}  # fmt: skip
# Default budget of one case: this share of the machine's physical memory.
CASE_MEMORY_SHARE = 0.25


class ConfigError(ValueError):
    """A mistake in the run's options: one line naming the option and what to do."""


class Unavailable(RuntimeError):
    """The backend cannot run here (not installed, no device, no library): one line why."""


def parse_backend_options(
    pairs: list[str] | tuple[str, ...], named: dict[str, Any], flag: str = "--backend-opt"
) -> dict[str, Any]:
    """KEY=VALUE pairs plus the named shortcuts (--device, --lib-dir, ...) as backend options."""
    opts: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = str(pair).partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{flag} {pair!r}: expected KEY=VALUE")
        opts[key.strip()] = value
    for key, value in named.items():
        if value is not None:
            opts[key] = value
    return opts


def _option_label(key: str, flag: str) -> str:
    return OPTION_FLAGS.get(key) or f"{flag} {key}=..."


def check_backend(
    name: str, options: dict[str, Any], label: str = "--backend", flag: str = "--backend-opt"
) -> type[Backend]:
    """The backend's class, once its name and options are known good and it can run here."""
    try:
        cls = backend_class(name)
    except BackendError as exc:
        raise ConfigError(f"{label}: {exc}") from None
    if cls.known_options is not None:
        unknown = sorted(set(options) - set(cls.known_options))
        if unknown:
            takes = ", ".join(_option_label(k, flag) for k in cls.known_options) or "no options"
            given = ", ".join(_option_label(k, flag) for k in unknown)
            raise ConfigError(f"{given} does not apply to {label} {name} (it takes {takes})")
    try:
        cls.validate_options(options)  # the names were checked above, with the CLI's flags
    except BackendOptionError as exc:
        raise ConfigError(str(exc)) from None
    ok, reason = cls.availability(**options)
    if not ok:
        raise Unavailable(f"{label} {name}: not available: {reason}")
    return cls


def parse_devices(text: Any, label: str = "--device-id") -> list[int] | None:
    """'3', '0,1,2,3', '0-3' or '0-1,4' as a list of distinct device ids (None: not given)."""
    if text is None:
        return None
    out: list[int] = []
    for part in str(text).split(","):
        lo, dash, hi = part.strip().partition("-")
        try:
            ids = range(int(lo), int(hi) + 1) if dash else [int(lo)]
        except ValueError:
            ids = []
        if not ids or min(ids) < 0:
            raise ConfigError(
                f"{label} {text!r}: expected device ids >= 0, one or a list such as 0,1,2,3 or 0-3"
            )
        for d in ids:
            if d in out:
                raise ConfigError(f"{label} {text!r}: device {d} is named twice")
            out.append(d)
    return out


def bind_devices(
    backend: str,
    options: dict[str, Any],
    device_id: Any,
    blocklist: Any,
    labels: dict[str, str],
) -> tuple[dict[str, Any], list[int] | None]:
    """(the backend's options bound to the first device, the devices of the run): --device-id
    as a list less --device-blocklist, for a backend that binds devices (aclnn, torch_npu:
    Backend.on_device); for any other backend the option goes through as given (check_backend
    then says it does not apply)."""
    devices = parse_devices(device_id, labels["device_id"])
    blocked = parse_devices(blocklist, labels["device_blocklist"]) or []
    if devices is None:
        return options, None
    try:
        cls = backend_class(backend)
    except BackendError as exc:
        raise ConfigError(f"{labels['backend']}: {exc}") from None
    if cls.on_device(options, devices[0]) is None:
        return {**options, "device_id": device_id}, None
    kept = [d for d in devices if d not in blocked]
    if not kept:
        raise ConfigError(
            f"{labels['device_blocklist']} {blocklist}: it blocks every device of "
            f"{labels['device_id']} {device_id}"
        )
    bound = cls.on_device(options, kept[0]) or {}
    for key in options:
        if bound.get(key) != options[key]:
            given = labels["device"] if key == "device" else f"{labels['backend_opts']} {key}=..."
            raise ConfigError(
                f"{given} and {labels['device_id']} both name the device of "
                f"{labels['backend']} {backend}: give one"
            )
    return dict(bound), kept


def check_selection(
    registry: Registry,
    ops=(),
    products=(),
    dtypes=(),
    clauses=(),
    keyword: str = "",
    max_cases: int | None = None,
    shard: tuple[int, int] | None = None,
    labels: dict[str, str] | None = None,
) -> Selection:
    """A Selection whose every filter names something that exists; `labels` maps the filter
    names (op, product, dtype, clause) to the option spelling of the caller."""
    label = {
        "op": "--op",
        "product": "--product",
        "dtype": "--dtype",
        "clause": "--clause",
        **(labels or {}),
    }
    names = []
    for o in ops:
        try:
            names.append(registry.get(o).name)
        except UnknownOp as exc:
            raise ConfigError(f"{label['op']}: {exc}") from None
    from ..spec.tables import products as known_products

    for p in products:
        if p not in known_products():
            raise ConfigError(
                f"{label['product']} {p!r}: unknown product (known: {', '.join(known_products())})"
            )
    for d in dtypes:
        try:
            dt.get(d)
        except dt.DtypeError as exc:
            raise ConfigError(f"{label['dtype']}: {exc}") from None
    scope = [registry.get(o) for o in names] if names else list(registry)
    for c in clauses:
        op, _, cid = str(c).rpartition("/")
        if not any(
            (not op or s.name == registry_name(registry, op)) and cid in s.clause_ids()
            for s in scope
        ):
            raise ConfigError(
                f"{label['clause']} {c!r}: no selected spec has this clause "
                "('aclnn-conform specs show OP' lists them)"
            )
    return Selection(names, list(products), list(dtypes), list(clauses), keyword, max_cases, shard)


def registry_name(registry: Registry, op: str) -> str:
    try:
        return registry.get(op).name
    except UnknownOp:
        return op


def describe_filters(sel: Selection, labels: dict[str, str] | None = None) -> str:
    """The filters of a selection as the caller's options spell them."""
    label = {
        "op": "--op",
        "product": "--product",
        "dtype": "--dtype",
        "clause": "--clause",
        **(labels or {}),
    }
    parts = [f"{label['op']} {o}" for o in sel.ops]
    parts += [f"{label['product']} {p}" for p in sel.products]
    parts += [f"{label['dtype']} {d}" for d in sel.dtypes]
    parts += [f"{label['clause']} {c}" for c in sel.clauses]
    if sel.keyword:
        parts.append(f"-k {sel.keyword}")
    if sel.shard:
        parts.append(f"--shard {sel.shard[0]}/{sel.shard[1]}")
    return ", ".join(parts) or "no filter"


def require_cases(
    count: int,
    sel: Selection,
    allow_empty: bool,
    source: str = "",
    allow_flag: str = "--allow-empty",
    labels: dict[str, str] | None = None,
) -> None:
    """An empty selection is a mistake, not a green run, unless the caller allows it."""
    if count or allow_empty:
        return
    where = f" in {source}" if source else ""
    raise ConfigError(
        f"the filters select no case{where} ({describe_filters(sel, labels)}); "
        f"check them with 'aclnn-conform cases list', or pass {allow_flag} "
        "to accept an empty run"
    )


def load_expectations(
    backend: str,
    path: Path | None,
    disabled: bool,
    update: bool = False,
    registry: Registry | None = None,
    labels: dict[str, str] | None = None,
) -> expectations.Expectations | None:
    """The expectations in force for a run: the file given (or shipped for the backend), then
    the spec deviations that name this backend. None when disabled."""
    label = {
        "file": "--expectations",
        "off": "--no-expectations",
        "update": "--update-expectations",
        **(labels or {}),
    }
    if disabled:
        if update:
            raise ConfigError(f"{label['update']} and {label['off']} contradict each other")
        if path is not None:
            raise ConfigError(
                f"{label['file']} {path} and {label['off']} contradict each other; give one of them"
            )
        return None
    if update and path is None:
        raise ConfigError(f"{label['update']} needs {label['file']} FILE (the file to rewrite)")
    expect = expectations.Expectations([], "", backend)
    if path is None:
        path = expectations.shipped(backend)
    if path is not None:
        path = Path(path)
        if not path.exists() and not update:
            raise ConfigError(f"{label['file']} {path}: no such file")
        if path.exists():
            try:
                expect = expectations.load(path)
            except expectations.ExpectationsError as exc:
                raise ConfigError(str(exc)) from None
        else:
            expect = expectations.Expectations([], str(path), backend)
    return expect


def check_strict(
    expect: expectations.Expectations | None, backend: str, oracle: str, same_options: bool
) -> None:
    """--strict: refuse a run that cannot fail: a backend judged against itself, or an
    expectations entry that fits every case."""
    if oracle == backend and same_options:
        raise ConfigError(
            f"--strict: --backend {backend} would be judged against itself "
            f"(--oracle {oracle}), so no case could fail; choose another --oracle "
            "(the default is the reference) or drop --strict"
        )
    for e in expect.unnarrowed() if expect is not None else ():
        raise ConfigError(
            f"--strict: {e.where(expect.path)}: this {e.kind} entry fits every case "
            f"({e.describe()} and nothing else), so the run could not fail; "
            "narrow it with match, binding, dtypes, message or differs"
        )


def exact_options(backend: str, oracle: str, options: dict[str, Any]) -> dict[str, Any]:
    """The backend's options under --exact (the reference takes exact=1); a ConfigError when
    neither the backend nor the oracle has an exact mode, so the flag is never ignored."""

    def takes(name: str) -> bool:
        return takes_option(name, "exact")

    if not takes(oracle) and not takes(backend):
        raise ConfigError(
            f"--exact: neither --backend {backend} nor --oracle {oracle} has an "
            "exact mode (it is the reference's; drop --exact)"
        )
    return {**options, "exact": True} if takes(backend) else options


def oracle_options(oracle: str, exact: bool) -> dict[str, Any]:
    return {"exact": True} if exact and takes_option(oracle, "exact") else {}


def default_case_bytes(jobs: int = 1) -> int:
    """The default budget of one case: a share of physical memory, split between workers."""
    total = physical_memory() or (8 << 30)
    return int(total * CASE_MEMORY_SHARE) // max(1, jobs)


def cpu_count() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


JOBS_PER_CPU = 4  # more workers than this only share the CPUs and multiply the memory


def checked_jobs(jobs: int, label: str = "-j") -> tuple[int, str]:
    """(the worker count to use, a warning or ''): -j above JOBS_PER_CPU x the CPUs is capped."""
    cap = JOBS_PER_CPU * cpu_count()
    if jobs <= cap:
        return jobs, ""
    return cap, (
        f"{label} {jobs}: capped to {cap} workers ({JOBS_PER_CPU} x {cpu_count()} "
        "CPUs); more would only share the CPUs and multiply the memory"
    )


def max_memory(text: str | None, jobs: int = 1, label: str = "--max-memory") -> int | None:
    """The memory limit of an isolated worker or exec harness: the option's value (none: no
    limit) or the default, a share of physical memory split between the workers."""
    if text is None:
        return limits.default_memory(jobs)
    try:
        return limits.parse_memory(text)
    except ValueError as exc:
        raise ConfigError(f"{label} {exc}") from None


def parse_bytes(text: str, label: str = "--max-case-bytes") -> int:
    """'512M', '4G', '1.5GiB', '1000000' as a number of bytes: finite and at least one byte
    ('0.5' would be 0, which means no budget; 'inf' and '1e400' are no size)."""
    s = str(text).strip().upper().removesuffix("B").removesuffix("I")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(s[-1:] or "", 1)
    num = s[:-1] if scale != 1 else s
    try:
        value = float(num) * scale
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 1):
        raise ConfigError(
            f"{label} {text!r}: expected a size of at least one byte, such as 512M, 4G or 1000000"
        )
    return int(value)
