"""Test tiers.

`python -m pytest -q -n auto` (the README's test command) runs the fast tier: every test not
marked with one of TIERS. The marked tiers run when asked for with `-m` (`.ci/run` runs each),
or when the test files or test ids are named on the command line:

- gates:    the CLI in a subprocess, whole-suite runs, worker processes, signals and timeouts;
- registry: the per-op oracles over every spec x product x dtype (tests/test_family_oracles.py,
            tests/test_engine_vs_mpmath.py);
- kernels:  compiled reference kernels (numba) across the registry and their bit-for-bit checks;
- large:    cases of 2^24 elements and more, results files of 10^5 records and more;
- browser:  the HTML report in Chromium;
- promise:  one YAML file adds an operator (tests/test_one_yaml_per_op.py);
- slow:     the long profile of the fuzz test, 2^20-long reductions.
"""

from __future__ import annotations

import pytest

TIERS = ("gates", "registry", "kernels", "large", "browser", "promise", "slow")
ALL_TIERS = " or ".join(TIERS)


def _named(config: pytest.Config) -> bool:
    """Whether the command line names test files or test ids (not only folders)."""
    return any("::" in a or a.split("::")[0].endswith(".py") for a in config.args)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.option.markexpr or _named(config):
        return  # the user chose what to run
    keep, tiered = [], []
    for item in items:
        (tiered if any(item.get_closest_marker(t) for t in TIERS) else keep).append(item)
    if tiered:
        config.hook.pytest_deselected(items=tiered)
        items[:] = keep


def pytest_report_header(config: pytest.Config) -> str | None:
    if config.option.markexpr or _named(config):
        return None
    return f"fast tier: the marked tiers run with -m '{ALL_TIERS}' (see tests/conftest.py)"
