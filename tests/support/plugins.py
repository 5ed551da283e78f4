"""Make a test backend visible to `aclnn-conform --backend NAME` in a subprocess.

importlib.metadata finds `<dist>.dist-info/entry_points.txt` on sys.path, so a temporary folder
with a module and a dist-info folder, put on PYTHONPATH, is a real plug-in as far as the
entry-point group `aclnn_conformance.backends` is concerned.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path


def install_plugin(
    root: Path, module: str, source: str, backends: dict[str, str]
) -> dict[str, str]:
    """Write `module`.py and a dist-info registering {name: "module:Class"}; return an env."""
    root.mkdir(parents=True, exist_ok=True)
    (root / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    info = root / f"{module}_plugin-0.0.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}-plugin\nVersion: 0.0\n")
    lines = ["[aclnn_conformance.backends]"] + [f"{k} = {v}" for k, v in backends.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(root), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env
