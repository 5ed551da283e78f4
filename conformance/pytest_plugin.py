"""pytest integration: the generated cases as pytest items.

    pytest --pyargs conformance --aclnn-backend torch [-k elu] [-n auto] [--junitxml r.xml]

The plugin (entry point `pytest11`) adds the options; `conformance/test_suite.py` holds one
parametrized test whose parameters are the case ids, so -k, xdist (every worker enumerates the
same ids), --junitxml and pytest's own reporting all work. A case is judged exactly as
`aclnn-conform run` judges it, expectations included.
"""

from __future__ import annotations

from typing import Any

import pytest

_BACKENDS: dict[tuple, Any] = {}


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("aclnn-conformance")
    g.addoption(
        "--aclnn-backend", default=None, help="run the aclnn conformance cases against this backend"
    )
    g.addoption("--aclnn-oracle", default="reference", help="backend giving the expected results")
    g.addoption("--aclnn-op", action="append", default=[], help="operator filter (repeatable)")
    g.addoption("--aclnn-product", action="append", default=[], help="product filter (repeatable)")
    g.addoption("--aclnn-dtype", action="append", default=[], help="dtype filter (repeatable)")
    g.addoption(
        "--aclnn-max-cases", type=int, default=None, help="case budget, clauses kept covered"
    )
    g.addoption("--aclnn-seed", type=int, default=0, help="seed of the generated values")
    g.addoption(
        "--aclnn-expectations", default=None, help="expectations file (default: shipped one)"
    )
    g.addoption("--aclnn-backend-opt", action="append", default=[], metavar="KEY=VALUE")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "aclnn_case: a generated aclnn conformance case")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "aclnn_case" not in metafunc.fixturenames:
        return
    opt = metafunc.config.getoption
    backend = opt("--aclnn-backend")
    if not backend:
        metafunc.parametrize("aclnn_case", [pytest.param(None, marks=pytest.mark.skip(
            reason="no --aclnn-backend given"))], ids=["no-backend"])  # fmt: skip
        return
    from conformance.registry import default_registry
    from conformance.runner import Selection, generated_items

    reg = default_registry()
    sel = Selection([reg.get(o).name for o in opt("--aclnn-op")], opt("--aclnn-product"),
                    opt("--aclnn-dtype"), [], "", opt("--aclnn-max-cases"))  # fmt: skip
    items = generated_items(reg, sel)
    metafunc.parametrize("aclnn_case", items, ids=[it.id for it in items])


def _options(config: pytest.Config) -> dict[str, str]:
    out = {}
    for pair in config.getoption("--aclnn-backend-opt"):
        key, _, value = pair.partition("=")
        out[key] = value
    return out


def _expectations(config: pytest.Config, backend: str):
    from conformance import expectations

    path = config.getoption("--aclnn-expectations") or expectations.shipped(backend)
    return expectations.load(path) if path else None


def run_case(config: pytest.Config, item: Any) -> None:
    """Judge one case; translate the verdict into pytest's outcome."""
    from conformance.runner import RunConfig, make_backend, run_with

    backend = config.getoption("--aclnn-backend")
    oracle = config.getoption("--aclnn-oracle")
    key = (backend, oracle, tuple(sorted(_options(config).items())))
    if key not in _BACKENDS:
        cfg = RunConfig(backend=backend, oracle=oracle, backend_options=_options(config),
                        seed=config.getoption("--aclnn-seed"))  # fmt: skip
        _BACKENDS[key] = (cfg, make_backend(cfg), _expectations(config, backend))
    cfg, b, expect = _BACKENDS[key]
    rec = run_with(item, cfg, b)
    if expect is not None:
        expect.apply(rec, b.name, rec.get("backend_version", ""))
    v, reason = rec["verdict"], rec.get("reason", "")
    if v == "skip":
        pytest.skip(reason)
    if v == "xfail":
        pytest.xfail(rec["expectation"]["reason"])
    if v in ("fail", "error", "crash", "timeout", "xpass"):
        pytest.fail(f"{v}: {reason}\n{rec.get('replay', '')}", pytrace=False)


def pytest_unconfigure(config: pytest.Config) -> None:
    for _cfg, b, _e in _BACKENDS.values():
        b.close()
    _BACKENDS.clear()
