"""The backend API: a backend is a small class with `execute(call) -> Outcome`.

Backends are found by name through the entry-point group `aclnn_conformance.backends`, so a
vendor can ship one without touching this repository. Each declares what it can express; the
runner turns everything else into `skip` with the reason, never into a failure.
"""

from __future__ import annotations

import copy
import difflib
import importlib
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

from ..acl.call import Call, Outcome, TensorArg
from ..spec.bindings import BindingError

if TYPE_CHECKING:
    from ..spec.model import OpSpec
    from ..spec.registry import Registry

GROUP = "aclnn_conformance.backends"


class BackendError(RuntimeError):
    """A backend that cannot be found, loaded or started (a setup problem, exit code 2/3)."""


class BackendOptionError(ValueError):
    """An option the backend does not take, or a value it cannot use: a usage error (exit 2)."""


class BackendCrash(RuntimeError):
    """The backend's worker process died while running a case (segfault, abort, exit).

    `device_fault`: the backend's own state (a device context) may be broken, so an isolated
    worker ends after reporting it instead of running the next case."""

    def __init__(self, message: str = "", *, device_fault: bool = False):
        super().__init__(message)
        self.device_fault = device_fault


class BackendTimeout(RuntimeError):
    """The backend did not finish a case within the per-case time limit (`device_fault`: as for
    BackendCrash, a device that did not finish leaves the worker's state suspect)."""

    def __init__(self, message: str = "", *, device_fault: bool = False):
        super().__init__(message)
        self.device_fault = device_fault


class OracleTimeout(RuntimeError):
    """The oracle did not finish computing what a case expects within the per-case time limit."""


@dataclass(frozen=True)
class Capabilities:
    products: tuple[str, ...] | None = None  # None: every product
    dtypes: tuple[str, ...] | None = None  # None: every dtype
    # exact: returns the aclnn status code; accept_reject: only 0 vs non-zero; none: no checking
    status: str = "exact"
    strided: bool = True  # can take non-contiguous views with offsets
    empty: bool = True  # can take empty tensors
    # implements the specs themselves (the reference engine): as an oracle its status must be
    # the one the case was generated to expect, else the case is in error, not the backend
    implements_specs: bool = False
    # never writes an input's storage: the judge may hand it the case's own (read-only) input
    # arrays instead of copies, which a large case cannot afford
    reads_inputs_only: bool = False


class Backend:
    """Base class. Subclasses set `name` and `capabilities` and implement `execute`."""

    name = "backend"
    capabilities = Capabilities()
    # Native code that may crash or hang runs in a worker process unless told otherwise.
    isolate_by_default = False

    # The option names a backend takes (`--backend-opt KEY=VALUE`); None: any (a plug-in that
    # checks them itself). The default is none, so a misspelt option is never silently ignored.
    known_options: tuple[str, ...] | None = ()

    def __init__(self, registry: Registry | None = None, **options: Any):
        try:
            self.check_options(options)
        except BackendOptionError as exc:
            raise BackendError(str(exc)) from None
        self.options = options
        self._registry = registry

    @property
    def registry(self) -> Registry:
        """The specs this backend runs cases of: given by whoever loads it (load_backend);
        a backend built by hand from Python gets the default registry."""
        if self._registry is None:
            from ..spec.registry import default_registry

            self._registry = default_registry()
        return self._registry

    def spec(self, call: Call) -> OpSpec:
        """The spec of `call` (UnknownOp if the registry has none)."""
        return self.registry.get(call.op)

    @classmethod
    def check_options(cls, options: dict[str, Any]) -> None:
        """Raise BackendOptionError for an option this backend does not take or a value it
        cannot use; called before anything is started or written."""
        if cls.known_options is not None:
            unknown = sorted(set(options) - set(cls.known_options))
            if unknown:
                takes = (
                    f"it takes {', '.join(cls.known_options)}"
                    if cls.known_options
                    else "it takes no options"
                )
                raise BackendOptionError(
                    f"backend {cls.name!r} has no option {', '.join(unknown)} ({takes})"
                )
        cls.validate_options(options)

    @classmethod
    def validate_options(cls, options: dict[str, Any]) -> None:
        """Check option values (subclasses); raise BackendOptionError."""

    @classmethod
    def availability(cls, **options: Any) -> tuple[bool, str]:
        """(available, reason): whether this backend can run here with these options, and if
        not, why and what to do."""
        return True, ""

    # The `bindings:` family of the spec this adapter reads (aten, jax, ...), if any; its
    # `check_binding(spec)` raises bindings.BindingError for a wrong one (specs lint calls it).
    binding_family: str | None = None

    @classmethod
    def check_binding(cls, spec: OpSpec) -> None:
        """Raise bindings.BindingError when the spec's binding for this adapter is wrong."""

    # Devices (docs/devices.md): a backend that runs on one of a host's devices says how its
    # options bind it to device n (a worker of a run over --device-id 0,1,2,3 gets those
    # options) and which device an option set names; None: it has no such devices.
    @classmethod
    def on_device(cls, options: dict[str, Any], device: int) -> dict[str, Any] | None:
        """`options` bound to device id `device`, or None (this backend binds no devices)."""
        return None

    @classmethod
    def device_of(cls, options: dict[str, Any]) -> int | None:
        """The device id `options` bind this backend to (recorded in each Result)."""
        return None

    def version(self) -> str:
        return "unknown"

    def host_facts(self) -> dict[str, Any]:
        """What a run on this host needs to be judged elsewhere (library versions and places,
        the device, the environment), for `aclnn-conform backends` and the run's meta; a key
        "diagnosis" holds one line when something a run needs is missing, "summary" one line
        for a report's header. Empty for backends with nothing to say."""
        return {}

    def prepare(self) -> None:
        """Start what the first case would otherwise pay for (a device, a context), so that a
        per-case timeout measures the case only; the isolation worker calls it before it
        reports ready. A BackendError here is a setup error of the run."""

    def prepare_call(self, call: Call) -> None:
        """Do, before the case's clock starts, what running `call` would do once per machine
        rather than per case (the reference compiles its kernels); nothing by default."""

    def working_bytes(self, call: Call) -> int:
        """Memory running `call` needs beyond its tensors' storages, where it is known (the
        reference's rows of a reduction over all are evaluated whole): the runner adds it to
        the case's bytes against --max-case-bytes. 0 by default."""
        return 0

    def with_registry(self, registry: Registry) -> Backend:
        """This backend over other specs (a shallow copy): the judge recomputes an oracle that
        implements the specs with a spec deviation's formula swapped in."""
        other = copy.copy(self)
        other._registry = registry
        return other

    def expect(self, call: Call, deadline: float | None = None) -> Outcome:
        """What `call` should give, this backend being the oracle; an oracle may return its
        goldens as streams (Outcome.golden) and honour `deadline` (time.monotonic())."""
        return self.execute(call)

    def supports(self, call: Call) -> str | None:
        """None if the backend can run `call`, else the reason it cannot (the case is skipped)."""
        caps = self.capabilities
        if caps.products is not None and call.product not in caps.products:
            return f"{self.name} does not model product {call.product}"
        for name, arg in call.args.items():
            if not isinstance(arg, TensorArg):
                continue
            if caps.dtypes is not None and arg.dtype not in caps.dtypes:
                return f"{self.name} has no {arg.dtype} tensors ({name})"
            if not caps.strided and not arg.is_contiguous():
                return f"{self.name} takes contiguous tensors only ({name})"
            if not caps.empty and arg.is_empty:
                return f"{self.name} does not take empty tensors ({name})"
        return None

    def execute(self, call: Call) -> Outcome:  # pragma: no cover - interface
        raise NotImplementedError

    def warm_up(self) -> None:
        """Start what a call needs (a worker process): the judge calls it before a case's clock
        starts, so a (re)start is not charged to the case."""

    def execute_by(self, call: Call, deadline: float | None) -> Outcome:
        """execute, within a case's deadline (time.monotonic(), None: none): the judge's entry.
        A backend that can stop early overrides it and raises BackendTimeout; this one cannot
        (the judge then rules a call that returns past the deadline a `timeout`)."""
        return self.execute(call)

    def close(self) -> None:
        """Release whatever the backend holds (devices, worker processes)."""


def module_available(module: str, hint: str) -> tuple[bool, str]:
    """availability() of a backend built on an optional package: (True, "") or (False, hint)."""
    try:
        importlib.import_module(module)
    except ImportError:
        return False, hint
    return True, ""


def _entry_points() -> dict[str, Any]:
    return {ep.name: ep for ep in entry_points(group=GROUP)}


def backend_names() -> list[str]:
    return sorted(_entry_points())


def backend_class(name: str) -> type[Backend]:
    eps = _entry_points()
    if name not in eps:
        known = ", ".join(sorted(eps)) or "none installed"
        close = difflib.get_close_matches(name, list(eps), n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]}?" if close else ""
        raise BackendError(f"unknown backend {name!r} (known: {known}){hint}")
    try:
        cls = eps[name].load()
    except Exception as exc:  # a broken plug-in must not take the CLI down
        raise BackendError(
            f"backend {name!r} failed to load: {type(exc).__name__}: {exc}"
        ) from None
    return cls


def takes_option(name: str, key: str) -> bool:
    """Whether backend `name` declares option `key` (the reference's exact, say)."""
    known = backend_class(name).known_options
    return known is not None and key in known


def load_backend(name: str, registry: Registry | None = None, **options: Any) -> Backend:
    """Instantiate backend `name` over `registry`; BackendError says why it cannot start."""
    cls = backend_class(name)
    ok, reason = cls.availability(**options)
    if not ok:
        raise BackendError(f"backend {name!r} is not available: {reason}")
    try:
        return cls(registry=registry, **options)
    except BackendError:
        raise
    except Exception as exc:
        raise BackendError(
            f"backend {name!r} failed to start: {type(exc).__name__}: {exc}"
        ) from None


def check_bindings(spec: OpSpec) -> list[BindingError]:
    """Each binding of `spec` checked by the adapters of its family (the first installed
    backend class that declares `binding_family`); a family no installed backend uses is not
    checked (a vendor's adapter may live in a package that is not installed here)."""
    checkers: dict[str, Any] = {}
    for name in backend_names():
        try:
            cls = backend_class(name)
        except BackendError:
            continue
        family = getattr(cls, "binding_family", None)
        if family and family not in checkers:
            checkers[family] = cls
    problems = []
    for family in spec.bindings:
        cls = checkers.get(family)
        if cls is None:
            continue
        try:
            cls.check_binding(spec)
        except BindingError as exc:
            problems.append(exc)
    return problems
