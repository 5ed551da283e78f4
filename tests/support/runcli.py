"""Running `aclnn-conform` in a subprocess, and reading what it wrote."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def _exe() -> list[str]:
    script = Path(sys.executable).with_name("aclnn-conform")
    if script.exists():
        return [str(script)]
    found = shutil.which("aclnn-conform")
    return [found] if found else [sys.executable, "-m", "aclnn_conformance.cli.main"]


def conform(
    *args: Any, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 180
) -> subprocess.CompletedProcess:
    """Run `aclnn-conform ARGS...`; stdout and stderr are captured as text (never a tty)."""
    run_env = dict(env if env is not None else os.environ)
    run_env.pop("ACLNN_CONFORM_DEBUG", None)
    run_env["NO_COLOR"] = "1"
    return subprocess.run(
        [*_exe(), *(str(a) for a in args)],
        cwd=cwd or REPO,
        env=run_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def assert_clean(proc: subprocess.CompletedProcess, rc: int | tuple[int, ...]) -> None:
    """Exit code as expected and no traceback anywhere in the output."""
    want = rc if isinstance(rc, tuple) else (rc,)
    out = proc.stdout + proc.stderr
    assert proc.returncode in want, f"rc {proc.returncode}, wanted {want}\n{out[-3000:]}"
    assert "Traceback" not in out, out[-3000:]


def assert_one_line_error(proc: subprocess.CompletedProcess, *needles: str) -> str:
    """Exit code 2, stderr is exactly one `Error: ...` line containing every needle."""
    assert_clean(proc, 2)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("Error: "), lines[0]
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Every line of a results file as JSON (fails on any line that is not one JSON object)."""
    out = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        rec = json.loads(line)
        assert isinstance(rec, dict), f"{path}:{i}: not an object"
        out.append(rec)
    return out


def by_id(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for r in records:
        assert r["id"] not in out, f"duplicate id {r['id']}"
        out[r["id"]] = r
    return out
