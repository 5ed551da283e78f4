"""The Session: a run's options, declared once and checked once, and the one place where a
case's verdict is decided.

`OPTIONS` is the table of the run options: the `run` and `replay` commands and the pytest plugin
generate their options from it (cli/options.py, conformance/pytest_plugin.py), so an option has
one name, one default and one help text everywhere. `Session.create` checks every value (the
checks of conformance.run.config) and spells a mistake with the caller's flag (`--op` or
`--aclnn-op`). A session then lists its items, judges one (the backend against the oracle with
its options, then the expectations: a skip entry keeps the case from running, the others turn
its verdict into xfail/xpass/deviation), runs them all into a sink, and writes for each case the
replay line that judges it again the same way: every option of the table marked `replay` whose
value is not its default. The commands only translate their options into a Session.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..cases.golden import has_golden
from ..judge import expectations
from ..judge.result import Result
from ..spec.registry import Registry
from . import config
from . import fleet as fleet_mod
from .backend import Backend, BackendError, backend_class, load_backend
from .fleet import FleetReport
from .judging import DEFAULT_ORACLE
from .runner import (
    Item,
    RunConfig,
    Selection,
    directory_items,
    execute,
    generated_items,
    item_facts,
    make_backend,
    make_oracle,
    run_one,
)

CLI, PYTEST = "cli", "pytest"  # the callers, whose flags differ (--op, --aclnn-op)


@dataclass(frozen=True)
class Option:
    """One run option: the Session's name for it, its CLI flag (the pytest plugin's is
    `--aclnn-` + the same), how its value is read, and who offers it."""

    name: str
    flag: str
    help: str
    default: Any = None
    type: str = "text"  # text | int | count (>= 1) | natural (>= 0) | seconds | path | dir | choice
    multiple: bool = False
    is_flag: bool = False
    off_flag: str = ""  # a switch with an off spelling (--isolate/--no-isolate): default None
    short: str = ""  # -k, -j, -q
    choices: tuple[str, ...] = ()
    metavar: str = ""
    show_default: bool = False
    commands: frozenset[str] = frozenset({"run"})  # run, replay, pytest, probe, cases
    replay: bool = False  # decides a verdict: a replay line carries it (when not the default)

    @property
    def pytest_flag(self) -> str:
        return "--aclnn-" + self.flag.removeprefix("--")

    def flag_for(self, caller: str) -> str:
        return self.pytest_flag if caller == PYTEST else self.flag


_RUN, _JUDGE = frozenset({"run"}), frozenset({"run", "replay", "pytest"})
_BACKEND = frozenset({"run", "replay", "pytest", "probe"})
_SELECT = frozenset({"run", "pytest", "cases"})
_SELECT_CLI = frozenset({"run", "cases"})

#: Every run option, in the order `run --help` lists them.
OPTIONS: tuple[Option, ...] = (
    Option("backend", "--backend", "Backend to test.", "reference", show_default=True,
           commands=_JUDGE, replay=True),
    Option("oracle", "--oracle", "Backend that gives the expected results.", DEFAULT_ORACLE,
           show_default=True, commands=_JUDGE, replay=True),
    Option("cases_dir", "--cases", "Run the case directories under DIR instead of generating "
           "cases.", type="dir"),
    Option("golden", "--golden", "With --cases: oracle evaluates the oracle; stored judges each "
           "case by the golden.json beside it (cases export --golden), evaluating nothing.",
           "oracle", type="choice", choices=("oracle", "stored"), show_default=True),
    Option("results", "--results", "JSONL file results are written to (its meta beside it: "
           "FILE.meta.json).", Path("results.jsonl"), type="path", show_default=True),
    Option("resume", "--resume", "Skip cases already recorded in --results (same backend, "
           "version, seed, specs and tool only).", False, is_flag=True),
    Option("force", "--force", "With --resume: continue a results file of another backend, "
           "version, seed, spec or tool version, recording the mix in the meta.", False,
           is_flag=True),
    Option("seed", "--seed", "Seed of the generated values.", 0, type="natural",
           show_default=True, commands=_JUDGE, replay=True),
    Option("jobs", "--jobs", "Worker processes.", 1, type="count", short="-j",
           show_default=True),
    Option("fail_fast", "--fail-fast", "Stop at the first failing case.", False, is_flag=True),
    Option("keep_outputs", "--keep-outputs", "Write each case's outputs and result.json under "
           "DIR/<case-id>/.", type="dir"),
    Option("max_case_bytes", "--max-case-bytes", "Memory budget of one case (e.g. 2G); a case "
           "above it is an error verdict, not run. Default: a quarter of physical memory "
           "divided by --jobs.", metavar="SIZE", commands=_JUDGE, replay=True),
    Option("quiet", "--quiet", "No progress and no tables: one line of totals (failures are "
           "still listed).", False, is_flag=True, short="-q"),
    Option("expectations", "--expectations", "Known failures (YAML). Default: the file shipped "
           "for the backend, if any.", type="path", commands=_JUDGE, replay=True),
    Option("no_expectations", "--no-expectations", "Ignore every expectations file and the "
           "spec deviations.", False, is_flag=True, commands=_JUDGE, replay=True),
    Option("strict", "--strict", "An unexpected pass (xpass) fails the run, and so does a run "
           "that proves nothing: no case judged, a backend judged by itself, an expectations "
           "entry fitting every case.", False, is_flag=True),
    Option("update_expectations", "--update-expectations", "Rewrite --expectations from this "
           "run: keep entries that still fail, add new failures, drop fixed ones; comments are "
           "kept.", False, is_flag=True),
    Option("html", "--html", "Write a self-contained HTML report.", type="path"),
    Option("junit", "--junit", "Write JUnit XML (one testsuite per op).", type="path"),
    Option("markdown", "--markdown", "Write a Markdown summary (CI job summary, PR comment).",
           type="path"),
    Option("json_report", "--json", "Write a JSON summary (totals, matrix, coverage, "
           "failures).", type="path"),
    Option("exact", "--exact", "The reference's DOUBLE outputs correctly rounded (mpmath for "
           "every element: slow) instead of faithful (within 1 ulp, float64 speed). Recorded in "
           "the results and reports.", False, is_flag=True, commands=_JUDGE, replay=True),
    Option("repeat", "--repeat", "Run each case N times on the backend (fresh copies): another "
           "status or other output bits on any run is the verdict nondeterministic.", 1,
           type="count", show_default=True, commands=_JUDGE, replay=True),
    Option("dump_on_fail", "--dump-on-fail", "Write each failing case (fail, nondeterministic, "
           "error, crash, timeout) under DIR/<case-id>/: its inputs (a case directory), the "
           "golden (golden.json) and the backend's outputs (actual_<param>.npy); at most 100 "
           "cases per DIR and 256 MiB a case.", type="dir", commands=_JUDGE),
    Option("cross", "--cross", "A second backend run on each judged case: TTK's cross-check "
           "ratio verdict (MARE/MERE/RMSE of the backend's error over the second's, against "
           "the same golden) is recorded beside the absolute verdict.", metavar="BACKEND",
           commands=_JUDGE, replay=True),
    Option("cross_opts", "--cross-opt", "Option for the --cross backend (repeatable), e.g. "
           "cmd=./harness for --cross exec.", (), multiple=True, metavar="KEY=VALUE",
           commands=_JUDGE, replay=True),
    Option("cross_level", "--cross-level", "TTK's cross-check level: L0 loose, L1 default, L2 "
           "strict.", "L1", type="choice", choices=("L0", "L1", "L2"), show_default=True,
           commands=_JUDGE, replay=True),
    Option("oracle_opts", "--oracle-opt", "Option for the --oracle backend (repeatable), e.g. "
           "cmd=./harness for --oracle exec. An oracle that is the backend under test gets the "
           "backend's options.", (), multiple=True, metavar="KEY=VALUE", commands=_JUDGE,
           replay=True),
    # the backend under test (run, replay, probe)
    Option("backend_opts", "--backend-opt", "Option for the backend (repeatable), e.g. "
           "device=cuda.", (), multiple=True, metavar="KEY=VALUE", commands=_BACKEND,
           replay=True),
    Option("device", "--device", "torch: cpu, cuda or npu.", commands=_BACKEND, replay=True),
    Option("lib_dir", "--lib-dir", "aclnn: folder holding the CANN libraries.",
           commands=_BACKEND, replay=True),
    Option("device_id", "--device-id", "aclnn, torch_npu: the NPU device id, or a list (0,1,2,3 "
           "or 0-3): cases spread over the devices, one worker bound to each (docs/devices.md).",
           metavar="ID[,ID...]", commands=_BACKEND, replay=True),
    Option("procs_per_device", "--procs-per-device", "With --device-id: worker processes bound "
           "to each device.", 1, type="count", show_default=True),
    Option("device_blocklist", "--device-blocklist", "With --device-id: device ids never to "
           "use (e.g. 2,5).", metavar="ID[,ID...]"),
    Option("device_failures", "--device-failures", "With --device-id: a device whose cases "
           "end in this many device faults in a row is given up; its cases run on the "
           "others.", 3, type="count", show_default=True),
    Option("warmup", "--warmup", "aclnn: untimed calls made before the timed ones of each case "
           "(docs/timings.md).", type="natural", commands=_JUDGE),
    Option("time_repeat", "--time-repeat", "aclnn: calls of each case timed on the device; "
           "the record holds their medians and samples (the first call is the judged one).",
           type="count", commands=_JUDGE),
    Option("exec_cmd", "--exec-cmd", "exec: the harness command line.", commands=_BACKEND,
           replay=True),
    Option("isolate", "--isolate", "Run the backend in a worker process (default: on for aclnn "
           "and exec).", off_flag="--no-isolate", commands=_BACKEND, replay=True),
    Option("timeout", "--timeout", "Per-case time limit in seconds: the oracle, the backend and "
           "the comparison; over it the case is a timeout.", 60.0, type="seconds",
           show_default=True, commands=_BACKEND, replay=True),
    Option("max_memory", "--max-memory", "Memory limit (RLIMIT_DATA) of an isolated backend's "
           "worker and of an exec harness, e.g. 8G; none: no limit. Default: three quarters of "
           "physical memory divided by --jobs, at least 2G.", metavar="SIZE",
           commands=_BACKEND, replay=True),
    # the case filters (run, cases list/export; the plugin has -k of its own)
    Option("ops", "--op", "Operator (its aclnn name or spec name, see 'specs list'); "
           "repeatable.", (), multiple=True, commands=_SELECT),
    Option("products", "--product", "Product id, e.g. atlas-a2; repeatable.", (),
           multiple=True, commands=_SELECT),
    Option("dtypes", "--dtype", "Keep cases with a tensor of this dtype (f16, BF16, ...).", (),
           multiple=True, commands=_SELECT),
    Option("clauses", "--clause", "Keep cases exercising this clause (id or op/id).", (),
           multiple=True, commands=_SELECT),
    Option("keyword", "-k", "Keep cases whose id contains this text.", "",
           commands=_SELECT_CLI),
    Option("max_cases", "--max-cases", "Budget: at most N cases, every clause kept covered.",
           type="count", commands=_SELECT),
    Option("shard", "--shard", "Run only shard I of N (1-based).", metavar="I/N",
           commands=_SELECT_CLI),
    Option("profile", "--profile", "large: add cases at model scale (shapes such as "
           "8x4096x11008) for every op.", "default", type="choice",
           choices=("default", "large"), show_default=True, commands=_SELECT | {"replay"},
           replay=True),
    Option("allow_empty", "--allow-empty", "Accept filters that select no case (exit 0) "
           "instead of a usage error.", False, is_flag=True, commands=_SELECT),
    Option("specs", "--specs", "Add the operator specs (*.yaml) of DIR (repeatable; also "
           "ACLNN_CONFORM_SPECS).", (), multiple=True, metavar="DIR",
           commands=frozenset({"pytest"})),
)  # fmt: skip

BY_NAME: dict[str, Option] = {o.name: o for o in OPTIONS}


def options_for(command: str) -> list[Option]:
    """The options `command` (run, replay, pytest, probe, cases) offers, in table order."""
    return [o for o in OPTIONS if command in o.commands]


def defaults() -> dict[str, Any]:
    return {o.name: o.default for o in OPTIONS}


def labels(caller: str) -> dict[str, str]:
    """Each option's flag as `caller` spells it, for messages."""
    return {o.name: o.flag_for(caller) for o in OPTIONS}


def replay_args(values: dict[str, Any], spec_dirs: Iterable[str] = ()) -> tuple[str, str]:
    """(what goes before `replay`, what goes after the case id) of a replay line: the spec
    folders given on the command line, then every `replay` option whose value is not its
    default, spelt as `aclnn-conform replay` takes it. `--seed` is always written."""
    before = [f"--specs {shlex.quote(str(d))}" for d in spec_dirs]
    after = [f"--seed {int(values.get('seed') or 0)}"]
    for o in OPTIONS:
        if not o.replay or o.name == "seed":
            continue
        value = values.get(o.name, o.default)
        if o.multiple:
            after += [f"{o.flag} {shlex.quote(str(v))}" for v in value or ()]
        elif o.off_flag:
            if value is not None:
                after.append(o.flag if value else o.off_flag)
        elif o.is_flag:
            if value:
                after.append(o.flag)
        elif value is not None and value != o.default:
            text = f"{value:g}" if isinstance(value, float) else str(value)
            after.append(f"{o.flag} {shlex.quote(text)}")
    return " ".join(before), " ".join(after)


def replay_line(case_id: str, values: dict[str, Any], spec_dirs: Iterable[str] = ()) -> str:
    """The command that judges case `case_id` again the way `values` judged it."""
    before, after = replay_args(values, spec_dirs)
    head = f"aclnn-conform {before} replay" if before else "aclnn-conform replay"
    return f"{head} '{case_id}' {after}"


@dataclass
class Session:
    """A checked run (see the module docstring). Build it with `Session.create`."""

    registry: Registry
    values: dict[str, Any]
    caller: str = CLI
    spec_dirs: tuple[str, ...] = ()  # folders given on the command line (the replay line's)
    selection: Selection = field(default_factory=Selection)
    backend_options: dict[str, Any] = field(default_factory=dict)
    oracle_options: dict[str, Any] = field(default_factory=dict)
    cross_options: dict[str, Any] = field(default_factory=dict)  # --cross-opt
    expect: expectations.Expectations | None = None
    expect_sha: str = "none"
    jobs: int = 1
    max_memory: int | None = None
    max_case_bytes: int | None = None
    warnings: list[str] = field(default_factory=list)
    devices: list[int] | None = None  # --device-id's devices (less the blocklist), if given
    fleet: FleetReport | None = None  # how the devices fared (a run over several devices)
    _items: list[Item] = field(default_factory=list, repr=False)
    _pairs: list[Any] | None = field(default=None, repr=False)
    _cfg: RunConfig | None = field(default=None, repr=False)
    _backend: Backend | None = field(default=None, repr=False)
    _oracle: Backend | None = field(default=None, repr=False)
    _family: tuple[str | None] | None = field(default=None, repr=False)  # the binding family

    # -- options ----------------------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:  # the option values: session.backend, .seed, ...
        values = self.__dict__.get("values")
        if values is not None and name in BY_NAME:
            return values.get(name, BY_NAME[name].default)
        raise AttributeError(name)

    def flag(self, name: str) -> str:
        """Option `name` as the caller spells it (`--op`, `--aclnn-op`)."""
        return BY_NAME[name].flag_for(self.caller)

    @classmethod
    def create(
        cls,
        registry: Registry,
        values: dict[str, Any],
        caller: str = CLI,
        spec_dirs: Iterable[str] = (),
    ) -> Session:
        """A session whose every option is checked (config.ConfigError naming the caller's
        flag, config.Unavailable for a backend that cannot run here); nothing is started."""
        s = cls(registry, {**defaults(), **values}, caller, tuple(str(d) for d in spec_dirs))
        s._check()
        return s

    def _check(self) -> None:
        f, v = self.flag, self.values
        if not v["backend"]:
            raise config.ConfigError(
                f"the aclnn conformance suite needs {f('backend')} NAME "
                "(e.g. reference, torch, jax; 'aclnn-conform backends' "
                "lists them)"
            )
        for name in (
            "seed",
            "jobs",
            "max_cases",
            "procs_per_device",
            "device_failures",
            "warmup",
            "time_repeat",
            "repeat",
        ):
            least = 0 if BY_NAME[name].type == "natural" else 1
            if v[name] is not None and int(v[name]) < least:
                raise config.ConfigError(f"{f(name)} {v[name]}: must be >= {least}")
        lab = {
            "op": f("ops"),
            "product": f("products"),
            "dtype": f("dtypes"),
            "clause": f("clauses"),
        }
        self.selection = config.check_selection(
            self.registry,
            v["ops"],
            v["products"],
            v["dtypes"],
            v["clauses"],
            v["keyword"] or "",
            v["max_cases"],
            parse_shard(v["shard"], f("shard")),
            labels=lab,
        )
        self.selection.profile = v["profile"]
        if v["cases_dir"] is not None and v["profile"] != "default":
            raise config.ConfigError(
                f"{f('profile')} chooses generated cases; it does not "
                f"apply with {f('cases_dir')} DIR"
            )
        if v["golden"] == "stored" and v["cases_dir"] is None:
            raise config.ConfigError(
                f"{f('golden')} stored judges case directories by their stored golden: give "
                f"{f('cases_dir')} DIR (written by 'aclnn-conform cases export --golden')"
            )
        named = {
            "device": v["device"],
            "lib_dir": v["lib_dir"],
            "cmd": v["exec_cmd"],
            "warmup": v["warmup"],
            "time_repeat": v["time_repeat"],
        }
        options = config.parse_backend_options(v["backend_opts"], named, f("backend_opts"))
        options, self.devices = config.bind_devices(
            v["backend"],
            options,
            v["device_id"],
            v["device_blocklist"],
            {
                k: f(k)
                for k in ("device_id", "device_blocklist", "device", "backend", "backend_opts")
            },
        )
        config.check_backend(v["backend"], options, f("backend"), f("backend_opts"))
        if v["exact"]:
            options = config.exact_options(v["backend"], v["oracle"], options)
        self.backend_options = options
        self.oracle_options = self._oracle_options()
        if v["dump_on_fail"] is not None and not str(v["dump_on_fail"]).strip():
            raise config.ConfigError(
                f"{f('dump_on_fail')} '': give the folder to write failing cases to"
            )
        if v["cross"] is not None:
            self.cross_options = config.parse_backend_options(v["cross_opts"], {}, f("cross_opts"))
            if v["cross"] == v["backend"] and self.cross_options == self.backend_options:
                raise config.ConfigError(
                    f"{f('cross')} {v['cross']}: the backend under test itself; give another "
                    f"implementation (e.g. torch, jax, reference) or other {f('cross_opts')}"
                )
            config.check_backend(v["cross"], self.cross_options, f("cross"), f("cross_opts"))
        elif v["cross_opts"]:
            raise config.ConfigError(f"{f('cross_opts')}: only with {f('cross')} BACKEND")
        if v["keep_outputs"] is not None and not str(v["keep_outputs"]).strip():
            raise config.ConfigError(
                f"{f('keep_outputs')} '': give the folder to write the outputs to"
            )
        self.jobs, capped = config.checked_jobs(int(v["jobs"]), f("jobs"))
        if capped:
            self.warnings.append(capped)
        if self.devices is not None and len(self.devices) * int(v["procs_per_device"]) > 1:
            if int(v["jobs"]) != 1:
                raise config.ConfigError(
                    f"{f('jobs')} {v['jobs']}: with a device list the workers are "
                    f"{f('procs_per_device')} per device of {f('device_id')}; drop {f('jobs')}"
                )
            self.jobs = len(self.devices) * int(v["procs_per_device"])
        elif int(v["procs_per_device"]) != 1 or v["device_blocklist"] is not None:
            used = "procs_per_device" if int(v["procs_per_device"]) != 1 else "device_blocklist"
            one = backend_class(v["backend"]).device_of(self.backend_options)
            if one is None:
                raise config.ConfigError(
                    f"{f(used)} applies to a backend bound to devices (aclnn, torch_npu), "
                    f"not to {f('backend')} {v['backend']}; for parallel workers use {f('jobs')}"
                )
            if used == "device_blocklist":
                raise config.ConfigError(
                    f"{f(used)} chooses among the devices of {f('device_id')} LIST: "
                    f"give them (e.g. {f('device_id')} 0,1,2,3)"
                )
            if int(v["jobs"]) != 1:
                raise config.ConfigError(
                    f"{f('jobs')} {v['jobs']} and {f('procs_per_device')}: give one"
                )
            self.devices = [one]  # the backend's own device, several workers on it
            self.jobs = int(v["procs_per_device"])
        self.max_memory = config.max_memory(v["max_memory"], self.jobs, f("max_memory"))
        self.max_case_bytes = (
            config.parse_bytes(v["max_case_bytes"], f("max_case_bytes"))
            if v["max_case_bytes"] is not None
            else config.default_case_bytes(self.jobs)
        )
        path = v["expectations"]
        self.expect = config.load_expectations(
            v["backend"],
            Path(path) if path is not None else None,
            v["no_expectations"],
            v["update_expectations"],
            self.registry,
            {
                "file": f("expectations"),
                "off": f("no_expectations"),
                "update": f("update_expectations"),
            },
        )
        self.warnings += self.expect.warnings if self.expect is not None else []
        if v["strict"]:
            config.check_strict(self.expect, v["backend"], v["oracle"], v["oracle"] == v["backend"])
        self.expect_sha = expectations.fingerprint(self.expect, self.registry, v["backend"])

    def _oracle_options(self) -> dict[str, Any]:
        """The oracle's options, checked: the backend's own when the oracle is the backend
        under test, else --oracle-opt (and exact=1 for a reference oracle under --exact)."""
        v, f = self.values, self.flag
        if v["oracle"] == v["backend"]:
            if v["oracle_opts"]:
                raise config.ConfigError(
                    f"{f('oracle_opts')}: the oracle is the backend under test ({v['backend']}): "
                    f"it runs with the backend's options; drop {f('oracle_opts')}"
                )
            return dict(self.backend_options)
        opts = {
            **config.parse_backend_options(v["oracle_opts"], {}, f("oracle_opts")),
            **config.oracle_options(v["oracle"], v["exact"]),
        }
        try:
            config.check_backend(v["oracle"], opts, f("oracle"), f("oracle_opts"))
        except config.ConfigError as exc:
            if str(exc).startswith(f("oracle")):
                raise
            raise config.ConfigError(
                f"{f('oracle')} {v['oracle']}: {exc} (the oracle's options "
                f"are given with {f('oracle_opts')} KEY=VALUE)"
            ) from None
        return opts

    def config(self) -> RunConfig:
        """The runner's configuration of this session."""
        v = self.values
        before, after = replay_args(v, self.spec_dirs)
        return RunConfig(
            backend=v["backend"],
            oracle=v["oracle"],
            backend_options=self.backend_options,
            oracle_options=self.oracle_options,
            seed=int(v["seed"]),
            jobs=self.jobs,
            fail_fast=bool(v["fail_fast"]),
            keep_outputs=None if v["keep_outputs"] is None else str(v["keep_outputs"]),
            isolate=v["isolate"],
            timeout=float(v["timeout"]),
            max_case_bytes=self.max_case_bytes,
            spec_dirs=self.registry.dirs,
            exact=bool(v["exact"]),
            max_memory=self.max_memory,
            deviations=self.expect is not None,
            replay_args=(before, after),
            devices=tuple(self.devices or ()),
            device=backend_class(v["backend"]).device_of(self.backend_options),
            procs_per_device=int(v["procs_per_device"]),
            device_failures=int(v["device_failures"]),
            golden=str(v["golden"]),
            repeat=int(v["repeat"]),
            dump_on_fail=None if v["dump_on_fail"] is None else str(v["dump_on_fail"]),
            cross=v["cross"],
            cross_options=dict(self.cross_options),
            cross_level=str(v["cross_level"]),
        )

    # -- items ------------------------------------------------------------------------------
    def items(self, warn: Callable[[str], None] | None = None) -> list[Item]:
        """The selected items (generated cases, or the case directories of --cases); an empty
        selection is a ConfigError unless --allow-empty."""
        v, f = self.values, self.flag
        lab = {
            "op": f("ops"),
            "product": f("products"),
            "dtype": f("dtypes"),
            "clause": f("clauses"),
        }
        source = ""
        if v["cases_dir"] is not None:
            root = Path(v["cases_dir"])
            if not root.is_dir():
                raise config.ConfigError(f"{f('cases_dir')} {root}: no such directory")
            items = directory_items(root, self.selection, self.registry, warn)
            source = f"{f('cases_dir')} {root}"
            if (
                v["golden"] == "stored"
                and items
                and not any(has_golden(Path(str(it.path))) for it in items)
            ):
                raise config.ConfigError(
                    f"{f('golden')} stored: no case under {root} has a stored golden "
                    f"(golden.json); write them with 'aclnn-conform cases export --golden "
                    f"{root}', or run without {f('golden')} stored"
                )
        else:
            planned: list[Any] = []
            items = generated_items(self.registry, self.selection, int(v["seed"]), planned)
            if not self.selection.products and self.selection.profile == "default":
                self._pairs = planned  # the suite's plans of the selected ops
        self._items = items
        config.require_cases(
            len(items), self.selection, bool(v["allow_empty"]), source, f("allow_empty"), lab
        )
        return items

    def clause_universe(self) -> dict[str, Any]:
        """The clauses of the specs with the plans of the ops this run selected (its meta
        header's "clauses": the coverage table of its reports, without the specs)."""
        if self._pairs is not None:
            ops = self.selection.ops or [s.name for s in self.registry]
            return clause_universe(self.registry, self._pairs, ops)
        known = set(self.registry.names())  # a case folder's first segment names no spec
        ops = sorted({it.op for it in self._items} & known)
        return clause_universe(self.registry, planned_ops=list(self.selection.ops) or ops)

    def find(self, case_id: str) -> Item:
        """The generated item of `case_id` under this session's seed and profile (replay)."""
        from ..cases.generate import plan_suite

        parts = case_id.split("/")
        if len(parts) < 3:
            raise config.ConfigError(
                f"{case_id!r} is not a case id (op/product/...; see 'aclnn-conform cases list')"
            )
        spec = self.registry.get(parts[0])
        if parts[1] not in spec.products:
            raise config.ConfigError(f"{case_id!r}: {spec.name} has no product {parts[1]!r}")
        for _, plan in plan_suite(self.registry, [spec.name], [parts[1]], self.values["profile"]):
            if plan.id == case_id:
                return Item(plan.id, spec.name, plan=plan)
        raise config.ConfigError(
            f"no generated case has the id {case_id!r} (see 'aclnn-conform cases list -k ...')"
        )

    # -- judging ----------------------------------------------------------------------------
    def start(self) -> Backend:
        """The backend under test and the oracle, started once (BackendError if they cannot)."""
        if self._backend is None:
            cfg = self.config()
            self._backend = make_backend(cfg, self.registry)
            self._oracle = make_oracle(cfg, self.registry, self._backend)
        return self._backend

    def close(self) -> None:
        for b in {id(x): x for x in (self._backend, self._oracle) if x is not None}.values():
            b.close()
        self._backend = self._oracle = None

    def skip_record(self, item: Item, version: str) -> Result | None:
        """The record of an item that a skip entry of the expectations keeps from running (it
        may wedge a device), else None."""
        if self.expect is None:
            return None
        backend = self.values["backend"]
        if self._family is None:  # looked up once: an entry-point scan costs milliseconds
            self._family = (backend_class(backend).binding_family,)
        facts = item_facts(item, self.registry, self._family[0])
        entry = self.expect.skip_entry(facts, backend, version)
        if entry is None:
            return None
        return Result(
            id=item.id,
            verdict="skip",
            op=item.op,
            backend=backend,
            reason=f"expectations: {entry.reason}",
            clauses=[],
            dtypes=facts.dtypes or {},
            expectations_sha256=self.expect_sha,
            expectation={"match": entry.match, "kind": "skip", "reason": entry.reason},
        )

    def finish(self, rec: Result, version: str) -> Result:
        """A judged record with the expectations applied (xfail, xpass, deviation)."""
        rec.expectations_sha256 = self.expect_sha
        if self.expect is not None:
            backend_version = version if rec.backend_version is None else rec.backend_version
            self.expect.apply(rec, self.values["backend"], backend_version)
        return rec

    def judge(self, item: Item) -> Result:
        """One item's final record, as a run records it (the plugin and replay use this)."""
        backend = self.start()
        skipped = self.skip_record(item, backend.version())
        if skipped is not None:
            return skipped
        assert self._oracle is not None
        if self._cfg is None:
            self._cfg = self.config()
        rec = run_one(item, self._cfg, self.registry, backend, self._oracle)
        return self.finish(rec, backend.version())

    def run(self, items: list[Item], sink: Callable[[Result], bool], version: str) -> None:
        """Judge every item (in worker processes with --jobs) and hand each final record to
        `sink`, the skipped ones first; stop when sink returns False."""
        todo = []
        for it in items:
            rec = self.skip_record(it, version)
            if rec is None:
                todo.append(it)
            elif not sink(rec):
                return
        cfg = self.config()
        final = lambda rec: sink(self.finish(rec, version))  # noqa: E731
        if cfg.fleet:
            self.fleet = fleet_mod.execute(todo, cfg, final)
        else:
            execute(todo, cfg, final)

    def replay_line(self, case_id: str) -> str:
        return replay_line(case_id, self.values, self.spec_dirs)


def _clip(text: Any, limit: int) -> str:
    s = " ".join(str(text or "").split())
    return s if len(s) <= limit else s[: limit - 1] + "\u2026"


def describe(spec: Any) -> list[tuple[str, str, str, str]]:
    """(clause id, kind, text, source) for each clause of a spec, in spec order."""
    out = []
    for c in spec.checks:
        text = c.summary or (f"{c.kind}({', '.join(c.params)})" if c.params else c.kind)
        if not c.summary and c.violated_if is not None:
            text = f"violated if {c.violated_if.source}"
        elif not c.summary and c.dtype_set:
            text += f" in {c.dtype_set}"
        out.append((c.id, c.kind, f"{text} \u2192 {c.status}" if c.status else text, c.source))
    for f in spec.formulas:
        for let in f.lets:
            text = let.summary or f"{let.name} = {let.value.source}"
            out.append((let.id, "let", text, let.source))
        for b in f.branches:
            when = f"when {b.when.source}" if b.when is not None else "otherwise"
            out.append((b.id, "branch", b.summary or when, b.source))
    for p in spec.special_points:
        out.append((p.id, "special point", p.summary or f"{p.param} = {p.value.source}", p.source))
    for p in spec.properties:
        out.append((p.id, p.kind, p.summary or p.kind, p.source))
    return [(i, k, _clip(t, 160), _clip(s, 160)) for i, k, t, s in out]


def clause_universe(
    registry: Registry,
    pairs: Iterable[tuple[Any, Any]] | None = None,
    planned_ops: Iterable[str] | None = None,
) -> dict[str, Any]:
    """Every clause of every spec of `registry`, and how many of the suite's plans exercise
    each: what the coverage table needs, recorded in a run's meta header (meta["clauses"]) so
    that a report never loads the specs. `pairs`: the (spec, plan) pairs of the suite planned
    for `planned_ops` (default: plan every op now); an op outside them is recorded as not
    planned (its clauses read "not run", never "no case")."""
    if pairs is None:
        from ..cases.generate import plan_suite

        wanted = None if planned_ops is None else list(planned_ops)
        pairs = [] if wanted == [] else plan_suite(registry, wanted)
    counts: dict[str, int] = {}
    seen: set[str] = set()
    for spec, plan in pairs:
        seen.add(spec.name)
        for c in plan.clauses:
            q = spec.clause(c)
            counts[q] = counts.get(q, 0) + 1
    planned = set(planned_ops) if planned_ops is not None else None
    ops = []
    for spec in sorted(registry, key=lambda s: s.name):
        known = spec.name in seen or (planned is None or spec.name in planned)
        ops.append(
            {
                "op": spec.name,
                "aclnn_op": spec.op,
                "sha256": spec.sha256,
                "planned": known,
                "clauses": [
                    {
                        "id": i,
                        "kind": k,
                        "text": t,
                        "source": src,
                        "generated": counts.get(spec.clause(i), 0),
                    }
                    for i, k, t, src in describe(spec)
                ],
            }
        )
    return {"ops": ops}


def parse_shard(value: str | None, flag: str = "--shard") -> tuple[int, int] | None:
    if value is None:
        return None
    try:
        i, n = (int(x) for x in str(value).split("/"))
    except ValueError:
        raise config.ConfigError(f"{flag} {value!r}: expected i/n, e.g. 1/4") from None
    if not 1 <= i <= n:
        raise config.ConfigError(f"{flag} {value!r}: i must be between 1 and n")
    return i, n


def backend_version(
    session: Session, facts: dict[str, Any] | None = None, oracle: bool = False
) -> str:
    """The version string of the backend (or the oracle), started once for it: BackendError
    when it cannot start. With `facts`, the backend's host facts are added to it."""
    v = session.values
    name, options = (
        (v["oracle"], session.oracle_options) if oracle else (v["backend"], session.backend_options)
    )
    b = load_backend(name, session.registry, **options)
    try:
        if facts is not None:
            facts.update(b.host_facts())
        return b.version()
    finally:
        b.close()


__all__ = ["OPTIONS", "BackendError", "Option", "Session", "options_for", "replay_line"]
