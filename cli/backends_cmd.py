"""`aclnn-conform backends`: every installed backend, whether it can run here, and its version;
for a backend on a device (aclnn, torch_npu), what a real host needs: the CANN version, the
libraries and where they were found, ASCEND_OPP_PATH, the SoC, the device count, the overflow
mode, and a one-line diagnosis when something is missing."""

from __future__ import annotations

from typing import Any

import click

from ..conformance.run.backend import BackendError, BackendOptionError, backend_class, backend_names
from .errors import UserError


def fact_lines(facts: dict[str, Any]) -> list[str]:
    """A backend's host facts, one `label: value` line each (the summary is for reports)."""
    lines = []
    for key, value in facts.items():
        if key == "summary":
            continue
        if key == "diagnosis":
            value = value or "none (nothing a run needs is missing)"
        elif isinstance(value, list | tuple):
            value = ", ".join(str(v) for v in value)
        elif isinstance(value, bool):
            value = "yes" if value else "no"
        elif value is None:
            value = "—"
        lines.append(f"  {key.replace('_', ' ')}: {value}")
    return lines


@click.command("backends")
@click.argument("names", nargs=-1)
@click.option(
    "--lib-dir",
    default=None,
    type=click.Path(file_okay=False),
    help="Where the CANN libraries are (backends that take lib_dir: aclnn).",
)
@click.option(
    "--device-id",
    default=None,
    type=click.IntRange(min=0),
    help="The NPU whose facts are shown (backends that take device_id; default 0).",
)
def backends(names: tuple[str, ...], lib_dir: str | None, device_id: int | None) -> None:
    """List the backends (entry-point group aclnn_conformance.backends; NAMES: only these) and,
    for those on a device, the facts of this host that a run needs to be judged elsewhere."""
    known_names = backend_names()
    for name in names:
        if name not in known_names:
            raise UserError(f"unknown backend {name!r} (known: {', '.join(known_names)})")
    for name in names or known_names:
        facts: dict[str, Any] = {}
        try:
            cls = backend_class(name)
            known = cls.known_options or ()
            options = {
                k: v
                for k, v in (("lib_dir", lib_dir), ("device_id", device_id))
                if v is not None and k in known
            }
            ok, reason = cls.availability(**options)
            try:
                cls.check_options(options)
            except BackendOptionError as exc:  # runs, given its options (exec: the harness)
                state = "available" if ok else f"not available — {reason}"
                click.echo(f"{name:<12} {state}; to run: {exc}")
                continue
            version = ""
            if ok:
                b = cls(**options)
                try:
                    version, facts = b.version(), b.host_facts()
                finally:
                    b.close()
        except BackendError as exc:
            ok, reason, version = False, str(exc), ""
        except Exception as exc:  # a plug-in's constructor failing must not hide the others
            ok, reason, version = False, f"{type(exc).__name__}: {exc}", ""
        state = "available" if ok else f"not available — {reason}"
        click.echo(f"{name:<12} {state}{'  (' + version + ')' if version else ''}")
        for line in fact_lines(facts):
            click.echo(line)
