"""How the CLI turns errors into one line on stderr and an exit code — never a traceback.

Exit codes (every command):
  0  success
  1  the command ran and found problems (lint problems, failing cases)
  2  usage or setup error: bad option, missing file, bad spec, unknown op or backend, ...
  3  infrastructure failure (a backend missing or not starting: InfrastructureError) or an
     internal error (a bug in aclnn-conform); set ACLNN_CONFORM_DEBUG=1 to see the traceback

A command module raises `UserError("what went wrong; what to do")` for anything the user can fix.
Exceptions raised deeper down (SpecError, UnknownOp, CallError, OSError, YAML errors) are
translated in one place, `translate()`, called by the `main` group around every command. A module
that defines its own user-caused error type registers it with `user_error(MyError)`.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable

import click
import yaml

from ..conformance.acl.call import CallError
from ..conformance.acl.dtypes import DtypeError
from ..conformance.run.backend import BackendOptionError
from ..conformance.run.config import ConfigError, Unavailable
from ..conformance.spec.expr.language import ExprError
from ..conformance.spec.registry import SpecError, UnknownOp
from ..conformance.spec.yamlpos import YamlError

EXIT_PROBLEMS = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130  # Ctrl-C, as shells report SIGINT

DEBUG_ENV = "ACLNN_CONFORM_DEBUG"


class UserError(click.ClickException):
    """An error the user can fix: printed as one `Error: ...` line on stderr, exit code 2."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str):
        super().__init__(one_line(message))


class InfrastructureError(click.ClickException):
    """The run cannot proceed for reasons outside the suite: a backend missing, a worker that
    cannot be started. Exit code 3 (see issue: CI gating distinguishes it from failures)."""

    exit_code = 3

    def __init__(self, message: str):
        super().__init__(one_line(message))


class InternalError(click.ClickException):
    exit_code = EXIT_INTERNAL


def one_line(text: str) -> str:
    """Collapse a message onto one line (messages from libraries sometimes span several)."""
    parts = [p.strip() for p in str(text).splitlines() if p.strip()]
    return "; ".join(parts) if parts else "unknown error"


def _spec_error(exc: BaseException) -> str:
    problems = exc.problems  # type: ignore[attr-defined]
    if not problems:
        return "invalid spec"
    first = problems[0]
    message = (str(first.message).strip().splitlines() or ["invalid spec"])[0]
    more = len(problems) - 1
    tail = ""
    if more:
        tail = f" (and {more} more problem{'s' if more > 1 else ''}; "
        tail += f"run: aclnn-conform specs lint {problems[0].file})"
    return f"{first.file}:{first.line}: {message}{tail}"


def _os_error(exc: BaseException) -> str:
    e: OSError = exc  # type: ignore[assignment]
    what = e.strerror or str(e)
    if e.filename is not None:
        return f"{e.filename}: {what}"
    return what


def _yaml_error(exc: BaseException) -> str:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None) or str(exc)
    if mark is not None:
        return f"{mark.name}:{mark.line + 1}: invalid YAML: {problem}"
    return f"invalid YAML: {problem}"


_TRANSLATORS: list[tuple[type[BaseException], Callable[[BaseException], str]]] = [
    (ConfigError, str),
    (BackendOptionError, str),
    (SpecError, _spec_error),
    (UnknownOp, str),
    (YamlError, str),
    (CallError, str),
    (DtypeError, str),
    (ExprError, str),
    (yaml.YAMLError, _yaml_error),
    (UnicodeDecodeError, lambda e: f"not valid UTF-8: {e}"),
    (OSError, _os_error),
]


def user_error(
    exc_type: type[BaseException], describe: Callable[[BaseException], str] = str
) -> None:
    """Declare `exc_type` as caused by the user: shown as one line, exit code 2."""
    _TRANSLATORS.insert(0, (exc_type, describe))


def translate(exc: Exception) -> click.ClickException:
    """The ClickException to raise in place of `exc` (which click then prints and exits with)."""
    if isinstance(exc, Unavailable):
        return InfrastructureError(str(exc))
    for exc_type, describe in _TRANSLATORS:
        if isinstance(exc, exc_type):
            return UserError(describe(exc))
    where = ""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is not None:
        where = f" at {os.path.basename(tb.tb_frame.f_code.co_filename)}:{tb.tb_lineno}"
    return InternalError(
        f"internal error{where}: {type(exc).__name__}: {one_line(str(exc))} "
        f"(a bug in aclnn-conform; set {DEBUG_ENV}=1 for the traceback)"
    )


def passes_through(exc: BaseException) -> bool:
    """Exceptions click handles itself (usage errors, exits, aborts, a closed pipe)."""
    if isinstance(exc, click.ClickException | click.exceptions.Exit | click.Abort):
        return True
    if isinstance(exc, OSError) and exc.errno == errno.EPIPE:
        return True  # click exits quietly when stdout is closed (`... | head`)
    return bool(os.environ.get(DEBUG_ENV))
