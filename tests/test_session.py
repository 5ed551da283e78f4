"""One session, one typed result (issue 25, point 3): the run options are declared once
(conformance.run.session.OPTIONS) and every option a run writes into a replay line is accepted by
`replay`, which judges the case the same way; the pytest plugin and `run` give the same verdicts
with expectations (skip and apply) and oracle options; a Result reads and writes the results
format of every version; reports never load the specs."""

from __future__ import annotations

import ast
import json
import re
import shlex
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from aclnn_conformance.cli.main import main
from aclnn_conformance.cli.replay_cmd import replay as replay_cmd
from aclnn_conformance.cli.run_cmd import run as run_cmd
from aclnn_conformance.conformance.judge.result import FIELDS, Result
from aclnn_conformance.conformance.run.session import OPTIONS, options_for, replay_line
from click.testing import CliRunner

from tests.support.runcli import assert_clean, conform

REPO = Path(__file__).resolve().parents[1]
CASE = "elu_backward/atlas-a2/f32/isResult=0/values=normal"
SELECT = ["--op", "elu_backward", "--product", "atlas-a2", "-k", "f32/isResult=0/values=normal"]
REPLAYED = [o for o in OPTIONS if o.replay]

# A value (with what it needs beside it) for every option a replay line can carry. A new replay
# option without one fails test_every_replay_option_has_a_sample.
SAMPLES: dict[str, list[str]] = {
    "backend": ["--backend", "torch"],
    "oracle": ["--backend", "torch", "--oracle", "jax"],
    "seed": ["--seed", "7"],
    "max_case_bytes": ["--max-case-bytes", "100"],
    "expectations": ["--expectations", "EXPECT"],
    "no_expectations": ["--backend", "torch", "--no-expectations"],
    "exact": ["--exact"],
    "oracle_opts": ["--backend", "torch", "--oracle-opt", "exact=1"],
    "backend_opts": ["--backend", "torch", "--backend-opt", "device=cpu"],
    "device": ["--backend", "torch", "--device", "cpu"],
    "lib_dir": ["--backend", "aclnn", "--lib-dir", "/opt/cann lib"],
    "device_id": ["--backend", "aclnn", "--device-id", "3"],
    "exec_cmd": ["--backend", "exec", "--exec-cmd", "./harness --fast 'a b'"],
    "isolate": ["--no-isolate"],
    "timeout": ["--timeout", "12.5"],
    "max_memory": ["--max-memory", "3G"],
    "profile": ["--profile", "large"],
}
# options this machine cannot run end to end (no NPU library; model-scale cases take minutes)
NOT_RUN_HERE = {"lib_dir", "device_id", "exec_cmd", "profile"}
EXPECT_YAML = f"""format: 1
backend: reference
entries:
  - match: "{CASE}"
    kind: xfail
    reason: a sample entry
"""


def test_every_replay_option_has_a_sample():
    assert {o.name for o in REPLAYED} == set(SAMPLES)
    assert {o.name for o in REPLAYED} <= {o.name for o in options_for("replay")}


def _params(command, args: list[str]) -> dict:
    return command.make_context(command.name, list(args)).params


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_a_replay_line_carries_the_option_as_replay_reads_it(name):
    """The run's parsed options, written as a replay line, parse back to the same values."""
    ran = _params(run_cmd, [*SAMPLES[name], *SELECT])
    line = replay_line(CASE, ran, spec_dirs=("/specs dir",))
    argv = shlex.split(line)
    assert argv[:5] == ["aclnn-conform", "--specs", "/specs dir", "replay", CASE]
    again = _params(replay_cmd, argv[4:])
    for o in REPLAYED:
        want, got = ran[o.name], again[o.name]
        assert got == want, (o.flag, line)
    assert SAMPLES[name][-1].split("=")[-1] in line or SAMPLES[name][-1] in argv


def _run(tmp_path: Path, args: list[str]) -> dict:
    results = tmp_path / "r.jsonl"
    proc = CliRunner().invoke(main, ["run", *args, *SELECT, "--results", str(results), "-q"])
    assert proc.exit_code in (0, 1), proc.output
    (rec,) = [json.loads(line) for line in results.read_text().splitlines()]
    return rec


@pytest.mark.gates  # a whole run and a replay per option: the CLI gates tier
@pytest.mark.parametrize("name", sorted(set(SAMPLES) - NOT_RUN_HERE))
def test_a_run_with_the_option_prints_a_replay_line_that_judges_alike(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "EXPECT").write_text(EXPECT_YAML, encoding="utf-8")
    rec = _run(tmp_path, SAMPLES[name])
    argv = shlex.split(rec["replay"])
    flag = next(o.flag for o in OPTIONS if o.name == name)
    assert flag in argv or (name == "isolate" and "--no-isolate" in argv), rec["replay"]
    proc = CliRunner().invoke(main, [*argv[1:], "--json"])
    assert proc.exit_code in (0, 1), proc.output
    got = json.loads(proc.output)
    for key in ("verdict", "reason", "expectation", "oracle", "backend", "seed"):
        assert got.get(key) == rec.get(key), key
    if name == "exact":
        assert "--exact" in argv  # the replay command once answered: No such option '--exact'
    if name == "expectations":
        assert got["verdict"] == "xpass"  # the entry applied by replay as by the run
    if name == "max_case_bytes":
        assert got["verdict"] == "error" and "max-case-bytes" in got["reason"]


# -- the plugin and the CLI ------------------------------------------------------------------

PLUGIN_EXPECT = """format: 1
backend: torch
entries:
  - match: "hardshrink_backward/atlas-a2/f32/-/values=normal"
    kind: skip
    reason: kept from running
  - match: "hardshrink_backward/atlas-a2/f16/-/values=*"
    kind: xfail
    reason: said to fail
"""
OUTCOME = {"pass": "passed", "skip": "skipped", "xfail": "xfailed", "deviation": "xfailed",
           "fail": "failed", "error": "failed", "crash": "failed", "timeout": "failed",
           "xpass": "failed"}  # fmt: skip


@pytest.mark.gates
def test_the_plugin_and_run_give_the_same_verdicts_with_expectations_and_oracle_options(tmp_path):
    expect = tmp_path / "expect.yaml"
    expect.write_text(PLUGIN_EXPECT, encoding="utf-8")
    common = ["backend", "torch", "op", "hardshrink_backward", "product", "atlas-a2",
              "oracle-opt", "exact=1", "expectations", str(expect)]  # fmt: skip
    cli = [f"--{a}" if i % 2 == 0 else a for i, a in enumerate(common)]
    results = tmp_path / "r.jsonl"
    proc = conform("run", *cli, "--results", results, "-q", cwd=tmp_path)
    assert_clean(proc, (0, 1))
    recs = {r["id"]: r for r in map(json.loads, results.read_text().splitlines())}
    verdicts = {i: OUTCOME[r["verdict"]] for i, r in recs.items()}
    assert recs["hardshrink_backward/atlas-a2/f32/-/values=normal"]["verdict"] == "skip"
    decided = {r["verdict"] for i, r in recs.items() if "/f16/-/values=" in i}
    assert decided and decided <= {"xfail", "xpass"}  # the xfail entry applied to each
    assert all(
        r["oracle_version"].find("exact") >= 0 for r in recs.values() if r["verdict"] != "skip"
    )  # the oracle ran with --oracle-opt exact=1
    xml = tmp_path / "junit.xml"
    plugin = [f"--aclnn-{a}" if i % 2 == 0 else a for i, a in enumerate(common)]
    p = subprocess.run([sys.executable, "-m", "pytest", "--pyargs", "aclnn_conformance.conformance", *plugin,
                        "-p", "no:cacheprovider", "-p", "no:xdist", "-q", f"--junitxml={xml}"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert "Traceback" not in p.stderr, p.stderr
    outcomes = {}
    for tc in ET.parse(xml).getroot().iter("testcase"):
        case_id = re.search(r"\[(.*)\]$", tc.get("name")).group(1)
        kinds = {child.tag: child for child in tc}
        if "failure" in kinds or "error" in kinds:
            outcomes[case_id] = "failed"
        elif "skipped" in kinds:
            kind = kinds["skipped"].get("type", "")
            outcomes[case_id] = "xfailed" if "xfail" in kind else "skipped"
        else:
            outcomes[case_id] = "passed"
    assert outcomes == verdicts


# -- the Result ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["mixed.jsonl", "deviation.jsonl"])
def test_every_results_line_reads_and_writes_back_byte_for_byte(name):
    for line in (REPO / "tests" / "data" / "results" / name).read_text().splitlines():
        rec = Result.from_json(line)
        assert rec.to_json() == line
        assert rec.id == json.loads(line)["id"]


def test_an_older_record_reads_and_unknown_keys_are_kept():
    old = {"id": "a/b/c", "verdict": "fail", "reason": "r", "actual_status": None,
           "dtypes": {"x": "FLOAT"}, "from_the_future": [1, 2]}  # fmt: skip
    rec = Result.from_json(old)
    assert rec.out_dtype is None and "out_dtype" not in rec.to_dict()  # never set: left out
    assert rec.to_dict()["actual_status"] is None  # set to none: written as null
    assert rec.extra == {"from_the_future": [1, 2]}
    assert json.loads(rec.to_json()) == old
    with pytest.raises(ValueError, match="needs 'id' and 'verdict'"):
        Result.from_json({"id": "x"})


def test_the_record_fields_are_declared_once():
    assert len(FIELDS) == len(set(FIELDS)) and {"id", "verdict", "out_dtype"} <= set(FIELDS)


# -- reports never load the specs ------------------------------------------------------------


def test_nothing_under_reports_imports_the_registry_or_plans():
    forbidden = ("aclnn_conformance.conformance.spec.registry", "aclnn_conformance.conformance.cases.generate", "aclnn_conformance.conformance.spec.load",
                 "aclnn_conformance.conformance.run.judging", "aclnn_conformance.conformance.run.runner", "aclnn_conformance.conformance.run.session")  # fmt: skip
    for path in sorted((REPO / "reports").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            bad = [n for n in names if n.startswith(forbidden) or "registry" in n]
            assert not bad, f"{path.name}:{node.lineno} imports {bad}"
    code = ("import sys, pkgutil, importlib\n"
            "import aclnn_conformance.reports as reports\n"
            "for m in pkgutil.iter_modules(reports.__path__):\n"
            "    importlib.import_module('aclnn_conformance.reports.' + m.name)\n"
            "print(sorted(k for k in sys.modules if k.startswith('aclnn_conformance.conformance.')))")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                         timeout=120, check=True).stdout  # fmt: skip
    assert (
        "aclnn_conformance.conformance.spec.registry" not in out
        and "aclnn_conformance.conformance.cases.generate" not in out
    ), out


@pytest.mark.gates
def test_the_report_of_a_spec_folder_run_renders_alike_once_the_folder_is_gone(tmp_path):
    folder = tmp_path / "extra"
    folder.mkdir()
    text = (REPO / "tests" / "data" / "spec_folder" / "tanh_backward.yaml").read_text("utf-8")
    text = text.replace("\nname: tanh_backward\n", "\nname: tanh_copy_backward\n")
    text = text.replace("\nop: aclnnTanhBackward\n", "\nop: aclnnTanhCopyBackward\n")
    (folder / "tanh_copy_backward.yaml").write_text(text, encoding="utf-8")
    results = tmp_path / "r.jsonl"
    first = {k: tmp_path / f"first.{k}" for k in ("html", "junit", "json")}
    proc = conform("--specs", folder, "run", "--op", "tanh_copy_backward", "--product",
                   "atlas-a2", "--max-cases", "12", "--results", results, "-q",
                   *(x for k, p in first.items() for x in (f"--{k}", p)), cwd=tmp_path)  # fmt: skip
    assert_clean(proc, 0)
    shutil.rmtree(folder)
    again = {k: tmp_path / f"again.{k}" for k in first}
    proc = conform("report", results, *(x for k, p in again.items() for x in (f"--{k}", p)),
                   cwd=tmp_path)  # fmt: skip
    assert_clean(proc, 0)
    for k in first:
        assert first[k].read_bytes() == again[k].read_bytes(), k
    summary = json.loads(again["json"].read_text())
    op = next(o for o in summary["coverage"]["ops"] if o["op"] == "tanh_copy_backward")
    assert op["aclnn_op"] == "aclnnTanhCopyBackward" and op["cases"] == 12
    assert summary["coverage"]["unknown_clauses"] == {}  # its clauses are known, not strays
    assert any(m["op"] == "tanh_copy_backward" for m in summary["matrix"])
