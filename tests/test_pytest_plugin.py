"""`pytest --pyargs aclnn_conformance.conformance --aclnn-backend NAME`: the generated cases as pytest items, with
the same outcome per case as `aclnn-conform run` on the same filters (expectations included),
readable ids, -k, --junitxml and pytest-xdist."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

pytest.importorskip("torch", reason="the comparison runs against the torch backend (extra [torch])")

FILTERS = ["--op", "hardshrink_backward", "--product", "atlas-a2"]
PLUGIN = ["--aclnn-op", "hardshrink_backward", "--aclnn-product", "atlas-a2"]
OUTCOME = {"pass": "passed", "skip": "skipped", "xfail": "xfailed", "fail": "failed",
           "deviation": "xfailed"}  # fmt: skip


def run_pytest(tmp_path, *extra):
    xml = tmp_path / f"junit{len(list(tmp_path.glob('junit*')))}.xml"
    p = subprocess.run([sys.executable, "-m", "pytest", "--pyargs", "aclnn_conformance.conformance", "--aclnn-backend", "torch",
                        *PLUGIN, "-p", "no:cacheprovider", "-q", f"--junitxml={xml}", *extra],
                       cwd=tmp_path, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert "Traceback" not in p.stderr, p.stderr
    outcomes = {}
    for tc in ET.parse(xml).getroot().iter("testcase"):
        case_id = re.search(r"\[(.*)\]$", tc.get("name")).group(1)
        kinds = {child.tag for child in tc}
        if "failure" in kinds or "error" in kinds:
            outcomes[case_id] = "failed"
        elif "skipped" in kinds:
            msg = next(c for c in tc if c.tag == "skipped").get("type", "")
            outcomes[case_id] = "xfailed" if "xfail" in msg else "skipped"
        else:
            outcomes[case_id] = "passed"
    return p, outcomes


@pytest.fixture(scope="module")
def run_verdicts(tmp_path_factory):
    results = tmp_path_factory.mktemp("run") / "r.jsonl"
    subprocess.run([sys.executable, "-m", "aclnn_conformance.cli.main", "run", "--backend", "torch", *FILTERS,
                    "--results", str(results), "-q"], capture_output=True, text=True, timeout=600)  # fmt: skip
    return {
        r["id"]: OUTCOME[r["verdict"]] for r in map(json.loads, results.read_text().splitlines())
    }


@pytest.mark.gates
def test_each_case_has_the_same_outcome_as_in_aclnn_conform_run(tmp_path, run_verdicts):
    p, outcomes = run_pytest(tmp_path)
    assert outcomes == run_verdicts
    assert {"passed", "skipped", "xfailed"} <= set(outcomes.values())
    assert p.returncode == 0


@pytest.mark.gates
def test_xdist_workers_split_the_same_cases(tmp_path, run_verdicts):
    p, outcomes = run_pytest(tmp_path, "-n", "2")
    assert outcomes == run_verdicts and p.returncode == 0


@pytest.mark.gates
def test_k_selects_by_case_id(tmp_path, run_verdicts):
    _, outcomes = run_pytest(tmp_path, "-k", "neg and null-ptr")
    want = {i: v for i, v in run_verdicts.items() if "/neg/null-ptr/" in i}
    assert outcomes == want and want


def test_without_a_backend_the_suite_says_so(tmp_path):
    p = subprocess.run([sys.executable, "-m", "pytest", "--pyargs", "aclnn_conformance.conformance", "-p", "no:cacheprovider", "-rs"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert p.returncode == 4 and "Traceback" not in p.stdout + p.stderr
    assert "ERROR: the aclnn conformance suite needs --aclnn-backend NAME" in p.stderr


@pytest.mark.gates
def test_readme_pytest_k_examples_select_what_they_say(tmp_path):
    """Each README example with -k selects only cases of the operators it names (-k matches id
    substrings: `-k "elu and bf16"` used to select gelu_backward_v2 cases too)."""
    import shlex
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    examples = [ln for ln in readme.splitlines()
                if ln.startswith("pytest --pyargs aclnn_conformance.conformance") and " -k " in ln]  # fmt: skip
    assert examples
    for line in examples:
        args = shlex.split(line.split("#")[0])[1:]
        if "--junitxml" in args:
            del args[args.index("--junitxml") : args.index("--junitxml") + 2]
        k = args[args.index("-k") + 1]
        ops = [args[i + 1] for i, a in enumerate(args) if a == "--aclnn-op"]
        args[args.index("--aclnn-backend") + 1] = "reference"
        p = subprocess.run([sys.executable, "-m", "pytest", *args, "--collect-only", "-q",
                            "-p", "no:cacheprovider"], cwd=tmp_path, capture_output=True,
                           text=True, timeout=300)  # fmt: skip
        ids = [re.search(r"\[(.*)\]$", x).group(1) for x in p.stdout.splitlines() if "::" in x]
        assert ids, p.stdout + p.stderr
        for case_id in ids:
            assert case_id.split("/")[0] in ops, (line, case_id)
            # pytest's -k is case-insensitive: bf16 also selects a BF16 scalar
            assert all(t.lower() in case_id.lower() for t in k.split(" and ")), (line, case_id)


MARKER = '''
import os
from aclnn_conformance.conformance.run.backend import Backend, Capabilities
from aclnn_conformance.reference.engine import evaluate

class Marker(Backend):
    """The reference, leaving a line in $MARKER_FILE for every call it runs."""
    name = "marker"
    capabilities = Capabilities(status="exact")

    def execute(self, call):
        with open(os.environ["MARKER_FILE"], "a") as f:
            f.write(call.op + "\\n")
        return evaluate(call, self.registry)
'''


@pytest.mark.gates
def test_a_skip_entry_keeps_the_case_from_running(tmp_path):
    """A case skipped by the expectations (say, because it wedges a device) is never handed to
    the backend under pytest either (issue 22 point 10)."""
    from tests.support.plugins import install_plugin

    env = install_plugin(tmp_path / "plug", "marker_backend", MARKER,
                         {"marker": "marker_backend:Marker"})  # fmt: skip
    env["MARKER_FILE"] = str(tmp_path / "calls.txt")
    exp = tmp_path / "e.yaml"
    exp.write_text("format: 1\nentries:\n  - {match: 'relu/*/f16/*', kind: skip, reason: wedges}\n",
                   encoding="utf-8")  # fmt: skip
    p = subprocess.run([sys.executable, "-m", "pytest", "--pyargs", "aclnn_conformance.conformance", "--aclnn-backend",
                        "marker", "--aclnn-op", "relu", "--aclnn-product", "ascend950",
                        "--aclnn-expectations", str(exp), "-p", "no:cacheprovider", "-q", "-rs",
                        "-k", "f16 or f32"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)  # fmt: skip
    assert p.returncode == 0 and "Traceback" not in p.stdout + p.stderr, p.stdout + p.stderr
    assert "expectations: wedges" in p.stdout
    ran = (tmp_path / "calls.txt").read_text().split()
    assert ran and set(ran) == {"relu"}
    skipped = int(re.search(r"(\d+) skipped", p.stdout).group(1))
    passed = int(re.search(r"(\d+) passed", p.stdout).group(1))
    assert len(ran) == passed and skipped > 0
