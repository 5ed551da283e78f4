"""pytest integration: the generated cases as pytest items.

    pytest --pyargs aclnn_conformance.conformance --aclnn-backend torch [-k "atlas-a2 and values"] [-n auto] [--junitxml r.xml]

The plugin (entry point `pytest11`) adds the options; `conformance/test_suite.py` holds one
parametrized test whose parameters are the case ids, so -k, xdist (every worker enumerates the
same ids), --junitxml and pytest's own reporting all work. A case is judged exactly as
`aclnn-conform run` judges it, expectations and spec deviations included.

When the suite is collected, the options are checked at start-up with the CLI's own checks
(`conformance.run.config`): a misspelt op, dtype or backend, an option the backend does not take,
a backend that cannot run here, or filters that select no case stop the session with one line
(pytest.UsageError, exit code 4) before any case runs.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest

from .judge.verdicts import FAILING

_BACKENDS: dict[tuple, Any] = {}
_ITEMS = pytest.StashKey[list]()
_EXPECT = pytest.StashKey[Any]()
_OPTIONS = pytest.StashKey[dict]()
_REGISTRY = pytest.StashKey[Any]()
LABELS = {"op": "--aclnn-op", "product": "--aclnn-product", "dtype": "--aclnn-dtype",
          "clause": "--aclnn-clause"}  # fmt: skip
EXPECT_LABELS = {"file": "--aclnn-expectations", "off": "--aclnn-no-expectations"}


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("aclnn-conformance")
    g.addoption(
        "--aclnn-backend", default=None, help="run the aclnn conformance cases against this backend"
    )
    g.addoption("--aclnn-oracle", default="reference", help="backend giving the expected results")
    g.addoption("--aclnn-op", action="append", default=[], help="operator filter (repeatable)")
    g.addoption("--aclnn-product", action="append", default=[], help="product filter (repeatable)")
    g.addoption("--aclnn-dtype", action="append", default=[], help="dtype filter (repeatable)")
    g.addoption("--aclnn-clause", action="append", default=[], help="clause filter (repeatable)")
    g.addoption(
        "--aclnn-max-cases", type=int, default=None, help="case budget, clauses kept covered"
    )
    g.addoption("--aclnn-seed", type=int, default=0, help="seed of the generated values")
    g.addoption(
        "--aclnn-expectations", default=None, help="expectations file (default: shipped one)"
    )
    g.addoption("--aclnn-no-expectations", action="store_true", default=False,
                help="ignore expectations files and spec deviations")  # fmt: skip
    g.addoption("--aclnn-backend-opt", action="append", default=[], metavar="KEY=VALUE")
    g.addoption("--aclnn-specs", action="append", default=[], metavar="DIR",
                help="add the specs of DIR (repeatable; also ACLNN_CONFORM_SPECS)")  # fmt: skip
    g.addoption("--aclnn-allow-empty", action="store_true", default=False,
                help="accept filters that select no case")  # fmt: skip


def _targets_suite(config: pytest.Config) -> bool:
    """Whether this session collects conformance/test_suite.py (the plugin is loaded by every
    pytest session in an environment where this package is installed)."""
    here = Path(__file__).resolve().parent
    suite = here / "test_suite.py"
    root = Path(config.invocation_params.dir)
    for arg in config.args:
        target = str(arg).split("::")[0]
        if config.option.pyargs and target.split(".")[0] == "aclnn_conformance":
            return target in (
                "aclnn_conformance",
                "aclnn_conformance.conformance",
                "aclnn_conformance.conformance.test_suite",
            )
        path = (root / target).resolve()
        if path == suite or here.is_relative_to(path):  # the file, its folder or an ancestor
            return True
    return False


def _check(config: pytest.Config) -> list:
    """Every option checked as `aclnn-conform run` checks it; the selected items."""
    from .run import config as cc
    from .run.runner import generated_items
    from .spec.registry import SpecError, env_spec_dirs, load_registry

    opt = config.getoption
    backend = opt("--aclnn-backend")
    if not backend:
        raise cc.ConfigError("the aclnn conformance suite needs --aclnn-backend NAME (e.g. "
                             "reference, torch, jax; 'aclnn-conform backends' lists them)")  # fmt: skip
    options = cc.parse_backend_options(opt("--aclnn-backend-opt"), {}, "--aclnn-backend-opt")
    cc.check_backend(backend, options, "--aclnn-backend", "--aclnn-backend-opt")
    if opt("--aclnn-oracle") != backend:
        cc.check_backend(opt("--aclnn-oracle"), {}, "--aclnn-oracle")
    if opt("--aclnn-seed") < 0:
        raise cc.ConfigError(f"--aclnn-seed {opt('--aclnn-seed')}: must be >= 0")
    if opt("--aclnn-max-cases") is not None and opt("--aclnn-max-cases") < 1:
        raise cc.ConfigError(f"--aclnn-max-cases {opt('--aclnn-max-cases')}: must be >= 1")
    try:
        reg = load_registry(dirs=(*env_spec_dirs(), *opt("--aclnn-specs")))
    except SpecError as exc:
        first = exc.problems[0] if exc.problems else "invalid spec"
        raise cc.ConfigError(
            f"{first} (aclnn-conform specs lint FILE shows every problem)"
        ) from None
    sel = cc.check_selection(reg, opt("--aclnn-op"), opt("--aclnn-product"), opt("--aclnn-dtype"),
                             opt("--aclnn-clause"), "", opt("--aclnn-max-cases"),
                             labels=LABELS)  # fmt: skip
    path = opt("--aclnn-expectations")
    expect = cc.load_expectations(backend, Path(path) if path else None,
                                  opt("--aclnn-no-expectations"), False, reg,
                                  EXPECT_LABELS)  # fmt: skip
    items = generated_items(reg, sel, opt("--aclnn-seed"))
    cc.require_cases(len(items), sel, opt("--aclnn-allow-empty"), allow_flag="--aclnn-allow-empty",
                     labels=LABELS)  # fmt: skip
    config.stash[_EXPECT] = expect
    config.stash[_OPTIONS] = options
    config.stash[_REGISTRY] = reg
    return items


class _SuiteModule(pytest.Module):
    """The suite module, imported by its installed name: pytest's default import mode would name
    it after the folders that hold an __init__.py (`conformance.test_suite`, a second copy outside
    the `aclnn_conformance` namespace, whose relative imports fail)."""

    def _getobj(self) -> Any:
        return importlib.import_module(f"{__package__}.test_suite")


def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector) -> Any:
    if module_path == Path(__file__).with_name("test_suite.py"):
        return _SuiteModule.from_parent(parent, path=module_path)
    return None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "aclnn_case: a generated aclnn conformance case")
    if not (_targets_suite(config) or config.getoption("--aclnn-backend")):
        return
    from .run.config import ConfigError, Unavailable

    try:
        config.stash[_ITEMS] = _check(config)
    except (ConfigError, Unavailable) as exc:
        raise pytest.UsageError(str(exc)) from None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "aclnn_case" not in metafunc.fixturenames:
        return
    items = metafunc.config.stash.get(_ITEMS, None)
    if items is None:  # collected by a path pytest_configure did not recognise
        from .run.config import ConfigError, Unavailable

        try:
            items = metafunc.config.stash[_ITEMS] = _check(metafunc.config)
        except (ConfigError, Unavailable) as exc:
            raise pytest.UsageError(str(exc)) from None
    metafunc.parametrize("aclnn_case", items, ids=[it.id for it in items])


def run_case(config: pytest.Config, item: Any) -> None:
    """Judge one case; translate the verdict into pytest's outcome."""
    from .run.runner import RunConfig, item_facts, make_backend, run_with

    backend = config.getoption("--aclnn-backend")
    oracle = config.getoption("--aclnn-oracle")
    options = config.stash[_OPTIONS]
    key = (backend, oracle, tuple(sorted(options.items())))
    reg = config.stash[_REGISTRY]
    if key not in _BACKENDS:
        expect = config.stash[_EXPECT]
        cfg = RunConfig(backend=backend, oracle=oracle, backend_options=options,
                        seed=config.getoption("--aclnn-seed"), spec_dirs=reg.dirs,
                        deviations=expect is not None)  # fmt: skip
        _BACKENDS[key] = (cfg, make_backend(cfg, reg), expect)
    cfg, b, expect = _BACKENDS[key]
    if expect is not None:  # a skipped case is not run at all (it may wedge a device)
        facts = item_facts(item, reg, getattr(b, "binding_family", None))
        entry = expect.skip_entry(facts, b.name, b.version())
        if entry is not None:
            pytest.skip(f"expectations: {entry.reason}")
    rec = run_with(item, cfg, b)
    if expect is not None:
        expect.apply(rec, b.name, rec.get("backend_version", ""))
    v, reason = rec["verdict"], rec.get("reason", "")
    if v == "skip":
        pytest.skip(reason)
    if v == "xfail":
        pytest.xfail(rec["expectation"]["reason"])
    if v == "deviation":
        x = rec["expectation"]
        pytest.xfail(f"deviation {x.get('deviation', '')}: {x['reason']}")
    if v in FAILING:
        pytest.fail(f"{v}: {reason}\n{rec.get('replay', '')}", pytrace=False)


def pytest_unconfigure(config: pytest.Config) -> None:
    for _cfg, b, _e in _BACKENDS.values():
        b.close()
    _BACKENDS.clear()
