"""One YAML file per operator, for real: a spec folder outside the package adds an operator to
every command (`--specs DIR`, ACLNN_CONFORM_SPECS) and to the pytest plugin, with no Python;
bindings live in the spec, are checked by `specs lint`, and a wrong one costs only its own op.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from aclnn_conformance.conformance.spec.expr.language import FUNCTIONS
from aclnn_conformance.conformance.spec.registry import default_registry

from tests.support.runcli import REPO, assert_clean, assert_one_line_error, conform, read_jsonl

SOURCE = REPO / "tests" / "data" / "spec_folder" / "tanh_backward.yaml"  # written like the others


def _extra_folder() -> Path:
    """A folder holding the tanh spec; when a checkout already ships it in specs/ops (CI copies
    it there to prove that the whole suite passes with a sixth spec), a renamed copy."""
    if "tanh_backward" not in default_registry().names():
        return SOURCE.parent
    folder = Path(tempfile.mkdtemp(prefix="extra-specs-"))
    text = SOURCE.read_text(encoding="utf-8").replace(
        "\nname: tanh_backward\n", "\nname: tanh_extra_backward\n"
    )
    text = text.replace("\nop: aclnnTanhBackward\n", "\nop: aclnnTanhExtraBackward\n")
    (folder / "tanh_backward.yaml").write_text(text, encoding="utf-8")
    return folder


FOLDER = _extra_folder()
TANH = FOLDER / "tanh_backward.yaml"
NAME = "tanh_backward" if FOLDER.samefile(SOURCE.parent) else "tanh_extra_backward"
OP = "aclnnTanhBackward" if NAME == "tanh_backward" else "aclnnTanhExtraBackward"


def env_with(*dirs: Path) -> dict[str, str]:
    return {**os.environ, "ACLNN_CONFORM_SPECS": os.pathsep.join(str(d) for d in dirs)}


def how(mode: str, folder: Path) -> tuple[tuple[str, ...], dict[str, str] | None]:
    """(leading CLI arguments, environment) that add `folder` by option or by variable."""
    return (("--specs", str(folder)), None) if mode == "option" else ((), env_with(folder))


@pytest.mark.gates
@pytest.mark.parametrize("mode", ["option", "env"])
def test_a_spec_folder_adds_an_operator_to_every_command(mode, tmp_path):
    pre, env = how(mode, FOLDER)
    lint = conform(*pre, "specs", "lint", env=env)
    assert_clean(lint, 0)
    n = len({s.path for s in default_registry()}) + 1  # spec files (in-place variants share one)
    assert lint.stdout.startswith(f"{n} specs OK")
    listed = conform(*pre, "specs", "list", env=env)
    assert_clean(listed, 0)
    assert re.search(rf"^{NAME}\s+{OP}\s", listed.stdout, re.M)
    shown = conform(*pre, "specs", "show", OP, env=env)
    assert_clean(shown, 0)
    assert "gradOutput * (1 - output * output)" in shown.stdout
    results = tmp_path / "ref.jsonl"
    proc = conform(*pre, "run", "--op", NAME, "--results", results, "-q", env=env)
    assert_clean(proc, 0)
    recs = read_jsonl(results)
    assert recs and {r["verdict"] for r in recs} == {"pass"}
    assert {r["op"] for r in recs} == {NAME}
    assert "unknown error" not in proc.stdout + proc.stderr


@pytest.mark.gates
@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_the_new_operator_runs_on_torch_and_jax_from_its_bindings(backend, tmp_path):
    pytest.importorskip(backend, reason=f"the {backend} extra is not installed")
    results = tmp_path / "r.jsonl"
    proc = conform("--specs", FOLDER, "run", "--backend", backend, "--op", NAME,
                   "--max-cases", "80", "--results", results, "-q", "-j", "2")  # fmt: skip
    assert_clean(proc, (0, 1))  # PyTorch and JAX may differ numerically, never fail to run
    recs = read_jsonl(results)
    assert recs and not [r for r in recs if r["verdict"] == "error"]
    assert sum(r["verdict"] == "pass" for r in recs) > len(recs) // 3
    skipped = [r["reason"] for r in recs if r["verdict"] == "skip"]
    assert not [s for s in skipped if "binding" in s], skipped[:3]


@pytest.mark.gates
def test_the_pytest_plugin_takes_spec_folders(tmp_path):
    p = subprocess.run([sys.executable, "-m", "pytest", "--pyargs", "aclnn_conformance.conformance", "-q",
                        "-p", "no:cacheprovider", "--aclnn-backend", "reference",
                        "--aclnn-specs", str(FOLDER), "--aclnn-op", NAME,
                        "--aclnn-max-cases", "20"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert p.returncode == 0, p.stdout + p.stderr
    assert "20 passed" in p.stdout


def test_a_name_clash_with_a_shipped_spec_names_both_files(tmp_path):
    shipped = default_registry().get("leaky_relu_backward").path
    shutil.copy(shipped, tmp_path / "my_leaky.yaml")
    proc = conform("--specs", tmp_path, "specs", "list")
    line = assert_one_line_error(proc, "already defined by")
    assert str(tmp_path / "my_leaky.yaml") in line and str(Path(shipped)) in line


def test_a_missing_spec_folder_is_a_usage_error(tmp_path):
    proc = conform("specs", "list", env=env_with(tmp_path / "nowhere"))
    assert_one_line_error(proc, "nowhere", "ACLNN_CONFORM_SPECS")


def misspelled(tmp_path: Path, field: str, wrong: str) -> Path:
    """The tanh spec with one binding field changed."""
    text = TANH.read_text(encoding="utf-8")
    folder = tmp_path / "specs"
    folder.mkdir()
    pattern = {"aten": r"(op: )tanh_backward\n", "jax": r"(forward: ).*"}[field]
    wrong += "\n" if field == "aten" else ""
    (folder / "tanh_backward.yaml").write_text(re.sub(pattern, rf"\g<1>{wrong}", text, count=1),
                                              encoding="utf-8")  # fmt: skip
    return folder


def binding_line(folder: Path, key: str) -> int:
    lines = (folder / "tanh_backward.yaml").read_text(encoding="utf-8").splitlines()
    start = lines.index("bindings:")
    return next(i for i, ln in enumerate(lines, 1) if i > start and ln.strip().startswith(key))


@pytest.mark.gates
def test_a_misspelled_aten_op_is_a_lint_problem_and_skips_only_its_op(tmp_path):
    pytest.importorskip("torch", reason="the torch extra is not installed")
    folder = misspelled(tmp_path, "aten", "tanh_backwrd")
    proc = conform("specs", "lint", folder)
    assert_clean(proc, 1)
    where = f"{folder / 'tanh_backward.yaml'}:{binding_line(folder, 'op:')}: bindings.aten.op"
    assert where in proc.stdout and "aten::tanh_backwrd" in proc.stdout
    results = tmp_path / "r.jsonl"
    proc = conform("--specs", folder, "run", "--backend", "torch", "--op", NAME,
                   "--op", "leaky_relu_backward", "--product", "atlas-a2", "--results", results,
                   "-q")  # fmt: skip
    assert_clean(proc, 0)
    recs = read_jsonl(results)
    extra = [r for r in recs if r["op"] == NAME]
    leaky = [r for r in recs if r["op"] == "leaky_relu_backward"]
    assert extra and all(
        r["verdict"] == "skip" and "aten::tanh_backwrd" in r["reason"] for r in extra
    )
    assert sum(r["verdict"] == "pass" for r in leaky) > 100


@pytest.mark.gates
def test_a_wrong_jax_forward_is_a_lint_problem_and_skips_only_its_op(tmp_path):
    folder = misspelled(tmp_path, "jax", "output - output * slef")
    proc = conform("specs", "lint", folder)
    assert_clean(proc, 1)
    where = f"{folder / 'tanh_backward.yaml'}:{binding_line(folder, 'forward:')}"
    assert f"{where}: bindings.jax.forward" in proc.stdout and "slef" in proc.stdout
    pytest.importorskip("jax", reason="the jax extra is not installed")
    results = tmp_path / "r.jsonl"
    proc = conform("--specs", folder, "run", "--backend", "jax", "--op", NAME, "--op",
                   "hardshrink_backward", "--product", "atlas-a2", "--max-cases", "60",
                   "--results", results, "-q")  # fmt: skip
    assert_clean(proc, (0, 1))
    recs = read_jsonl(results)
    extra = [r for r in recs if r["op"] == NAME]
    assert extra and all(r["verdict"] == "skip" and "slef" in r["reason"] for r in extra)
    assert any(r["verdict"] == "pass" for r in recs if r["op"] == "hardshrink_backward")


@pytest.mark.gates
def test_no_operator_is_named_in_the_code():
    """Operator knowledge lives in YAML: no op name of any spec in the registry (its spec name,
    its aclnn name, or that without `aclnn`) appears as a word in a Python file of the core. The
    functions of the expression language are words of the language, not operators (erfinv), and
    so is an op name that is also a parameter name of some spec (threshold: aclnnThreshold, and
    softplus_backward's parameter, a word the tolerance code uses as well); its aclnn name
    (aclnnThreshold, Threshold) is still looked for."""
    names, params = set(), set()
    for spec in default_registry():
        names |= {spec.name, spec.op, spec.op.removeprefix("aclnn")}
        params |= {p.name for p in spec.params}
    names -= set(FUNCTIONS) | params
    found = []
    for top in ("conformance", "reference", "reports", "cli"):
        for f in sorted((REPO / top).rglob("*.py")):
            text = f.read_text(encoding="utf-8")
            for n in sorted(names):
                for m in re.finditer(rf"\b{re.escape(n)}\b", text):
                    found.append(
                        f"{f.relative_to(REPO)}:{text.count(chr(10), 0, m.start()) + 1}: {n}"
                    )
    assert not found, "\n".join(found)


@pytest.mark.gates
def test_results_of_a_spec_folder_run_record_the_folder(tmp_path):
    results = tmp_path / "r.jsonl"
    proc = conform("--specs", FOLDER, "run", "--op", NAME, "--max-cases", "5",
                   "--results", results, "-q", "-j", "2")  # fmt: skip
    assert_clean(proc, 0)
    meta = json.loads(Path(str(results) + ".meta.json").read_text())
    assert meta["spec_sha256"] != default_registry().sha256  # the registry includes tanh
    assert len(read_jsonl(results)) == 5
