"""Sharding for CI matrices: n shards + merge == one run (same ids, verdicts and summary)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from aclnn_conformance.conformance.judge import results as res

FILTER = ["--op", "softplus_backward", "--product", "atlas-training", "-q"]


def cli(*args, check=True):
    p = subprocess.run(
        [sys.executable, "-m", "aclnn_conformance.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "Traceback" not in p.stderr
    return p


def key(records):
    return {r.id: (r.verdict, r.actual_status, json.dumps(r.stats, sort_keys=True))
            for r in records}  # fmt: skip


@pytest.mark.gates
def test_three_shards_merged_equal_one_run(tmp_path):
    whole = tmp_path / "whole.jsonl"
    cli("run", *FILTER, "--results", str(whole))
    shards = []
    for i in (1, 2, 3):
        out = tmp_path / f"s{i}.jsonl"
        cli("run", *FILTER, "--shard", f"{i}/3", "--results", str(out))
        shards.append(out)
    sizes = [len(res.load(s)) for s in shards]
    assert all(n > 0 for n in sizes) and max(sizes) - min(sizes) <= 1
    merged = tmp_path / "merged.jsonl"
    p = cli("merge", *map(str, shards), "-o", str(merged))
    assert p.returncode == 0 and "merged 3 files" in p.stdout
    a, b = res.load(whole), res.load(merged)
    assert key(a) == key(b)
    sa, sb = res.summarise(a), res.summarise(b)
    assert sa.verdicts == sb.verdicts and dict(sa.matrix) == dict(sb.matrix)
    meta = json.loads((tmp_path / "merged.jsonl.meta.json").read_text())
    assert meta["cases"] == sum(
        json.loads((tmp_path / f"s{i}.jsonl.meta.json").read_text())["cases"] for i in (1, 2, 3)
    )
    assert len(meta["merged_from"]) == 3
    assert "mixed" not in meta and meta["seed"] == 0 and meta["backend"] == "reference"


def test_merge_errors_are_one_line(tmp_path):
    p = cli("merge", str(tmp_path / "missing.jsonl"), "-o", str(tmp_path / "o.jsonl"))
    assert p.returncode == 2 and "no such results file" in p.stderr
    empty = tmp_path / "e.jsonl"
    empty.write_text("not json\n")
    p = cli("merge", str(empty), "-o", str(tmp_path / "o.jsonl"))
    assert p.returncode == 2 and "no result records" in p.stderr
