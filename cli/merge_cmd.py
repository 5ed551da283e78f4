"""`aclnn-conform merge`: join the results files of shards (run --shard i/n) into one."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import click

from ..conformance.files import safeio
from ..conformance.files.writelock import LockedError, ResultsLock
from ..conformance.judge import provenance
from ..conformance.judge.merge import MergeConflict, ShardError, merge_files
from ..conformance.judge.results import safe_text
from ..reports.output import write_atomic
from .errors import UserError, user_error
from .paths import check_outputs, results_family

user_error(provenance.ProvenanceError)
user_error(MergeConflict)
user_error(ShardError)


@click.command("merge")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="The merged results file (JSONL); its .meta.json is written beside it.",
)
@click.option(
    "--force",
    is_flag=True,
    help="Merge runs of different backend, backend version, oracle, seed, spec or "
    "tool version, recording the mix in the meta ('mixed').",
)
@click.option(
    "--partial",
    "allow_partial",
    is_flag=True,
    help="Merge shards (run --shard i/n) although some are missing; the meta lists "
    "them ('shards_missing') and the reports say the run is not the whole "
    "suite.",
)
def merge(inputs: tuple[Path, ...], output: Path, force: bool, allow_partial: bool) -> None:
    """Merge results files (e.g. the shards of a CI matrix) into OUTPUT; each case id once.

    The inputs must come from runs of one provenance (backend and its version, oracle, seed,
    spec hashes, tool version); --force merges them anyway and records the mix. A case found in
    several inputs is taken once when they agree on its verdict, statuses and statistics, and
    refused (exit 2, naming the case and both files) when they do not. Shards are recorded:
    a missing shard is named and refused unless --partial.
    """
    for p in inputs:
        try:
            safeio.check_regular(p)  # a FIFO or a device is refused before it is opened
        except FileNotFoundError:
            raise UserError(f"{p}: no such results file") from None
        except OSError as exc:
            raise UserError(f"{p}: not a results file: {exc.strerror or exc}") from None
    inputs_family = [x for k, p in enumerate(inputs) for x in results_family(f"INPUT {k + 1}", p)]
    check_outputs(results_family("-o", output), inputs_family)
    inputs_mixed = provenance.check_merge(inputs, force)
    try:
        lock = ResultsLock(output, "-o").acquire()
    except LockedError as exc:
        raise UserError(str(exc)) from None
    click.get_current_context().call_on_close(lock.release)
    merged = merge_files(inputs, partial(write_atomic, output), allow_partial=allow_partial)
    if not merged.cases:
        output.unlink()
        raise UserError("the inputs hold no result records")
    meta = merged.meta
    if mixed := meta.get("mixed"):
        click.echo(
            f"warning: merge: the merged records mix provenances ({provenance.describe_mix(mixed)}); "
            f"recorded as 'mixed' in {output}.meta.json",
            err=True,
        )
    elif inputs_mixed:
        click.echo(
            f"warning: merge: the inputs differ in provenance ({provenance.describe_mix(inputs_mixed)}), "
            "but the merged records (each case from the last file holding it) do not",
            err=True,
        )
    if merged.missing_shards:
        click.echo(
            f"warning: merge: shard {', '.join(merged.missing_shards)} missing (--partial): "
            "the merged results are not the whole suite",
            err=True,
        )
    write_atomic(Path(str(output) + ".meta.json"), json.dumps(meta, indent=1) + "\n")
    s = merged.summary
    counts = ", ".join(f"{v} {n}" for v, n in sorted(s.verdicts.items()))
    click.echo(f"merged {len(inputs)} files: {s.total} cases ({counts}) -> {safe_text(output)}")
