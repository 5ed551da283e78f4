"""The `exec` backend: any external program that reads a case directory and writes the result.

Per call the call is written as a case directory (conformance.casefile, the public format) and the
program runs as `shlex.split(cmd) + [CASE_DIR, OUT_DIR]` (no shell), with a timeout. It must
write OUT_DIR/result.json, {"status": <int>, "message": <str>}, and for a zero status one
OUT_DIR/<output param>.npy per output tensor holding that output's WHOLE storage after the call,
encoded as casefile does (native numpy dtypes as-is, BF16 and other dtypes numpy lacks as
unsigned integers of the same width). For a non-zero status the .npy files are optional; a
missing one means the storage was not touched. A program that exits non-zero, times out, or
writes anything else makes the call raise ExecHarnessError, which the runner records as `error`.
The protocol is documented for harness authors in tests/data/exec_harness/README.md.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from conformance import dtypes as dt
from conformance.backend import Backend, BackendOptionError, Capabilities
from conformance.call import Call, Outcome, TensorArg
from conformance.casefile import write_case
from conformance.generate import Case

OPTIONS = ("cmd", "timeout")
DEFAULT_TIMEOUT = 50.0  # below run --timeout (60 s), so the harness is stopped by us, not orphaned
MAX_RESULT_JSON = 1_000_000
# The harness is not told the expected status: case.json carries this value instead.
UNKNOWN_STATUS = -1


class ExecHarnessError(RuntimeError):
    """The external program failed: non-zero exit, timeout, or a missing/invalid result."""


def _tail(text: bytes, limit: int = 400) -> str:
    s = text.decode("utf-8", "replace").strip()
    return ("..." + s[-limit:]) if len(s) > limit else s


class ExecBackend(Backend):
    name = "exec"
    capabilities = Capabilities(status="exact")
    isolate_by_default = True  # native code / an external program may crash or hang
    known_options = OPTIONS

    def __init__(self, **options: Any):
        super().__init__(**options)
        self.argv = shlex.split(str(options["cmd"]))  # checked by validate_options
        self.timeout = float(options.get("timeout", DEFAULT_TIMEOUT))
        self.cmd = str(options["cmd"])

    @classmethod
    def validate_options(cls, options: dict[str, Any]) -> None:
        cmd = options.get("cmd")
        if not cmd or not str(cmd).strip():
            raise BackendOptionError(
                "backend 'exec' needs its harness command: --exec-cmd 'PROGRAM [ARGS]' "
                "(it is run as PROGRAM ARGS CASE_DIR OUT_DIR)"
            )
        try:
            argv = shlex.split(str(cmd))
        except ValueError as exc:
            raise BackendOptionError(f"--exec-cmd {cmd!r}: cannot be parsed: {exc}") from None
        if not argv or shutil.which(argv[0]) is None:
            raise BackendOptionError(f"--exec-cmd {cmd!r}: program {argv[0] if argv else ''!r} "
                                     "not found (give a path or a program on PATH)")  # fmt: skip
        try:
            timeout = float(options.get("timeout", DEFAULT_TIMEOUT))
        except (TypeError, ValueError):
            timeout = -1.0
        if not timeout > 0:
            raise BackendOptionError(f"exec: timeout must be a positive number of seconds, "
                                     f"got {options.get('timeout')!r}")  # fmt: skip

    def version(self) -> str:
        return f"exec: {self.cmd}"

    def execute(self, call: Call) -> Outcome:
        spec = self.spec(call)
        tmp = Path(tempfile.mkdtemp(prefix="aclnn-exec-"))
        try:
            case = Case(id=f"{spec.name}/exec", op=spec.name, product=call.product, kind="exec",
                        call=call, clauses=(), expected_status=UNKNOWN_STATUS, seed=0)  # fmt: skip
            case_dir = write_case(tmp / "case", case, spec.sha256)
            args = json.loads((case_dir / "case.json").read_text(encoding="utf-8"))["args"]
            out_dir = tmp / "out"
            out_dir.mkdir()
            self._run([*self.argv, str(case_dir), str(out_dir)])
            status, message = self._result(out_dir)
            outputs = {}
            for p in spec.outputs:
                t = call.args.get(p.name)
                if isinstance(t, TensorArg):
                    bits = args[p.name].get("encoding") == "bits"  # as casefile wrote the input
                    outputs[p.name] = self._output(out_dir, p.name, t, bits, required=status == 0)
            return Outcome(status, outputs, message)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def _run(self, argv: list[str]) -> None:
        # A session of its own, so that a timeout kills the program and everything it started.
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)  # fmt: skip
        try:
            _, err = proc.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise ExecHarnessError(
                f"harness timed out after {self.timeout:g} s (killed): {self.cmd}"
            ) from None
        if proc.returncode != 0:
            how = (f"was killed by signal {-proc.returncode}" if proc.returncode < 0
                   else f"exited with status {proc.returncode}")  # fmt: skip
            raise ExecHarnessError(f"harness {how}: {self.cmd}; stderr: {_tail(err) or '(empty)'}")

    @staticmethod
    def _result(out_dir: Path) -> tuple[int, str]:
        path = out_dir / "result.json"
        if not path.is_file():
            raise ExecHarnessError("harness wrote no result.json")
        try:
            if path.stat().st_size > MAX_RESULT_JSON:
                raise ExecHarnessError(f"result.json is larger than {MAX_RESULT_JSON} bytes")
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ExecHarnessError(f"result.json is not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise ExecHarnessError(
                'result.json must hold an object {"status": ..., "message": ...}'
            )
        status, message = data.get("status"), data.get("message", "")
        if isinstance(status, bool) or not isinstance(status, int):
            raise ExecHarnessError(f"result.json: status must be an integer, got {status!r}")
        if not isinstance(message, str):
            raise ExecHarnessError(f"result.json: message must be a string, got {message!r}")
        return status, message

    @staticmethod
    def _output(out_dir: Path, name: str, t: TensorArg, bits: bool, required: bool) -> np.ndarray:
        path = out_dir / f"{name}.npy"
        if not path.is_file():
            if required:
                raise ExecHarnessError(f"harness returned status 0 but wrote no {name}.npy")
            return t.storage.copy()  # a failed call that did not say otherwise wrote nothing
        try:
            data = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise ExecHarnessError(f"{name}.npy cannot be loaded: {exc}") from None
        want = dt.get(t.dtype).np
        expected = np.dtype(f"uint{8 * want.itemsize}") if bits else want
        if data.dtype != expected:
            raise ExecHarnessError(f"{name}.npy holds {data.dtype}, {t.dtype} storage needs "
                                   f"{expected}")  # fmt: skip
        if data.ndim != 1 or data.size != t.storage.size:
            raise ExecHarnessError(f"{name}.npy has shape {data.shape}, the storage has "
                                   f"{t.storage.size} elements (a 1-D array)")  # fmt: skip
        return np.ascontiguousarray(data).view(want)
