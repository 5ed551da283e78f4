"""pytest integration: the generated cases as pytest items.

    pytest --pyargs aclnn_conformance.conformance --aclnn-backend torch [-k "atlas-a2 and values"] [-n auto] [--junitxml r.xml]

The plugin (entry point `pytest11`) adds the options, generated from the one option table
(conformance.run.session.OPTIONS: `--aclnn-` + the CLI's flag); `conformance/test_suite.py` holds one
parametrized test whose parameters are the case ids, so -k, xdist (every worker enumerates the
same ids), --junitxml and pytest's own reporting all work. A case is judged exactly as
`aclnn-conform run` judges it (by the same Session), expectations, spec deviations and oracle
options included.

When the suite is collected, the options are checked at start-up by the Session, as the CLI's
are: a misspelt op, dtype or backend, an option the backend does not take,
a backend that cannot run here, or filters that select no case stop the session with one line
(pytest.UsageError, exit code 4) before any case runs.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest

from .judge.verdicts import FAILING

_ITEMS = pytest.StashKey[list]()
_SESSION = pytest.StashKey[Any]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """The run options the plugin offers, generated from the one option table
    (conformance.run.session.OPTIONS): `--aclnn-` + the CLI's flag."""
    from .run.session import options_for

    g = parser.getgroup("aclnn-conformance")
    for o in options_for("pytest"):
        flag, dest = o.pytest_flag, "aclnn_" + o.name
        if o.off_flag:
            g.addoption(
                flag, action="store_const", const=True, dest=dest, default=None, help=o.help
            )
            off = "--aclnn-" + o.off_flag.removeprefix("--")
            g.addoption(off, action="store_const", const=False, dest=dest, help=f"not {flag}")
        elif o.is_flag:
            g.addoption(flag, action="store_true", default=False, dest=dest, help=o.help)
        elif o.multiple:
            g.addoption(
                flag, action="append", default=[], dest=dest, help=o.help, metavar=o.metavar or None
            )
        else:
            kind = {"int": int, "count": int, "natural": int, "seconds": float}.get(o.type, str)
            default = None if o.name == "backend" else o.default  # the suite needs one named
            g.addoption(
                flag, type=kind, default=default, dest=dest, help=o.help, metavar=o.metavar or None
            )


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
    """The options, translated into a Session (which checks each as `aclnn-conform run`
    does); the selected items."""
    from .run import config as cc
    from .run.session import PYTEST, Session, options_for
    from .spec.registry import SpecError, env_spec_dirs, load_registry

    values = {o.name: config.getoption("aclnn_" + o.name) for o in options_for("pytest")}
    if values["expectations"] is not None:
        values["expectations"] = Path(values["expectations"])
    try:
        reg = load_registry(dirs=(*env_spec_dirs(), *values["specs"]))
    except SpecError as exc:
        first = exc.problems[0] if exc.problems else "invalid spec"
        raise cc.ConfigError(
            f"{first} (aclnn-conform specs lint FILE shows every problem)"
        ) from None
    session = Session.create(reg, values, PYTEST, values["specs"])
    items = session.items()
    config.stash[_SESSION] = session
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
    """Judge one case exactly as `aclnn-conform run` does (the Session); translate the
    verdict into pytest's outcome."""
    rec = config.stash[_SESSION].judge(item)
    v, reason = rec.verdict, rec.reason or ""
    if v == "skip":
        pytest.skip(reason)
    if v == "xfail":
        pytest.xfail(rec.expectation["reason"])
    if v == "deviation":
        x = rec.expectation
        pytest.xfail(f"deviation {x.get('deviation', '')}: {x['reason']}")
    if v in FAILING:
        pytest.fail(f"{v}: {reason}\n{rec.replay or ''}", pytrace=False)


def pytest_unconfigure(config: pytest.Config) -> None:
    session = config.stash.get(_SESSION, None)
    if session is not None:
        session.close()
