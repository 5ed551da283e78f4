"""PyTorch as a backend: `torch.ops.aten.<op>.default` on CPU, CUDA, or an NPU via torch_npu.

The ATen mapping lives in each spec under `bindings.aten` (validated on load, errors name the
file and line): `op` (the functional op), `args` (spec parameters passed positionally),
`kwargs` (ATen keyword -> spec parameter), optional `returns` (the outputs it returns).

Layouts reach the kernel: each input is `torch.as_strided` over a tensor made from the call's
whole storage (bf16 and fp16 bit-exact); scalars are Python numbers of their typed value. The
result is stored the way an out= variant stores it: `torch.can_cast(result, out dtype)` and equal
shapes, then a copy through an as_strided view of a copy of the output storage, so nothing
outside the view changes. PyTorch has no aclnn status codes: any exception is a rejection
(ACLNN_ERR_PARAM_INVALID with `raised` set and the exception text as message), so the backend declares "accept_reject".
Null pointers and dtypes torch lacks are skipped; a null the spec accepts is passed as the default
it stands for (`null: default`) or as None (`null: absent`, an Optional ATen argument); a null
tensor with a default is None where ATen's argument is Optional, else the rank-0 fill. Every
input tensor is read back from the device after the call, so that an op writing an input fails
"inputs are unchanged".
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...acl import dtypes as dt
from ...acl.call import ArrayArg, Call, Outcome, ScalarArg, TensorArg
from ...spec.bindings import Binding, BindingCache, BindingError
from ...spec.checks.base import with_defaults
from ...spec.model import OpSpec
from ...spec.registry import UnknownOp
from ...spec.tables import status_codes
from ..backend import (
    Backend,
    BackendCrash,
    BackendError,
    BackendOptionError,
    Capabilities,
    module_available,
)
from . import ascend_host, native_stderr

DEVICE_PATTERN = r"(cpu|cuda|npu)(:\d+)?"
INSTALL_HINT = "not installed — pip install 'aclnn-conformance[torch]'"
# aclDataType name -> torch dtype attribute; anything else (the opaque types, COMPLEX32 whose host
# storage is opaque, the FP8 formats) is skipped.
TORCH_DTYPES = {
    "FLOAT": "float32", "FLOAT16": "float16", "BF16": "bfloat16", "DOUBLE": "float64",
    "INT8": "int8", "UINT8": "uint8", "INT16": "int16", "INT32": "int32", "INT64": "int64",
    "UINT16": "uint16", "UINT32": "uint32", "UINT64": "uint64", "BOOL": "bool",
    "COMPLEX64": "complex64", "COMPLEX128": "complex128",
}  # fmt: skip
# dtypes numpy stores as ml_dtypes types: moved as same-width integers, reinterpreted on each side
BIT_VIEWS = {"BF16": (np.int16, "int16")}


@dataclass(frozen=True)
class AtenBinding:
    op: str
    args: tuple[str, ...]
    kwargs: tuple[tuple[str, str], ...]
    returns: tuple[str, ...]
    source: Binding  # the spec's entry, for messages with file and line
    # `translate`: parameter -> {its value as text: the ATen argument} (an int mode -> a string)
    translate: dict[str, dict[str, Any]] = field(default_factory=dict)
    consts: tuple[tuple[str, Any], ...] = ()  # ATen argument -> a constant or {dtype_of: P}

    def passed(self, name: str, value: Any) -> Any:
        """What ATen gets for parameter `name` of value `value` (KeyError: no translation)."""
        table = self.translate.get(name)
        return value if table is None else table[_key(value)]


def _key(value: Any) -> str:
    """A translate table's key for a value: its text (YAML keys 0 and "0" are the same)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


DROPPED = "_"  # in `returns`: an ATen result that no output of the API receives


def parse_aten_binding(spec: OpSpec) -> AtenBinding | None:
    """`bindings.aten` of `spec` checked against its parameters; None when the spec has none."""
    b = spec.bindings.get("aten")
    if b is None:
        return None
    raw = b.data
    op = raw.get("op")
    if not isinstance(op, str) or not op.isidentifier():
        raise b.error(
            ("op",),
            f"must name an ATen operator, e.g. {spec.aten or 'the ATen name of ' + spec.name}",
        )
    args, kwargs = list(raw.get("args") or []), dict(raw.get("kwargs") or {})
    inputs = {p.name for p in spec.params if p.is_read}
    for i, name in enumerate(args):
        if name not in inputs:
            raise b.error(("args", i), f"{name!r} is not an input parameter of {spec.name}")
    for key, name in kwargs.items():
        if name not in inputs:
            raise b.error(("kwargs", key), f"{name!r} is not an input parameter of {spec.name}")
    outs = [p.name for p in spec.outputs]
    returns = raw.get("returns", [p.name for p in spec.outputs if not p.unused])
    if not returns or any(r not in outs and r != DROPPED for r in returns):
        raise b.error(
            ("returns",),
            f"must list output parameters of {spec.name} ({', '.join(outs)}), "
            f"or {DROPPED} for a result the API has no output for",
        )
    for i, r in enumerate(returns):
        if r != DROPPED and spec.param(r).unused:
            raise b.error(
                ("returns", i),
                f"{r} is unused (the API never writes it): write {DROPPED} for this result",
            )
    # an output the API writes that no result fills would stay as allocated and be judged
    # (an in/out tensor ATen mutates in place is read back instead)
    unfilled = [p.name for p in spec.outputs
                if not p.unused and not p.is_inout and p.name not in returns]  # fmt: skip
    if unfilled:
        raise b.error(
            ("returns",) if "returns" in raw else ("op",),
            f"no result of {op} fills {', '.join(unfilled)}, which {spec.name} writes: list "
            f"it in returns, or remove the binding (an ATen op that cannot give every output "
            f"cannot judge the API)",
        )
    translate: dict[str, dict[str, Any]] = {}
    for name, table in (raw.get("translate") or {}).items():
        if name not in (*args, *kwargs.values()):
            raise b.error(("translate", name), f"{name!r} is not an argument of this binding")
        translate[name] = {_key(k): v for k, v in table.items()}
    consts = dict(raw.get("consts") or {})
    tensors = {p.name for p in spec.params if p.is_tensor}
    for key, v in consts.items():
        if isinstance(v, dict) and v.get("dtype_of") not in tensors:
            raise b.error(("consts", key), f"dtype_of must name a tensor of {spec.name}")
    return AtenBinding(
        op,
        tuple(args),
        tuple(kwargs.items()),
        tuple(returns),
        b,
        translate=translate,
        consts=tuple(consts.items()),
    )


def positional(b: AtenBinding, names: list[str]) -> list[tuple[str, Any]]:
    """The ATen op's positional arguments `names` in order, each ("arg", spec parameter) from
    the binding's args or ("const", value) from its consts."""
    consts = dict(b.consts)
    if not consts:
        return [("arg", n) for n in b.args]
    rest = list(b.args)
    out: list[tuple[str, Any]] = []
    for n in names:
        if n in consts:
            out.append(("const", consts[n]))
        elif rest:
            out.append(("arg", rest.pop(0)))
        else:
            break  # the ATen op's defaults from here on
    return out


def checked_aten_binding(torch: Any, spec: OpSpec) -> AtenBinding | None:
    """`bindings.aten` of `spec`, its ATen schema checked too when `torch` is given."""
    b = parse_aten_binding(spec)
    if b is not None and torch is not None:
        check_aten_schema(torch, b)
    return b


def check_aten_schema(torch: Any, b: AtenBinding) -> None:
    """BindingError unless torch.ops.aten.<op> exists and takes the binding's arguments."""
    try:
        overload = getattr(torch.ops.aten, b.op).default
    except (AttributeError, RuntimeError):
        raise b.source.error(
            ("op",), f"torch {torch.__version__} has no functional op aten::{b.op}"
        ) from None
    arguments = overload._schema.arguments
    names = [a.name for a in arguments if not a.kwarg_only]
    for key, _ in b.consts:
        if key not in names:
            raise b.source.error(("consts", key), f"aten::{b.op} has no argument {key!r}")
    if len(b.args) + len(b.consts) != len(names):
        raise b.source.error(
            ("args",),
            f"aten::{b.op} takes {len(names)} positional "
            f"arguments ({', '.join(names)}), the binding "
            f"gives {len(b.args)}" + (f" and {len(b.consts)} consts" if b.consts else ""),
        )
    names = {a.name for a in arguments if a.kwarg_only}
    for key, _ in b.kwargs:
        if key not in names:
            raise b.source.error(("kwargs", key), f"aten::{b.op} has no keyword argument {key!r}")


class _Rejected(Exception):
    """The op ran but its result cannot be stored as the call asks (what out= would refuse)."""


def _overlapping(t: TensorArg) -> bool:
    """True when two elements of t's view share a storage element (a zero stride, say)."""
    if t.is_empty or t.is_contiguous():
        return False
    idx = TensorArg(t.dtype, t.shape, t.strides, t.offset, np.arange(t.storage.size)).view()
    return np.unique(idx).size < t.numel


class TorchBackend(Backend):
    """ATen's functional backward ops; option `device`: "cpu" (default) or "cuda"."""

    name = "torch"
    capabilities = Capabilities(status="accept_reject", strided=True, empty=True)
    default_device = "cpu"
    known_options = ("device",)

    def __init__(self, **options: Any):
        super().__init__(**options)
        import torch

        self.torch = torch
        self.device = str(options.get("device", self.default_device))
        ok, reason = self.device_available(self.device)
        if not ok:
            raise BackendError(reason)
        self._bindings = BindingCache()

    @classmethod
    def validate_options(cls, options: dict[str, Any]) -> None:
        device = str(options.get("device", cls.default_device))
        if not re.fullmatch(DEVICE_PATTERN, device):
            raise BackendOptionError(
                f"--device {device!r}: backend {cls.name!r} runs on "
                "cpu, cuda or npu (optionally :INDEX, e.g. cuda:1)"
            )

    @classmethod
    def availability(cls, **options: Any) -> tuple[bool, str]:
        return module_available("torch", INSTALL_HINT)

    def device_available(self, device: str) -> tuple[bool, str]:
        torch, kind = self.torch, device.split(":")[0]
        if kind == "cuda" and not torch.cuda.is_available():
            return False, (
                f"device {device!r}: torch {torch.__version__} sees no CUDA device "
                "(torch.cuda.is_available() is False)"
            )
        if kind == "npu" and not (hasattr(torch, "npu") and torch.npu.is_available()):
            return False, f"device {device!r}: no NPU visible (torch.npu.is_available() is False)"
        try:
            torch.device(device)
        except RuntimeError as exc:
            return False, f"device {device!r}: {exc}"
        return True, ""

    def version(self) -> str:
        return f"torch {self.torch.__version__} ({self.device})"

    # -- bindings ---------------------------------------------------------------------------
    binding_family = "aten"

    @classmethod
    def check_binding(cls, spec: OpSpec) -> None:
        """BindingError for a wrong `bindings.aten` (with the ATen schema when torch is here)."""
        try:
            import torch
        except ImportError:
            torch = None
        checked_aten_binding(torch, spec)

    def binding(self, spec: OpSpec) -> AtenBinding | None:
        """The checked binding of `spec` (cached); BindingError when it is wrong."""
        return self._bindings.get(spec, lambda s: checked_aten_binding(self.torch, s))

    # -- running ----------------------------------------------------------------------------
    def supports(self, call: Call) -> str | None:
        why = super().supports(call)
        if why:
            return why
        try:
            spec = self.spec(call)
            if self.binding(spec) is None:
                return f"{self.name}: {spec.path} has no bindings.aten section"
        except (UnknownOp, BindingError) as exc:
            return f"{self.name}: {exc}"
        outputs = {p.name for p in spec.outputs}
        call = with_defaults(spec, call, tensors=False)  # a null scalar: its default
        for name, arg in call.args.items():
            if arg is None and not spec.param(name).nullable:  # an absent one passes None
                return f"{self.name} cannot pass a null pointer ({name} is null)"
            if isinstance(arg, TensorArg) and arg.dtype not in TORCH_DTYPES:
                return f"{self.name} has no {arg.dtype} tensors ({name})"
            if isinstance(arg, ScalarArg) and dt.get(arg.dtype).opaque:
                return f"{self.name} cannot make a number of an opaque {arg.dtype} scalar ({name})"
            if name in outputs and isinstance(arg, TensorArg) and _overlapping(arg):
                return f"{self.name} cannot write an output whose view overlaps itself ({name})"
        b = self.binding(spec)
        for name, table in b.translate.items():
            if _key(self._value(call.args[name])) not in table:
                return (
                    f"{self.name}: {name} = {call.args[name]!r} has no ATen argument "
                    f"(bindings.aten.translate.{name} lists {', '.join(table)})"
                )
        return None

    def execute(self, call: Call) -> Outcome:
        spec = self.spec(call)
        b = self.binding(spec)
        if b is None:
            raise BackendError(f"{spec.path} has no bindings.aten section")
        self._ready()
        if any(f.relations for f in spec.formulas):
            # a random output (its spec states relations, not values): the generator starts
            # from the same state for every call, so a run and its replay draw alike
            self.torch.manual_seed(0)
        overload = self._overload(b)
        call = self._nulls(spec, b, overload, call)
        outputs = {
            p.name: call.tensor(p.name).storage.copy()
            for p in spec.outputs
            if isinstance(call.args.get(p.name), TensorArg)
        }
        # An in-place op's tensor is handed over as a view of its own device storage, which is
        # then read back as it is: a result that does not land there is not in place. Every
        # other tensor input has its own device storage too, read back after the call.
        bases = {
            p.name: self._tensor(call.tensor(p.name).storage, call.tensor(p.name).dtype)
            for p in spec.params
            if p.is_inout
        }
        outs = {p.name for p in spec.outputs}
        inputs = {
            n: self._tensor(a.storage, a.dtype)
            for n in (*b.args, *(n for _, n in b.kwargs))
            if n not in bases and n not in outs and isinstance(a := call.args[n], TensorArg)
        }
        bases.update(inputs)
        schema = (
            [a.name for a in overload._schema.arguments if not a.kwarg_only] if b.consts else []
        )
        by_name = {p.name: p for p in spec.params}

        def value(n: str) -> Any:  # a C float parameter as the float32 the library receives
            return b.passed(n, by_name[n].passed(self._value(call.args[n], bases.get(n))))

        args = [
            self._const(call, v) if how == "const" else value(v) for how, v in positional(b, schema)
        ]
        kwargs = {k: value(n) for k, n in b.kwargs}
        try:
            with native_stderr.captured() as said:
                result = overload(*args, **kwargs)
            results = result if isinstance(result, tuple | list) else (result,)
            pairs = [
                (n, self._checked(call.tensor(n), r))
                for n, r in zip(b.returns, results, strict=True)
                if n != DROPPED
            ]
        except Exception as exc:  # torch rejects by raising; the text says why
            text = str(exc).strip().splitlines()
            message = text[0][:500] if text else type(exc).__name__
            self._sync()
            self._read_back(call, inputs)
            return Outcome(
                status_codes()["ACLNN_ERR_PARAM_INVALID"],
                outputs,
                f"{type(exc).__name__}: {message}",
                raised=True,
            )
        self._sync()
        for name, r in pairs:
            t = call.tensor(name)
            outputs[name] = self._host(bases[name], t) if name in bases else self._store(t, r)
        returned = {n for n, _ in pairs}
        for name in outputs.keys() & bases.keys() - returned:  # an in-place tensor ATen mutates
            outputs[name] = self._host(bases[name], call.tensor(name))  # (Tensor(b!) noise)
        self._read_back(call, inputs)
        return Outcome(0, outputs, said.text.strip())  # a warning PyTorch printed, if any

    def _nulls(self, spec: OpSpec, b: AtenBinding, overload: Any, call: Call) -> Call:
        """`call` as ATen gets it: a null scalar standing for a default is that default; a null
        tensor standing for one (`if_null: default`) is None where its ATen argument is
        Optional (`Tensor? weight=None`: ATen's own default), else the fill tensor (the
        default, rank 0, broadcasting like the formula's)."""
        nulls = {
            p.name
            for p in spec.params
            if p.null == "default" and p.is_tensor and call.args.get(p.name, 0) is None
        }
        call = with_defaults(spec, call, tensors=False)
        if not nulls:
            return call
        arguments = overload._schema.arguments
        names = [a.name for a in arguments if not a.kwarg_only]
        aten = {v: names[i] for i, (how, v) in enumerate(positional(b, names)) if how == "arg"}
        aten.update({n: k for k, n in b.kwargs})
        optional = {a.name for a in arguments if type(a.type).__name__ == "OptionalType"}
        fill = {n for n in nulls if aten.get(n) not in optional}
        if not fill:
            return call
        full = with_defaults(spec, call)
        return Call(call.op, call.product, {**call.args, **{n: full.args[n] for n in fill}})

    def _const(self, call: Call, value: Any) -> Any:
        """A binding's constant: as written, or the torch dtype of a tensor ({dtype_of: P})."""
        if isinstance(value, dict):
            return getattr(self.torch, TORCH_DTYPES[call.tensor(value["dtype_of"]).dtype])
        return value

    def _overload(self, b: AtenBinding) -> Any:
        return getattr(self.torch.ops.aten, b.op).default

    def _ready(self) -> None:
        """Raise BackendError when this process cannot run cases (torch_npu: see there)."""

    def _sync(self) -> None:
        """Wait for the device (torch_npu: a failure there is a device fault, not a rejection)."""

    def _read_back(self, call: Call, inputs: dict[str, Any]) -> None:
        """Each input's device storage back into the call, where the op wrote it."""
        for name, base in inputs.items():
            t = call.tensor(name)
            host = self._host(base, t)
            if not np.array_equal(host.view(np.uint8), t.storage.view(np.uint8)):
                t.storage = host

    def _value(self, arg: Any, base: Any = None) -> Any:
        if isinstance(arg, TensorArg):
            base = self._tensor(arg.storage, arg.dtype) if base is None else base
            return self.torch.as_strided(base, arg.shape, arg.strides, arg.offset)
        if isinstance(arg, ScalarArg):
            v, cat = arg.typed(), dt.get(arg.dtype).category
            if cat == "bool":
                return bool(v)
            if cat == "int":
                return int(v)
            return complex(v) if cat == "complex" else float(v)
        if isinstance(arg, ArrayArg):  # an int/float/bool array or a list: a Python list
            return [self._value(x) for x in arg.items]
        return arg  # bool, str, int, float (Python numbers)

    def _tensor(self, storage: np.ndarray, dtype: str) -> Any:
        """A 1-D torch tensor on the device holding a copy of `storage` bit for bit."""
        torch = self.torch
        if dtype in BIT_VIEWS:
            np_int, torch_int = BIT_VIEWS[dtype]
            host = torch.from_numpy(storage.view(np_int).copy())  # a torch_int tensor
            host = host.view(getattr(torch, TORCH_DTYPES[dtype]))
        else:
            host = torch.from_numpy(storage.copy())
        return host.to(self.device)

    def _checked(self, t: TensorArg, result: Any) -> Any:
        torch = self.torch
        want = getattr(torch, TORCH_DTYPES[t.dtype])
        if not torch.can_cast(result.dtype, want):
            raise _Rejected(
                f"result type {result.dtype} can't be cast to the desired output type {want}"
            )
        if tuple(result.shape) != tuple(t.shape):
            raise _Rejected(
                f"the result has shape {list(result.shape)}, the output {list(t.shape)}"
            )
        return result

    def _store(self, t: TensorArg, result: Any) -> np.ndarray:
        """A copy of t's storage with `result` cast into its view, as an out= variant writes."""
        base = self._tensor(t.storage, t.dtype)
        self.torch.as_strided(base, t.shape, t.strides, t.offset).copy_(result)
        return self._host(base, t)

    def _host(self, base: Any, t: TensorArg) -> np.ndarray:
        """The device storage `base` of tensor t back on the host, bit for bit."""
        host = base.cpu()
        if t.dtype in BIT_VIEWS:
            np_int, torch_int = BIT_VIEWS[t.dtype]
            return host.view(getattr(self.torch, torch_int)).numpy().view(t.storage.dtype)
        return host.numpy()


class TorchNpuBackend(TorchBackend):
    """The same adapter on an Ascend NPU through torch_npu (which calls aclnn underneath).

    It follows the aclnn adapter's rules where they apply: the device is started before the
    isolation worker reports ready (prepare); a failure of the device sync after the op is a
    device fault (a `crash`, and the worker ends), never a rejection, and since torch_npu cannot
    reset the device in-process, later calls in the same process refuse; a process forked after
    the backend was made refuses (NPU state does not survive fork). It never finalizes ACL:
    torch_npu owns its initialisation, and the aclnn adapter in the same process gives back only
    its own reference (aclFinalizeReference after aclInit's 100002).
    """

    name = "torch_npu"
    default_device = "npu"

    def __init__(self, **options: Any):
        import torch_npu  # noqa: F401  registers the "npu" device with torch

        super().__init__(**options)
        self._pid = os.getpid()
        self._fault: str | None = None

    @classmethod
    def on_device(cls, options: dict[str, Any], device: int) -> dict[str, Any] | None:
        return {**options, "device": f"npu:{int(device)}"}

    @classmethod
    def device_of(cls, options: dict[str, Any]) -> int | None:
        """The index of option device (npu:3 -> 3; npu -> 0, torch_npu's current device)."""
        _, _, index = str(options.get("device", cls.default_device)).partition(":")
        return int(index) if index.isdigit() else 0

    def _ready(self) -> None:
        if os.getpid() != self._pid:
            raise BackendError(
                "torch_npu: this process was forked from the one that started the "
                "NPU; its state does not survive fork(): run the backend in a "
                "spawned worker (--isolate)"
            )
        if self._fault is not None:
            raise BackendError(
                f"torch_npu: the NPU had a device fault in an earlier case "
                f"({self._fault}) and torch_npu cannot reset it in this process; "
                "rerun with --isolate so that a fault costs one worker"
            )

    def _sync(self) -> None:
        try:
            self.torch.npu.synchronize()
        except Exception as exc:  # the kernel failed on the device, asynchronously
            self._fault = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:300]}"
            raise BackendCrash(
                f"device fault: torch.npu.synchronize() raised {self._fault}", device_fault=True
            ) from None

    def prepare(self) -> None:
        """Start the NPU (context, first allocation) before the first case's timeout runs."""
        self._ready()
        self.torch.zeros(1, device=self.device)
        self._sync()

    def host_facts(self) -> dict[str, Any]:
        """torch_npu and CANN versions, SoC, device count, ASCEND_OPP_PATH and a diagnosis."""
        import torch_npu

        torch = self.torch
        npu = getattr(torch, "npu", None)
        opp, found = ascend_host.opp_state()
        facts: dict[str, Any] = {
            "library": f"torch_npu {torch_npu.__version__}",
            "cann_version": _attr(torch_npu, "version.cann"),
            "ascend_opp_path": opp,
            "opp_found": found,
            "device_id": torch.device(self.device).index or 0,
        }
        facts["soc"] = _call(npu, "get_device_name", facts["device_id"])
        facts["device_count"] = _call(npu, "device_count")
        inf_nan = _call(_attr(torch_npu, "npu.utils"), "is_support_inf_nan")
        facts["overflow_mode"] = None if inf_nan is None else "inf-nan" if inf_nan else "saturation"
        facts["diagnosis"] = ascend_host.diagnose(facts)
        facts["summary"] = ascend_host.summary_line(facts)
        return facts

    @classmethod
    def availability(cls, **options: Any) -> tuple[bool, str]:
        try:
            import torch
        except ImportError:
            return False, INSTALL_HINT
        try:
            import torch_npu  # noqa: F401
        except Exception as exc:  # ImportError, or a CANN library that fails to load
            return False, f"torch_npu cannot be imported ({type(exc).__name__}: {exc})"
        if not torch.npu.is_available():
            return False, "torch_npu sees no NPU (torch.npu.is_available() is False)"
        return True, ""

    def version(self) -> str:
        import torch_npu

        return f"torch {self.torch.__version__} + torch_npu {torch_npu.__version__} ({self.device})"


def _attr(obj: Any, dotted: str) -> Any:
    """obj.a.b, or None where any part is missing."""
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
    return obj


def _call(obj: Any, name: str, *args: Any) -> Any:
    """obj.name(*args), or None where it is missing or raises (a fact we cannot learn)."""
    fn = getattr(obj, name, None)
    try:
        return fn(*args) if callable(fn) else None
    except Exception:
        return None
