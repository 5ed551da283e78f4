"""`aclnn-conform specs list/show` and the group's error handling.

Expected values are read straight from the YAML files with yaml.safe_load (not through the
loader), or written by hand from the ELU seed (status codes 161001 / 161002). The op-generic tests
run for every spec file in use (tests/support/specfiles.py); none counts them.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import unicodedata
import warnings
from pathlib import Path

import aclnn_conformance.cli.console  # noqa: F401
import aclnn_conformance.cli.specs_cmd  # noqa: F401
import pytest
from aclnn_conformance import cli
from aclnn_conformance.cli.main import main
from aclnn_conformance.conformance.spec.lint import Problem
from aclnn_conformance.conformance.spec.registry import Registry, SpecError, default_registry
from click.testing import CliRunner

from tests.support.specfiles import count_clauses, formulas, raw_specs

REPO = Path(__file__).resolve().parent.parent
RAW = raw_specs()  # {name: YAML document} of every spec file in use


def raw(name: str) -> dict:
    return RAW[name]


ALL = sorted(RAW)


def run(*args: str, **kwargs):
    try:
        runner = CliRunner(mix_stderr=False)  # click < 8.2
    except TypeError:
        runner = CliRunner()
    result = runner.invoke(main, list(args), **kwargs)
    assert "Traceback" not in result.stdout + result.stderr
    return result


def flat(text: str) -> str:
    """Whitespace-normalised text: wrapped lines compare equal to the unwrapped source."""
    return " ".join(text.split())


def width(line: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)


# -- the group ------------------------------------------------------------------------------------


def test_version_and_help():
    v = run("--version")
    assert v.exit_code == 0
    assert re.match(r"aclnn-conform, version \d+\.\d+", v.stdout)
    h = run("--help")
    assert h.exit_code == 0 and "specs" in h.stdout and "Exit codes" in h.stdout


def test_unknown_command_is_a_usage_error():
    r = run("frobnicate")
    assert r.exit_code == 2 and "No such command" in r.stderr


# -- specs list ------------------------------------------------------------------------------------


def test_list_shows_every_op():
    """One row per spec file and one per in-place variant a file defines (its `inplace:`)."""
    r = run("specs", "list")
    assert r.exit_code == 0
    lines = r.stdout.strip().splitlines()
    assert lines[0].split() == ["NAME", "OP", "CLAUSES", "DEVIATIONS", "PRODUCTS"]
    assert ALL  # one file per op of the registry
    variants = {d["inplace"]["name"]: (d, d["inplace"]) for d in RAW.values() if "inplace" in d}
    assert sorted(default_registry().names()) == sorted([*ALL, *variants])
    assert len(lines) == 1 + len(ALL) + len(variants)
    for line in lines[1:]:
        cols = line.split(None, 4)
        if cols[0] in variants:
            base, ip = variants[cols[0]]
            assert cols[1] == ip["op"]
            assert int(cols[2]) <= count_clauses(base)  # rules on out == self drop out
            assert cols[4] == ", ".join(ip.get("products", base["products"]))
            continue
        d = raw(cols[0])
        assert cols[:4] == [
            cols[0],
            d["op"],
            str(count_clauses(d)),
            str(len(d.get("deviations", []))),
        ]
        assert cols[4] == ", ".join(d["products"])


def test_list_elu_line_by_hand():
    # elu_backward.yaml: 11 checks + 3 branches + 4 special points + 2 properties; 7 deviations
    line = next(x for x in run("specs", "list").stdout.splitlines() if x.startswith("elu_backward"))
    assert line.split() == [
        "elu_backward", "aclnnEluBackward", "20", "7",
        "atlas-inference,", "atlas-training,", "atlas-a2,", "atlas-a3,", "ascend950",
    ]  # fmt: skip


# -- specs show ------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["elu_backward", "aclnnEluBackward", "EluBackward"])
def test_show_elu(op):
    r = run("specs", "show", op)
    assert r.exit_code == 0, r.stderr
    out = r.stdout
    d = raw("elu_backward")
    assert out.splitlines()[0] == "aclnnEluBackward  (elu_backward)"
    assert "\x1b[" not in out  # no colour when stdout is not a terminal
    assert "004_b47ccd8f2a4f1c88.txt" in out and d["summary"] in out
    for clause in ("alpha-nonneg-if-result", "null-ptr", "dtype-same", "max-rank", "empty"):
        assert clause in out
    assert re.search(r"^\s+1\s+null-ptr\s+not_null\s+161001 ACLNN_ERR_PARAM_NULLPTR$", out, re.M)
    assert re.search(
        r"^\s+10\s+alpha-nonneg-if-result\s+value\s+161002 ACLNN_ERR_PARAM_INVALID$", out, re.M
    )
    assert re.search(r"violated if:\s+isResult and alpha < 0$", out, re.M)
    # the dtype table: products sharing a list on one row; BF16 on Atlas A2, A3 and 950
    header = next(x for x in out.splitlines() if x.split()[:2] == ["PARAM", "SET"])
    assert header.split() == ["PARAM", "SET", "PRODUCTS", "DTYPES"]
    for param in ("gradOutput", "selfOrResult", "gradInput"):
        assert re.search(
            rf"^\s+{param}\s+float\s+atlas-inference, atlas-training\s+FLOAT, FLOAT16\n"
            r"\s+atlas-a2, atlas-a3, ascend950\s+FLOAT, FLOAT16, BF16$",
            out,
            re.M,
        )


def test_show_elu_every_part_of_the_spec():
    out = run("specs", "show", "elu_backward").stdout
    d = raw("elu_backward")
    text = flat(out)
    # parameters in C signature order, with C type and default
    names = [p["name"] for p in d["params"]]
    rows = [
        x.split() for x in out.splitlines() if re.match(r"^\s+\d+\s+\w+\s+(tensor|scalar|bool)", x)
    ]
    assert [r[1] for r in rows] == names
    assert "2 alpha scalar input const aclScalar* 1.0 (FLOAT)" in flat(
        "\n".join(" ".join(r) for r in rows)
    )
    # every check in order, with its source
    ids = [c["id"] for c in d["checks"]]
    positions = [out.index(f"  {c}  ") for c in ids]
    assert positions == sorted(positions)
    for c in d["checks"]:
        assert flat(c["source"]) in text
    # the formula: every branch's when and value, in order
    branch_pos = []
    for b in d["formula"]["branches"]:
        assert flat(f"when: {b['when']}") in text
        assert flat(f"value: gradInput = {b['value']}") in text
        branch_pos.append(text.index(flat(f"{b['id']} when: {b['when']}")))
    assert branch_pos == sorted(branch_pos)
    # special points and deviations with their sources
    for s in d["special_points"]:
        assert flat(f"{s['id']} {s['param']} = {s['value']}") in text
    for dev in d["deviations"]:
        assert dev["id"] in out and flat(dev["source"]) in text and flat(dev["summary"]) in text
    assert "clause dtype-gradInput; backends aclnn, torch_npu" in out
    assert "161001" in out and "161002" in out


@pytest.mark.gates
def test_show_names_give_the_same_output():
    a = run("specs", "show", "elu_backward").stdout
    assert a == run("specs", "show", "aclnnEluBackward").stdout


@pytest.mark.parametrize("name", ALL)
def test_show_every_op_fits_100_columns(name):
    r = run("specs", "show", name)
    assert r.exit_code == 0
    d = raw(name)
    text = flat(r.stdout)
    assert d["op"] in r.stdout
    for f in formulas(d):
        for let in f.get("let", []):
            assert flat(f"{let['name']} = {let['value']}") in text
        for b in f["branches"]:
            assert flat(f"value: {f['output']} = {b['value']}") in text
    lines = [x for x in r.stdout.splitlines() if not x.startswith("  file:")]  # a path: not wrapped
    too_wide = [x for x in lines if width(x) > 100]
    assert not too_wide


def test_show_colour_only_on_a_terminal(monkeypatch):
    plain = run("specs", "show", "elu_backward").stdout
    monkeypatch.setattr(cli.console, "color_enabled", lambda: True)
    coloured = run("specs", "show", "elu_backward", color=True).stdout
    assert "\x1b[" in coloured
    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured) == plain  # same layout, only styled


def test_show_a_spec_file(tmp_path):
    r = run("specs", "show", str(raw("gelu_backward_v2")["__file__"]))
    assert r.exit_code == 0
    assert r.stdout.startswith("aclnnGeluBackwardV2  (gelu_backward_v2)")
    assert re.search(
        r"^\s+gradOutput\s+tensor\s+atlas-inference, atlas-training\s+FLOAT16, FLOAT$",
        r.stdout,
        re.M,
    )


@pytest.mark.parametrize("op", ["nope", "elu_forward", "aclnnEluForward"])
def test_show_unknown_op(op):
    r = run("specs", "show", op)
    assert r.exit_code == 2
    assert r.stdout == ""
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1
    assert err.startswith(f"Error: unknown operator {op!r}")
    for name in ALL:
        assert name in err


def test_show_unknown_op_suggests():
    err = run("specs", "show", "gelu_backwrd_v2").stderr
    assert "did you mean gelu_backward_v2?" in err


# -- errors from below turn into one line --------------------------------------------------------


def _raise(exc):
    def f(*a, **k):
        raise exc

    return f


def test_bad_shipped_spec_is_one_line(monkeypatch):
    problems = [
        Problem("specs/ops/x.yaml", 12, "unknown dtype 'F'"),
        Problem("specs/ops/x.yaml", 20, "b"),
    ]
    monkeypatch.setattr(cli.specs_cmd, "registry", _raise(SpecError(problems)))
    r = run("specs", "list")
    assert r.exit_code == 2
    assert r.stderr == (
        "Error: specs/ops/x.yaml:12: unknown dtype 'F' "
        "(and 1 more problem; run: aclnn-conform specs lint specs/ops/x.yaml)\n"
    )


def test_os_error_is_one_line(monkeypatch):
    exc = PermissionError(13, "Permission denied", "/some/where.yaml")
    monkeypatch.setattr(cli.specs_cmd, "registry", _raise(exc))
    r = run("specs", "show", "elu_backward")
    assert (r.exit_code, r.stderr) == (2, "Error: /some/where.yaml: Permission denied\n")


def test_internal_error_is_one_line_unless_debugging(monkeypatch):
    monkeypatch.delenv("ACLNN_CONFORM_DEBUG", raising=False)
    monkeypatch.setattr(cli.specs_cmd, "registry", _raise(ZeroDivisionError("boom")))
    r = run("specs", "list")
    assert r.exit_code == 3
    assert len(r.stderr.splitlines()) == 1
    assert "internal error" in r.stderr and "ZeroDivisionError: boom" in r.stderr
    monkeypatch.setenv("ACLNN_CONFORM_DEBUG", "1")
    r = CliRunner().invoke(main, ["specs", "list"])
    assert isinstance(r.exception, ZeroDivisionError)


# -- the docs show real output (README.md, docs/spec-format.md, docs/python-api.md) ---------------


README = (REPO / "README.md").read_text(encoding="utf-8")
SPEC_PAGE = (REPO / "docs" / "spec-format.md").read_text(encoding="utf-8")
PYTHON_PAGE = (REPO / "docs" / "python-api.md").read_text(encoding="utf-8")


def _readme_block(command: str) -> str:
    """The lines docs/spec-format.md's example session shows after `$ command`, up to the next
    prompt."""
    session = re.search(r"```console\n(.*?)```", SPEC_PAGE, re.S).group(1)  # type: ignore[union-attr]
    after = session.split(f"$ {command}\n", 1)[1]
    return after.split("\n$ ", 1)[0].rstrip("\n") + "\n"


def _readme_ops() -> list[str]:
    """The ops docs/spec-format.md's `specs list` example shows, in its order."""
    return [x.split()[0] for x in _readme_block("aclnn-conform specs list").splitlines()[1:]]


def _ops_not_in_the_readme() -> None:
    """Ops of the registry the spec page's examples do not show: listed, not a failure (adding an
    operator is adding one YAML file; docs/spec-format.md is updated when an op ships)."""
    missing = sorted(set(default_registry().names()) - set(_readme_ops()))
    if missing:
        warnings.warn(f"docs/spec-format.md's specs list/lint examples do not show: {', '.join(missing)}",
                      stacklevel=2)  # fmt: skip


def test_spec_page_specs_list_is_current(monkeypatch):
    """docs/spec-format.md's `specs list` block is the real output for the ops it shows, byte
    for byte."""
    shown = Registry([default_registry().get(n) for n in _readme_ops()])
    monkeypatch.setattr(cli.specs_cmd, "registry", lambda: shown)
    assert run("specs", "list").stdout == _readme_block("aclnn-conform specs list")
    _ops_not_in_the_readme()


@pytest.mark.gates
def test_spec_page_specs_lint_is_current():
    """docs/spec-format.md's `specs lint` line is the real one for the spec files of the ops it
    shows."""
    # an in-place API is derived from its out-of-place spec's file: each file once
    files = list(dict.fromkeys(str(default_registry().get(n).path) for n in _readme_ops()))
    assert run("specs", "lint", *files).stdout == _readme_block("aclnn-conform specs lint")
    _ops_not_in_the_readme()


def test_spec_page_specs_show_excerpt_is_current():
    shown = run("specs", "show", "elu_backward").stdout.splitlines()
    block = _readme_block(
        "aclnn-conform specs show elu_backward        # or: specs show aclnnEluBackward"
    )
    kept = [x for x in block.splitlines() if not x.startswith("[...")]
    it = iter(shown)
    assert all(any(x == y for y in it) for x in kept)  # the excerpt's lines, in order


def test_python_api_page_example_runs(tmp_path):
    """docs/python-api.md's example runs and prints what the page says it prints."""
    code = re.search(r"```python\n(.*?)```", PYTHON_PAGE, re.S).group(1)  # type: ignore[union-attr]
    want = re.search(r"prints\n\n```text\n(.*?)```", PYTHON_PAGE, re.S).group(1)  # type: ignore[union-attr]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == want


def test_readme_setup_commands():
    """The two set-up commands of the README; .ci/run installs the same and runs the same tests."""
    setup = README.split("## Install, run, test", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)\n```", setup, re.S)
    assert blocks == [
        "pip install -e '.[torch,jax,fast,test]' && aclnn-conform run --backend torch -j 2 --html report.html",
        "python -m pytest -q -n auto",
    ]
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip install -e '.[torch,jax,fast,test]'" in ci
    assert "\npython -m pytest -q -n auto\n" in ci
