"""`aclnn-conform specs lint`: every malformed spec is rejected at the exact `file:line:`.

Each file in tests/data/bad_specs/ is a small copy of specs/ops/elu_backward.yaml with ONE defect,
marked `# <- defect` on its line (where a defect has a line). The expected lines below are
written by hand and checked against those markers, never taken from the linter's output.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import yaml
from aclnn_conformance import specs
from aclnn_conformance.cli.main import main
from aclnn_conformance.conformance.spec.registry import SpecError, default_registry, load_spec
from click.testing import CliRunner

from tests.support.specfiles import count_clauses, spec_files

REPO = Path(__file__).resolve().parent.parent
BAD = Path(__file__).resolve().parent / "data" / "bad_specs"
MARK = b"# <- defect"

# file, the line the defect is on, a substring of the message
EXPECTED = [
    ("yaml_syntax.yaml", 7, "invalid YAML: mapping values are not allowed here"),
    ("unknown_dtype.yaml", 26, "unknown dtype 'BFLOAT17'"),
    ("unknown_name_in_formula.yaml", 61, "unknown name 'beta'"),
    ("dunder_import.yaml", 61, "unknown function '__import__'"),
    ("attribute_access.yaml", 61, "attribute access is not allowed"),
    ("lambda.yaml", 61, "a lambda is not allowed"),
    ("comprehension.yaml", 57, "a comprehension is not allowed"),
    ("subscript.yaml", 53, "subscripting is not allowed"),
    ("missing_clause_id.yaml", 34, "checks/1: 'id' is missing"),
    # A missing field has no line of its own: the mapping that lacks it starts on line 3.
    ("missing_required_field.yaml", 3, "'op' is missing"),
    ("unknown_status.yaml", 32, "unknown status code 'ACLNN_ERR_PARAM_NULL'"),
    ("duplicate_clause_id.yaml", 34, "duplicate clause id 'null-ptr'"),
    ("unknown_product.yaml", 11, "unknown product 'atlas-trainig'"),
    ("deviation_unknown_clause.yaml", 69, "deviation refers to unknown clause 'alpha-nonneg'"),
    ("yaml_anchor.yaml", 25, "anchors/aliases are not allowed"),
    ("duplicate_key.yaml", 7, "duplicate key 'aten'"),
    ("wrong_arity.yaml", 57, "exp() takes 1 argument(s), got 2"),
    ("string_vs_number.yaml", 56, "a string may only be compared with a string parameter"),
    ("not_utf8.yaml", 7, "not valid UTF-8"),
    ("unknown_check_kind.yaml", 30, "'not_nul' is not one of"),
    ("expression_syntax.yaml", 56, "syntax error"),
    ("otherwise_not_last.yaml", 56, "only the last branch may be 'otherwise'"),
    ("output_not_output.yaml", 48, "'gradOutput' is not an output tensor parameter"),
    ("unknown_top_level_field.yaml", 7, "'aten_name' was unexpected"),
]
# Loader bugs reported to the lead; remove the mark when conformance/spec/load.py is fixed.
KNOWN_WRONG_LINE: dict[str, str] = {}


def _params():
    out = []
    for name, line, text in EXPECTED:
        marks = ()
        if name in KNOWN_WRONG_LINE:
            marks = (pytest.mark.xfail(strict=True, reason=KNOWN_WRONG_LINE[name]),)
        out.append(pytest.param(name, line, text, id=name.removesuffix(".yaml"), marks=marks))
    return out


def runner() -> CliRunner:
    try:
        return CliRunner(mix_stderr=False)  # click < 8.2 keeps stderr apart only when asked
    except TypeError:
        return CliRunner()


def lint(*args: str):
    result = runner().invoke(main, ["specs", "lint", *args])
    assert "Traceback" not in result.stdout + result.stderr
    return result


PROBLEM = re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+): (?P<msg>.+)$")


def problem_lines(stdout: str) -> list[re.Match]:
    lines = [x for x in stdout.splitlines() if x.strip()]
    matches = [PROBLEM.match(x) for x in lines]
    assert all(matches), f"not every line is file:line: message:\n{stdout}"
    return matches  # type: ignore[return-value]


def valid_copy() -> str:
    """The small ELU copy without its defect (the defect of one file, undone by hand)."""
    text = (BAD / "unknown_name_in_formula.yaml").read_text(encoding="utf-8")
    fixed = text.replace("value: gradOutput * beta  # <- defect", "value: gradOutput * scale")
    assert fixed != text
    # renamed: a file named on the command line may not redefine the shipped elu_backward
    return _renamed(fixed)


def _renamed(text: str) -> str:
    out = text.replace("op: aclnnEluBackward\nname: elu_backward\n",
                       "op: aclnnEluBackwardCopy\nname: elu_backward_copy\n")  # fmt: skip
    assert out != text
    return out


# -- the data files are what the table says ------------------------------------------------------


def test_every_bad_spec_is_in_the_table():
    assert sorted(p.name for p in BAD.glob("*.yaml")) == sorted(n for n, _, _ in EXPECTED)
    assert len(EXPECTED) >= 12


@pytest.mark.parametrize("name,line,text", [(n, ln, t) for n, ln, t in EXPECTED])
def test_defect_marker_is_on_the_expected_line(name, line, text):
    raw = (BAD / name).read_bytes().split(b"\n")
    marked = [i + 1 for i, x in enumerate(raw) if MARK in x]
    if name == "missing_required_field.yaml":
        assert marked == []
        assert not any(x.startswith(b"op:") for x in raw)
    else:
        assert marked == [line]


def test_the_undefected_copy_is_valid(tmp_path, monkeypatch):
    (tmp_path / "elu_small.yaml").write_text(valid_copy(), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = lint("elu_small.yaml")
    assert result.exit_code == 0, result.stdout
    # clauses: 3 checks + 3 branches + 1 special point, counted by hand
    assert result.stdout.strip() == "1 spec OK (7 clauses)"


# -- each bad spec, through CliRunner -------------------------------------------------------------


@pytest.mark.gates
@pytest.mark.parametrize("name,line,text", _params())
def test_bad_spec_rejected_at_its_line(name, line, text, monkeypatch):
    monkeypatch.chdir(BAD)
    result = lint(name)
    assert result.exit_code == 1, result.stdout + result.stderr
    found = problem_lines(result.stdout)
    assert len(found) == 1, result.stdout  # exactly one defect per file
    m = found[0]
    assert (m["file"], int(m["line"])) == (name, line), result.stdout
    assert text in m["msg"]
    assert "1 problem in 1 of 1 spec file" in result.stderr


def test_many_files_and_a_directory_at_once(tmp_path, monkeypatch):
    good = tmp_path / "good.yaml"
    good.write_text(valid_copy(), encoding="utf-8")
    monkeypatch.chdir(REPO)
    result = lint(str(good), "tests/data/bad_specs")
    assert result.exit_code == 1
    found = problem_lines(result.stdout)
    assert len(found) == len(EXPECTED)
    assert not any(str(good) in m["file"] for m in found)
    n = len(EXPECTED)
    assert f"{n} problems in {n} of {n + 1} spec files" in result.stderr


# -- the same through a real process ----------------------------------------------------------------


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.pop("ACLNN_CONFORM_DEBUG", None)
    return env


def test_bad_specs_via_python_m(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "aclnn_conformance.cli.main", "specs", "lint", "tests/data/bad_specs"],
        cwd=REPO, env=_env(), capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    lines = set(proc.stdout.splitlines())
    for name, line, text in EXPECTED:
        if name in KNOWN_WRONG_LINE:
            continue
        want = f"tests/data/bad_specs/{name}:{line}: "
        hits = [x for x in lines if x.startswith(want)]
        assert len(hits) == 1 and text in hits[0], (want, proc.stdout)
    assert len(problem_lines(proc.stdout)) == len(EXPECTED)


@pytest.mark.skipif(shutil.which("aclnn-conform") is None, reason="package not installed")
def test_console_script(tmp_path):
    proc = subprocess.run(
        ["aclnn-conform", "specs", "lint", str(BAD / "wrong_arity.yaml")],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 1
    assert proc.stdout.startswith(f"{BAD / 'wrong_arity.yaml'}:57: exp() takes 1 argument(s)")
    assert "Traceback" not in proc.stdout + proc.stderr


# -- the shipped specs ------------------------------------------------------------------------------


def _summary(files: list[Path]) -> str:
    """`specs lint`'s line for these files, with the clauses counted straight from the YAML."""
    n = len(files)
    clauses = sum(count_clauses(yaml.safe_load(f.read_text(encoding="utf-8"))) for f in files)
    return f"{n} spec{'s' if n != 1 else ''} OK ({clauses} clauses)\n"


@pytest.mark.gates
def test_shipped_specs_are_clean():
    files = spec_files()
    assert files
    result = lint()
    assert result.exit_code == 0, result.stdout
    assert result.stdout == _summary(files)
    # one file per operator of the registry, counted without the loader
    docs = [yaml.safe_load(f.read_text(encoding="utf-8")) for f in files]
    names = [d["name"] for d in docs] + [d["inplace"]["name"] for d in docs if "inplace" in d]
    assert sorted(names) == sorted(default_registry().names())


@pytest.mark.gates
def test_shipped_specs_via_python_m():
    ops = specs.root() / "ops"
    proc = subprocess.run(
        [sys.executable, "-m", "aclnn_conformance.cli.main", "specs", "lint", str(ops)],
        cwd=REPO, env=_env(), capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout == _summary(sorted(ops.glob("*.yaml")))


# -- nothing in a spec is executed --------------------------------------------------------------------


@pytest.mark.gates
@pytest.mark.parametrize("where", ["value", "when", "violated_if", "special_point"])
def test_code_in_a_spec_is_never_run(tmp_path, monkeypatch, where):
    target = Path("/tmp") / f"pwned_{uuid.uuid4().hex}"
    payload = f"__import__('os').system('touch {target}')"
    text = valid_copy()
    swaps = {
        "value": ("value: gradOutput * scale", f"value: {payload}"),
        "when": ("when: isResult and selfOrResult <= 0", f"when: {payload} == 0"),
        "violated_if": ("violated_if: isResult and alpha < 0", f"violated_if: {payload} == 0"),
        "special_point": (
            "param: selfOrResult, value: 0,",
            f'param: selfOrResult, value: "{payload}",',
        ),
    }
    old, new = swaps[where]
    assert old in text
    spec = tmp_path / "pwn.yaml"
    spec.write_text(text.replace(old, new, 1), encoding="utf-8")
    monkeypatch.chdir(tmp_path)

    result = lint("pwn.yaml")
    assert result.exit_code == 1
    (m,) = problem_lines(result.stdout)
    assert m["file"] == "pwn.yaml" and "attribute access is not allowed" in m["msg"]
    with pytest.raises(SpecError):
        load_spec(spec)
    shown = runner().invoke(main, ["specs", "show", "pwn.yaml"])
    assert shown.exit_code == 2 and "Traceback" not in shown.stdout + shown.stderr
    proc = subprocess.run(
        [sys.executable, "-m", "aclnn_conformance.cli.main", "specs", "lint", str(spec)],
        cwd=REPO, env=_env(), capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 1
    assert not target.exists()


# -- paths that are not specs -------------------------------------------------------------------------


def test_missing_path_is_a_usage_error(tmp_path):
    result = lint(str(tmp_path / "nope.yaml"))
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.strip() == f"Error: {tmp_path / 'nope.yaml'}: no such file or directory"


def test_directory_without_yaml(tmp_path):
    (tmp_path / "README.txt").write_text("no specs here\n")
    result = lint(str(tmp_path))
    assert result.exit_code == 2
    assert "directory has no *.yaml spec files" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_binary_file(tmp_path, monkeypatch):
    # byte 10 is the only newline before the first invalid byte (0x80): the error is on line 2
    (tmp_path / "blob.yaml").write_bytes(bytes(range(256)) * 8)
    monkeypatch.chdir(tmp_path)
    result = lint("blob.yaml")
    assert result.exit_code == 1
    (m,) = problem_lines(result.stdout)
    assert (m["file"], m["line"], m["msg"]) == ("blob.yaml", "2", "file is not valid UTF-8")


@pytest.mark.parametrize(
    "text,line,message",
    [
        ("", 1, "empty document"),
        ("# only a comment\n", 1, "empty document"),
        ("- a\n- b\n", 1, "a spec must be a mapping at the top level"),
        ("format: 1\nop: !foo aclnnX\n", 2, "YAML tag '!foo' is not allowed"),
    ],
    ids=["empty", "comment-only", "top-level-list", "unknown-tag"],
)
def test_not_a_spec_at_all(tmp_path, monkeypatch, text, line, message):
    (tmp_path / "x.yaml").write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = lint("x.yaml")
    assert result.exit_code == 1
    (m,) = problem_lines(result.stdout)  # one line even when PyYAML's message spans several
    assert (m["file"], int(m["line"])) == ("x.yaml", line)
    assert message in m["msg"]


def test_same_op_in_two_files(tmp_path, monkeypatch):
    src = _renamed((REPO / "specs" / "ops" / "elu_backward.yaml").read_text(encoding="utf-8"))
    (tmp_path / "a.yaml").write_text(src, encoding="utf-8")
    (tmp_path / "b.yaml").write_text(src, encoding="utf-8")
    name_line = 1 + src.splitlines().index("name: elu_backward_copy")
    op_line = 1 + src.splitlines().index("op: aclnnEluBackwardCopy")
    monkeypatch.chdir(tmp_path)
    result = lint(".")
    assert result.exit_code == 1
    got = {(m["file"], int(m["line"]), m["msg"]) for m in problem_lines(result.stdout)}
    assert got == {
        ("b.yaml", name_line, "name 'elu_backward_copy' is also defined in a.yaml"),
        ("b.yaml", op_line, "op 'aclnnEluBackwardCopy' is also defined in a.yaml"),
    }


@pytest.mark.gates
def test_deeply_nested_yaml_gives_no_traceback(tmp_path, monkeypatch):
    (tmp_path / "deep.yaml").write_text(valid_copy() + "x: " + "[" * 5000 + "]" * 5000 + "\n")
    monkeypatch.chdir(tmp_path)
    result = lint("deep.yaml")
    assert result.exit_code == 1
    (m,) = problem_lines(result.stdout)
    assert m["file"] == "deep.yaml"


@pytest.mark.gates
def test_deeply_nested_yaml_is_reported_as_such(tmp_path, monkeypatch):
    (tmp_path / "deep.yaml").write_text(valid_copy() + "x: " + "[" * 5000 + "]" * 5000 + "\n")
    monkeypatch.chdir(tmp_path)
    result = lint("deep.yaml")
    (m,) = problem_lines(result.stdout)
    assert "nests too deeply" in m["msg"]


def test_error_in_a_block_scalar_expression(tmp_path, monkeypatch):
    text = valid_copy().replace(
        "      value: gradOutput * scale\n",
        "      value: |\n        (gradOutput\n         * beta)\n",
    )
    (tmp_path / "block.yaml").write_text(text, encoding="utf-8")
    beta_line = 1 + text.splitlines().index("         * beta)")
    monkeypatch.chdir(tmp_path)
    result = lint("block.yaml")
    (m,) = problem_lines(result.stdout)
    assert (int(m["line"]), "unknown name 'beta'" in m["msg"]) == (beta_line, True)
