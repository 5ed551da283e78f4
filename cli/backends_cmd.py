"""`aclnn-conform backends`: every installed backend, whether it can run here, and its version."""

from __future__ import annotations

import click

from conformance.backend import BackendError, BackendOptionError, backend_class, backend_names


@click.command("backends")
def backends() -> None:
    """List the backends (entry-point group aclnn_conformance.backends)."""
    for name in backend_names():
        try:
            cls = backend_class(name)
            ok, reason = cls.availability()
            try:
                cls.check_options({})
            except BackendOptionError as exc:  # runs, given its options (exec: the harness)
                state = "available" if ok else f"not available — {reason}"
                click.echo(f"{name:<12} {state}; to run: {exc}")
                continue
            version = cls().version() if ok else ""
        except BackendError as exc:
            ok, reason, version = False, str(exc), ""
        except Exception as exc:  # a plug-in's constructor failing must not hide the others
            ok, reason, version = False, f"{type(exc).__name__}: {exc}", ""
        state = "available" if ok else f"not available — {reason}"
        click.echo(f"{name:<12} {state}{'  (' + version + ')' if version else ''}")
