"""`run --cross BACKEND`: a second implementation judged beside the backend, TTK's three-party
cross-check: the backend's error against our golden *relative to* the second backend's error
against the same golden. The absolute verdict stays what decides the run; the ratio verdict is
recorded beside it (`Result.cross`) and shown by the reports.

The criterion is TTK's `cross_check` (hicann/ops-test-kit docs/Precision_Comparison.md section 8;
ttk/core_modules/comparison/cross_check.py), restated here: over the elements where the backend,
the golden and the second backend are all finite and |golden| >= small_value, with
rel(x) = |x - g| / (|g| + 1e-7), the ratios MARE = max rel(backend) / max rel(second), MERE =
mean / mean and RMSE = rmse(backend) / rmse(second) must not pass the level's limits (a
denominator is floored at small_value; 0/0 and inf/inf count 1, a NaN or a lone inf infinity;
when every second-backend error there is not finite no ratio is judged). Where |golden| <
small_value the count of errors over small_value_atol of the backend may be at most twice the
second backend's (at least 1). A non-finite element passes when the backend equals the second
backend there, or the golden is not finite and the backend equals it. Only FLOAT16, BF16 and
FLOAT outputs are cross-checked, as in TTK; other outputs are `n/a`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..acl.call import Outcome, TensorArg
from ..cases.generate import Case
from ..spec.model import OpSpec
from ..spec.tolerances import policy_for
from .backend import Backend
from .golden import golden_values
from .judging import backend_call

# level -> (mare, mere, rmse) ratio limits (TTK docs/Precision_Comparison.md, "Level 预设")
LEVELS: dict[str, tuple[float, float, float]] = {
    "L0": (10.0, 2.0, 2.0),  # loose: first alignment
    "L1": (5.0, 1.5, 1.5),  # TTK's default
    "L2": (2.0, 1.2, 1.2),  # strict
}
DEFAULT_LEVEL = "L1"
# the outputs TTK cross-checks; their small-value domain is the tolerance table's
# (specs/tolerances.yaml small_threshold and small_atol: TTK's small_value and small_value_atol)
CROSS_DTYPES = ("FLOAT16", "BF16", "FLOAT")
SMALL_COUNT_RATIO = 2.0
MAX_ELEMENTS = 1 << 26  # outputs larger than this are not cross-checked (memory)


def small_values(dtype: str) -> tuple[float, float]:
    """TTK's (small_value, small_value_atol) of an output dtype: the tolerance table's
    small-value domain, which restates the same vendor figures."""
    pol = policy_for(dtype)
    return pol.small_threshold, pol.small_atol


def _ratio(num: float, den: float, floor: float) -> float:
    if np.isnan(num) or np.isnan(den):
        return float("inf")
    if np.isinf(num):
        return 1.0 if np.isinf(den) else float("inf")
    if num == 0 and den == 0:
        return 1.0
    return float(num / max(den, floor))


def _same(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return (np.isnan(x) & np.isnan(y)) | (x == y)


def ratios(t: np.ndarray, g: np.ndarray, b: np.ndarray, dtype: str, level: str) -> dict[str, Any]:
    """The cross-check of one output: backend values t, golden g, second backend b (float64,
    the same elements); its figures and `ok`."""
    small_value, small_atol = small_values(dtype)
    mare_max, mere_max, rmse_max = LEVELS[level]
    out: dict[str, Any] = {
        "limits": {"mare": mare_max, "mere": mere_max, "rmse": rmse_max,
                   "small_value": small_value, "small_value_atol": small_atol},
        "mare": None, "mere": None, "rmse": None,
    }  # fmt: skip
    finite = np.isfinite(t) & np.isfinite(g) & np.isfinite(b)
    special = ~finite
    bad_special = special & ~(_same(t, b) | (~np.isfinite(g) & _same(t, g)))
    large = finite & (np.abs(g) >= small_value)
    small = finite & (np.abs(g) < small_value)
    exceeded: list[str] = []
    if large.any():
        tl, gl, bl = t[large], g[large], b[large]
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            rel_t = np.abs(tl - gl) / (np.abs(gl) + 1e-7)
            rel_b = np.abs(bl - gl) / (np.abs(gl) + 1e-7)
            if np.isfinite(rel_b).any():
                out["mare"] = _ratio(rel_t.max(), rel_b.max(), small_value)
                out["mere"] = _ratio(rel_t.mean(), rel_b.mean(), small_value)
                rt = float(np.sqrt(np.mean((tl - gl) ** 2)))
                rb = float(np.sqrt(np.mean((bl - gl) ** 2)))
                out["rmse"] = _ratio(rt, rb, small_value)
        for key, limit in (("mare", mare_max), ("mere", mere_max), ("rmse", rmse_max)):
            if out[key] is not None and out[key] > limit:
                exceeded.append(f"{key} ratio {out[key]:.3g} > {limit:g}")
    with np.errstate(invalid="ignore", over="ignore"):
        err_t = int(np.count_nonzero(small & (np.abs(t - g) > small_atol)))
        err_b = int(np.count_nonzero(small & (np.abs(b - g) > small_atol)))
    out["small_errors"] = err_t
    out["small_errors_cross"] = err_b
    out["small_ratio"] = err_t / max(err_b, 1)
    if out["small_ratio"] > SMALL_COUNT_RATIO:
        exceeded.append(
            f"small-value errors {err_t} vs {err_b} (ratio {out['small_ratio']:.3g} > "
            f"{SMALL_COUNT_RATIO:g})"
        )
    if bad_special.any():
        exceeded.insert(0, f"{int(np.count_nonzero(bad_special))} NaN/inf elements unlike both")
    out["ok"] = not exceeded
    out["exceeded"] = exceeded
    return out


def _view(t: TensorArg, storage: np.ndarray) -> np.ndarray:
    v = TensorArg(t.dtype, t.shape, t.strides, t.offset, storage).view()
    return np.asarray(v, dtype=np.float64).reshape(-1)


def cross_check(
    spec: OpSpec, case: Case, want: Outcome, got: Outcome, second: Backend, level: str
) -> dict[str, Any]:
    """The ratio verdict of a judged case: pass | fail | n/a | error, with its reason and each
    output's figures (see the module docstring)."""
    rec: dict[str, Any] = {"backend": second.name, "level": level, "outputs": {}}

    def said(verdict: str, reason: str) -> dict[str, Any]:
        rec.update(verdict=verdict, reason=reason)
        return rec

    if want.status != 0 or got.status != 0 or got.raised:
        return said("n/a", "the call did not succeed: no outputs to compare")
    names = [
        p.name
        for p in spec.outputs
        if isinstance(case.call.args.get(p.name), TensorArg)
        and case.call.tensor(p.name).dtype in CROSS_DTYPES
        and not case.call.tensor(p.name).is_empty
    ]
    if not names:
        return said("n/a", "no FLOAT16, BF16 or FLOAT output (TTK's cross-check covers those)")
    why = second.supports(case.call)
    if why:
        return said("n/a", f"{second.name}: {why}")
    try:
        other = second.execute_by(backend_call(spec, case.call, second), None)
    except Exception as exc:  # the second backend failing is its verdict, never the case's
        return said("error", f"{second.name} raised {type(exc).__name__}: {exc}"[:300])
    if other.status != 0 or other.raised:
        return said("error", f"{second.name} returned status {other.status}: {other.message}"[:300])
    failed = []
    for name in names:
        t = case.call.tensor(name)
        if int(np.prod(t.shape, dtype=np.int64)) > MAX_ELEMENTS:
            return said("n/a", f"{name}: more than {MAX_ELEMENTS} elements")
        g = golden_values(want, name)
        if g is None or name not in got.outputs or name not in other.outputs:
            return said("n/a", f"{name}: no float golden or no output to compare")
        fig = ratios(_view(t, got.outputs[name]), g, _view(t, other.outputs[name]), t.dtype, level)
        rec["outputs"][name] = fig
        if not fig["ok"]:
            failed.append(f"{name}: {'; '.join(fig['exceeded'])}")
    if failed:
        return said("fail", f"level {level}: " + " | ".join(failed))
    return said("pass", "")
