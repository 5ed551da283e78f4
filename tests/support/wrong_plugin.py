"""Register the backends of tests/support/wrong_backends.py as a plug-in for subprocesses."""

from __future__ import annotations

from pathlib import Path

from tests.support.plugins import install_plugin
from tests.support.wrong_backends import ALL

MODULE = "aclnn_wrong_backends"


def install_wrong_backends(root: Path) -> dict[str, str]:
    """Copy wrong_backends.py under `root` as a plug-in; returns an env for subprocesses."""
    source = Path(__file__).with_name("wrong_backends.py").read_text(encoding="utf-8")
    backends = {name: f"{MODULE}:{cls.__name__}" for name, cls in sorted(ALL.items())}
    return install_plugin(root, MODULE, source, backends)
