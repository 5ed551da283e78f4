"""Running a backend in a worker process, so that a segfault, an abort or a hang costs one case.

IsolatedBackend forwards each call over a pipe to a child that owns the real backend. If the
child dies, the case is a `crash` (with the signal); if it does not answer within the per-case
timeout, the child is killed and the case is a `timeout`. Either way the next case starts a
fresh child. A child that cannot even start the backend is a setup error, reported once.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import signal
from typing import Any

from conformance.backend import (
    Backend,
    BackendCrash,
    BackendError,
    BackendTimeout,
    backend_class,
    load_backend,
)
from conformance.call import Call, Outcome, TensorArg
from conformance.registry import Registry, registry_for

START_TIMEOUT = 120.0


def _child(conn, name: str, options: dict[str, Any], spec_dirs: tuple[str, ...] = ()) -> None:
    try:
        backend = load_backend(name, registry_for(spec_dirs), **options)
        conn.send(("ready", backend.version()))
    except Exception as exc:  # reported to the parent as a setup error
        conn.send(("setup-error", f"{type(exc).__name__}: {exc}"))
        return
    while True:
        try:
            call = conn.recv()
        except EOFError:
            break
        if call is None:
            break
        before = {n: a.storage.tobytes() for n, a in call.args.items() if isinstance(a, TensorArg)}
        try:
            outcome = backend.execute(call)
        except Exception as exc:
            conn.send(("raised", f"{type(exc).__name__}: {exc}"))
            continue
        # inputs the backend wrote to travel back, so the parent's mutation check sees them
        changed = {n: call.args[n].storage for n, raw in before.items()
                   if call.args[n].storage.tobytes() != raw}  # fmt: skip
        conn.send(("ok", (outcome, changed)))
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

    def __init__(self, name: str, options: dict[str, Any] | None = None, timeout: float = 60.0,
                 registry: Registry | None = None):  # fmt: skip
        super().__init__(registry)
        cls = backend_class(name)
        self.name = cls.name
        self.capabilities = cls.capabilities
        self.binding_family = cls.binding_family
        self._cls = cls
        self._backend_name = name
        self._options = dict(options or {})
        self.timeout = timeout
        self._proc: mp.process.BaseProcess | None = None
        self._conn = None
        self._version = "unknown"
        self._local: Backend | None | bool = None

    def _start(self) -> None:
        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe()
        proc = ctx.Process(
            target=_child,
            args=(child, self._backend_name, self._options, self.registry.dirs),
            daemon=True,
        )
        proc.start()
        child.close()
        if not parent.poll(START_TIMEOUT):
            proc.kill()
            raise BackendError(
                f"backend {self._backend_name!r} worker did not start in {START_TIMEOUT:.0f} s"
            )
        try:
            kind, payload = parent.recv()
        except EOFError:
            proc.join(5)
            raise BackendError(
                f"backend {self._backend_name!r} worker died at start ({_describe_exit(proc.exitcode)})"
            ) from None
        if kind != "ready":
            proc.join(5)
            raise BackendError(f"backend {self._backend_name!r} failed to start: {payload}")
        self._proc, self._conn, self._version = proc, parent, payload

    def _stop(self, kill: bool = False) -> None:
        if self._proc is None:
            return
        if kill:
            self._proc.kill()
        else:
            with contextlib.suppress(BrokenPipeError, OSError):
                self._conn.send(None)  # type: ignore[union-attr]
        self._proc.join(5)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join(5)
        self._proc, self._conn = None, None

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
        if self._proc is None or not self._proc.is_alive():
            self._stop()
            self._start()
        conn = self._conn
        try:
            conn.send(call)  # type: ignore[union-attr]
            ready = conn.poll(self.timeout)  # type: ignore[union-attr]
        except (BrokenPipeError, EOFError, OSError):
            ready = True
        if not ready:
            self._stop(kill=True)
            raise BackendTimeout(
                f"no answer within {self.timeout:g} s; worker killed and restarted"
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
