"""The `exec` backend: any external program that reads a case directory and writes the result.

Per call the call is written as a case directory (conformance.cases.casedir, the public format) and the
program runs as `shlex.split(cmd) + [CASE_DIR, OUT_DIR]` (no shell), with a timeout. It must
write OUT_DIR/result.json, {"status": <int>, "message": <str>}, and for a zero status one
OUT_DIR/<output param>.npy per output tensor holding that output's WHOLE storage after the call,
encoded as casefile does (native numpy dtypes as-is, BF16 and other dtypes numpy lacks as
unsigned integers of the same width). For a non-zero status the .npy files are optional; a
missing one means the storage was not touched. A program that exits non-zero or writes anything
else makes the call raise ExecHarnessError, which the runner records as `error`; one killed by a
signal is a BackendCrash (`crash`), one past its time a BackendTimeout (`timeout`). An input file
the program changed is copied into the call's input, so the judge fails the case ("input X was
modified").

The program is bounded: it runs in a session of its own (on a timeout or when it ends, the whole
process group is killed), with the case's deadline as its time limit when that is shorter than
`timeout`, under the memory limit `max_memory` (RLIMIT_DATA) and killed when the process running
it dies (Linux); of its stdout and stderr only the first and last OUTPUT_KEEP bytes are kept,
the rest is read and dropped. The protocol is documented for harness authors in
tests/data/exec_harness/README.md.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import selectors
import shlex
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from ...acl import dtypes as dt
from ...acl.call import Call, Outcome, TensorArg
from ...cases.casedir import write_case
from ...cases.generate import Case
from .. import limits
from ..backend import Backend, BackendCrash, BackendOptionError, BackendTimeout, Capabilities

OPTIONS = ("cmd", "timeout", "max_memory")
DEFAULT_TIMEOUT = 50.0  # and never past the case's deadline (run --timeout)
MAX_RESULT_JSON = 1_000_000
OUTPUT_KEEP = 64 << 10  # bytes of a harness's stdout/stderr kept at each end
# The harness is not told the expected status: case.json carries this value instead.
UNKNOWN_STATUS = -1


class ExecHarnessError(RuntimeError):
    """The external program failed: non-zero exit, timeout, or a missing/invalid result."""


def _tail(text: bytes, limit: int = 400) -> str:
    s = text.decode("utf-8", "replace").strip()
    return ("..." + s[-limit:]) if len(s) > limit else s


class Bounded:
    """The first and last `keep` bytes of a stream of any length (the middle is dropped)."""

    def __init__(self, keep: int = OUTPUT_KEEP):
        self.keep, self.head, self.tail, self.dropped = keep, bytearray(), bytearray(), 0

    def add(self, data: bytes) -> None:
        room = self.keep - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            if len(self.tail) > self.keep:
                cut = len(self.tail) - self.keep
                self.dropped += cut
                del self.tail[:cut]

    def value(self) -> bytes:
        gap = f"\n[... {self.dropped} bytes dropped ...]\n".encode() if self.dropped else b""
        return bytes(self.head) + gap + bytes(self.tail)


def _exited(proc: subprocess.Popen) -> bool:
    """Whether proc has ended, without reaping it: until it is reaped its pid (and so its
    process group's id) cannot be given to another process, so killpg stays safe."""
    return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


DRAIN_S = 0.5  # seconds a harness's output is still read after it ended


def _read_bounded(
    proc: subprocess.Popen, timeout: float, keep: int = OUTPUT_KEEP
) -> tuple[bytes, bytes, bool]:
    """Read proc's stdout and stderr, keeping `keep` bytes at each end of each, until proc has
    ended and its pipes are drained (or DRAIN_S after it ended: a process it left running may
    hold them), or `timeout` seconds pass; (stdout, stderr, timed out). proc is not reaped."""
    end = time.monotonic() + timeout
    kept = {proc.stdout: Bounded(keep), proc.stderr: Bounded(keep)}
    ended: float | None = None
    with selectors.DefaultSelector() as sel:
        for f in kept:
            sel.register(f, selectors.EVENT_READ)  # type: ignore[arg-type]
        while True:
            now = time.monotonic()
            if ended is None and _exited(proc):
                ended = now
            if ended is not None and (not sel.get_map() or now - ended > DRAIN_S):
                break
            if now >= end:
                return kept[proc.stdout].value(), kept[proc.stderr].value(), True
            if not sel.get_map():
                time.sleep(min(end - now, 0.02))
                continue
            for key, _ in sel.select(min(end - now, 0.1)):
                data = os.read(key.fd, 1 << 16)
                if data:
                    kept[key.fileobj].add(data)  # type: ignore[index]
                else:
                    sel.unregister(key.fileobj)
    return kept[proc.stdout].value(), kept[proc.stderr].value(), False


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


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
        self.max_memory = limits.parse_memory(options.get("max_memory"))

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
            raise BackendOptionError(
                f"--exec-cmd {cmd!r}: program {argv[0] if argv else ''!r} "
                "not found (give a path or a program on PATH)"
            )
        try:
            timeout = float(options.get("timeout", DEFAULT_TIMEOUT))
        except (TypeError, ValueError):
            timeout = -1.0
        if not (timeout > 0 and math.isfinite(timeout)):
            raise BackendOptionError(
                f"exec: timeout must be a positive, finite number of "
                f"seconds, got {options.get('timeout')!r}"
            )
        try:
            limits.parse_memory(options.get("max_memory"))
        except ValueError as exc:
            raise BackendOptionError(f"exec: max_memory: {exc}") from None

    def version(self) -> str:
        return f"exec: {self.cmd}"

    def execute(self, call: Call) -> Outcome:
        return self.execute_by(call, None)

    def execute_by(self, call: Call, deadline: float | None) -> Outcome:
        spec = self.spec(call)
        timeout = self.timeout
        if deadline is not None:
            timeout = min(timeout, deadline - time.monotonic())
            if timeout <= 0:
                raise BackendTimeout("no time left for the harness within --timeout")
        tmp = Path(tempfile.mkdtemp(prefix="aclnn-exec-"))
        try:
            case = Case(
                id=f"{spec.name}/exec",
                op=spec.name,
                product=call.product,
                kind="exec",
                call=call,
                clauses=(),
                expected_status=UNKNOWN_STATUS,
                seed=0,
            )
            case_dir = write_case(tmp / "case", case, spec.sha256)
            args = json.loads((case_dir / "case.json").read_text(encoding="utf-8"))["args"]
            inputs = {
                n: (case_dir / a["storage"], os.stat(case_dir / a["storage"]).st_size)
                for n, a in args.items()
                if a.get("kind") == "tensor" and not spec.param(n).is_output
            }
            out_dir = tmp / "out"
            out_dir.mkdir()
            self._run([*self.argv, str(case_dir), str(out_dir)], timeout)
            for name, (path, size) in inputs.items():
                self._check_input(path, size, call.args[name])  # type: ignore[arg-type]
            status, message = self._result(out_dir)
            outputs = {}
            for p in spec.outputs:
                t = call.args.get(p.name)
                if isinstance(t, TensorArg):
                    bits = args[p.name].get("encoding") == "bits"  # as casefile wrote the input
                    # an unused output (never written) need not come back: its storage stands
                    required = status == 0 and not p.unused
                    outputs[p.name] = self._output(out_dir, p.name, t, bits, required=required)
            return Outcome(status, outputs, message)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def _run(self, argv: list[str], timeout: float) -> None:
        # A session of its own, so that a timeout kills the program and everything it started.
        limit = limits.child_limits(self.max_memory)
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            preexec_fn=limit,
        )
        try:
            _, err, late = _read_bounded(proc, timeout)
        finally:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)  # what it left running, or all on a timeout
            proc.wait()
            for f in (proc.stdout, proc.stderr):
                f.close()  # type: ignore[union-attr]
        if late:
            raise BackendTimeout(f"harness timed out after {timeout:.3g} s (killed): {self.cmd}")
        said = _tail(err) or "(empty)"
        if proc.returncode < 0:
            raise BackendCrash(
                f"harness killed by signal {_signal_name(-proc.returncode)}: "
                f"{self.cmd}; stderr: {said}"
            )
        if proc.returncode != 0:
            raise ExecHarnessError(
                f"harness exited with status {proc.returncode}: {self.cmd}; stderr: {said}"
            )

    @staticmethod
    def _check_input(path: Path, size: int, t: TensorArg) -> None:
        """Copy an input file the harness changed into the call's input storage, so that the
        judge sees the modification; a file replaced by something that is no longer this
        storage (another size, dtype, kind of file, or gone) is recorded as one byte flipped."""
        raw = t.storage.reshape(-1).view(np.uint8)
        data = None
        try:
            st = os.lstat(path)
            same = stat.S_ISREG(st.st_mode) and st.st_size == size
            if same and raw.size:
                data = np.load(path, allow_pickle=False, mmap_mode="r")
        except (OSError, ValueError):
            same = False
        if data is not None and data.nbytes == raw.size:
            got = np.asarray(data).reshape(-1).view(np.uint8)
            if not np.array_equal(got, raw):
                raw[...] = got
        elif raw.size and (data is not None or not same):
            raw[0] ^= 0xFF

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
            raise ExecHarnessError(
                f"{name}.npy holds {data.dtype}, {t.dtype} storage needs {expected}"
            )
        if data.ndim != 1 or data.size != t.storage.size:
            raise ExecHarnessError(
                f"{name}.npy has shape {data.shape}, the storage has "
                f"{t.storage.size} elements (a 1-D array)"
            )
        return np.ascontiguousarray(data).view(want)
