"""Options shared by several commands (the backend under test, the case filters) and their
checks. The checks themselves live in `conformance.run.config`, shared with the pytest plugin."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from ..conformance.run import config
from ..conformance.run.runner import Selection
from ..conformance.run.session import BY_NAME, CLI, Option, Session, options_for
from ..conformance.spec.registry import Registry, env_spec_dirs, load_registry


def session(values: dict[str, Any]) -> Session:
    """The Session of this invocation's options (every check of conformance.run.config done)."""
    ctx = click.get_current_context().find_root()
    ctx.ensure_object(dict)
    return Session.create(registry(), values, CLI, ctx.obj.get("spec_dirs", ()))


def registry() -> Registry:
    """The specs of this invocation: the shipped ones, the folders of ACLNN_CONFORM_SPECS and
    those of `aclnn-conform --specs DIR` (built once, then passed down to whatever needs it)."""
    ctx = click.get_current_context().find_root()
    ctx.ensure_object(dict)
    if "registry" not in ctx.obj:
        dirs = (*env_spec_dirs(), *ctx.obj.get("spec_dirs", ()))
        ctx.obj["registry"] = load_registry(dirs=dirs)
    return ctx.obj["registry"]


def finite(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """A click callback: a float option must be a finite number (FloatRange lets nan through)."""
    if value is not None and not math.isfinite(value):
        raise click.BadParameter(f"{value} is not a finite number", ctx, param)
    return value


def parse_shard(value: str | None) -> tuple[int, int] | None:
    if value is None:
        return None
    try:
        i, n = (int(x) for x in value.split("/"))
    except ValueError:
        raise config.ConfigError(f"--shard {value!r}: expected i/n, e.g. 1/4") from None
    if not 1 <= i <= n:
        raise config.ConfigError(f"--shard {value!r}: i must be between 1 and n")
    return i, n


class Seconds(click.ParamType):
    """A positive, finite number of seconds (nan, inf, 0 and negatives are usage errors)."""

    name = "seconds"

    def convert(self, value: Any, param: Any, ctx: Any) -> float:
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            seconds = math.nan
        if not (math.isfinite(seconds) and seconds > 0):
            self.fail(f"{value!r} is not a positive, finite number of seconds", param, ctx)
        return seconds


def _click_option(o: Option) -> Callable[[Any], Any]:
    """The click option of one entry of the option table."""
    decls = [f"{o.flag}/{o.off_flag}" if o.off_flag else o.flag, *([o.short] if o.short else [])]
    kw: dict[str, Any] = {"help": o.help, "default": o.default}
    if o.is_flag:
        kw["is_flag"] = True
    elif o.multiple:
        kw["multiple"] = True
    else:
        kw["type"] = {
            "int": int,
            "count": click.IntRange(min=1),
            "natural": click.IntRange(min=0),
            "seconds": Seconds(),
            "path": click.Path(dir_okay=False, path_type=Path),
            "dir": click.Path(file_okay=False),
            "choice": click.Choice(list(o.choices)),
        }.get(o.type)
    if o.metavar:
        kw["metavar"] = o.metavar
    if o.show_default:
        kw["show_default"] = True
    return click.option(*decls, o.name, **kw)


def table_options(command: str, only: frozenset[str] | None = None) -> Callable[[Any], Any]:
    """A decorator adding the options of `command` from the one option table
    (conformance.run.session.OPTIONS), in table order; `only`: those with exactly these commands."""
    opts = [o for o in options_for(command) if only is None or o.commands == only]

    def wrap(f: Any) -> Any:
        for o in reversed(opts):
            f = _click_option(o)(f)
        return f

    return wrap


def backend_options(f):
    """Options that configure the backend under test (shared by run, replay and probe)."""
    return table_options("probe", BY_NAME["timeout"].commands)(f)


def checked_backend(
    name: str, pairs, device, lib_dir, device_id, exec_cmd, label: str = "--backend"
) -> dict[str, Any]:
    """The options of backend `name` from the command line, checked: an unknown or
    inapplicable option is a usage error, a backend that cannot run here exit code 3."""
    named = {"device": device, "lib_dir": lib_dir, "device_id": device_id, "cmd": exec_cmd}
    options = config.parse_backend_options(pairs, named)
    config.check_backend(name, options, label)
    return options


def selection_options(f):
    """The case filters shared by run, cases list and cases export."""
    return table_options("cases")(f)


def build_selection(
    ops, products, dtypes, clauses, keyword, max_cases, shard, profile: str = "default"
) -> Selection:
    sel = config.check_selection(
        registry(), ops, products, dtypes, clauses, keyword, max_cases, parse_shard(shard)
    )
    sel.profile = profile
    return sel
