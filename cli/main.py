"""The `aclnn-conform` command line: one click group; each command lives in its own module.

To add a command: write `cli/<name>_cmd.py` defining a click command or group, import it below
and `main.add_command(...)` it. Raise `cli.errors.UserError` for anything the user can fix; other
exceptions are turned into one line on stderr by `ConformGroup.invoke` (see cli/errors.py for
the exit codes).
"""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

import click

from . import errors
from .backends_cmd import backends
from .cases_cmd import cases
from .diff_cmd import diff
from .doc_cmd import check_doc_cmd, draft_cmd
from .merge_cmd import merge
from .probe_cmd import probe_cmd
from .replay_cmd import replay
from .report_cmd import report
from .run_cmd import run
from .specs_cmd import specs


def _version() -> str:
    try:
        return metadata.version("aclnn-conformance")
    except metadata.PackageNotFoundError:  # running from a checkout that is not installed
        pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
        try:
            m = re.search(r'^version\s*=\s*"([^"]+)"', pyproject.read_text("utf-8"), re.M)
        except OSError:
            m = None
        return f"{m.group(1)} (not installed)" if m else "unknown"


class ConformGroup(click.Group):
    """A group that reports every error a command raises as one line, never a traceback."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except Exception as exc:
            if errors.passes_through(exc):
                raise
            raise errors.translate(exc) from None


@click.group(
    name="aclnn-conform",
    cls=ConformGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(_version(), "--version", "-V", prog_name="aclnn-conform")
@click.option(
    "--specs",
    "spec_dirs",
    multiple=True,
    metavar="DIR",
    type=click.Path(exists=True, path_type=Path),
    help="Add the operator specs (*.yaml) of DIR to the shipped ones (repeatable; also "
    "ACLNN_CONFORM_SPECS=DIR1:DIR2). A name clash with another spec is an error.",
)
@click.pass_context
def main(ctx: click.Context, spec_dirs: tuple[Path, ...]) -> None:
    """Conformance suite and spec checker for Huawei Ascend aclnn operators.

    \b
    Exit codes: 0 ok; 1 problems found (conformance failures not covered by
    expectations, lint problems, a regression); 2 usage or setup error;
    3 infrastructure failure (backend missing or not starting) or internal error.
    """
    ctx.ensure_object(dict)
    ctx.obj["spec_dirs"] = tuple(str(d) for d in spec_dirs)


specs.add_command(draft_cmd)
specs.add_command(check_doc_cmd)
main.add_command(specs)
main.add_command(run)
main.add_command(cases)
main.add_command(replay)
main.add_command(backends)
main.add_command(probe_cmd)
main.add_command(merge)
main.add_command(report)
main.add_command(diff)


if __name__ == "__main__":
    main()
