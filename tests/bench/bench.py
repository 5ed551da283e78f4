"""Performance measurements of the suite: a script, not a test (it asserts nothing).

    python tests/bench/bench.py [--quick] [--out FILE.json] [--update-docs]
    python tests/bench/bench.py --from FILE.json --update-docs   (the table only, nothing measured)

1. per op and output dtype (FLOAT at 2^26, FLOAT16 / BF16 and DOUBLE at 2^22; --quick:
   2^22 and the seed ops), the reference's elements/s against the torch CPU kernel in the same
   process, and that process's peak RSS (tests/bench/bench_ops.py, one fresh process per row);
   an op that reduces over a dim (softmax, log_softmax and their backwards) runs on a square
   matrix along its last dim ([8192, 8192] at 2^26);
2. `aclnn-conform run --cases` on one 2^28-element fp32 case (leaky_relu_backward) against the
   reference: wall time and the peak RSS of the run against the case's tensor bytes;
3. `run --profile large` for one op (all of its model-scale cases): wall time and verdicts;
4. cases/s of generation, reference evaluation and compare() over the default suite, the judge()
   overhead per small case, and the default suite's wall time through the CLI.

Prints Markdown tables. --update-docs writes the results to docs/benchmarks.json and rewrites the
table of docs/benchmarks.md between its bench markers from them (tests/test_docs.py checks that
the page is what this script makes of that JSON).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
SMALL = 4096  # a case is small when each tensor has at most this many elements


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
    from aclnn_conformance.conformance.acl.call import TensorArg
    from aclnn_conformance.conformance.cases.generate import build, plan_suite
    from aclnn_conformance.conformance.judge.accumulate import compare
    from aclnn_conformance.conformance.run.judging import judge, tolerance_dtype
    from aclnn_conformance.conformance.spec.registry import default_registry
    from aclnn_conformance.conformance.spec.tolerances import policy_for
    from aclnn_conformance.reference.backend import ReferenceBackend
    from aclnn_conformance.reference.engine import evaluate

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
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "aclnn_conformance.cli.main"]
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


# -- 3. per op and dtype, one fresh subprocess per row -----------------------------------------

SIZES = {"FLOAT": 26, "FLOAT16": 22, "BF16": 22, "DOUBLE": 22}  # FLOAT: the targets' size
ROW_TIMEOUT = 120  # seconds per row: a row past it is reported as such
SEED_OPS = ("leaky_relu_backward", "hardshrink_backward", "softplus_backward", "elu_backward",
            "gelu_backward_v2")  # fmt: skip


def per_op(
    quick: bool, only: list[str] | None = None, dtypes: list[str] | None = None
) -> list[dict]:
    from aclnn_conformance.conformance.spec.registry import default_registry

    reg = default_registry()
    ops = SEED_OPS if quick else [n for n in reg.names() if not reg.get(n).inplace_of]
    ops = [o for o in ops if o in only] if only else ops
    todo = [(op, dtype, min(log2n, 22) if quick else log2n)
            for op in ops for dtype, log2n in SIZES.items()
            if not dtypes or dtype in dtypes]  # fmt: skip
    rows = []
    for op, dtype, log2n in todo:
        print(f"op: {op} {dtype} 2^{log2n}", file=sys.stderr, flush=True)
        try:
            proc = subprocess.run([sys.executable, str(ROOT / "tests/bench/bench_ops.py"), op,
                                   dtype, str(log2n)], cwd=ROOT, capture_output=True, text=True,
                                  timeout=ROW_TIMEOUT)  # fmt: skip
        except subprocess.TimeoutExpired:
            rows.append({"op": op, "dtype": dtype, "log2n": log2n,
                         "error": f"over {ROW_TIMEOUT} s"})  # fmt: skip
            continue
        if proc.returncode:
            rows.append({"op": op, "dtype": dtype, "log2n": log2n, "error": proc.stderr[-300:]})
            continue
        row = json.loads(proc.stdout.strip().splitlines()[-1])
        if row.get("supported"):
            rows.append(row)
    if not only or "cross_entropy" in only:
        rows.append(cross_entropy_row(*((256, 32000) if quick else CROSS_ENTROPY)))
    return rows


CROSS_ENTROPY = (4096, 32000)  # the cross_entropy row's self: [rows, classes] FLOAT


def cross_entropy_row(rows: int, classes: int) -> dict:
    """The reference's aclnnCrossEntropyLoss (reduction none: a gather under a logsumexp over
    the class dim, and logProbOut) against torch's, in a fresh process (bench_ops.py
    --cross-entropy)."""
    print(f"op: cross_entropy FLOAT [{rows}, {classes}]", file=sys.stderr, flush=True)
    args = [sys.executable, str(ROOT / "tests/bench/bench_ops.py"), "--cross-entropy", "FLOAT",
            str(rows), str(classes)]  # fmt: skip
    base = {"op": "cross_entropy_loss (none)", "dtype": "FLOAT", "log2n": None,
            "shape": [rows, classes]}  # fmt: skip
    try:
        proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        return {**base, "error": "over 600 s"}
    if proc.returncode:
        return {**base, "error": proc.stderr[-300:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


# -- 4. run --cases on one 2^28-element case, and the large profile ----------------------------


def _cli() -> list[str]:
    exe = Path(sys.executable).with_name("aclnn-conform")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "aclnn_conformance.cli.main"]


def _run_measured(args: list[str]) -> dict:
    """Wall time, exit code and the peak RSS of a CLI run (its own process, measured by wait4)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    return {"wall_s": wall, "rc": os.waitstatus_to_exitcode(status),
            "peak_rss": usage.ru_maxrss * 1024, "stderr": proc.stderr.read()[-500:]}  # fmt: skip


def big_case(log2n: int) -> dict:
    from aclnn_conformance.conformance.cases.casedir import write_case
    from aclnn_conformance.conformance.cases.generate import build
    from aclnn_conformance.conformance.cases.plan import base_args, make_plan
    from aclnn_conformance.conformance.spec.registry import default_registry

    spec = default_registry().get("leaky_relu_backward")
    n = 1 << log2n
    plan = make_plan(spec, "atlas-a2", "positive",
                     base_args(spec, dict.fromkeys(["gradOutput", "self", "out"], "FLOAT"), (n,)),
                     f"shape={n}", [])  # fmt: skip
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
        t0 = time.perf_counter()
        case = build(spec, plan, 0)
        nbytes = sum(a.storage.nbytes for a in case.call.args.values() if hasattr(a, "storage"))
        write_case(Path(tmp) / "cases", case, spec.sha256)
        gen_s = time.perf_counter() - t0
        del case
        r = _run_measured([*_cli(), "run", "-q", "--cases", str(Path(tmp) / "cases"),
                           "--results", str(Path(tmp) / "r.jsonl"), "--max-case-bytes", "20G"])  # fmt: skip
        lines = (Path(tmp) / "r.jsonl").read_text().splitlines() if (Path(tmp) / "r.jsonl").exists() else []  # fmt: skip
        verdicts = [json.loads(x)["verdict"] for x in lines]
    return {"log2n": log2n, "tensor_bytes": nbytes, "generate_and_write_s": gen_s,
            "verdicts": verdicts, **r}  # fmt: skip


def large_profile(op: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        r = _run_measured([*_cli(), "run", "-q", "--profile", "large", "--op", op, "-k",
                           "shape=model", "--results", f"{tmp}/r.jsonl"])  # fmt: skip
        lines = Path(f"{tmp}/r.jsonl").read_text().splitlines() if Path(f"{tmp}/r.jsonl").exists() else []  # fmt: skip
    verdicts: dict[str, int] = {}
    for line in lines:
        v = json.loads(line)["verdict"]
        verdicts[v] = verdicts.get(v, 0) + 1
    return {"op": op, "cases": len(lines), "verdicts": verdicts, **r}


def comparison(log2n: int) -> list[dict]:
    """compare() of one 2^log2n-element output per dtype (the statistics alone), best of 2."""
    from aclnn_conformance.conformance.judge.accumulate import compare
    from aclnn_conformance.conformance.spec.tolerances import policy_for

    rows = []
    rng = np.random.default_rng(0)
    g = rng.standard_normal(1 << log2n)
    for dtype, np_dtype in (("FLOAT", np.float32), ("FLOAT16", np.float16), ("DOUBLE", np.float64)):
        a = g.astype(np_dtype)
        a[::1000] *= 1.001  # a few real differences, so that the worst-element search has work
        pol = policy_for(dtype)
        compare(g, a, dtype, pol)  # warm: the compiled pass loads (or compiles)
        took = best_of(lambda a=a, dtype=dtype, pol=pol: compare(g, a, dtype, pol), 2)
        rows.append({"dtype": dtype, "log2n": log2n, "seconds": took})
    return rows


# -- report ----------------------------------------------------------------------------------


def op_table(rows: list[dict]) -> str:
    out = ["| op | dtype | elements | reference | elements/s | torch CPU | reference / torch | "
           "peak RSS / tensor bytes |", "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in rows:
        if "error" in r:
            where = r.get("shape") or f"2^{r['log2n']}"
            out.append(f"| {r['op']} | {r['dtype']} | {where} | {r['error'][:40]} | | | | |")
            continue
        shape = r.get("shape")
        n = int(np.prod(shape)) if shape else 1 << r["log2n"]
        size = f"[{', '.join(map(str, shape))}]" if shape else f"2^{r['log2n']}"
        torch_s = r.get("torch_s")
        ratio = f"{r['ref_s'] / torch_s:.1f}x" if torch_s else "-"
        op = f"{r['op']} ({r['measured']})" if r.get("measured") else r["op"]
        out.append(f"| {op} | {r['dtype']} | {size} | {r['ref_s'] * 1e3:.0f} ms | "
                   f"{n / r['ref_s'] / 1e6:.0f} M | {f'{torch_s * 1e3:.0f} ms' if torch_s else '-'} | "
                   f"{ratio} | {r['peak_rss'] / r['tensor_bytes']:.2f}x |")  # fmt: skip
    return "\n".join(out)


def markdown(res: dict) -> str:
    env = res["env"]
    out = [f"Measured {env['date']} on {env['cpus']} cores ({env['cpu']}), Python {env['python']}, "
           f"numpy {env['numpy']}, torch {env['torch']} ({env.get('torch_threads', '?')} threads), "
           f"reference kernels: {env['kernel']}.", ""]  # fmt: skip
    out.append(op_table(res.get("ops", [])))
    if res.get("compare"):
        parts = [f"{r['dtype']} {r['seconds']:.2f} s" for r in res["compare"]]
        out += ["", f"compare() of one 2^{res['compare'][0]['log2n']}-element output: "
                f"{', '.join(parts)}."]  # fmt: skip
    if res.get("case"):
        c = res["case"]
        out += ["", f"`run --cases` on one 2^{c['log2n']}-element FLOAT case (leaky_relu_backward, "
                f"{c['tensor_bytes'] / 2**30:.2f} GiB of tensors): {c['wall_s']:.1f} s, verdict "
                f"{', '.join(c['verdicts']) or 'none'}, peak RSS {c['peak_rss'] / 2**30:.2f} GiB = "
                f"{c['peak_rss'] / c['tensor_bytes']:.2f}x the tensor bytes (generating and writing "
                f"the case: {c['generate_and_write_s']:.1f} s){_earlier(c)}."]  # fmt: skip
    if res.get("profile"):
        p = res["profile"]
        verdicts = ", ".join(f"{k} {v}" for k, v in sorted(p["verdicts"].items()))
        out += ["", f"`run --profile large --op {p['op']} -k shape=model`: {p['cases']} cases "
                f"({verdicts}) in {p['wall_s']:.0f} s, peak RSS {p['peak_rss'] / 2**30:.2f} GiB"
                f"{_earlier(p)}."]  # fmt: skip
    if res.get("pipeline"):
        p = res["pipeline"]
        out += ["", f"Default suite: generation {p['generation_cases_per_s']:.0f} cases/s, "
                f"reference evaluation {p['evaluate_cases_per_s']:.0f} cases/s, compare() "
                f"{p['compare_per_s']:.0f} outputs/s, judge overhead {p['overhead_ms']:.2f} ms "
                f"per small case{_earlier(p)}."]  # fmt: skip
        for s in res.get("suite", []):
            out.append(f"`run` default suite, {s['backend']}, --jobs {s['jobs']}: {s['wall_s']:.1f} s "
                       f"({s['cases']} cases, exit {s['rc']}){_earlier(s)}.")  # fmt: skip
    return "\n".join(out)


def _earlier(section: dict) -> str:
    """' (measured DATE)' for a section taken from an earlier run (--base), else ''."""
    return f" (measured {section['measured']}, an earlier run)" if section.get("measured") else ""


def merge(base: dict, res: dict) -> dict:
    """res, with the sections and op rows it did not measure taken from the earlier run base;
    each taken section says when it was measured."""
    when = base.get("env", {}).get("date", "earlier")
    merged = dict(res)
    for key in ("case", "profile", "pipeline", "compare"):
        if key not in res and isinstance(base.get(key), dict):
            merged[key] = {"measured": when, **base[key]}
    if "suite" not in res and base.get("suite"):
        merged["suite"] = [{"measured": when, **s} for s in base["suite"]]
    if "ops" not in res and base.get("ops"):
        merged["ops"] = [{"measured": when, **r} for r in base["ops"]]
    elif base.get("ops"):
        seen = {(r["op"], r["dtype"], r["log2n"]) for r in res["ops"]}
        merged["ops"] = res["ops"] + [{"measured": when, **r} for r in base["ops"]
                                      if (r["op"], r["dtype"], r["log2n"]) not in seen]  # fmt: skip
    return merged


PAGE = ROOT / "docs" / "benchmarks.md"
RESULTS = ROOT / "docs" / "benchmarks.json"
START, END = "<!-- bench:start -->", "<!-- bench:end -->"


def page_with(body: str, text: str) -> str:
    """The benchmark page `body` with `text` between its bench markers."""
    if START not in body or END not in body:
        raise SystemExit(f"{PAGE} has no {START} ... {END} section")
    head, rest = body.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{text}\n{END}{tail}"


def update_docs(res: dict) -> None:
    """docs/benchmarks.json := res; docs/benchmarks.md's table := markdown(res)."""
    RESULTS.write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    PAGE.write_text(page_with(PAGE.read_text(encoding="utf-8"), markdown(res)), encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--quick", action="store_true", help="2^22 elements, the seed ops, no 2^28 case"
    )
    ap.add_argument("--out", type=Path, help="write the results as JSON")
    ap.add_argument("--from", dest="from_", type=Path, help="report FILE.json instead of measuring")
    ap.add_argument("--update-docs", action="store_true",
                    help="write docs/benchmarks.json and the table of docs/benchmarks.md")  # fmt: skip
    ap.add_argument(
        "--skip",
        default="",
        help="comma-separated sections to skip: ops,compare,case,profile,suite",
    )
    ap.add_argument("--ops", default="", help="comma-separated ops: measure only their rows")
    ap.add_argument("--dtypes", default="", help="comma-separated dtypes: only their op rows")
    ap.add_argument("--base", type=Path, help="an earlier --out JSON: what this run skips comes "
                    "from it, marked with its date")  # fmt: skip
    a = ap.parse_args()
    if a.from_:
        res = json.loads(a.from_.read_text())
    else:
        import torch
        from aclnn_conformance.reference import kernel

        cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                    if ln.startswith("model name")), platform.processor())  # fmt: skip
        env = {"date": time.strftime("%Y-%m-%d"), "cpus": os.cpu_count(), "cpu": cpu,
               "python": platform.python_version(), "numpy": np.__version__,
               "torch": torch.__version__, "torch_threads": torch.get_num_threads(),
               "kernel": kernel.name(), "load_start": os.getloadavg()[0]}  # fmt: skip
        res = {"env": env}
        skip = set(a.skip.split(","))
        if "ops" not in skip:
            res["ops"] = per_op(a.quick, [o for o in a.ops.split(",") if o],
                                [d for d in a.dtypes.split(",") if d])  # fmt: skip
        if "compare" not in skip:
            print("compare: 2^26", file=sys.stderr, flush=True)
            res["compare"] = comparison(26)
        if "case" not in skip and not a.quick:
            print("case: 2^28 run --cases", file=sys.stderr, flush=True)
            res["case"] = big_case(28)
        if "profile" not in skip and not a.quick:
            print("profile: large", file=sys.stderr, flush=True)
            res["profile"] = large_profile("leaky_relu_backward")
        if "suite" not in skip:
            print("pipeline", file=sys.stderr, flush=True)
            res["pipeline"] = pipeline()
            res["suite"] = [suite(b, 2) for b in ("reference", "torch")]
        env["load_end"] = os.getloadavg()[0]
        if a.base:
            res = merge(json.loads(a.base.read_text()), res)
        if a.out:
            a.out.write_text(json.dumps(res, indent=1) + "\n")
    text = markdown(res)
    print(text)
    if a.update_docs:
        update_docs(res)


if __name__ == "__main__":
    main()
