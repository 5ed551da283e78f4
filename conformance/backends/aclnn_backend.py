"""The `aclnn` backend: the real CANN library through ctypes, generic over the op spec.

Per call: one device buffer per tensor storage (aclrtMalloc + host-to-device copy), aclCreateTensor
with the call's view shape, strides and offset over a 1-D storage, aclCreateScalar for scalars,
then `<op>GetWorkspaceSize(params in spec order, &workspaceSize, &executor)` and, when that
succeeds, `<op>(workspace, size, executor, stream)`, a stream sync and a device-to-host copy of
every output storage. Everything created is destroyed and freed on every path. The argument list
comes from the spec's params (kind tensor/scalar/bool/string), so there is no per-op Python.

Options: lib_dir, device_id (default 0), product (what the device is, e.g. atlas-a2; cases of
other products are skipped). Libraries: option lib_dir, else $ASCEND_HOME_PATH/lib64,
$ASCEND_TOOLKIT_HOME/lib64, /usr/local/Ascend/ascend-toolkit/latest/lib64,
/usr/local/Ascend/cann/lib64. aclInit, the device and the stream are set up on the first execute
and torn down by close().
"""

from __future__ import annotations

import ctypes as C
import os
from pathlib import Path
from typing import Any

import numpy as np

from conformance import dtypes as dt
from conformance.backend import Backend, BackendError, BackendOptionError, Capabilities
from conformance.call import Call, Outcome, ScalarArg, TensorArg
from conformance.loader import products

RUNTIME, META, OPS = "libascendcl.so", "libnnopbase.so", ("libopapi_nn.so", "libopapi.so")
DEFAULT_DIRS = ("/usr/local/Ascend/ascend-toolkit/latest/lib64", "/usr/local/Ascend/cann/lib64")
ENV_VARS = ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME")
H2D, D2H = 1, 2
ACL_ERROR_REPEAT_INITIALIZE = 100002
# aclFormat (acl_base_rt.h); TensorArg.format names map here, ND by default
FORMATS = {"NCHW": 0, "NHWC": 1, "ND": 2, "NC1HWC0": 3, "FRACTAL_Z": 4, "NC1HWC0_C04": 12,
           "HWCN": 16, "NDHWC": 27, "FRACTAL_NZ": 29, "NCDHW": 30, "NDC1HWC0": 32,
           "FRACTAL_Z_3D": 33, "NC": 35, "NCL": 47}  # fmt: skip
OPTIONS = ("lib_dir", "device_id", "product")


class AclError(RuntimeError):
    """A runtime or meta-API call failed (not an operator status): the case is an error."""


def candidate_dirs(lib_dir: str | None = None) -> list[tuple[Path, str]]:
    """(directory, where it came from), in search order."""
    if lib_dir:
        d = Path(lib_dir).expanduser()
        return [(d, "option lib_dir"), (d / "lib64", "option lib_dir")]
    out = [(Path(v) / "lib64", f"${e}") for e in ENV_VARS if (v := os.environ.get(e))]
    return out + [(Path(d), "default") for d in DEFAULT_DIRS]


def _libs_in(d: Path) -> tuple[Path, Path, Path] | None:
    ops = next((d / n for n in OPS if (d / n).is_file()), None)
    if ops is None or not (d / RUNTIME).is_file() or not (d / META).is_file():
        return None
    return d / RUNTIME, d / META, ops


def find_libraries(lib_dir: str | None = None) -> tuple[Path, Path, Path]:
    """The three libraries, or BackendError naming every directory looked in."""
    dirs = candidate_dirs(lib_dir)
    for d, _ in dirs:
        if found := _libs_in(d):
            return found
    looked = ", ".join(f"{d} ({src})" for d, src in dirs)
    raise BackendError(
        f"CANN libraries not found: looked in {looked} for {RUNTIME}, {META} and "
        f"{' or '.join(OPS)}; pass --lib-dir DIR or source set_env.sh"
    )


class _Lib:
    """The loaded libraries with ctypes prototypes."""

    def __init__(self, paths: tuple[Path, Path, Path]):
        try:
            self.rt, self.meta, self.ops = (C.CDLL(str(p), mode=C.RTLD_GLOBAL) for p in paths)
        except OSError as exc:
            raise BackendError(
                f"cannot load the CANN libraries ({exc}); source set_env.sh so that "
                "LD_LIBRARY_PATH covers their dependencies"
            ) from None
        self.paths = paths
        vp, i32, u64, sz = C.c_void_p, C.c_int32, C.c_uint64, C.c_size_t
        i64p = C.POINTER(C.c_int64)
        protos = {
            "rt": {"aclInit": (i32, [C.c_char_p]), "aclFinalize": (i32, []),
                   "aclrtSetDevice": (i32, [i32]), "aclrtResetDevice": (i32, [i32]),
                   "aclrtCreateStream": (i32, [C.POINTER(vp)]), "aclrtDestroyStream": (i32, [vp]),
                   "aclrtSynchronizeStream": (i32, [vp]), "aclrtFree": (i32, [vp]),
                   "aclrtMalloc": (i32, [C.POINTER(vp), sz, C.c_int]),
                   "aclrtMemcpy": (i32, [vp, sz, vp, sz, C.c_int]),
                   "aclGetRecentErrMsg": (vp, [])},
            "meta": {"aclCreateTensor": (vp, [i64p, u64, C.c_int, i64p, C.c_int64, C.c_int,
                                              i64p, u64, vp]),
                     "aclDestroyTensor": (i32, [vp]), "aclCreateScalar": (vp, [vp, C.c_int]),
                     "aclDestroyScalar": (i32, [vp])},
        }  # fmt: skip
        for lib, table in protos.items():
            handle = getattr(self, lib)
            for name, (res, args) in table.items():
                try:
                    fn = getattr(handle, name)
                except AttributeError:
                    raise BackendError(f"{name} not found in {handle._name}") from None
                fn.restype, fn.argtypes = res, args
                setattr(self, name, fn)
        self.double_info = self._double_info()

    def _double_info(self) -> str | None:
        for h in (self.rt, self.meta, self.ops):
            fn = getattr(h, "aclnnTestDoubleInfo", None)
            if fn is not None:
                fn.restype = C.c_char_p
                return fn().decode("utf-8", "replace")
        return None

    def recent_error(self) -> str:
        p = self.aclGetRecentErrMsg()
        return C.string_at(p).decode("utf-8", "replace").strip() if p else ""

    def check(self, rc: int, what: str) -> None:
        if rc != 0:
            raise AclError(f"{what} returned {rc}: {self.recent_error() or 'no message'}")


_LIBS: dict[tuple[Path, Path, Path], _Lib] = {}
# aclInit is process-wide: the backends sharing it (pid, users); the last close() finalizes.
_ACL = {"pid": 0, "users": 0}


def _load(paths: tuple[Path, Path, Path]) -> _Lib:
    if paths not in _LIBS:
        _LIBS[paths] = _Lib(paths)
    return _LIBS[paths]


def _products(options: dict[str, Any]) -> tuple[str, ...]:
    return tuple(p.strip() for p in str(options.get("product") or "").split(",") if p.strip())


class AclnnBackend(Backend):
    name = "aclnn"
    capabilities = Capabilities(status="exact")
    isolate_by_default = True  # native code / an external program may crash or hang
    known_options = OPTIONS

    def __init__(self, **options: Any):
        super().__init__(**options)
        self.device_id = int(options.get("device_id", 0))
        # product: what the device is (e.g. atlas-a2); cases of other products are skipped
        self.products = _products(options)
        self.lib = _load(find_libraries(options.get("lib_dir")))
        self.stream: C.c_void_p | None = None
        self._protos: dict[str, tuple[Any, Any]] = {}
        self._version: str | None = None

    @classmethod
    def validate_options(cls, options: dict[str, Any]) -> None:
        try:
            device_id = int(options.get("device_id", 0))
        except (TypeError, ValueError):
            device_id = -1
        if device_id < 0:
            raise BackendOptionError(f"--device-id {options.get('device_id')!r}: the NPU "
                                     "device id must be an integer >= 0")  # fmt: skip
        known = products()
        if bad := [p for p in _products(options) if p not in known]:
            raise BackendOptionError(f"aclnn: unknown product {bad[0]!r} (known: "
                                     f"{', '.join(known)})")  # fmt: skip

    @classmethod
    def availability(cls, lib_dir: str | None = None, **_: Any) -> tuple[bool, str]:
        try:
            find_libraries(lib_dir)
        except BackendError as exc:
            return False, str(exc)
        return True, ""

    def version(self) -> str:
        if self._version is None:
            self._version = self._find_version()
        return self._version

    def _find_version(self) -> str:
        where = self.lib.paths[2].parent
        if self.lib.double_info:
            return f"{self.lib.double_info} at {where}"
        roots = dict.fromkeys((where.parent, where.resolve().parent))  # lib64 is often a symlink
        for f in (r / n for r in roots for n in ("version.cfg", "ascend_toolkit_install.info")):
            try:
                for line in f.read_text(encoding="utf-8", errors="replace").splitlines():
                    if line.strip().lower().startswith("version="):
                        return f"CANN {line.split('=', 1)[1].strip()} at {where}"
            except OSError:
                continue
        return f"CANN at {where}"

    def supports(self, call: Call) -> str | None:
        why = super().supports(call)
        if why:
            return why
        if self.products and call.product not in self.products:
            return f"the device under test is {', '.join(self.products)}, not {call.product}"
        op = self.spec(call).op
        if not hasattr(self.lib.ops, op) or not hasattr(self.lib.ops, op + "GetWorkspaceSize"):
            return f"{self.lib.paths[2].name} has no {op}"
        return None

    # -- device lifetime ------------------------------------------------------------------------

    def _start(self) -> C.c_void_p:
        if self.stream is not None:
            return self.stream
        lib = self.lib
        if _ACL["pid"] != os.getpid():  # a forked worker starts from scratch
            _ACL.update(pid=os.getpid(), users=0)
        if _ACL["users"] == 0:
            rc = lib.aclInit(None)
            if rc not in (0, ACL_ERROR_REPEAT_INITIALIZE):
                lib.check(rc, "aclInit")
        _ACL["users"] += 1
        try:
            lib.check(lib.aclrtSetDevice(self.device_id), f"aclrtSetDevice({self.device_id})")
            stream = C.c_void_p()
            rc = lib.aclrtCreateStream(C.byref(stream))
            if rc != 0:
                lib.aclrtResetDevice(self.device_id)
                lib.check(rc, "aclrtCreateStream")
        except AclError as exc:
            self._release()
            raise BackendError(f"aclnn: cannot start device {self.device_id}: {exc}") from None
        self.stream = stream
        return stream

    def _release(self) -> None:
        _ACL["users"] -= 1
        if _ACL["users"] == 0:
            self.lib.aclFinalize()

    def close(self) -> None:
        if self.stream is None:
            return
        self.lib.aclrtDestroyStream(self.stream)
        self.lib.aclrtResetDevice(self.device_id)
        self.stream = None
        self._release()

    # -- one call -------------------------------------------------------------------------------

    def _functions(self, op: str, params) -> tuple[Any, Any]:
        if op not in self._protos:
            kinds = {"tensor": C.c_void_p, "scalar": C.c_void_p, "bool": C.c_bool,
                     "string": C.c_char_p}  # fmt: skip
            ws = getattr(self.lib.ops, op + "GetWorkspaceSize")
            ws.restype = C.c_int32
            ws.argtypes = [kinds[p.kind] for p in params]
            ws.argtypes += [C.POINTER(C.c_uint64), C.POINTER(C.c_void_p)]
            run = getattr(self.lib.ops, op)
            run.restype = C.c_int32
            run.argtypes = [C.c_void_p, C.c_uint64, C.c_void_p, C.c_void_p]
            self._protos[op] = (ws, run)
        return self._protos[op]

    def execute(self, call: Call) -> Outcome:
        spec = self.spec(call)
        stream = self._start()
        phase1, phase2 = self._functions(spec.op, spec.params)
        lib = self.lib
        lib.recent_error()  # drop a stale message, so that the next one is this call's
        buffers: list[int] = []
        tensors: list[int] = []
        scalars: list[int] = []
        devptr: dict[str, int] = {}
        try:
            args = [self._arg(call.args.get(p.name), p.name, buffers, tensors, scalars, devptr)
                    for p in spec.params]  # fmt: skip
            size, executor = C.c_uint64(0), C.c_void_p()
            status = phase1(*args, C.byref(size), C.byref(executor))
            outputs = {p.name: call.tensor(p.name).storage.copy() for p in spec.outputs
                       if isinstance(call.args.get(p.name), TensorArg)}  # fmt: skip
            if status != 0:
                return Outcome(int(status), outputs, lib.recent_error())
            workspace = None
            if size.value > 0:
                workspace = self._malloc(size.value, buffers)
            status = phase2(workspace, size.value, executor, stream)
            message = lib.recent_error() if status != 0 else ""
            lib.check(lib.aclrtSynchronizeStream(stream), "aclrtSynchronizeStream")
            for name, host in outputs.items():
                if host.nbytes:
                    rc = lib.aclrtMemcpy(host.ctypes.data, host.nbytes, devptr[name], host.nbytes,
                                         D2H)  # fmt: skip
                    lib.check(rc, f"aclrtMemcpy device-to-host ({name})")
            return Outcome(int(status), outputs, message)
        finally:
            for t in tensors:
                lib.aclDestroyTensor(t)
            for s in scalars:
                lib.aclDestroyScalar(s)
            for b in buffers:
                lib.aclrtFree(b)

    def _malloc(self, nbytes: int, buffers: list[int]) -> int:
        ptr = C.c_void_p()
        self.lib.check(self.lib.aclrtMalloc(C.byref(ptr), max(nbytes, 1), 0), "aclrtMalloc")
        buffers.append(ptr.value)  # type: ignore[arg-type]
        return ptr.value  # type: ignore[return-value]

    def _arg(self, a: Any, name: str, buffers, tensors, scalars, devptr) -> Any:
        lib = self.lib
        if a is None:
            return None
        if isinstance(a, TensorArg):
            host = np.ascontiguousarray(a.storage)
            dev = self._malloc(host.nbytes, buffers)
            devptr[name] = dev
            if host.nbytes:
                rc = lib.aclrtMemcpy(dev, max(host.nbytes, 1), host.ctypes.data, host.nbytes, H2D)
                lib.check(rc, f"aclrtMemcpy host-to-device ({name})")
            n = len(a.shape)
            shape, strides = (C.c_int64 * n)(*a.shape), (C.c_int64 * n)(*a.strides)
            storage = (C.c_int64 * 1)(host.size)
            fmt = FORMATS.get(str(a.format).upper(), FORMATS["ND"])
            t = lib.aclCreateTensor(shape, n, dt.get(a.dtype).value, strides, a.offset, fmt,
                                    storage, 1, dev)  # fmt: skip
            if not t:
                raise AclError(f"aclCreateTensor({name}) returned null: {lib.recent_error()}")
            tensors.append(t)
            return t
        if isinstance(a, ScalarArg):
            d = dt.get(a.dtype)
            raw = np.zeros(16, np.uint8)  # wide enough for any scalar, complex128 included
            if not d.opaque:  # dtypes numpy lacks (COMPLEX32, FP4...) only occur in negative cases
                with np.errstate(all="ignore"):
                    value = np.asarray(a.typed()).astype(d.np).reshape(-1)[:1].view(np.uint8)
                raw[: value.size] = value
            s = lib.aclCreateScalar(raw.ctypes.data, d.value)
            if not s:
                raise AclError(f"aclCreateScalar({name}) returned null: {lib.recent_error()}")
            scalars.append(s)
            return s
        if isinstance(a, bool):
            return a
        if isinstance(a, str):
            return a.encode("utf-8")
        raise AclError(f"{name}: cannot pass {type(a).__name__} to the C API")
