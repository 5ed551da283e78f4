"""The `aclnn` backend: the real CANN library through ctypes, generic over the op spec.

Per call: one device buffer per tensor storage (aclrtMalloc, sized as the library sizes it:
TypeSize bytes per element, sub-byte types packed), a host-to-device copy, aclCreateTensor with
the call's view shape, strides and offset over a 1-D storage, aclCreateScalar for scalars, then
`<op>GetWorkspaceSize(params in spec order, &workspaceSize, &executor)` and, when that succeeds,
`<op>(workspace, size, executor, stream)`, a stream sync with a timeout and a device-to-host copy
of every tensor storage, inputs included (so that "inputs are unchanged" is checked against what
the device holds). Everything created is destroyed and freed on every path; an executor whose
phase 2 never runs is destroyed. The C type of each argument comes from the spec's parameter kind
(tensor/scalar/bool/string), never from the Python value, so there is no per-op Python.

What the library cannot express is a skip with the reason: scalars of a dtype aclCreateScalar
has no case for, private formats (NC1HWC0, FRACTAL_Z, FRACTAL_NZ, ...) whose storage shape is not
1-D, unknown formats. A device fault or a stream-sync timeout ends the device context (and the
isolation worker); 561107 (no operator package: ASCEND_OPP_PATH) is a setup error for the run.

ACL is process-wide and may be shared (torch_npu in the same process): aclInit's 100002 means
someone else initialised it, and only our own reference is given back (aclFinalizeReference;
aclFinalize only where we initialised and the library has no aclFinalizeReference). A process
forked from one where ACL was live refuses to start. The device's context is made current on
the calling thread for each call and the thread's previous context restored afterwards.

Timing (docs/timings.md): each call's phase 1 is timed on the host around GetWorkspaceSize, its
phase 2 with two ACL events recorded on the stream around the launch (aclrtCreateEvent,
aclrtRecordEvent, aclrtEventElapsedTime after the sync) where the library has them, else on the
host from the launch to the end of the stream sync. Options warmup (calls made first, untimed)
and time_repeat (calls timed; the first is the one judged, the others run on copies of the
call) give the medians and samples the Outcome carries in `timings`.

Options: lib_dir, device_id (default 0), warmup (default 0), time_repeat (default 1), product (what the device is, e.g. atlas-a2; cases of
other products are skipped), sync_timeout (seconds a stream sync may take, default 50: keep it
below --timeout), overflow_mode (saturation or inf-nan: set the device's mode; default: leave it,
and record it). Libraries: option lib_dir, else $ASCEND_HOME_PATH/lib64, $ASCEND_TOOLKIT_HOME/
lib64, /usr/local/Ascend/ascend-toolkit/latest/lib64, /usr/local/Ascend/cann/lib64.
"""

from __future__ import annotations

import contextlib
import copy
import ctypes as C
import multiprocessing as mp
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from ...acl import dtypes as dt
from ...acl.call import (
    ArrayArg,
    Call,
    CallError,
    Outcome,
    ScalarArg,
    TensorArg,
    arg_problem,
    number_problem,
)
from ...spec.tables import products
from ..backend import (
    Backend,
    BackendCrash,
    BackendError,
    BackendOptionError,
    BackendTimeout,
    Capabilities,
)
from .ascend_host import SET_ENV, cann_version, diagnose, opp_state, summary_line

RUNTIME, META, OPS = "libascendcl.so", "libnnopbase.so", ("libopapi_nn.so", "libopapi.so")
DEFAULT_DIRS = ("/usr/local/Ascend/ascend-toolkit/latest/lib64", "/usr/local/Ascend/cann/lib64")
ENV_VARS = ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME")
H2D, D2H = 1, 2
ACL_ERROR_REPEAT_INITIALIZE = 100002
ACL_ERROR_RT_STREAM_SYNC_TIMEOUT = 507046
ACLNN_ERR_INNER_OPP_PATH_NOT_FOUND = 561107
DEFAULT_SYNC_TIMEOUT = 50.0  # seconds; the default per-case --timeout is 60
PROBE_TIMEOUT = 120.0  # seconds for the device probe of host_facts()
# aclFormat (acl_base_rt.h) of the formats a 1-D storage with view strides can express
FORMATS = {"NCHW": 0, "NHWC": 1, "ND": 2, "HWCN": 16, "NDHWC": 27, "NCDHW": 30, "NC": 35,
           "NCL": 47}  # fmt: skip
# private formats: their storage shape is not the view's (blocks of 16, C0 splits), so the 1-D
# storage this adapter passes cannot describe them
PRIVATE_FORMATS = {"NC1HWC0": 3, "FRACTAL_Z": 4, "NC1HWC0_C04": 12, "FRACTAL_NZ": 29,
                   "NDC1HWC0": 32, "FRACTAL_Z_3D": 33, "FRACTAL_NZ_C0_16": 50,
                   "FRACTAL_NZ_C0_32": 51, "FRACTAL_NZ_C0_2": 52, "FRACTAL_NZ_C0_4": 53,
                   "FRACTAL_NZ_C0_8": 54}  # fmt: skip
# The dtypes aclScalar's constructor has a case for (opbase common_types.cpp); for any other
# aclCreateScalar returns NULL.
SCALAR_DTYPES = frozenset(
    {
        "FLOAT",
        "FLOAT16",
        "BF16",
        "INT8",
        "INT16",
        "UINT16",
        "UINT8",
        "INT32",
        "INT64",
        "UINT32",
        "UINT64",
        "BOOL",
        "DOUBLE",
        "COMPLEX64",
        "COMPLEX128",
        "HIFLOAT8",
        "FLOAT8_E5M2",
        "FLOAT8_E4M3FN",
        "FLOAT8_E8M0",
        "FLOAT6_E3M2",
        "FLOAT6_E2M3",
        "FLOAT4_E2M1",
        "FLOAT4_E1M2",
    }
)
# TypeSize (opbase data_type_utils.h): bytes per element; the sub-byte types in TYPE_BITS are
# packed (CalcShapeBytes rounds up); anything else (STRING, UNDEFINED) is sizeof(complex128).
TYPE_BYTES = {"FLOAT": 4, "FLOAT16": 2, "INT8": 1, "INT32": 4, "UINT8": 1, "INT16": 2,
              "UINT16": 2, "UINT32": 4, "INT64": 8, "UINT64": 8, "DOUBLE": 8, "BOOL": 1,
              "COMPLEX64": 8, "COMPLEX128": 16, "BF16": 2, "COMPLEX32": 4, "HIFLOAT8": 1,
              "FLOAT8_E5M2": 1, "FLOAT8_E4M3FN": 1, "FLOAT8_E8M0": 1}  # fmt: skip
TYPE_BITS = {"INT4": 4, "UINT1": 1, "FLOAT6_E3M2": 6, "FLOAT6_E2M3": 6, "FLOAT4_E2M1": 4,
             "FLOAT4_E1M2": 4}  # fmt: skip
OVERFLOW_MODES = {"saturation": 0, "inf-nan": 1}  # aclrtFloatOverflowMode
OPTIONS = (
    "lib_dir",
    "device_id",
    "warmup",
    "time_repeat",
    "product",
    "sync_timeout",
    "overflow_mode",
)


class AclError(RuntimeError):
    """A runtime or meta-API call failed (not an operator status): the case is an error."""


def device_bytes(dtype: str, numel: int) -> int:
    """Bytes the library expects behind a storage of `numel` elements of `dtype`."""
    name = dt.get(dtype).name
    if name in TYPE_BITS:
        return (numel * TYPE_BITS[name] + 7) // 8
    return numel * TYPE_BYTES.get(name, 16)


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


def locate_libraries(lib_dir: str | None = None) -> tuple[tuple[Path, Path, Path], str]:
    """The three libraries and where their directory came from, or BackendError naming every
    directory looked in."""
    dirs = candidate_dirs(lib_dir)
    for d, source in dirs:
        if found := _libs_in(d):
            return found, source
    looked = ", ".join(f"{d} ({src})" for d, src in dirs)
    raise BackendError(
        f"CANN libraries not found: looked in {looked} for {RUNTIME}, {META} and "
        f"{' or '.join(OPS)}; pass --lib-dir DIR or source set_env.sh"
    )


def find_libraries(lib_dir: str | None = None) -> tuple[Path, Path, Path]:
    """The three libraries, or BackendError naming every directory looked in."""
    return locate_libraries(lib_dir)[0]


#: array and list kinds: (create function, destroy function, C type)
ARRAY_C_TYPES = {
    "int_array": ("aclCreateIntArray", "aclDestroyIntArray", "aclIntArray*"),
    "float_array": ("aclCreateFloatArray", "aclDestroyFloatArray", "aclFloatArray*"),
    "bool_array": ("aclCreateBoolArray", "aclDestroyBoolArray", "aclBoolArray*"),
    "tensor_list": ("aclCreateTensorList", "aclDestroyTensorList", "aclTensorList*"),
    "scalar_list": ("aclCreateScalarList", "aclDestroyScalarList", "aclScalarList*"),
}


class _Lib:
    """The loaded libraries with ctypes prototypes; optional functions (newer CANN) are None
    where the library lacks them."""

    REQUIRED = (
        "aclInit",
        "aclFinalize",
        "aclrtSetDevice",
        "aclrtResetDevice",
        "aclrtCreateStream",
        "aclrtDestroyStream",
        "aclrtSynchronizeStream",
        "aclrtFree",
        "aclrtMalloc",
        "aclrtMemcpy",
        "aclGetRecentErrMsg",
        "aclCreateTensor",
        "aclDestroyTensor",
        "aclCreateScalar",
        "aclDestroyScalar",
    )

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
            "rt": {
                "aclInit": (i32, [C.c_char_p]),
                "aclFinalize": (i32, []),
                "aclFinalizeReference": (i32, [C.POINTER(u64)]),
                "aclrtSetDevice": (i32, [i32]),
                "aclrtResetDevice": (i32, [i32]),
                "aclrtGetCurrentContext": (i32, [C.POINTER(vp)]),
                "aclrtSetCurrentContext": (i32, [vp]),
                "aclrtGetDeviceCount": (i32, [C.POINTER(C.c_uint32)]),
                "aclrtGetSocName": (C.c_char_p, []),
                "aclrtGetDeviceSatMode": (i32, [C.POINTER(C.c_int)]),
                "aclrtSetDeviceSatMode": (i32, [C.c_int]),
                "aclrtCreateStream": (i32, [C.POINTER(vp)]),
                "aclrtDestroyStream": (i32, [vp]),
                "aclrtSynchronizeStream": (i32, [vp]),
                "aclrtSynchronizeStreamWithTimeout": (i32, [vp, i32]),
                "aclrtFree": (i32, [vp]),
                "aclrtMalloc": (i32, [C.POINTER(vp), sz, C.c_int]),
                "aclrtMemcpy": (i32, [vp, sz, vp, sz, C.c_int]),
                "aclGetRecentErrMsg": (vp, []),
                "aclrtCreateEvent": (i32, [C.POINTER(vp)]),
                "aclrtDestroyEvent": (i32, [vp]),
                "aclrtRecordEvent": (i32, [vp, vp]),
                "aclrtEventElapsedTime": (i32, [C.POINTER(C.c_float), vp, vp]),
            },
            "meta": {
                "aclCreateTensor": (
                    vp,
                    [i64p, u64, C.c_int, i64p, C.c_int64, C.c_int, i64p, u64, vp],
                ),
                "aclDestroyTensor": (i32, [vp]),
                "aclCreateScalar": (vp, [vp, C.c_int]),
                "aclDestroyScalar": (i32, [vp]),
                "aclDestroyAclOpExecutor": (i32, [vp]),
                # arrays and lists (optional: only a spec with such a parameter needs them)
                "aclCreateIntArray": (vp, [i64p, u64]),
                "aclCreateFloatArray": (vp, [C.POINTER(C.c_float), u64]),
                "aclCreateBoolArray": (vp, [C.POINTER(C.c_bool), u64]),
                "aclCreateTensorList": (vp, [C.POINTER(vp), u64]),
                "aclCreateScalarList": (vp, [C.POINTER(vp), u64]),
                "aclDestroyIntArray": (i32, [vp]),
                "aclDestroyFloatArray": (i32, [vp]),
                "aclDestroyBoolArray": (i32, [vp]),
                "aclDestroyTensorList": (i32, [vp]),
                "aclDestroyScalarList": (i32, [vp]),
            },
        }
        for lib, table in protos.items():
            handle = getattr(self, lib)
            for name, (res, args) in table.items():
                fn = getattr(handle, name, None)
                if fn is None and name in self.REQUIRED:
                    raise BackendError(f"{name} not found in {handle._name}")
                if fn is not None:
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
        """The library's last error message (called after a failure only: on some SoCs each
        call costs a device round trip)."""
        p = self.aclGetRecentErrMsg()
        return C.string_at(p).decode("utf-8", "replace").strip() if p else ""

    def check(self, rc: int, what: str) -> None:
        if rc != 0:
            raise AclError(f"{what} returned {rc}: {self.recent_error() or 'no message'}")


_LIBS: dict[tuple[Path, Path, Path], _Lib] = {}
# aclInit is process-wide: the pid that took our reference, how many backends share it, whether
# our aclInit initialised ACL (0) or found it initialised (100002), and whether this process was
# forked from one that had an ACL library loaded (its ACL state would be the parent's, dead).
_ACL: dict[str, Any] = {"pid": 0, "users": 0, "owned": False, "forked": False}


def _after_fork_in_child() -> None:
    _ACL["forked"] = _ACL["forked"] or bool(_LIBS) or "torch_npu" in sys.modules


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _load(paths: tuple[Path, Path, Path]) -> _Lib:
    if paths not in _LIBS:
        _LIBS[paths] = _Lib(paths)
    return _LIBS[paths]


def _acquire_acl(lib: _Lib) -> None:
    """Take this process's reference on ACL (aclInit once for all our backends)."""
    pid = os.getpid()
    if _ACL["users"] > 0 and _ACL["pid"] != pid:
        raise BackendError(
            f"aclnn: this process was forked from process {_ACL['pid']}, where ACL "
            "was initialised; ACL state does not survive fork(): run the backend "
            "in a spawned worker (the default --isolate)"
        )
    if _ACL["users"] == 0:
        rc = lib.aclInit(None)
        if rc == ACL_ERROR_REPEAT_INITIALIZE and _ACL["forked"]:
            raise BackendError(
                "aclnn: aclInit returned 100002 in a process made by fork() from "
                "one that had ACL loaded: the initialised state is the parent's "
                "and does not survive fork(); run the backend in a spawned worker "
                "(the default --isolate)"
            )
        if rc not in (0, ACL_ERROR_REPEAT_INITIALIZE):
            lib.check(rc, "aclInit")
        _ACL.update(pid=pid, owned=rc == 0)
    _ACL["users"] += 1


def _release_acl(lib: _Lib) -> None:
    """Give back our reference; the last of our backends gives back the process's one: with
    aclFinalizeReference (only ours), else aclFinalize only where our aclInit initialised ACL
    (after a 100002 it would tear ACL down for whoever initialised it)."""
    _ACL["users"] -= 1
    if _ACL["users"] > 0:
        return
    if lib.aclFinalizeReference is not None:
        lib.aclFinalizeReference(None)
    elif _ACL["owned"]:
        lib.aclFinalize()
    _ACL["owned"] = False


def _products(options: dict[str, Any]) -> tuple[str, ...]:
    return tuple(p.strip() for p in str(options.get("product") or "").split(",") if p.strip())


def _sync_timeout(options: dict[str, Any]) -> float:
    value = options.get("sync_timeout", DEFAULT_SYNC_TIMEOUT)
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = float("nan")
    if not 0 < seconds < 2**31 / 1000:
        raise BackendOptionError(
            f"aclnn: sync_timeout {value!r}: seconds a stream sync may "
            "take, a number > 0 (keep it below --timeout)"
        )
    return seconds


def _count(options: dict[str, Any], key: str, least: int, default: int) -> int:
    """An integer option >= least (BackendOptionError naming its flag otherwise)."""
    value = options.get(key, default)
    try:
        n = int(value)
    except (TypeError, ValueError):
        n = least - 1
    if n < least or str(value).strip() != str(n):
        flag = "--" + key.replace("_", "-")
        raise BackendOptionError(f"{flag} {value!r}: a whole number >= {least}")
    return n


def _median(samples: list[float]) -> float:
    return round(statistics.median(samples), 3)


def _what(a: Any) -> str:
    return "null" if a is None else f"{type(a).__name__} {a!r}"[:80]


def _device_facts(lib: _Lib, device_id: int, started: bool) -> dict[str, Any]:
    """SoC, device count and overflow mode; the device must be current when `started`."""
    facts: dict[str, Any] = dict.fromkeys(("device_count", "soc", "overflow_mode"))
    if lib.aclrtGetDeviceCount is not None:
        n = C.c_uint32(0)
        rc = lib.aclrtGetDeviceCount(C.byref(n))
        facts["device_count"] = int(n.value) if rc == 0 else None
    if lib.aclrtGetSocName is not None:
        soc = lib.aclrtGetSocName()
        facts["soc"] = soc.decode("utf-8", "replace") if soc else None
    if not started:
        rc = lib.aclrtSetDevice(device_id)
        if rc != 0:
            said = lib.recent_error() or "no message"
            facts["device_error"] = f"aclrtSetDevice({device_id}) returned {rc}: {said}"
            return facts
    try:
        if lib.aclrtGetDeviceSatMode is not None:
            mode = C.c_int(-1)
            rc = lib.aclrtGetDeviceSatMode(C.byref(mode))
            names = {v: k for k, v in OVERFLOW_MODES.items()}
            facts["overflow_mode"] = names.get(mode.value, "undefined") if rc == 0 else None
    finally:
        if not started:
            lib.aclrtResetDevice(device_id)
    return facts


def _probe_child(conn: Any, paths: tuple[Path, Path, Path], device_id: int) -> None:
    """A spawned process: start ACL and the device, report, and end (so that the process that
    asks never holds ACL state a fork could inherit)."""
    try:
        lib = _load(paths)
        _acquire_acl(lib)
        try:
            facts = _device_facts(lib, device_id, started=False)
        finally:
            _release_acl(lib)
        conn.send(facts)
    except Exception as exc:
        conn.send({"device_error": f"{type(exc).__name__}: {exc}"})


def probe_device(paths: tuple[Path, Path, Path], device_id: int) -> dict[str, Any]:
    """_device_facts from a spawned process ({"device_error": why} when it cannot)."""
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_probe_child, args=(child, paths, device_id), daemon=True)
    proc.start()
    child.close()
    try:
        if parent.poll(PROBE_TIMEOUT):
            return parent.recv()
        return {"device_error": f"the device probe did not answer within {PROBE_TIMEOUT:g} s"}
    except EOFError:
        proc.join(5)
        return {"device_error": f"the device probe died (exit code {proc.exitcode})"}
    finally:
        if proc.is_alive():
            proc.join(5)
        if proc.is_alive():
            proc.kill()
            proc.join(5)


class AclnnBackend(Backend):
    name = "aclnn"
    capabilities = Capabilities(status="exact")
    isolate_by_default = True  # native code / an external program may crash or hang
    known_options = OPTIONS

    def __init__(self, **options: Any):
        super().__init__(**options)
        self.device_id = int(options.get("device_id", 0))
        self.warmup = _count(options, "warmup", 0, 0)
        self.time_repeat = _count(options, "time_repeat", 1, 1)
        self._events: tuple[Any, Any] | None = None  # (start, end) on our stream, if any
        # product: what the device is (e.g. atlas-a2); cases of other products are skipped
        self.products = _products(options)
        self.sync_timeout = _sync_timeout(options)
        self.overflow_mode = options.get("overflow_mode")
        paths, self._found_via = locate_libraries(options.get("lib_dir"))
        self.lib = _load(paths)
        self.stream: C.c_void_p | None = None
        self._ctx: int | None = None  # the device's context, made current for each call
        self._holds_acl = False
        self._pid = os.getpid()
        self._protos: dict[str, tuple[Any, Any]] = {}
        self._version: str | None = None

    @classmethod
    def validate_options(cls, options: dict[str, Any]) -> None:
        try:
            device_id = int(options.get("device_id", 0))
        except (TypeError, ValueError):
            device_id = -1
        if device_id < 0:
            raise BackendOptionError(
                f"--device-id {options.get('device_id')!r}: the NPU "
                "device id must be an integer >= 0"
            )
        known = products()
        if bad := [p for p in _products(options) if p not in known]:
            raise BackendOptionError(
                f"aclnn: unknown product {bad[0]!r} (known: {', '.join(known)})"
            )
        _sync_timeout(options)
        _count(options, "warmup", 0, 0)
        _count(options, "time_repeat", 1, 1)
        mode = options.get("overflow_mode")
        if mode is not None and mode not in OVERFLOW_MODES:
            raise BackendOptionError(
                f"aclnn: overflow_mode {mode!r}: one of {', '.join(OVERFLOW_MODES)}"
            )

    @classmethod
    def on_device(cls, options: dict[str, Any], device: int) -> dict[str, Any] | None:
        return {**options, "device_id": int(device)}

    @classmethod
    def device_of(cls, options: dict[str, Any]) -> int | None:
        try:
            return int(options.get("device_id", 0))
        except (TypeError, ValueError):
            return None

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
        version, _ = cann_version(where)
        return f"CANN {version} at {where}" if version else f"CANN at {where}"

    def host_facts(self) -> dict[str, Any]:
        """The CANN version, the libraries and where they came from, ASCEND_OPP_PATH, the SoC,
        the device count, the overflow mode, and a one-line diagnosis of what is missing. The
        device facts come from this backend's device when it runs, else from a spawned probe."""
        where = self.lib.paths[2].parent
        version, version_file = cann_version(where)
        opp, found = opp_state()
        facts: dict[str, Any] = {
            "library": self.lib.double_info or "CANN",
            "cann_version": version,
            "cann_version_file": version_file,
            "libraries": [str(p) for p in self.lib.paths],
            "libraries_from": self._found_via,
            "ascend_opp_path": opp,
            "opp_found": found,
            "device_id": self.device_id,
        }
        if self.stream is not None and self._pid == os.getpid():
            with self._on_device():
                facts.update(_device_facts(self.lib, self.device_id, started=True))
        else:
            facts.update(probe_device(self.lib.paths, self.device_id))
        facts["diagnosis"] = diagnose(facts)
        facts["summary"] = summary_line(facts)
        return facts

    def supports(self, call: Call) -> str | None:
        why = super().supports(call)
        if why:
            return why
        if self.products and call.product not in self.products:
            return f"the device under test is {', '.join(self.products)}, not {call.product}"
        for name, a in call.args.items():
            if isinstance(a, ScalarArg) and dt.get(a.dtype).name not in SCALAR_DTYPES:
                return (
                    f"aclCreateScalar cannot make a {dt.get(a.dtype).name} scalar ({name}): "
                    "the library's aclScalar has no such type and returns NULL"
                )
            if isinstance(a, TensorArg):
                fmt = str(a.format).upper()
                if fmt in PRIVATE_FORMATS:
                    return (
                        f"{name} has the private format {fmt}: its storage shape is not "
                        "1-D, which is all this adapter passes"
                    )
                if fmt not in FORMATS:
                    return (
                        f"{name} has the format {a.format!r}, which aclFormat does not "
                        f"name (known: {', '.join(FORMATS)})"
                    )
        op = self.spec(call).op
        if not hasattr(self.lib.ops, op) or not hasattr(self.lib.ops, op + "GetWorkspaceSize"):
            return f"{self.lib.paths[2].name} has no {op}"
        return None

    # -- device lifetime ------------------------------------------------------------------------

    def prepare(self) -> None:
        """Start ACL, the device and the stream now, so that a first case's timeout does not
        pay for them."""
        self._start()

    def _current_context(self) -> int | None:
        lib = self.lib
        if lib.aclrtGetCurrentContext is None:
            return None
        ctx = C.c_void_p()
        if lib.aclrtGetCurrentContext(C.byref(ctx)) != 0:
            lib.recent_error()  # a thread without a context: nothing to restore (drop the text)
            return None
        return ctx.value

    @contextlib.contextmanager
    def _on_device(self):
        """Our device's context current on this thread (aclrtSetDevice binds per thread, and
        another user may have switched it); the thread's previous context restored after."""
        lib, ours = self.lib, self._ctx
        prev = self._current_context() if ours is not None else None
        switch = ours is not None and prev != ours
        if switch:
            lib.check(lib.aclrtSetCurrentContext(ours), "aclrtSetCurrentContext")
        try:
            yield
        finally:
            if switch and prev is not None:
                lib.aclrtSetCurrentContext(prev)

    def _start(self) -> C.c_void_p:
        if self._pid != os.getpid():  # a fork()ed copy: the handles are the parent's, drop them
            self.stream, self._ctx, self._holds_acl = None, None, False
            self._pid = os.getpid()
        if self.stream is not None:
            return self.stream
        lib = self.lib
        if not self._holds_acl:  # (kept over a device fault: only the device is restarted)
            try:
                _acquire_acl(lib)
            except AclError as exc:
                raise BackendError(f"aclnn: cannot initialise ACL: {exc}") from None
            self._holds_acl = True
        prev = self._current_context()
        try:
            lib.check(lib.aclrtSetDevice(self.device_id), f"aclrtSetDevice({self.device_id})")
        except AclError as exc:
            self._release()
            raise BackendError(f"aclnn: cannot start device {self.device_id}: {exc}") from None
        try:
            if self.overflow_mode is not None:
                if lib.aclrtSetDeviceSatMode is None:
                    raise AclError("this CANN has no aclrtSetDeviceSatMode (option overflow_mode)")
                lib.check(
                    lib.aclrtSetDeviceSatMode(OVERFLOW_MODES[self.overflow_mode]),
                    f"aclrtSetDeviceSatMode({self.overflow_mode})",
                )
            ctx = self._current_context()
            stream = C.c_void_p()
            lib.check(lib.aclrtCreateStream(C.byref(stream)), "aclrtCreateStream")
        except AclError as exc:
            lib.aclrtResetDevice(self.device_id)
            self._release()
            raise BackendError(f"aclnn: cannot start device {self.device_id}: {exc}") from None
        finally:
            if prev is not None and lib.aclrtSetCurrentContext is not None:
                lib.aclrtSetCurrentContext(prev)
        self.stream, self._ctx = stream, ctx
        self._events = self._make_events()
        return stream

    def _make_events(self) -> tuple[Any, Any] | None:
        """Two events for timing phase 2 on the device, or None (a library without events, or
        one that refuses them: phase 2 is then timed on the host). The device is current."""
        lib, made = self.lib, []
        if None in (lib.aclrtCreateEvent, lib.aclrtRecordEvent, lib.aclrtEventElapsedTime):
            return None
        with self._on_device():
            for _ in range(2):
                ev = C.c_void_p()
                if lib.aclrtCreateEvent(C.byref(ev)) != 0:
                    lib.recent_error()  # (dropped: the host clock times phase 2 instead)
                    for e in made:
                        lib.aclrtDestroyEvent(e)
                    return None
                made.append(ev)
        return made[0], made[1]

    def _release(self) -> None:
        if self._holds_acl:
            self._holds_acl = False
            _release_acl(self.lib)

    def _teardown(self, keep_acl: bool = False) -> None:
        """Stream and device given back, and the ACL reference unless `keep_acl` (after a device
        fault: the next call starts a fresh device context)."""
        lib = self.lib
        if self.stream is not None:
            with contextlib.suppress(AclError), self._on_device():
                for ev in self._events or ():
                    lib.aclrtDestroyEvent(ev)
                lib.aclrtDestroyStream(self.stream)
            lib.aclrtResetDevice(self.device_id)
        self.stream, self._ctx, self._events = None, None, None
        if not keep_acl:
            self._release()

    def close(self) -> None:
        if self._pid != os.getpid():  # never touch the parent's ACL from a fork()ed child
            self.stream, self._ctx, self._holds_acl = None, None, False
            return
        self._teardown()

    # -- one call -------------------------------------------------------------------------------

    def _functions(self, op: str, params) -> tuple[Any, Any]:
        if op not in self._protos:
            kinds = {
                "tensor": C.c_void_p,
                "scalar": C.c_void_p,
                "bool": C.c_bool,
                "string": C.c_char_p,
                "int": C.c_int64,
                "float": C.c_double,
                **dict.fromkeys(ARRAY_C_TYPES, C.c_void_p),
            }
            ws = getattr(self.lib.ops, op + "GetWorkspaceSize")
            ws.restype = C.c_int32
            # a `float` parameter is a C double unless the prototype says float (c_type: float)
            ws.argtypes = [C.c_float if p.c_float else kinds[p.kind] for p in params]
            ws.argtypes += [C.POINTER(C.c_uint64), C.POINTER(C.c_void_p)]
            run = getattr(self.lib.ops, op)
            run.restype = C.c_int32
            run.argtypes = [C.c_void_p, C.c_uint64, C.c_void_p, C.c_void_p]
            self._protos[op] = (ws, run)
        return self._protos[op]

    def execute(self, call: Call) -> Outcome:
        spec = self.spec(call)
        for p in spec.params:  # before anything is allocated
            _check_kind(p, call.args.get(p.name))
        stream = self._start()
        phase1, phase2 = self._functions(spec.op, spec.params)
        with self._on_device():
            # warm-up calls first, then the judged call, then the other timed calls: the extra
            # calls run on copies, so that an in-place op sees the case's inputs every time
            for _ in range(self.warmup):
                self._call(spec, copy.deepcopy(call), stream, phase1, phase2)
            runs = [self._call(spec, call, stream, phase1, phase2)]
            for _ in range(self.time_repeat - 1):
                runs.append(self._call(spec, copy.deepcopy(call), stream, phase1, phase2))
        outcome = runs[0]
        one = [r.timings.get("phase1_us") for r in runs]
        two = [r.timings.get("phase2_us") for r in runs if "phase2_us" in r.timings]
        timings: dict[str, Any] = {
            "phase1_us": _median(one),
            "timed_runs": len(runs),
            "warmup_runs": self.warmup,
            "phase1_samples_us": one,
        }
        if two:
            timings.update(
                phase2_us=_median(two),
                phase2_clock=runs[0].timings["phase2_clock"],
                phase2_samples_us=two,
            )
        outcome.timings = timings
        return outcome

    def _call(self, spec, call: Call, stream: Any, phase1: Any, phase2: Any) -> Outcome:
        lib = self.lib
        buffers: list[int] = []
        tensors: list[int] = []
        scalars: list[int] = []
        arrays: list[tuple[str, int]] = []  # (kind, handle): a list destroys its items
        devmem: dict[str, tuple[int, int]] = {}  # name -> (device pointer, bytes)
        fault: Exception | None = None
        try:
            args = [
                self._arg(call.args.get(p.name), p.name, buffers, tensors, scalars, devmem, arrays)
                for p in spec.params
            ]
            size, executor = C.c_uint64(0), C.c_void_p()
            t0 = time.perf_counter()
            status = phase1(*args, C.byref(size), C.byref(executor))
            timings: dict[str, Any] = {"phase1_us": round((time.perf_counter() - t0) * 1e6, 3)}
            outputs = {
                p.name: call.tensor(p.name).storage.copy()
                for p in spec.outputs
                if isinstance(call.args.get(p.name), TensorArg)
            }
            if status == ACLNN_ERR_INNER_OPP_PATH_NOT_FOUND:
                raise BackendError(self._no_opp(spec.op, lib.recent_error()))
            if status != 0:
                return Outcome(int(status), outputs, lib.recent_error(), timings=timings)
            workspace = None
            if size.value > 0:
                try:
                    workspace = self._malloc(size.value, buffers)
                except AclError:  # phase 2 will not run: the executor is ours to destroy
                    if lib.aclDestroyAclOpExecutor is not None and executor.value:
                        lib.aclDestroyAclOpExecutor(executor)
                    raise
            events = self._events
            t0 = time.perf_counter()
            if events is not None:
                lib.check(lib.aclrtRecordEvent(events[0], stream), "aclrtRecordEvent")
            status = phase2(workspace, size.value, executor, stream)
            message = lib.recent_error() if status != 0 else ""
            if events is not None:
                lib.check(lib.aclrtRecordEvent(events[1], stream), "aclrtRecordEvent")
            fault = self._sync(stream)
            host_us = (time.perf_counter() - t0) * 1e6
            if fault is not None:
                raise fault
            if status == 0:
                timings.update(self._phase2_time(events, host_us))
            for name, host in outputs.items():
                outputs[name] = self._fetch(name, devmem, host)
            for p in spec.params:  # inputs too: an op that writes one must not go unnoticed
                a = call.args.get(p.name)
                if p.is_tensor and not p.is_output and isinstance(a, TensorArg):
                    back = self._fetch(p.name, devmem, a.storage)
                    if not np.array_equal(back.view(np.uint8), a.storage.view(np.uint8)):
                        a.storage = back
            return Outcome(int(status), outputs, message, timings=timings)
        finally:
            for kind, h in arrays:
                getattr(lib, ARRAY_C_TYPES[kind][1])(h)
            for t in tensors:
                lib.aclDestroyTensor(t)
            for s in scalars:
                lib.aclDestroyScalar(s)
            for b in buffers:
                lib.aclrtFree(b)
            if fault is not None:  # the context may be broken: start afresh next time
                self._teardown(keep_acl=True)

    def _phase2_time(self, events: tuple[Any, Any] | None, host_us: float) -> dict[str, Any]:
        """Phase 2's time: the events' elapsed time when they could be read, else the host's."""
        if events is not None:
            ms = C.c_float(0)
            if self.lib.aclrtEventElapsedTime(C.byref(ms), events[0], events[1]) == 0:
                return {"phase2_us": round(float(ms.value) * 1000, 3), "phase2_clock": "event"}
            self.lib.recent_error()  # (dropped: the host time stands in)
        return {"phase2_us": round(host_us, 3), "phase2_clock": "host"}

    def _sync(self, stream: Any) -> Exception | None:
        """None when the stream finished; else the case's crash or timeout (a device fault)."""
        lib = self.lib
        if lib.aclrtSynchronizeStreamWithTimeout is not None:
            what = "aclrtSynchronizeStreamWithTimeout"
            rc = lib.aclrtSynchronizeStreamWithTimeout(stream, int(self.sync_timeout * 1000))
        else:
            what = "aclrtSynchronizeStream"
            rc = lib.aclrtSynchronizeStream(stream)
        if rc == 0:
            return None
        said = lib.recent_error() or "no message"
        if rc == ACL_ERROR_RT_STREAM_SYNC_TIMEOUT:
            return BackendTimeout(
                f"the device did not finish within {self.sync_timeout:g} s "
                f"({what} returned {rc}: {said}); device context reset",
                device_fault=True,
            )
        return BackendCrash(
            f"device fault: {what} returned {rc}: {said}; device context reset", device_fault=True
        )

    def _no_opp(self, op: str, said: str) -> str:
        opp, _ = opp_state()
        where = f"ASCEND_OPP_PATH={opp} is not a directory" if opp else "ASCEND_OPP_PATH is not set"
        return (
            f"aclnn: the library cannot find its operator package: {op}GetWorkspaceSize "
            f"returned 561107 (ACLNN_ERR_INNER_OPP_PATH_NOT_FOUND: {said or 'no message'}); "
            f"{where}: {SET_ENV}"
        )

    def _malloc(self, nbytes: int, buffers: list[int]) -> int:
        ptr = C.c_void_p()
        self.lib.check(self.lib.aclrtMalloc(C.byref(ptr), max(nbytes, 1), 0), "aclrtMalloc")
        buffers.append(ptr.value)  # type: ignore[arg-type]
        return ptr.value  # type: ignore[return-value]

    def _fetch(self, name: str, devmem: dict[str, tuple[int, int]], host: np.ndarray) -> np.ndarray:
        """A copy of `host` holding the device's bytes (where the device holds more or fewer
        bytes per element than the host array, as for opaque dtypes, the leading bytes)."""
        dev, nbytes = devmem[name]
        out = np.array(host, copy=True)
        n = min(nbytes, out.nbytes)
        if n:
            same = nbytes == out.nbytes
            wire = out.view(np.uint8) if same else np.empty(nbytes, np.uint8)
            rc = self.lib.aclrtMemcpy(wire.ctypes.data, wire.nbytes, dev, nbytes, D2H)
            self.lib.check(rc, f"aclrtMemcpy device-to-host ({name})")
            if not same:
                out.view(np.uint8)[:n] = wire[:n]
        return out

    def _array(self, a: ArrayArg, name: str, buffers, tensors, scalars, devmem, arrays) -> int:
        """aclCreateIntArray / FloatArray / BoolArray / TensorList / ScalarList of `a`; a list's
        items are made first and then belong to it (aclDestroyTensorList destroys them)."""
        lib = self.lib
        create, destroy, _ = ARRAY_C_TYPES[a.kind]
        fn = getattr(lib, create)
        if fn is None or getattr(lib, destroy) is None:
            raise BackendError(f"{lib.paths[1].name} has no {create}/{destroy} ({name})")
        n = len(a.items)
        if a.kind == "int_array":
            buf: Any = (C.c_int64 * max(n, 1))(*a.items)
        elif a.kind == "float_array":
            buf = (C.c_float * max(n, 1))(*a.items)
        elif a.kind == "bool_array":
            buf = (C.c_bool * max(n, 1))(*a.items)
        else:
            mine: list[int] = []
            pool = tensors if a.kind == "tensor_list" else scalars
            try:
                for i, item in enumerate(a.items):
                    self._arg(item, f"{name}[{i}]", buffers, mine, mine, devmem, arrays)
            except BaseException:
                pool.extend(mine)  # not yet owned by a list: destroyed one by one
                raise
            buf = (C.c_void_p * max(n, 1))(*mine)
            h = fn(buf, n)
            if not h:
                pool.extend(mine)
                raise AclError(f"{create}({name}) returned null: {lib.recent_error()}")
            arrays.append((a.kind, h))
            return h
        h = fn(buf, n)
        if not h:
            raise AclError(f"{create}({name}) returned null: {lib.recent_error()}")
        arrays.append((a.kind, h))
        return h

    def _arg(self, a: Any, name: str, buffers, tensors, scalars, devmem, arrays) -> Any:
        lib = self.lib
        if a is None:
            return None
        if isinstance(a, ArrayArg):
            return self._array(a, name, buffers, tensors, scalars, devmem, arrays)
        if isinstance(a, TensorArg):
            host = np.ascontiguousarray(a.storage)
            nbytes = device_bytes(a.dtype, host.size)
            dev = self._malloc(nbytes, buffers)
            devmem[name] = (dev, nbytes)
            if nbytes:
                wire = host.view(np.uint8)
                if host.nbytes != nbytes:  # opaque host storage: 1 byte per element
                    wire = np.zeros(nbytes, np.uint8)
                    n = min(nbytes, host.nbytes)
                    wire[:n] = host.view(np.uint8)[:n]
                rc = lib.aclrtMemcpy(dev, nbytes, wire.ctypes.data, nbytes, H2D)
                lib.check(rc, f"aclrtMemcpy host-to-device ({name})")
            n = len(a.shape)
            shape, strides = (C.c_int64 * n)(*a.shape), (C.c_int64 * n)(*a.strides)
            storage = (C.c_int64 * 1)(host.size)
            fmt = FORMATS.get(str(a.format).upper())
            if fmt is None:  # supports() skips these; a direct caller gets the reason
                raise CallError(f"{name}: format {a.format!r} cannot be passed with 1-D storage")
            t = lib.aclCreateTensor(
                shape, n, dt.get(a.dtype).value, strides, a.offset, fmt, storage, 1, dev
            )
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
        if isinstance(a, bool | np.bool_):
            return bool(a)
        if isinstance(a, int | float):  # int64_t, double (_check_kind matched them to the kind)
            return a
        return a.encode("utf-8")  # a string (_check_kind let nothing else through)


def _check_kind(p: Any, a: Any) -> None:
    """CallError unless `a` fits the C type of parameter kind p.kind: a Python value of another
    kind would reach the library as a wrong pointer (True in a tensor slot is pointer 1)."""
    fits = {
        "tensor": lambda v: v is None or isinstance(v, TensorArg),
        "scalar": lambda v: v is None or isinstance(v, ScalarArg),
        "bool": lambda v: isinstance(v, bool | np.bool_),
        "string": lambda v: v is None or isinstance(v, str),
        "int": lambda v: number_problem("int", v) is None,
        "float": lambda v: number_problem("float", v) is None,
        **{k: (lambda v, k=k: v is None or arg_problem(k, "", v) is None) for k in ARRAY_C_TYPES},
    }
    if p.kind not in fits:
        raise CallError(f"{p.name}: parameter kind {p.kind!r} has no C type in the aclnn adapter")
    if not fits[p.kind](a):
        c_type = (
            "float"
            if p.c_float
            else {
                "tensor": "aclTensor*",
                "scalar": "aclScalar*",
                "bool": "bool",
                "string": "char*",
                "int": "int64_t",
                "float": "double",
                **{k: v[2] for k, v in ARRAY_C_TYPES.items()},
            }[p.kind]
        )
        raise CallError(
            f"{p.name}: the spec declares a {p.kind} ({c_type}) but the case gives {_what(a)}"
        )
