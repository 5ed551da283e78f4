"""Options shared by several commands (the backend under test, the case filters) and their
checks. The checks themselves live in `conformance.run.config`, shared with the pytest plugin."""

from __future__ import annotations

import math
from typing import Any

import click

from ..conformance.run import config
from ..conformance.run.runner import Selection
from ..conformance.spec.registry import Registry, env_spec_dirs, load_registry


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


def backend_options(f):
    """Options that configure the backend under test (shared by run, replay and probe)."""
    opts = [
        click.option("--backend-opt", "backend_opts", multiple=True, metavar="KEY=VALUE",
                     help="Option for the backend (repeatable), e.g. device=cuda."),
        click.option("--device", default=None, help="torch: cpu, cuda or npu."),
        click.option("--lib-dir", default=None, help="aclnn: folder holding the CANN libraries."),
        click.option("--device-id", type=int, default=None, help="aclnn: NPU device id."),
        click.option("--exec-cmd", default=None, help="exec: the harness command line."),
        click.option("--isolate/--no-isolate", default=None,
                     help="Run the backend in a worker process (default: on for aclnn and exec)."),
        click.option("--timeout", type=Seconds(), default=60.0, show_default=True,
                     help="Per-case time limit in seconds: the oracle, the backend and the "
                          "comparison; over it the case is a timeout."),
        click.option("--max-memory", default=None, metavar="SIZE",
                     help="Memory limit (RLIMIT_DATA) of an isolated backend's worker and of "
                          "an exec harness, e.g. 8G; none: no limit. Default: three quarters "
                          "of physical memory divided by --jobs, at least 2G."),
    ]  # fmt: skip
    for o in reversed(opts):
        f = o(f)
    return f


def checked_backend(name: str, pairs, device, lib_dir, device_id, exec_cmd,
                    label: str = "--backend") -> dict[str, Any]:  # fmt: skip
    """The options of backend `name` from the command line, checked: an unknown or
    inapplicable option is a usage error, a backend that cannot run here exit code 3."""
    named = {"device": device, "lib_dir": lib_dir, "device_id": device_id, "cmd": exec_cmd}
    options = config.parse_backend_options(pairs, named)
    config.check_backend(name, options, label)
    return options


def selection_options(f):
    """The case filters shared by run, cases list and cases export."""
    opts = [
        click.option("--op", "ops", multiple=True, help="Operator (its aclnn name or spec name, see 'specs list'); repeatable."),
        click.option("--product", "products", multiple=True, help="Product id, e.g. atlas-a2; repeatable."),
        click.option("--dtype", "dtypes", multiple=True, help="Keep cases with a tensor of this dtype (f16, BF16, ...)."),
        click.option("--clause", "clauses", multiple=True, help="Keep cases exercising this clause (id or op/id)."),
        click.option("-k", "keyword", default="", help="Keep cases whose id contains this text."),
        click.option("--max-cases", type=click.IntRange(min=1), default=None,
                     help="Budget: at most N cases, every clause kept covered."),
        click.option("--shard", default=None, metavar="I/N", help="Run only shard I of N (1-based)."),
        click.option("--profile", type=click.Choice(["default", "large"]), default="default",
                     show_default=True,
                     help="large: add cases at model scale (shapes such as 8x4096x11008) for every op."),
        click.option("--allow-empty", is_flag=True,
                     help="Accept filters that select no case (exit 0) instead of a usage error."),
    ]  # fmt: skip
    for o in reversed(opts):
        f = o(f)
    return f


def build_selection(ops, products, dtypes, clauses, keyword, max_cases, shard,
                    profile: str = "default") -> Selection:  # fmt: skip
    sel = config.check_selection(registry(), ops, products, dtypes, clauses, keyword,
                                 max_cases, parse_shard(shard))  # fmt: skip
    sel.profile = profile
    return sel
