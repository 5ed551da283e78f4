"""Performance measurements of the suite: a script, not a test (it asserts nothing).

    python tests/bench/bench.py [--quick] [--out FILE.json] [--profile]

1. cases/s of generation (plan_suite + build), reference evaluation alone, compare() alone, and the
   judge() overhead per small case (judge with the reference as backend and oracle, minus 2x
   evaluate of the same case);
2. wall time of `aclnn-conform run -q` over the default suite (reference and torch, --jobs 1/2);
3. per op on 2^24 and 2^26 float32 elements (--quick: 2^24, two ops): evaluate() against the torch
   CPU kernel (same inputs and process, each warmed once), and the evaluation's peak RSS against
   the case's tensor bytes, each measured in a fresh subprocess (peak reset after the build).

Prints a Markdown table (met / missed per target) and writes everything as JSON with --out.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
TARGETS = {"suite_s": 60.0, "overhead_ms": 1.0, "torch_ratio": 3.0, "rss_ratio": 4.0}
# (spec name, approximate or None); the first two are --quick's
OPS = [("leaky_relu_backward", None), ("gelu_backward_v2", "none"), ("softplus_backward", None),
       ("elu_backward", None), ("hardshrink_backward", None), ("gelu_backward_v2", "tanh")]  # fmt: skip
SMALL = 4096  # a case is small when each tensor has at most this many elements


def mark(ok: bool) -> str:
    return "met" if ok else "**missed**"


def timed(fn):
    """(fn(), seconds it took)."""
    t0 = time.perf_counter()
    r = fn()
    return r, time.perf_counter() - t0


def best_of(fn, k: int) -> float:
    """The shortest of k timed calls of fn (after whatever warm-up the caller did)."""
    return min(timed(fn)[1] for _ in range(k))


# -- 1. pipeline throughput ------------------------------------------------------------------


def pipeline() -> dict:
    from conformance.call import TensorArg
    from conformance.compare import compare, policy_for
    from conformance.execute import judge, tolerance_dtype
    from conformance.generate import build, plan_suite
    from conformance.registry import default_registry
    from reference.backend import ReferenceBackend
    from reference.engine import evaluate

    pairs, t_plan = timed(lambda: plan_suite(default_registry()))
    cases, t_build = timed(lambda: [(spec, build(spec, plan, 0)) for spec, plan in pairs])
    n = len(cases)
    outcomes, evals = zip(*(timed(lambda c=c: evaluate(c.call)) for _, c in cases), strict=True)

    t_cmp, n_cmp = 0.0, 0
    for (spec, case), out in zip(cases, outcomes, strict=True):
        if out.status != 0 or out.nothing_written:
            continue
        for p in spec.outputs:
            t = case.call.args.get(p.name)
            if not isinstance(t, TensorArg) or t.is_empty:
                continue
            view = TensorArg(t.dtype, t.shape, t.strides, t.offset, out.outputs[p.name]).view()
            golden = out.golden.get(p.name)
            golden = view if golden is None or golden.shape != view.shape else golden
            ins = {q.name: np.broadcast_to(case.call.tensor(q.name).view(), t.shape)
                   for q in spec.tensor_inputs}  # fmt: skip
            pol = policy_for(tolerance_dtype(spec, case.call, t.dtype), spec.tolerance)
            t_cmp += timed(lambda: compare(golden, view, t.dtype, pol, inputs=ins))[1]  # noqa: B023
            n_cmp += 1

    ref = ReferenceBackend()
    small = [i for i, (_, c) in enumerate(cases)
             if all(a.numel <= SMALL for a in c.call.args.values() if isinstance(a, TensorArg))]  # fmt: skip
    best_e = {i: evals[i] for i in small}
    best = {i: (np.inf, {}) for i in small}  # best of two rounds per case: the machine is shared
    for _ in range(2):
        for i in small:
            spec, case = cases[i]
            best_e[i] = min(best_e[i], timed(lambda: evaluate(case.call))[1])  # noqa: B023
            judged, took = timed(lambda: judge(spec, case, ref, ref))  # noqa: B023
            best[i] = min(best[i], (took, judged.record["durations"]), key=lambda b: b[0])
    m = len(small)
    judge_ms = 1e3 * sum(b[0] for b in best.values()) / m
    eval_ms = 1e3 * sum(best_e.values()) / m
    part = {k: 1e3 * sum(b[1].get(k, 0.0) for b in best.values()) / m
            for k in ("oracle", "backend", "compare")}  # fmt: skip
    return {
        "cases": n, "plan_s": t_plan, "build_s": t_build,
        "generation_cases_per_s": n / (t_plan + t_build),
        "evaluate_s": sum(evals), "evaluate_cases_per_s": n / sum(evals),
        "compare_calls": n_cmp, "compare_s": t_cmp, "compare_per_s": n_cmp / t_cmp,
        "small_cases": m, "judge_ms": judge_ms, "evaluate_ms": eval_ms,
        "overhead_ms": judge_ms - 2 * eval_ms, "judge_parts_ms": part,
        "judge_compare_ms": part["compare"], "judge_glue_ms": judge_ms - sum(part.values()),
    }  # fmt: skip


# -- 2. the default suite through the CLI ----------------------------------------------------


def suite(backend: str, jobs: int) -> dict:
    exe = Path(sys.executable).with_name("aclnn-conform")  # this interpreter's console script
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "cli.main"]
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "r.jsonl"
        args = [*cmd, "run", "-q", "--backend", backend, "--jobs", str(jobs)]
        args += ["--results", str(results)]
        load = os.getloadavg()[0]
        t0 = time.perf_counter()
        proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        verdicts: dict[str, int] = {}
        lines = results.read_text().splitlines() if results.exists() else []
        for line in lines:
            v = json.loads(line).get("verdict", "?")
            verdicts[v] = verdicts.get(v, 0) + 1
        meta = Path(f"{results}.meta.json")
        run_s = json.loads(meta.read_text())["seconds"] if meta.exists() else float("nan")
    return {"backend": backend, "jobs": jobs, "wall_s": wall, "run_s": run_s, "cases": len(lines),
            "rc": proc.returncode, "verdicts": verdicts, "load_before": load}  # fmt: skip


# -- 3. large tensors, one fresh subprocess per measurement -----------------------------------


def make_call(op: str, approx: str | None, n: int):
    from conformance.call import Call, ScalarArg, TensorArg
    from conformance.registry import default_registry

    spec = default_registry().get(op)
    rng = np.random.default_rng(0)
    args = {}
    for p in spec.params:
        if p.is_tensor:
            a = rng.standard_normal(n, dtype=np.float32)  # N(0, 2) as the "normal" value kind
            a *= 2
            args[p.name] = TensorArg("FLOAT", (n,), (1,), 0, a)
        elif p.kind == "scalar":
            args[p.name] = ScalarArg(p.default_dtype or "FLOAT", p.default)
        elif p.kind == "bool":
            args[p.name] = bool(p.default)
        else:
            args[p.name] = approx if p.name == "approximate" else p.default
    call = Call(spec.name, spec.products[0], args)
    nbytes = sum(a.storage.nbytes for a in args.values() if isinstance(a, TensorArg))
    return spec, call, nbytes


def _status_kib(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return -1


def child_rss(op: str, approx: str | None, log2n: int) -> dict:
    from reference.engine import evaluate

    _, call, nbytes = make_call(op, approx, 1 << log2n)
    base = _status_kib("VmRSS")
    try:  # reset the peak (VmHWM and ru_maxrss) to the current RSS: only the evaluation counts
        Path("/proc/self/clear_refs").write_text("5")
        reset = True
    except OSError:
        reset = False
    maxrss_reset = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    evaluate(call)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"tensor_bytes": nbytes, "base_rss": base * 1024, "peak_rss": peak * 1024,
            "delta": (peak - base) * 1024, "peak_reset": reset,
            "maxrss_after_reset": maxrss_reset * 1024}  # fmt: skip


def child_time(op: str, approx: str | None, log2n: int, profile: bool) -> dict:
    import torch

    from conformance.backends.torch_backend import parse_aten_binding
    from conformance.call import ScalarArg, TensorArg
    from reference import engine, precise

    spec, call, _ = make_call(op, approx, 1 << log2n)
    stats = {"refined": 0, "refine_s": 0.0, "midpoint_s": 0.0}

    def wrap(fn, key):  # time (and for refine: count the elements of) every call
        def inner(*a):
            r, took = timed(lambda: fn(*a))
            stats[key] += took
            stats["refined"] += int(np.count_nonzero(a[3])) if key == "refine_s" else 0
            return r

        return inner

    precise.refine = wrap(precise.refine, "refine_s")
    precise.near_midpoint = wrap(precise.near_midpoint, "midpoint_s")
    engine.evaluate(call)  # warm
    stats.update(refined=0, refine_s=0.0, midpoint_s=0.0)
    repeat = 2 if log2n <= 24 else 1
    ref_s = best_of(lambda: engine.evaluate(call), repeat)
    b = parse_aten_binding(spec)

    def conv(v):
        if isinstance(v, TensorArg):
            return torch.from_numpy(v.storage)
        return v.as_float64() if isinstance(v, ScalarArg) else v

    fn = getattr(torch.ops.aten, b.op).default
    args = [conv(call.args[n]) for n in b.args]
    kwargs = {k: conv(call.args[n]) for k, n in b.kwargs}
    out = {"ref_s": ref_s, "threads": torch.get_num_threads(),
           "refined": stats["refined"] // repeat, "refine_s": stats["refine_s"] / repeat,
           "midpoint_s": stats["midpoint_s"] / repeat}  # fmt: skip
    for key, threads in (("torch_s", out["threads"]), ("torch1_s", 1)):
        torch.set_num_threads(threads)
        fn(*args, **kwargs)  # warm
        out[key] = best_of(lambda: fn(*args, **kwargs), 5)
    if profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.runcall(engine.evaluate, call)
        pstats.Stats(prof, stream=sys.stderr).sort_stats("tottime").print_stats(12)
    return out


def large(op: str, approx: str | None, log2n: int, profile: bool) -> dict:
    row = {"op": op, "approximate": approx, "log2n": log2n, "load_before": os.getloadavg()[0]}
    for kind in ("time", "rss"):
        args = [sys.executable, __file__, "--child", kind, op, str(approx), str(log2n)]
        proc = subprocess.run(args + (["--profile"] if profile else []), cwd=ROOT, text=True,
                              capture_output=True)  # fmt: skip
        if proc.returncode:
            raise RuntimeError(f"{' '.join(args)} failed:\n{proc.stderr}")
        if profile and kind == "time":
            print(proc.stderr, file=sys.stderr)
        row.update(json.loads(proc.stdout.strip().splitlines()[-1]))
    row["ratio"] = row["ref_s"] / row["torch_s"]
    row["ratio_1thread"] = row["ref_s"] / row["torch1_s"]
    row["rss_ratio"] = row["delta"] / row["tensor_bytes"]
    row["abs_ratio"] = row["peak_rss"] / row["tensor_bytes"]
    return row


# -- report ----------------------------------------------------------------------------------


def markdown(res: dict) -> str:
    p, t = res["pipeline"], TARGETS
    env = res["env"]
    out = [f"Measured {env['date']} on {env['cpus']} CPUs ({env['machine']}), Python {env['python']},"
           f" numpy {env['numpy']}, torch {env['torch']}; load average {env['load_start']:.2f} at "
           f"start, {env['load_end']:.2f} at end.", "",
           "| Measurement | Value | Target | Status |", "|---|---|---|---|",
           f"| generation (plan + build), {p['cases']} cases | {p['generation_cases_per_s']:.0f} "
           f"cases/s ({p['plan_s']:.2f} s + {p['build_s']:.2f} s) | - | - |",
           f"| reference evaluate() alone | {p['evaluate_cases_per_s']:.0f} cases/s "
           f"({p['evaluate_s']:.2f} s) | - | - |",
           f"| compare() alone, {p['compare_calls']} outputs | {p['compare_per_s']:.0f} /s "
           f"({p['compare_s']:.2f} s) | - | - |",
           f"| judge() - 2x evaluate(), {p['small_cases']} small cases | {p['overhead_ms']:.3f} ms"
           f" (judge {p['judge_ms']:.3f}, evaluate {p['evaluate_ms']:.3f}; of which output checks "
           f"{p['judge_compare_ms']:.3f}, glue {p['judge_glue_ms']:.3f}) | <= {t['overhead_ms']:g} ms"
           f" | {mark(p['overhead_ms'] <= t['overhead_ms'])} |"]  # fmt: skip
    for s in res["suite"]:
        target = s["backend"] == "reference"
        ok = mark(s["wall_s"] <= t["suite_s"]) if target else "-"
        goal = f"<= {t['suite_s']:g} s" if target else "-"
        verdicts = ", ".join(f"{v} {k}" for k, v in sorted(s["verdicts"].items()))
        out.append(f"| `run` default suite, {s['backend']}, --jobs {s['jobs']} | {s['wall_s']:.1f} s "
                   f"({s['run_s']:.1f} s running cases; {s['cases']} cases: {verdicts}; exit "
                   f"{s['rc']}) | {goal} | {ok} |")  # fmt: skip
    out += ["", "| op (float32) | elements | reference | torch CPU | ratio (1-thread torch) | "
            "midpoint check | refined elements (time) | peak RSS delta / tensor bytes | "
            "absolute peak | status |", "|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in res["large"]:
        name = r["op"] + (f" ({r['approximate']})" if r["approximate"] else "")
        status = (f"time {mark(r['ratio'] <= t['torch_ratio'])}, "
                  f"RSS {mark(r['rss_ratio'] <= t['rss_ratio'])}")  # fmt: skip
        out.append(
            f"| {name} | 2^{r['log2n']} | {r['ref_s']:.2f} s | {1e3 * r['torch_s']:.0f} ms "
            f"({r['threads']} thr) | {r['ratio']:.0f}x ({r['ratio_1thread']:.0f}x) | "
            f"{r['midpoint_s']:.2f} s | {r['refined']} ({r['refine_s']:.2f} s) | "
            f"{r['delta'] / 2**20:.0f} / {r['tensor_bytes'] / 2**20:.0f} MiB = "
            f"{r['rss_ratio']:.2f}x | {r['peak_rss'] / 2**20:.0f} MiB ({r['abs_ratio']:.2f}x) | "
            f"{status} |"
        )
    out.append(f"\nTargets: ratio <= {t['torch_ratio']:g}x torch; peak RSS delta (the evaluation's "
               f"own memory) <= {t['rss_ratio']:g}x the tensors' bytes (inputs + output storage).")  # fmt: skip
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2^24 elements and two ops only")
    ap.add_argument("--out", type=Path, help="write the results as JSON")
    ap.add_argument("--profile", action="store_true", help="cProfile each large evaluation")
    ap.add_argument("--child", nargs=4, metavar=("KIND", "OP", "APPROX", "LOG2N"),
                    help=argparse.SUPPRESS)  # fmt: skip
    a = ap.parse_args()
    if a.child:
        kind, op, approx, log2n = a.child
        approx = None if approx == "None" else approx
        res = (child_time(op, approx, int(log2n), a.profile) if kind == "time"
               else child_rss(op, approx, int(log2n)))  # fmt: skip
        print(json.dumps(res))
        return
    import torch

    env = {"date": time.strftime("%Y-%m-%d %H:%M"), "cpus": os.cpu_count(),
           "machine": platform.machine(), "python": platform.python_version(),
           "numpy": np.__version__, "torch": torch.__version__,
           "load_start": os.getloadavg()[0]}  # fmt: skip
    res: dict = {"env": env, "targets": TARGETS}
    sizes, ops = ([24], OPS[:2]) if a.quick else ([24, 26], OPS)
    # large tensors first: each runs in its own process, the parent stays small
    res["large"] = []
    for log2n in sizes:
        for op, approx in ops:
            print(f"large: {op} {approx or ''} 2^{log2n}", file=sys.stderr, flush=True)
            res["large"].append(large(op, approx, log2n, a.profile))
    print("pipeline", file=sys.stderr, flush=True)
    res["pipeline"] = pipeline()
    res["suite"] = []
    for backend in ("reference", "torch"):
        for jobs in (1, 2):
            print(f"suite: {backend} --jobs {jobs}", file=sys.stderr, flush=True)
            res["suite"].append(suite(backend, jobs))
    env["load_end"] = os.getloadavg()[0]
    if a.out:
        a.out.write_text(json.dumps(res, indent=1) + "\n")
    print(markdown(res))


if __name__ == "__main__":
    main()
