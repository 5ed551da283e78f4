"""Running a backend in a worker process, so that a segfault, an abort or a hang costs one case.

IsolatedBackend forwards each call over a pipe to a child that owns the real backend. If the
child dies, the case is a `crash` (with the signal); if it does not answer within the per-case
timeout, the child is killed and the case is a `timeout`. Either way the next case starts a
fresh child. A child that cannot even start the backend is a setup error, reported once.

The child gets each case's deadline (a backend that honours it, such as exec, stops its work and
answers `timeout` itself; the parent waits GRACE seconds past it before killing), runs under the
memory limit (limits.py, RLIMIT_DATA, inherited by whatever it starts), dies with its parent,
ignores Ctrl-C (the parent's to handle) and keeps its temporary files in a folder of its own,
which the parent removes when the child ends, killed or not.
"""

from __future__ import annotations

import contextlib
import hashlib
import multiprocessing as mp
import os
import shutil
import signal
import tempfile
import time
from typing import Any

import numpy as np

from ..acl.call import Call, Outcome, TensorArg
from ..spec.registry import Registry, registry_for
from . import limits
from .backend import (
    Backend,
    BackendCrash,
    BackendError,
    BackendTimeout,
    OracleTimeout,
    backend_class,
    load_backend,
)

START_TIMEOUT = 120.0
GRACE = 1.0  # seconds past a case's deadline before a silent worker is killed


def _digest(a: np.ndarray) -> bytes:
    return hashlib.blake2b(np.ascontiguousarray(a).reshape(-1).view(np.uint8)).digest()


def _answer(conn, msg: tuple) -> None:
    """Send msg to the parent; a parent gone (its end of the pipe closed) ends the child quietly,
    never with a BrokenPipeError traceback on the terminal they share."""
    try:
        conn.send(msg)
    except (BrokenPipeError, ConnectionError, OSError):
        os._exit(0)


def _child(
    conn,
    name: str,
    options: dict[str, Any],
    spec_dirs: tuple[str, ...] = (),
    max_memory: int | None = None,
    scratch: str | None = None,
    parent: int | None = None,
) -> None:
    limits.die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if scratch:
        tempfile.tempdir = scratch
    try:
        limits.limit_memory(max_memory)
        backend = load_backend(name, registry_for(spec_dirs), **options)
        backend.prepare()  # device start-up is not charged to the first case's timeout
        _answer(conn, ("ready", backend.version()))
    except Exception as exc:  # reported to the parent as a setup error
        _answer(conn, ("setup-error", f"{type(exc).__name__}: {exc}"))
        return
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            break
        if msg is None:
            break
        call, deadline = msg
        if time.monotonic() > deadline:  # the call took its time to arrive: nothing is run
            _answer(conn, ("timeout", "no time left within --timeout when the call arrived"))
            continue
        before = {n: _digest(a.storage) for n, a in call.args.items() if isinstance(a, TensorArg)}
        try:
            outcome = backend.execute_by(call, deadline)
        except BackendError as exc:  # the backend cannot go on: a setup error of the run
            _answer(conn, ("setup-error", str(exc)))
            break
        except (BackendCrash, BackendTimeout, OracleTimeout) as exc:
            kind = "crash" if isinstance(exc, BackendCrash) else "timeout"
            if getattr(exc, "device_fault", False):  # this worker's device state is suspect:
                _answer(conn, (kind + "-fault", str(exc)))  # it ends (the next case starts a
                break  # fresh one)
            _answer(conn, (kind, str(exc)))
            continue
        except Exception as exc:
            _answer(conn, ("raised", f"{type(exc).__name__}: {exc}"))
            continue
        # inputs the backend wrote to travel back, so the parent's mutation check sees them
        changed = {
            n: call.args[n].storage
            for n, digest in before.items()
            if _digest(call.args[n].storage) != digest
        }
        _answer(conn, ("ok", (outcome, changed)))
    backend.close()


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "worker still running"
    if code < 0:
        try:
            return f"worker killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"worker killed by signal {-code}"
    return f"worker exited with code {code}"


class IsolatedBackend(Backend):
    """A backend run in a child process; same name, capabilities and version as the real one."""

    def __init__(
        self,
        name: str,
        options: dict[str, Any] | None = None,
        timeout: float = 60.0,
        registry: Registry | None = None,
        max_memory: int | None = None,
    ):
        super().__init__(registry)
        cls = backend_class(name)
        self.name = cls.name
        self.capabilities = cls.capabilities
        self.binding_family = cls.binding_family
        self._cls = cls
        self._backend_name = name
        self._options = dict(options or {})
        self.timeout = timeout
        self.max_memory = max_memory
        self._scratch: str | None = None
        self._proc: mp.process.BaseProcess | None = None
        self._conn = None
        self._version = "unknown"
        self._local: Backend | None | bool = None

    def _start(self) -> None:
        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe()
        self._scratch = tempfile.mkdtemp(prefix="aclnn-worker-")
        proc = ctx.Process(
            target=_child,
            args=(
                child,
                self._backend_name,
                self._options,
                self.registry.dirs,
                self.max_memory,
                self._scratch,
                os.getpid(),
            ),
            daemon=True,
        )
        self._proc = proc
        proc.start()
        child.close()
        if not parent.poll(START_TIMEOUT):
            self._stop(kill=True)
            raise BackendError(
                f"backend {self._backend_name!r} worker did not start in {START_TIMEOUT:.0f} s"
            )
        try:
            kind, payload = parent.recv()
        except EOFError:
            proc.join(5)
            why = _describe_exit(proc.exitcode)
            self._stop(kill=True)
            raise BackendError(
                f"backend {self._backend_name!r} worker died at start ({why})"
            ) from None
        if kind != "ready":
            proc.join(5)
            self._stop(kill=True)
            raise BackendError(f"backend {self._backend_name!r} failed to start: {payload}")
        self._conn, self._version = parent, payload

    def _stop(self, kill: bool = False) -> None:
        if self._proc is not None:
            if kill or self._conn is None:
                self._proc.kill()
            else:
                with contextlib.suppress(BrokenPipeError, OSError):
                    self._conn.send(None)
            self._proc.join(5)
            if self._proc.is_alive():
                self._proc.kill()
                self._proc.join(5)
        self._proc, self._conn = None, None
        if self._scratch:  # what the child left there (an exec harness's folders, killed)
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    def version(self) -> str:
        if self._proc is None and self._version == "unknown":
            self._start()
        return self._version

    def supports(self, call: Call) -> str | None:
        """The backend's own answer, from a local instance (construction loads no device: the
        device work of a backend starts in execute); the generic rules if that fails."""
        if self._local is None:
            try:
                self._local = self._cls(registry=self.registry, **self._options)
            except Exception:
                self._local = False
        if self._local:
            return self._local.supports(call)
        return Backend.supports(self, call)

    def execute(self, call: Call) -> Outcome:
        return self.execute_by(call, None)

    def expect(self, call: Call, deadline: float | None = None) -> Outcome:
        return self.execute_by(call, deadline)

    def warm_up(self) -> None:
        if self._proc is None or not self._proc.is_alive():
            self._stop()
            self._start()

    def execute_by(self, call: Call, deadline: float | None) -> Outcome:
        self.warm_up()
        conn = self._conn
        if deadline is None:
            deadline = time.monotonic() + self.timeout
        limit = deadline - time.monotonic()
        try:
            conn.send((call, deadline))  # type: ignore[union-attr]
            ready = conn.poll(max(0.0, deadline - time.monotonic()) + GRACE)  # type: ignore[union-attr]
        except (BrokenPipeError, EOFError, OSError):
            ready = True
        if not ready:
            self._stop(kill=True)
            raise BackendTimeout(
                f"no answer within {max(0.0, limit):.3g} s (what --timeout left "
                "of the case); worker killed and restarted"
            )
        try:
            kind, payload = conn.recv()  # type: ignore[union-attr]
        except (EOFError, OSError):
            self._proc.join(5)  # type: ignore[union-attr]
            why = _describe_exit(self._proc.exitcode)  # type: ignore[union-attr]
            self._stop()
            raise BackendCrash(f"{why}; worker restarted") from None
        if kind == "raised":
            raise RuntimeError(payload)
        if kind in ("setup-error", "crash-fault", "timeout-fault"):
            self._stop()
            if kind == "setup-error":
                raise BackendError(payload)
            error = BackendCrash if kind == "crash-fault" else BackendTimeout
            raise error(f"{payload}; worker restarted", device_fault=True)
        if kind == "crash":
            raise BackendCrash(payload)
        if kind == "timeout":
            raise BackendTimeout(payload)
        outcome, changed = payload
        for name, storage in changed.items():
            target = call.args[name].storage  # type: ignore[union-attr]
            if target.shape == storage.shape:
                target[...] = storage
        return outcome

    def close(self) -> None:
        self._stop()
        if self._local:
            self._local.close()
