"""The generated part of docs/coverage.md: the table of every shipped API.

    python tests/docgen.py           rewrite the table between the page's coverage markers
    python tests/docgen.py --check   exit 1, naming the page, when the table is not current

The table is what `aclnn-conform specs list --markdown` prints for the shipped specs (spec
folders named by ACLNN_CONFORM_SPECS are left out), so the page cannot say more or other than
the registry. tests/test_docs.py fails when the page is not what this writes.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

PAGE = ROOT / "docs" / "coverage.md"
START, END = "<!-- coverage:start -->", "<!-- coverage:end -->"


def coverage_table() -> str:
    """`aclnn-conform specs list --markdown` over the shipped specs, as text."""
    from aclnn_conformance.cli.main import main
    from click.testing import CliRunner

    env = {"ACLNN_CONFORM_SPECS": None, "NO_COLOR": "1"}
    res = CliRunner().invoke(main, ["specs", "list", "--markdown"], env=env)
    if res.exit_code != 0:
        raise SystemExit(f"aclnn-conform specs list --markdown failed: {res.output.strip()}")
    return res.output.rstrip("\n")


def generated_part(page: str) -> str:
    """The text between the page's coverage markers."""
    if START not in page or END not in page:
        raise SystemExit(f"{PAGE} has no {START} ... {END} section")
    return page.split(START, 1)[1].split(END, 1)[0].strip("\n")


def page_with(page: str, table: str) -> str:
    """The page with `table` between its coverage markers."""
    generated_part(page)  # the markers are there
    head, rest = page.split(START, 1)
    return f"{head}{START}\n{table}\n{END}{rest.split(END, 1)[1]}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only say whether the page is current")
    a = ap.parse_args()
    page = PAGE.read_text(encoding="utf-8")
    new = page_with(page, coverage_table())
    if a.check:
        if new != page:
            print(f"{os.path.relpath(PAGE)} is not current: run python tests/docgen.py")
            return 1
        return 0
    if new != page:
        PAGE.write_text(new, encoding="utf-8")
        print(f"rewrote {os.path.relpath(PAGE)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
