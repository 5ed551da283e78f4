"""Running one case against a backend and an oracle, and judging it: the heart of the runner.

The oracle (the reference by default) says what status and outputs the spec demands. The backend
runs on its own copy of the call. The verdict checks, in order: the backend could express the
case (else skip); it did not raise (else error); inputs are unchanged (else fail); the status
matches as far as the backend reports statuses; outputs match in the view under the tolerance
policy; storage outside the output view is untouched (gaps, padding) and a failed call wrote
nothing at all.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..acl import dtypes as dt
from ..acl.call import Call, Outcome, TensorArg
from ..acl.views import FlatView, ranges
from ..cases.generate import Case
from ..cases.golden import StoredGolden, policy_dict, policy_from
from ..judge import deviations as dv
from ..judge.accumulate import Accumulator
from ..judge.result import Result
from ..judge.verdicts import VERDICTS  # noqa: F401 - re-exported
from ..spec.bindings import binding_id
from ..spec.checks.base import attribute_env, with_defaults
from ..spec.model import OpSpec
from ..spec.registry import Registry
from ..spec.tables import status_name
from ..spec.tolerances import policy_for
from .backend import Backend, BackendCrash, BackendError, BackendTimeout, OracleTimeout

DEFAULT_ORACLE = "reference"  # the backend name of the reference engine, the CLI's default


@dataclass
class Clock:
    """A case's deadline (time.monotonic(); None: no limit), checked between chunks of work;
    work not charged to the case (compiling kernels) pushes it back."""

    at: float | None

    def passed(self) -> bool:
        return self.at is not None and time.monotonic() > self.at

    def credit(self, seconds: float) -> None:
        if self.at is not None:
            self.at += seconds


@dataclass
class Judged:
    verdict: str
    reason: str
    record: Result
    outcome: Outcome | None = None  # what the backend returned, when it ran
    want: Outcome | None = None  # what the oracle (or the stored golden) expects, when known


def backend_call(spec: OpSpec, case_call: Call, backend: Backend) -> Call:
    """The backend's own copy of the call. A backend that never writes its inputs gets the
    case's input arrays themselves, read-only (a large case cannot afford a second copy); every
    output storage is always the backend's own."""
    mine = not backend.capabilities.reads_inputs_only
    memo: dict[int, Any] = {}  # one memo: arguments sharing a storage (in place) still share it
    args: dict[str, Any] = {}
    for name, a in case_call.args.items():
        if mine and not isinstance(a, TensorArg):
            a = copy.deepcopy(a, memo)  # a list of tensors, an array, a scalar
        elif isinstance(a, TensorArg):
            if mine:
                storage = copy.deepcopy(a.storage, memo)
            elif spec.param(name).is_output:
                storage = a.storage.copy()
            else:
                storage = a.storage.view()
                storage.flags.writeable = False
            a = TensorArg(a.dtype, a.shape, a.strides, a.offset, storage, a.format)
        args[name] = a
    return Call(case_call.op, case_call.product, args)


def same_bytes(a: np.ndarray, b: np.ndarray, step: int = 1 << 24) -> bool:
    """Whether two arrays hold the same bytes, compared a slice at a time (no full copies)."""
    if a is b:
        return True
    x, y = a.reshape(-1).view(np.uint8), b.reshape(-1).view(np.uint8)
    if x.size != y.size:
        return False
    return all(np.array_equal(x[i : i + step], y[i : i + step]) for i in range(0, x.size, step))


def changed_bytes(a: np.ndarray, b: np.ndarray, step: int = 1 << 24) -> int:
    x, y = a.reshape(-1).view(np.uint8), b.reshape(-1).view(np.uint8)
    return sum(
        int(np.count_nonzero(x[i : i + step] != y[i : i + step])) for i in range(0, x.size, step)
    )


def view_mask(t: TensorArg) -> np.ndarray:
    """Boolean mask over t's storage: True where the view's elements live."""
    mask = np.zeros(t.storage.size, dtype=bool)
    if not t.is_empty:
        idx = TensorArg(t.dtype, t.shape, t.strides, t.offset, np.arange(t.storage.size)).view()
        mask[np.asarray(idx).reshape(-1)] = True
    return mask


def base_record(spec: OpSpec, case: Case, backend: Backend, oracle_name: str) -> Result:
    dtypes = {n: a.dtype for n, a in case.call.args.items() if isinstance(a, TensorArg)}
    layouts = {
        n: {
            "shape": list(a.shape),
            "strides": list(a.strides),
            "offset": a.offset,
            "storage": int(a.storage.size),
        }
        for n, a in case.call.args.items()
        if isinstance(a, TensorArg)
    }
    tag = dt.tag(dtypes.values())  # parameter order, as in case ids
    rec = Result(
        id=case.id,
        verdict="error",
        op=spec.name,
        aclnn_op=spec.op,
        product=case.product,
        kind=case.kind,
        dtypes=dtypes,
        dtype_tag=tag,
        layouts=layouts,
        outputs=[p.name for p in spec.outputs],
        clauses=[spec.clause(c) for c in case.clauses],
        expected_status=case.expected_status,
        seed=case.seed,
        backend=backend.name,
        oracle=oracle_name,
    )
    rec.set("out_dtype", next((dtypes[p.name] for p in spec.outputs if p.name in dtypes), None))
    binding = binding_id(spec, getattr(backend, "binding_family", None))
    if binding:
        rec.binding = binding  # what expectations select by (aten::<op>)
    return rec


def judge(
    spec: OpSpec,
    case: Case,
    backend: Backend,
    oracle: Backend,
    oracle_name: str = DEFAULT_ORACLE,
    timeout: float | None = None,
    deviations: bool = False,
    stored: StoredGolden | None = None,
    repeat: int = 1,
) -> Judged:
    """The verdict of one case; `timeout` (seconds) bounds the whole case: the oracle, the
    backend (stopped where it can be, else ruled `timeout` when it returns late) and the
    comparison, each checked between chunks; over it is `timeout`, never `error`. With
    `deviations`, a failure of exactly the kind a spec deviation naming the backend records is
    the verdict `deviation` (conformance/judge/deviations.py); a crash, timeout or error never is.
    With `stored` (a case directory's golden.json), the oracle is not evaluated: the stored
    outcome is what the case expects, and its stored policies judge the outputs. With `repeat`
    N > 1 the backend runs the call N times, each on a fresh copy: another status or other
    output bits on any run is the verdict `nondeterministic` (--repeat)."""
    rec = base_record(spec, case, backend, oracle_name)
    devs = dv.gating(spec, backend.name) if deviations else []
    rec.durations = {}

    ran: list[Outcome] = []
    wanted: list[Outcome] = []

    def done(verdict: str, reason: str, **extra: Any) -> Judged:
        rec.update(extra, verdict=verdict, reason=reason)
        return Judged(verdict, reason, rec, ran[0] if ran else None, wanted[0] if wanted else None)

    why = backend.supports(case.call)
    if why:
        return done("skip", why)
    for b in (oracle, backend) if oracle is not backend else (backend,):
        b.warm_up()  # a worker's start is not the case's time
    t0 = time.perf_counter()
    clock = Clock(None if timeout is None else time.monotonic() + timeout)
    own = case.call if oracle.capabilities.reads_inputs_only else copy.deepcopy(case.call)
    try:
        want = stored.outcome if stored is not None else oracle.expect(own, clock.at)
    except (OracleTimeout, BackendTimeout):
        return done("timeout", f"oracle {oracle_name} did not finish within {timeout:g} s")
    except Exception as exc:  # an oracle that cannot run the case: the case is in error
        return done("error", f"oracle {oracle_name} failed: {type(exc).__name__}: {exc}")
    rec.durations["oracle"] = time.perf_counter() - t0
    wanted.append(want)
    rec.oracle_status = want.status
    checks_status = stored is not None or oracle.capabilities.implements_specs
    if want.status != case.expected_status and checks_status:
        return done(
            "error",
            f"the oracle {oracle_name} returned {want.status} but the case expects "
            f"{case.expected_status}: {want.message}",
        )
    call = backend_call(spec, case.call, backend)
    if clock.passed():
        return done(
            "timeout",
            f"--timeout {timeout:g} s spent before the backend ran "
            f"(oracle {oracle_name}: {rec.durations['oracle']:.1f} s)",
        )
    if clock.at is not None:  # a kernel's first compilation is not the case's time
        m0 = time.monotonic()
        backend.prepare_call(call)
        clock.credit(time.monotonic() - m0)
    t0 = time.perf_counter()
    try:
        got = backend.execute_by(call, clock.at)
    except (BackendCrash, BackendTimeout) as exc:
        kind = "crash" if isinstance(exc, BackendCrash) else "timeout"
        if exc.device_fault:  # the device's state is suspect (a fleet counts these per device)
            rec.device_fault = True
        return done(kind, str(exc))
    except OracleTimeout:  # the reference as the backend, stopped at the deadline
        return done("timeout", f"backend {backend.name} did not finish within {timeout:g} s")
    except BackendError:
        raise  # the backend cannot run at all: the run stops (exit code 3)
    except Exception as exc:
        return done("error", f"backend raised {type(exc).__name__}: {exc}")
    rec.durations["backend"] = time.perf_counter() - t0
    if got.timings:  # the device's own timing of the call (docs/timings.md)
        rec.update(got.timings)
    ran.append(got)
    if clock.passed():  # a call that could not be interrupted, ruled when it returned
        return done(
            "timeout",
            f"backend {backend.name} took {time.perf_counter() - t0:.1f} s, "
            f"over --timeout {timeout:g} s",
        )
    rec.set("actual_status", None if got.raised else got.status)
    rec.message = got.message
    if got.raised:
        rec.raised = True
    mode = backend.capabilities.status
    for name, a in case.call.args.items():
        modified = isinstance(a, TensorArg) and not spec.param(name).is_output
        if modified and not same_bytes(call.args[name].storage, a.storage):
            return done("fail", f"input {name} was modified by the call", status_match=None)
    if repeat > 1:
        try:
            why = _repeat(spec, case, backend, got, repeat, clock)
        except BackendCrash as exc:
            return done("crash", str(exc))
        except (BackendTimeout, OracleTimeout) as exc:
            return done("timeout", str(exc) or f"the repeated runs passed --timeout {timeout:g} s")
        rec.set("repeat", repeat)
        if why:
            return done("nondeterministic", why)
    if mode == "none" and want.status != 0:
        return done("skip", f"{backend.name} does no parameter checking (expected {want.status})")
    match = (
        got.status == want.status if mode == "exact" else (got.status == 0) == (want.status == 0)
    )
    rec.status_match = match
    if not match:
        rec.differs = "status"
        dev = dv.status_deviation(spec, devs, case.call, want, got, mode) if devs else None
        if dev is not None:
            _excused(rec, spec, dev, "status")
            return done("deviation", status_reason(got, want, mode))
        return done("fail", status_reason(got, want, mode))
    t0 = time.perf_counter()
    try:
        policies = stored.policies if stored is not None else None
        verdict, failed = _judge_outputs(spec, case, want, got, rec, clock, policies)
        if verdict[0] == "fail" and failed:
            rec.differs = _differs(failed, want, got, clock)
            if devs:
                how = _value_deviation(spec, case, devs, rec.differs, failed, got, oracle, clock)
                if how is not None:
                    _excused(rec, spec, *how)
                    verdict = ("deviation", verdict[1])
    except OracleTimeout:
        return done("timeout", f"oracle {oracle_name} did not finish within {timeout:g} s")
    rec.durations["compare"] = time.perf_counter() - t0
    return done(*verdict)


def _said(o: Outcome) -> str:
    return "raised" if o.raised else f"status {o.status}"


def _repeat(
    spec: OpSpec, case: Case, backend: Backend, first: Outcome, n: int, clock: Clock
) -> str:
    """Run the call n - 1 more times on fresh copies; '' when every run gave the first run's
    status and output bits, else what differed on the first run that differed."""
    for k in range(2, n + 1):
        if clock.passed():
            raise BackendTimeout(f"--timeout passed before run {k} of {n} (--repeat)")
        call = backend_call(spec, case.call, backend)
        try:
            got = backend.execute_by(call, clock.at)
        except (BackendCrash, BackendTimeout, OracleTimeout, BackendError):
            raise
        except Exception as exc:
            if first.raised:
                continue
            return f"run {k} of {n} raised {type(exc).__name__}: {first_line(str(exc))}; run 1 gave {_said(first)}"
        if (got.raised, got.status) != (first.raised, first.status):
            return f"run 1 gave {_said(first)}, run {k} of {n} {_said(got)} (--repeat)"
        for name, a in first.outputs.items():
            b = got.outputs.get(name)
            if b is None or b.shape != a.shape or b.dtype != a.dtype:
                return f"{name}: run {k} of {n} returned no storage like run 1's (--repeat)"
            if not same_bytes(a, b):
                x = a.reshape(-1).view(np.uint8).reshape(a.size, -1)
                y = b.reshape(-1).view(np.uint8).reshape(b.size, -1)
                elems = int(np.count_nonzero((x != y).any(axis=1)))
                return (
                    f"{name}: run {k} of {n} differs from run 1 in {elems} of {a.size} storage "
                    f"elements ({changed_bytes(a, b)} bytes) (--repeat)"
                )
    return ""


@dataclass
class _Failed:
    """An output whose values did not pass, with what is needed to judge it again."""

    name: str
    t: TensorArg
    out: np.ndarray
    policy: Any
    inputs: dict[str, np.ndarray]
    cmp: Any
    want: Outcome | None = None  # the oracle's outcome it was compared with


def _excused(rec: Result, spec: OpSpec, dev: Any, how: str, extra: tuple[Any, ...] = ()) -> None:
    """Record that spec deviation `dev` (and `extra`, tried together) excuses the failure."""
    rec.verdict_before_expectation = "fail"
    rec.expectation = {
        "match": f"{spec.name}/*",
        "kind": "deviation",
        "reason": dev.summary,
        "deviation": spec.clause(dev.id),
        "differs": dev.differs,
        "checked": how,
        "where": f"{spec.path}:{dev.line}",
    }
    if extra:
        rec.expectation["deviations"] = [spec.clause(d.id) for d in (dev, *extra)]


def _differs(failed: list[_Failed], want: Outcome, got: Outcome, clock: Clock) -> str:
    """`nonfinite` when every failing output differs only where the expected or the actual
    value is NaN or infinite (the finite elements pass), else `values`."""
    for f in failed:
        s = f.cmp.stats
        if not (s.nan_mismatches or s.inf_mismatches):
            return "values"
        again = _stream_compare(f.t, f.out, want, f.name, f.policy, f.inputs, clock, mask=f.t.dtype)
        if not again.passed:
            return "values"
    return "nonfinite"


def _value_deviation(
    spec: OpSpec,
    case: Case,
    devs: list[Any],
    differs: str,
    failed: list[_Failed],
    got: Outcome,
    oracle: Backend,
    clock: Clock,
) -> tuple[Any, ...] | None:
    """(deviation, how it was checked[, the others tried with it]) for an output mismatch
    that a values or nonfinite deviation of this case excuses, else None."""
    found = dv.value_deviations(spec, devs, case.call, case.clauses)
    if not found:
        return None
    if differs == "nonfinite":
        for d in found:
            if d.differs == "nonfinite":
                return d, "nonfinite: the finite elements pass; only NaN/inf placement differs"
    nonfinite = next((d for d in found if d.differs == "nonfinite"), None)
    for d in found:
        if d.differs != "values" or not d.bound:
            continue
        if all(_within_bound(f, d.bound, clock) for f in failed):
            return d, f"values: every element within {dv.bound_text(d.bound)} of the formula"
        # the bound on the finite elements, NaN/inf placed as a nonfinite deviation says
        if nonfinite is not None and all(
            _within_bound(f, d.bound, clock, masked=True) for f in failed
        ):
            return (
                d,
                f"values and nonfinite: every finite element within {dv.bound_text(d.bound)} "
                "of the formula; only NaN/inf placement differs",
                (nonfinite,),
            )
    if not oracle.capabilities.implements_specs:
        return None  # only an oracle that computes the specs can compute a derived one
    for trial in dv.formula_trials(found):
        alt = oracle.with_registry(Registry([dv.derived(spec, trial)]))
        own = case.call if alt.capabilities.reads_inputs_only else copy.deepcopy(case.call)
        try:
            want = alt.expect(own, clock.at)
        except OracleTimeout:
            raise
        except Exception:  # the derived formula cannot be computed here: nothing is excused
            continue
        outputs = _outputs(spec, case, got)
        if all(
            _stream_compare(f.t, f.out, want, f.name, f.policy, f.inputs, clock).passed
            for f in outputs
        ):
            return (
                trial[0],
                "values: the output passes against the deviation's formula",
                tuple(trial[1:]),
            )
        # the formula's values, with NaN/inf placed as a nonfinite deviation of the case says
        if nonfinite is not None and all(
            _stream_compare(
                f.t, f.out, want, f.name, f.policy, f.inputs, clock, mask=f.t.dtype
            ).passed
            for f in outputs
        ):
            return (
                trial[0],
                "values and nonfinite: the finite elements pass against the deviation's "
                "formula; only NaN/inf placement differs",
                (*trial[1:], nonfinite),
            )
    return None


def _outputs(spec: OpSpec, case: Case, got: Outcome) -> list[_Failed]:
    """Every compared output of a valid case (the formula's alternative must fit them all)."""
    out = []
    for p in spec.outputs:
        t = case.call.args.get(p.name)
        if not isinstance(t, TensorArg) or t.is_empty or p.unused:
            continue
        inputs = _inputs_shown(spec, case.call, t.shape)
        policy = policy_for(tolerance_dtype(spec, case.call, t.dtype), spec.tolerance_of(p.name))
        out.append(_Failed(p.name, t, got.outputs[p.name], policy, inputs, None))
    return out


def _within_bound(f: _Failed, bound: dict[str, float], clock: Clock, masked: bool = False) -> bool:
    """Every element of output `f` within `bound` of the formula (`masked`: the finite ones)."""
    check = dv.BoundCheck(f.t.dtype, bound)
    for _, g, a in _pairs(f.t, f.out, f.want, f.name, clock):  # type: ignore[arg-type]
        if masked:
            g, a = dv.mask_nonfinite(g, a, f.t.dtype)
        check.add(g, a)
    return check.violations == 0


def first_line(text: str, limit: int = 200) -> str:
    """The first non-blank line of a backend's message, cut to `limit` characters."""
    line = next((ln.strip() for ln in str(text).splitlines() if ln.strip()), "")
    return line if len(line) <= limit else line[: limit - 3] + "..."


def status_reason(got: Outcome, want: Outcome, mode: str) -> str:
    """Why the statuses disagree, in the backend's own words: a backend with no status codes
    that raised is said to have raised, never given an invented status code."""
    said = first_line(got.message)
    expected = f"{want.status} ({status_name(want.status)})"
    if want.status != 0 and want.clause:
        expected += f" by {want.clause}"
    if got.raised:
        return f"backend raised {said or 'an exception'}; the spec expects status {expected}"
    if mode != "exact" and got.status == 0:
        return f"backend accepted the call; the spec expects status {expected}"
    text = f"status {got.status} ({status_name(got.status)}), expected {expected}"
    return f"{text}; backend said: {said}" if said else text


def _judge_outputs(
    spec, case, want: Outcome, got: Outcome, rec, clock: Clock, policies: dict | None = None
) -> tuple[tuple[str, str], list[_Failed]]:
    """The verdict of the outputs, and the outputs whose values failed (none when the failure
    is of another kind: no storage, a write where nothing may be written, outside the view).
    `policies`: the stored policy of each output (--golden stored), else the spec's."""
    reasons: list[str] = []
    failed: list[_Failed] = []
    for p in spec.outputs:
        t = case.call.args.get(p.name)
        if not isinstance(t, TensorArg):
            continue
        original = t.storage  # the case's own: the backend wrote into its copy
        out = got.outputs.get(p.name)
        if out is None or out.shape != t.storage.shape or out.dtype != t.storage.dtype:
            why = f"{p.name}: backend returned no storage of {t.storage.size} {t.dtype}"
            return ("fail", why), []
        if want.status != 0 or t.is_empty or want.nothing_written or p.unused:
            if not same_bytes(out, original):
                changed = changed_bytes(out, original)
                why = f"{p.name}: output storage written ({changed} bytes) where nothing may be"
                if p.unused and want.status == 0:
                    why += " (the op never writes it: unused)"
                return ("fail", why), []
            continue
        outside = _outside_changed(t, out, original)
        if outside:
            why = f"{p.name}: wrote outside its view ({outside} bytes in gaps/padding changed)"
            return ("fail", why), []
        random = _random_formula(spec, case.call, p.name)
        if random is not None:  # a random output: its relations, not the oracle's draw
            why = relation_failures(spec, random, case.call, got, clock)
            rec.comparisons = rec.comparisons or {}
            rec.comparisons[p.name] = {"relations": [r.id for r in random.relations],
                                       "passed": not why}  # fmt: skip
            if why:
                reasons.append(f"{p.name}: {why}")
                rec.differs = "values"  # an output's values break a relation
            continue
        inputs = _inputs_shown(spec, case.call, t.shape)
        if policies is not None and p.name in policies:
            tol, policy = policies[p.name]["dtype"], policy_from(policies[p.name])
        else:
            tol = tolerance_dtype(spec, case.call, t.dtype)
            policy = policy_for(tol, spec.tolerance_of(p.name))
        rec.tolerance_dtype = tol
        cmp = _stream_compare(t, out, want, p.name, policy, inputs, clock)
        rec.comparisons = rec.comparisons or {}
        rec.comparisons[p.name] = cmp.to_dict()
        # what judged it, so that a report needs no spec to explain the figures
        shown = policy_dict(tol, policy)
        rec.comparisons[p.name]["policy"] = {
            k: shown[k] for k in ("dtype", "rel", "max_ratio", "small_threshold", "small_atol")
        }
        rec.stats = cmp.stats.to_dict()
        rec.worst = [w.to_dict() for w in cmp.worst]
        if not cmp.passed:
            reasons.append(f"{p.name}: " + "; ".join(cmp.reasons))
            failed.append(_Failed(p.name, t, out, policy, inputs, cmp, want))
    return (("fail", " | ".join(reasons)) if reasons else ("pass", "")), failed


def _inputs_shown(spec: OpSpec, call: Call, shape: tuple[int, ...]) -> dict[str, np.ndarray]:
    """The inputs broadcast to an output's shape, to show beside its worst elements; an input
    that does not broadcast to it (an output a shape rule reduces: a mean's scalar) is left
    out, as is an absent optional tensor."""
    out = {}
    for q in spec.tensor_inputs:
        if call.args.get(q.name) is None:
            continue
        try:
            out[q.name] = np.broadcast_to(call.tensor(q.name).view(), shape)
        except ValueError:
            continue
    return out


def _random_formula(spec: OpSpec, call: Call, output: str) -> Any:
    """The formula of `output` when it is random in this call (it has relations and its
    `random_when` holds), else None."""
    f = spec.formula_of(output)
    if f is None or not f.relations:
        return None
    if f.random_when is not None:
        env = attribute_env(spec, with_defaults(spec, call))
        if not bool(np.all(f.random_when.evaluate(env))):
            return None
    return f


def relation_failures(
    spec: OpSpec, formula: Any, call: Call, got: Outcome, clock: Clock | None = None
) -> str:
    """'' when every relation of `formula` holds at every element of the backend's outputs,
    else which relation fails where. The inputs and outputs are read whole, as float64, in the
    formula output's shape (inputs broadcast to it). An `equals` relation is judged like a
    computed output: the expression's float64 value is the golden, under the output's policy.
    An in/out tensor reads its written value, but for an in-place variant's own tensor
    (spec.inplace_tensor), which reads its value before the call: its written value is the
    relation's subject (an in-place noise product: self = self before x noise)."""
    t = call.tensor(formula.output)
    shape = t.shape
    env: dict[str, Any] = attribute_env(spec, with_defaults(spec, call))
    written: dict[str, np.ndarray] = {}
    with np.errstate(all="ignore"):
        for q in spec.tensor_inputs:
            env[q.name] = np.broadcast_to(call.tensor(q.name).view(), shape).astype(np.float64)
        for q in spec.outputs:
            t_q = call.args.get(q.name)
            if isinstance(t_q, TensorArg) and not q.unused and q.name in got.outputs:
                view = TensorArg(t_q.dtype, t_q.shape, t_q.strides, t_q.offset, got.outputs[q.name])
                written[q.name] = np.asarray(view.view()).astype(np.float64)
                if q.name != spec.inplace_tensor:
                    env[q.name] = written[q.name]
        for r in formula.relations:
            where = (
                np.broadcast_to(np.asarray(r.where.evaluate(env), dtype=bool), shape)
                if r.where is not None
                else np.ones(shape, dtype=bool)
            )
            if r.form == "equals":
                why = _equals_failure(spec, formula.output, r, call, t, got, env, where, clock)
                if why:
                    return f"relation {spec.clause(r.id)} ({r.equals.source}): {why}"
                continue
            if r.form == "within":
                ok = _within(t.dtype, written[formula.output], *(e.evaluate(env) for e in r.within))
            else:
                ok = np.asarray(r.holds.evaluate(env), dtype=bool)
            ok = np.broadcast_to(ok, shape) | ~where
            bad = int(np.count_nonzero(~ok))
            if bad:
                first = tuple(int(i) for i in np.argwhere(~ok)[0])
                names = sorted({n for e in r.exprs for n in e.names} | {formula.output})
                seen = {**env, formula.output: written[formula.output]}
                shown = ", ".join(
                    f"{n}={float(np.broadcast_to(seen[n], shape)[first]):.9g}"
                    for n in names
                    if n in seen and isinstance(seen[n], np.ndarray)
                )
                text = (
                    " in ".join(e.source for e in r.exprs[::-1]) if r.within else r.exprs[-1].source
                )
                return (
                    f"relation {spec.clause(r.id)} ({text}) fails at {bad} of "
                    f"{ok.size} elements, first at {list(first)}: {shown}"
                )
    return ""


def _within(dtype: str, v: np.ndarray, lo: Any, hi: Any) -> np.ndarray:
    """lo <= v <= hi with each bound moved to the dtype's next value outward (the bound's
    rounding to the dtype, then one more step): a float32 draw in [lo, hi] cast to the
    dtype, or computed as lo + u * (hi - lo) with float32 roundings, stays inside."""
    ty = dt.get(dtype).np
    lo64 = np.asarray(lo, np.float64)
    hi64 = np.asarray(hi, np.float64)
    lo_t = np.nextafter(lo64.astype(ty), np.asarray(-np.inf, ty)).astype(np.float64)
    hi_t = np.nextafter(hi64.astype(ty), np.asarray(np.inf, ty)).astype(np.float64)
    return (np.minimum(lo_t, lo64) <= v) & (v <= np.maximum(hi_t, hi64))


def _equals_failure(
    spec: OpSpec,
    output: str,
    r: Any,
    call: Call,
    t: TensorArg,
    got: Outcome,
    env: dict[str, Any],
    where: np.ndarray,
    clock: Clock | None,
) -> str:
    """'' when the output equals the relation's value (exact, as a golden; past the output
    dtype's range, the infinity it holds) where it applies, under the output's tolerance
    policy; elements outside `where` are compared with themselves."""
    name = r.id
    out = got.outputs[output]
    actual = np.asarray(TensorArg(t.dtype, t.shape, t.strides, t.offset, out).view()).astype(
        np.float64
    )
    value = np.broadcast_to(np.asarray(r.equals.evaluate(env), np.float64), t.shape)
    held = value.astype(dt.get(t.dtype).np).astype(np.float64)  # what out's dtype can hold
    value = np.where(np.isinf(held) & np.isfinite(value), held, value)  # an overflow: inf
    golden = np.where(where, value, actual)
    tol = tolerance_dtype(spec, call, t.dtype)
    policy = policy_for(tol, spec.tolerance_of(output))
    want = Outcome(0, golden={name: np.asarray(golden, np.float64)})
    cmp = _stream_compare(t, out, want, name, policy, {}, clock)
    return "" if cmp.passed else "; ".join(cmp.reasons)


def _outside_changed(t: TensorArg, out: np.ndarray, original: np.ndarray) -> int:
    """Bytes changed outside t's view (gaps, padding); a dense view is checked by its ends."""
    if FlatView(t, t.shape).contiguous:
        head, tail = slice(0, t.offset), slice(t.offset + t.numel, None)
        return sum(changed_bytes(out[s], original[s]) for s in (head, tail))
    outside = ~view_mask(t)
    return changed_bytes(out[outside], original[outside])


def _pairs(
    t: TensorArg, out: np.ndarray, want: Outcome, name: str, clock: Clock | None = None
) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """(start, golden, actual) for flat chunks of an output view, the golden streamed from the
    oracle where it gives one (computed again on each pass); the case's clock is checked
    between chunks (OracleTimeout)."""
    clock = clock or Clock(None)
    actual = FlatView(TensorArg(t.dtype, t.shape, t.strides, t.offset, out), t.shape)
    golden = want.golden.get(name)
    if hasattr(golden, "chunks"):
        t0 = time.monotonic()
        golden.prepare()  # kernels compiled: not charged to the case
        clock.credit(time.monotonic() - t0)
        for start, stop, g in golden.chunks(deadline=clock.at):
            yield start, g, actual.get(start, stop)
        return
    if golden is None or golden.shape != tuple(t.shape):
        src = TensorArg(t.dtype, t.shape, t.strides, t.offset, want.outputs[name])
        get = FlatView(src, t.shape).get
    else:
        flat = np.asarray(golden).reshape(-1)
        get = lambda a, b: flat[a:b]  # noqa: E731
    for start, stop in ranges(actual.size, Accumulator.chunk):
        if clock.passed():
            raise OracleTimeout("the comparison did not finish within --timeout")
        yield start, get(start, stop), actual.get(start, stop)


def _stream_compare(
    t: TensorArg,
    out: np.ndarray,
    want: Outcome,
    name: str,
    policy: Any,
    inputs: dict[str, np.ndarray],
    clock: Clock | None = None,
    mask: str | None = None,
) -> Any:
    """Compare the backend's output view with the oracle's golden, a chunk at a time; `mask`
    (the output dtype): leave out every element where either side is NaN or infinite."""
    acc = Accumulator(t.dtype, policy, tuple(t.shape), inputs)
    for start, g, a in _pairs(t, out, want, name, clock):
        if mask:
            g, a = dv.mask_nonfinite(g, a, mask)
        acc.add(start, g, a)
    return acc.result()


def _mantissa_bits(name: str) -> int:
    return dt.float_format(name).mant


def tolerance_dtype(spec: OpSpec, call: Call, out_dtype: str) -> str:
    """The dtype whose tolerance policy applies: the output's, unless the float inputs promote to
    a less precise type. Implementations compute in the promoted type and then cast (aclnn-facts
    §2.3, §6.3), so an f16 x f16 -> f32 result is only ever f16-accurate."""
    info = dt.get(out_dtype)
    parts = {"COMPLEX64": "FLOAT", "COMPLEX128": "DOUBLE"}.get(info.name)
    if parts is not None:  # a complex output is as precise as its real parts
        inner = tolerance_dtype(spec, call, parts)
        return out_dtype if inner == parts else inner
    if not info.is_float or info.opaque:
        return out_dtype
    tables = dt.tables()
    promoted: str | None = None
    for p in spec.tensor_inputs:
        a = call.args.get(p.name)
        if not isinstance(a, TensorArg) or not dt.get(a.dtype).is_float or dt.get(a.dtype).opaque:
            continue
        promoted = a.dtype if promoted is None else tables.promote(promoted, a.dtype)
        if promoted is None:
            return out_dtype
    if promoted is None or _mantissa_bits(promoted) >= _mantissa_bits(out_dtype):
        return out_dtype
    return promoted
