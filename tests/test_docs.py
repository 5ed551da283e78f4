"""The documentation: README.md (a newcomer's page) and docs/*.md (the reference pages).

- every relative link of README.md and docs/*.md names a file that exists, and an anchor names a
  heading of that file;
- README.md stays short (at most 250 lines: the reference material lives in docs/);
- the generated parts are current: docs/coverage.md's table is what `aclnn-conform specs list
  --markdown` prints (tests/docgen.py writes it), per spec of the registry and as a whole;
  docs/benchmarks.md's table is what tests/bench/bench.py makes of docs/benchmarks.json, the
  results it was printed from.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
from pathlib import Path

import pytest
from aclnn_conformance.conformance.spec.registry import default_registry

from tests import docgen
from tests.support.runcli import REPO

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
HARNESS_README = REPO / "tests" / "data" / "exec_harness" / "README.md"
# pages another part of the same change writes; a link to one is checked once it exists
README_MAX_LINES = 250

LINK = re.compile(r"(?<!!)\[([^\]]*)\]\(([^)\s]+)\)")


def unfenced(text: str) -> str:
    """The text outside fenced code blocks."""
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def prose(text: str) -> str:
    """The text outside fenced code blocks and inline code spans."""
    return re.sub(r"`[^`\n]*`", "", unfenced(text))


def slugs(text: str) -> set[str]:
    """GitHub's anchors of a Markdown text's headings: lower case, punctuation dropped, spaces
    made hyphens, a repeated slug numbered -1, -2, ..."""
    seen: dict[str, int] = {}
    out = set()
    for line in unfenced(text).splitlines():
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        heading = re.sub(r"[^\w\- ]", "", m.group(1).replace("`", "").lower()).replace(" ", "-")
        n = seen.get(heading, 0)
        seen[heading] = n + 1
        out.add(heading if n == 0 else f"{heading}-{n}")
    return out


def links(page: Path) -> list[tuple[str, str]]:
    """(link text, target) of each relative link of the page."""
    found = LINK.findall(prose(page.read_text(encoding="utf-8")))
    return [(t, u) for t, u in found if not re.match(r"^[a-z][a-z0-9+.-]*:", u)]


def test_the_link_checker_finds_links_and_anchors():
    text = "# A `b` title\n\n## Set-up, again!\n\n## Set-up, again!\n\n```\n[x](nowhere.md)\n```\n"
    assert slugs(text) == {"a-b-title", "set-up-again", "set-up-again-1"}
    assert LINK.findall(prose("[a](b.md#c) `[d](e.md)` ![img](f.png) [g](https://h)")) == [
        ("a", "b.md#c"),
        ("g", "https://h"),
    ]


@pytest.mark.parametrize("page", [*PAGES, HARNESS_README], ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves(page):
    bad = []
    for text, target in links(page):
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        rel = dest.relative_to(REPO).as_posix() if dest.is_relative_to(REPO) else str(dest)
        if not dest.exists():
            bad.append(f"[{text}]({target}): no file {rel}")
        elif (
            anchor
            and dest.suffix == ".md"
            and anchor not in slugs(dest.read_text(encoding="utf-8"))
        ):
            bad.append(f"[{text}]({target}): {rel} has no heading #{anchor}")
    assert not bad, "\n".join(bad)


def test_every_docs_page_is_linked_from_the_readme():
    linked = {(REPO / u.partition("#")[0]).resolve() for _, u in links(REPO / "README.md")}
    pages = [p for p in PAGES[1:] if p.resolve() not in linked]
    assert not pages, f"README.md links no {[p.name for p in pages]}"


def test_the_readme_is_short():
    n = len((REPO / "README.md").read_text(encoding="utf-8").splitlines())
    assert n <= README_MAX_LINES, f"README.md has {n} lines; move reference material to docs/"


# -- docs/coverage.md --------------------------------------------------------------------------


def coverage_rows(table: str) -> dict[str, str]:
    """spec name -> its row, of a `specs list --markdown` table."""
    rows = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) > 1 and cells[1].startswith("`"):
            rows[cells[1].strip("`")] = line
    return rows


PAGE_ROWS = coverage_rows(docgen.generated_part(docgen.PAGE.read_text(encoding="utf-8")))
REAL_ROWS = coverage_rows(docgen.coverage_table())


def tracked(path: Path) -> bool:
    """Whether git tracks the file in this checkout (True where git cannot say): a spec file
    added but not committed yet may lack its row (the one-YAML promise)."""
    p = subprocess.run(["git", "ls-files", "--error-unmatch", str(path)], cwd=REPO,
                       capture_output=True, text=True, check=False)  # fmt: skip
    return p.returncode == 0 or "not a git repository" in p.stderr


@pytest.mark.parametrize("spec", list(default_registry()), ids=lambda s: s.name)
def test_the_coverage_page_has_the_current_row_of_each_spec(spec):
    if spec.name not in PAGE_ROWS and not tracked(Path(spec.path)):
        pytest.skip(f"{spec.path} is not committed yet (then: python tests/docgen.py)")
    assert spec.name in PAGE_ROWS, "docs/coverage.md lacks it: run python tests/docgen.py"
    assert PAGE_ROWS[spec.name] == REAL_ROWS[spec.name], "run python tests/docgen.py"
    # the columns say what the spec says (checked against the spec, not only the CLI's output)
    cells = [c.strip() for c in PAGE_ROWS[spec.name].strip().strip("|").split("|")]
    assert cells[:5] == [f"`{spec.op}`", f"`{spec.name}`", ", ".join(spec.products),
                         str(len(spec.clause_ids())), str(len(spec.deviations))]  # fmt: skip


def test_the_apis_the_coverage_page_calls_missing_have_no_spec():
    """The page's list of family APIs no spec covers stays true: a spec added for one of them
    must take it off the list."""
    page = docgen.PAGE.read_text(encoding="utf-8")
    section = page[page.index("## Family APIs not covered") :]
    named = set(re.findall(r"`(aclnn\w+)`", section))
    assert len(named) > 10  # the section was found and read
    covered = sorted(named & {s.op for s in default_registry()})
    assert not covered, f"docs/coverage.md calls these uncovered, but they are specs: {covered}"


def test_the_coverage_page_is_what_the_generator_writes():
    page = docgen.PAGE.read_text(encoding="utf-8")
    extra = sorted(set(PAGE_ROWS) - set(REAL_ROWS))
    assert not extra, f"docs/coverage.md lists specs the registry lacks: {extra}"
    shown = {n: r for n, r in REAL_ROWS.items() if n in PAGE_ROWS}  # uncommitted ones aside
    table = docgen.coverage_table().splitlines()
    want = "\n".join(ln for ln in table if ln not in REAL_ROWS.values() or ln in shown.values())
    assert page == docgen.page_with(page, want), "run python tests/docgen.py"


# -- docs/benchmarks.md ------------------------------------------------------------------------


def load_bench():
    spec = importlib.util.spec_from_file_location("bench", REPO / "tests" / "bench" / "bench.py")
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def test_the_benchmark_page_is_what_bench_makes_of_its_json():
    bench = load_bench()
    res = json.loads(bench.RESULTS.read_text(encoding="utf-8"))
    page = bench.PAGE.read_text(encoding="utf-8")
    assert page == bench.page_with(page, bench.markdown(res)), (
        "run python tests/bench/bench.py --from docs/benchmarks.json --update-docs"
    )


def test_the_benchmark_rows_are_the_json_numbers():
    """Independently of bench.markdown: each op row's times and rates come from its JSON row."""
    bench = load_bench()
    res = json.loads(bench.RESULTS.read_text(encoding="utf-8"))
    rows = [ln for ln in bench.PAGE.read_text(encoding="utf-8").splitlines()
            if re.match(r"^\| \w+(?: \([^)]*\))? \| \w+ \| 2\^\d+ \|", ln)]  # fmt: skip
    ops = [r for r in res["ops"] if r.get("log2n") is not None]  # not the [rows, cols] rows
    assert len(rows) == len(ops)
    for line, r in zip(rows, ops, strict=True):
        cells = [c.strip() for c in line.strip("|").split("|")]
        n = 2 ** r["log2n"]
        op = f"{r['op']} ({r['measured']})" if r.get("measured") else r["op"]  # an earlier run's
        assert cells[:3] == [op, r["dtype"], f"2^{r['log2n']}"]
        assert abs(int(cells[3].removesuffix(" ms")) - r["ref_s"] * 1e3) <= 0.5
        assert abs(int(cells[4].removesuffix(" M")) - n / r["ref_s"] / 1e6) <= 0.5
        if "torch_s" in r:
            assert abs(float(cells[6].removesuffix("x")) - r["ref_s"] / r["torch_s"]) <= 0.05
        else:
            assert cells[5] == cells[6] == "-"


# -- the README's tour is real output ----------------------------------------------------------


def tour() -> list[tuple[str, list[str]]]:
    """(command, lines shown after it) of each `$ ` prompt in the README's console blocks."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    out: list[tuple[str, list[str]]] = []
    for block in re.findall(r"```console\n(.*?)```", readme, re.S):
        for line in block.splitlines():
            if line.startswith("$ "):
                out.append((line[2:], []))
            elif out:
                out[-1][1].append(line)
    return out


def timeless(line: str) -> str:
    return re.sub(r" in \d+(\.\d+)? s\b", " in T s", line)


@pytest.mark.gates
def test_the_readme_tour_is_real_output(tmp_path):
    """Each command of the README's tour, run in order in a fresh folder beside the checkout's
    tests/ (the fixtures it names), exits as the tour implies, and the lines it shows appear, in
    that order, in the real output (timings aside; `backends` by name only: it depends on the
    host). `[...]` lines mark what the README leaves out."""
    import os

    (tmp_path / "tests").symlink_to(REPO / "tests")
    env = dict(os.environ, NO_COLOR="1", PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))  # fmt: skip
    env.pop("ACLNN_CONFORM_SPECS", None)
    steps = tour()
    assert [c.split()[:2] for c, _ in steps][:1] == [["aclnn-conform", "backends"]]
    for command, shown in steps:
        p = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=600)  # fmt: skip
        fails = (
            "--no-expectations" in command or " replay " in command or "lint toy.yaml" in command
        )
        assert (p.returncode != 0) == fails, (command, p.returncode, p.stderr[-2000:])
        real = [timeless(x) for x in (p.stdout + p.stderr).splitlines()]
        if command == "aclnn-conform backends":
            real, shown = [x.split()[0] for x in real], [x.split()[0] for x in shown]
        it = iter(real)
        for line in shown:
            if line.startswith("[..."):
                continue
            assert any(timeless(line) == x for x in it), (command, line)
