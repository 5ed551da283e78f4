"""Compiled kernels for the reference: numba when it is installed, the numpy evaluator otherwise.

Why numba: it compiles the scalar loop codegen.py writes into one fused, multi-threaded pass
(prange) over the inputs in their own dtypes, with `math`'s libm functions, and caches the
machine code on disk (cache=True), so a formula is compiled once per machine, not once per run.
numexpr lacks erf; a C extension would need a compiler at install time. numba is an optional
extra (`pip install aclnn-conformance[fast]`); without it, or for a formula it cannot compile,
or for small tensors (conformance/compiled/mode.py, COMPILED_MIN: compiling would cost more than it saves), the numpy evaluator
runs, with the same near-midpoint test and mpmath refinement, so results are the same bits.

ACLNN_CONFORM_KERNEL=numpy|numba|auto picks the path (auto: numba where installed);
ACLNN_CONFORM_CACHE names the folder of generated sources and numba's cache.

The cache holds code this process imports (the sources) and unpickles (numba's index files),
so it must be the user's alone: every level of it this module creates is made 0700, and every
level it uses is checked with lstat (no symbolic link, owned by this user, not writable by group
or others; our own levels are tightened to 0700). The folder is ACLNN_CONFORM_CACHE, else
$XDG_CACHE_HOME (or ~/.cache)/aclnn-conformance/kernels-numba-X; when the home cache cannot be
created, $TMPDIR/aclnn-conformance-<uid>/kernels-numba-X, checked alike. A folder that fails a
check is refused: kernels are then compiled in memory, without a cache, with one warning.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import stat
import sys
import tempfile
import threading
import types
from pathlib import Path
from typing import Any

import numpy as np

from ..conformance.acl import dtypes as dt
from ..conformance.compiled import mode as compiled_mode
from ..conformance.spec.model import OpSpec
from . import ddgen
from .codegen import FLAG_BLOCK, Source, Unsupported, generate

NATIVE = {
    np.dtype(t)
    for t in (
        "float32",
        "float64",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "bool",
    )
}

_lock = threading.Lock()
_loaded: dict[str, Any] = {}
_failed: dict[str, str] = {}
_dd: dict[tuple, tuple[OpSpec, Kernel | None]] = {}  # (spec, kind, its strings) -> kernel
# the one switch of evaluation and comparison (conformance/compiled/mode.py), re-exported
set_mode, numba_version, wanted = (
    compiled_mode.set_mode,
    compiled_mode.numba_version,
    compiled_mode.wanted,
)


def name() -> str:
    """The path large evaluations take here: 'numba X.Y' or 'numpy'."""
    version = numba_version() if compiled_mode.mode() != "numpy" else None
    return f"numba {version}" if version else "numpy"


def cache_dir() -> Path:
    """The folder the kernel cache is wanted in (private_cache: the one actually used)."""
    return _candidates()[0][0]


class Kernel:
    def __init__(self, key: str, module: Any, src: Source):
        self.key, self.tensors, self.attrs, self.half = key, src.tensors, src.attrs, src.half
        self.fn = module.kernel
        # the float64 kernels' companions (a double-double kernel has neither)
        self.fused_fn = getattr(module, "kernel_flags", None)
        self.pairs_fn = getattr(module, "pairs", None)  # a double-double kernel's
        self.narrow_fn = getattr(module, "kernel_narrow", None)
        self.counts_fn = getattr(module, "block_counts", None)
        self.indices_fn = getattr(module, "flag_indices", None)
        self.store_fn = getattr(module, "store", None)  # a row kernel's

    def fail(self, exc: BaseException) -> None:
        """Numba could not compile this kernel for these argument types: numpy runs it."""
        _failed[self.key] = f"{type(exc).__name__}: {exc}"
        _loaded.pop(self.key, None)

    def run(
        self,
        inputs: dict[str, np.ndarray],
        env: dict[str, Any],
        y: np.ndarray,
        flags: np.ndarray,
        mode: int,
        fmt: dt.FloatFormat | None,
        out: np.ndarray | None = None,
    ) -> None:
        """Fill y (float64) and flags (uint8) for the chunk; mode 0: no flags, 1: near-midpoint
        of the float format fmt (2: in its subnormal range, for the arithmetic test), 2: every
        finite value. out (float32 or float64): also receives each value rounded once to its
        dtype."""
        if mode == 1 and fmt is not None:  # the flagging kernel: near a midpoint, far (bound)
            self.fused_fn(*self._args(inputs, env), y, flags, *_flag_args(fmt))
            if out is not None and out is not y:
                out[:] = y  # rounded once to its dtype, as the kernel's store rounds
            return
        self.fn(*self._args(inputs, env), y, y if out is None else out)
        if mode == 2:
            np.isfinite(y, out=flags.view(np.bool_))
        else:
            flags[:] = 0

    def run_fused(
        self,
        inputs: dict[str, np.ndarray],
        env: dict[str, Any],
        out: np.ndarray,
        flags: np.ndarray,
        fmt: dt.FloatFormat,
    ) -> np.ndarray:
        """Fill out (float32 or float64: each value rounded once to its dtype; uint16: the bits
        of the narrow format fmt, FLOAT16 or BF16) and flags
        (as run's mode 1) in one pass that keeps no float64 copy: the evaluation's form, where
        memory traffic, not arithmetic, bounds the cheap formulas. Returns the indices of the
        flagged elements, found by compiled passes of their own (counting them in the kernel's
        loop, nested by blocks, cost it 15 %; numpy's flatnonzero was a tenth of the time of a
        formula with one exp)."""
        args = [*self._args(inputs, env), out, flags, *_flag_args(fmt)]
        if out.dtype == np.uint16:  # FLOAT16 or BF16 bits, rounded in integers (measure.py)
            self.narrow_fn(*args, fmt.mant, fmt.emin, fmt.all_ones, fmt.nbits)
        else:
            self.fused_fn(*args)
        counts = np.empty(-(-out.shape[0] // FLAG_BLOCK), np.int64)
        self.counts_fn(flags, counts)
        starts = np.zeros(counts.size + 1, np.int64)
        np.cumsum(counts, out=starts[1:])
        idx = np.empty(int(starts[-1]), np.int64)
        if idx.size:
            self.indices_fn(flags, starts, idx)
        return idx

    def run_dd(
        self, inputs: dict[str, np.ndarray], env: dict[str, Any], out: np.ndarray, flags: np.ndarray
    ) -> None:
        """A double-double kernel (ddgen.py): out (float64) the faithful values, flags (bool)
        the elements it could not certify (for long double)."""
        self.fn(*self._args(inputs, env), out, flags)

    def run_pairs(
        self, inputs: dict[str, np.ndarray], env: dict[str, Any], hi: np.ndarray, lo: np.ndarray
    ) -> None:
        """A double-double kernel's unrounded pairs: hi and lo (float64), lo NaN where poisoned."""
        self.pairs_fn(*self._args(inputs, env), hi, lo)

    def _args(self, inputs: dict[str, np.ndarray], env: dict[str, Any]) -> list[Any]:
        arrays: list[Any] = []
        for n in self.tensors:
            a = inputs[n]
            if n in self.half:
                arrays.append(a.view(np.uint16))  # its bits: half_to_double reads them
            else:
                arrays.append(
                    a
                    if a.dtype in NATIVE
                    else a.astype(np.float32 if a.dtype.itemsize <= 2 else np.float64)
                )
        return arrays + [
            float(env[n]) if not isinstance(env[n], bool | np.bool_) else bool(env[n])
            for n in self.attrs
        ]


def _flag_args(fmt: dt.FloatFormat) -> tuple[int, int, int]:
    """The flagging kernels' arguments for the output format: the bits float64 has beyond it,
    the guard (precise.GUARD in float64 ulps), the biased exponent of its smallest normal."""
    from .precise import GUARD

    drop = 53 - fmt.p
    return drop, int(GUARD * 2**drop), fmt.emin + 1023


def get(
    spec: OpSpec, env: dict[str, Any], approx: bool = False, half: frozenset[str] = frozenset()
) -> Kernel | None:
    """The compiled kernel of spec's formula for this call's string parameters, or None;
    approx: vecmath's exp (FLOAT, FLOAT16 and BF16 outputs only: see vecmath's doc); half: the
    FLOAT16 tensors (the kernel reads their bits)."""
    try:
        return _compiled(generate(spec, env, approx, half))
    except Unsupported:
        return None


def get_dd(spec: OpSpec, env: dict[str, Any]) -> Kernel | None:
    """The double-double kernel of spec's formula (DOUBLE outputs, faithful), or None."""
    return _memo(spec, env, False)


def get_exact(spec: OpSpec, env: dict[str, Any]) -> Kernel | None:
    """The exactness kernel of spec's formula (exactmath.py: its flags are 0 where float64
    computes the element without rounding), or None."""
    return _memo(spec, env, True)


def _memo(spec: OpSpec, env: dict[str, Any], exact: bool) -> Kernel | None:
    memo = (
        id(spec),
        exact,
        tuple(sorted((p.name, env.get(p.name)) for p in spec.attributes if p.kind == "string")),
    )
    if memo in _dd and _dd[memo][0] is spec:
        k = _dd[memo][1]
        return None if k is None or k.key in _failed else k
    try:
        k = _compiled(ddgen.generate(spec, env, exact))
    except Unsupported:
        k = None
    _dd[memo] = (spec, k)
    return k


def _compiled(src: Source) -> Kernel | None:
    key = hashlib.sha256(src.text.encode()).hexdigest()[:24]
    if key in _failed:
        return None
    with _lock:
        fn = _loaded.get(key)
        if fn is None:
            try:
                fn = _load(key, src.text)
            except Exception as exc:  # a construct numba cannot compile: numpy runs it
                _failed[key] = f"{type(exc).__name__}: {exc}"
                return None
            _loaded[key] = fn
    return Kernel(key, fn, src)


def _load(key: str, text: str) -> Any:
    module_name = f"_aclnn_kernel_{key}"
    folder = private_cache()
    if folder is None:  # no private folder: compiled in this process only
        module = types.ModuleType(module_name)
        code = compile(text.replace("cache=True", "cache=False"), f"<kernel {key}>", "exec")
        sys.modules[module_name] = module
        exec(code, module.__dict__)  # the generated source (codegen/ddgen), never spec text
        return module
    path = folder / f"k_{key}.py"
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[module_name] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


class CacheRefused(OSError):
    """A cache folder that is not this user's alone (owner, mode, a symbolic link)."""


def _uid() -> int:
    """This user's id (the tests stand in another owner through it)."""
    return os.getuid()


def _check_private(path: Path) -> None:
    """Raise CacheRefused unless path is a real directory of this user, not group/world-
    writable (lstat: a symbolic link is refused, never followed); tighten it to 0700."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise CacheRefused(f"{path} is a symbolic link")
    if not stat.S_ISDIR(st.st_mode):
        raise CacheRefused(f"{path} is not a directory")
    if st.st_uid != _uid():
        raise CacheRefused(f"{path} is owned by uid {st.st_uid}, not by this user ({_uid()})")
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o022:
        raise CacheRefused(f"{path} is writable by group or others (mode {mode:o})")
    if mode & 0o077:
        os.chmod(path, 0o700)


def make_private(path: Path, top: Path) -> Path:
    """path, created where missing with mode 0700 at every level, each level from `top` (an
    ancestor of path, or path) down, and every level this call creates, checked; OSError
    (CacheRefused for a folder not ours alone) when it cannot be had."""
    path, top = Path(os.path.abspath(path)), Path(os.path.abspath(top))
    levels = [path, *path.parents]
    start = levels.index(top)  # ValueError: top is not an ancestor of path
    while start + 1 < len(levels) and not os.path.lexists(levels[start + 1]):
        start += 1  # a missing level above top: created here, so checked too
    for p in reversed(levels[: start + 1]):
        with contextlib.suppress(FileExistsError):
            os.mkdir(p, 0o700)
        _check_private(p)
    return path


def _candidates() -> list[tuple[Path, Path]]:
    """(folder, the top level checked) in the order they are tried."""
    root = os.environ.get("ACLNN_CONFORM_CACHE")
    if root:
        return [(Path(root), Path(root))]
    leaf = f"kernels-numba-{numba_version()}"
    base = Path(os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache"))
    tmp = Path(tempfile.gettempdir()) / f"aclnn-conformance-{_uid()}"
    return [(base / "aclnn-conformance" / leaf, base / "aclnn-conformance"), (tmp / leaf, tmp)]


_cache: dict[str, Any] = {}


def private_cache() -> Path | None:
    """The kernel cache folder, private to this user; None (after one warning on stderr) when
    none can be had: kernels are then compiled in memory."""
    if "folder" in _cache:
        return _cache["folder"]
    folder, why = None, ""
    for path, top in _candidates():
        try:
            folder = make_private(path, top)
            pycache = folder / "__pycache__"  # numba's index files, unpickled when loaded
            if os.path.lexists(pycache):
                _check_private(pycache)
            break
        except CacheRefused as exc:
            folder, why = None, str(exc)
            break
        except OSError as exc:  # cannot be created here: the next candidate
            folder, why = None, f"{path}: {exc.strerror or exc}"
    if folder is None:
        print(
            f"warning: kernel cache refused ({why}); kernels are compiled in memory for this "
            "run, without a cache (set ACLNN_CONFORM_CACHE to a folder of your own)",
            file=sys.stderr,
        )
    _cache["folder"] = folder
    return folder


def failures() -> dict[str, str]:
    """Kernels that failed to compile this process (key: reason), for diagnostics."""
    return dict(_failed)
