"""`aclnn-conform merge`: join the results files of shards (run --shard i/n) into one."""

from __future__ import annotations

import json
from pathlib import Path

import click

from cli.errors import UserError, user_error
from conformance import provenance, safeio
from conformance import results as res

user_error(provenance.ProvenanceError)


@click.command("merge")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="The merged results file (JSONL); its .meta.json is written beside it.")  # fmt: skip
@click.option("--force", is_flag=True,
              help="Merge runs of different backend, backend version, oracle, seed, spec or "
                   "tool version, recording the mix in the meta ('mixed').")  # fmt: skip
def merge(inputs: tuple[Path, ...], output: Path, force: bool) -> None:
    """Merge results files (e.g. the shards of a CI matrix) into OUTPUT; each case id once.

    The inputs must come from runs of one provenance (backend and its version, oracle, seed,
    spec hashes, tool version); --force merges them anyway and records the mix.
    """
    for p in inputs:
        try:
            safeio.check_regular(p)  # a FIFO or a device is refused before it is opened
        except FileNotFoundError:
            raise UserError(f"{p}: no such results file") from None
        except OSError as exc:
            raise UserError(f"{p}: not a results file: {exc.strerror or exc}") from None
    if output in inputs:
        raise UserError(f"-o {output}: must not be one of the inputs")
    inputs_mixed = provenance.check_merge(inputs, force)
    records, meta = res.merge(list(inputs))
    if not records:
        raise UserError("the inputs hold no result records")
    if mixed := meta.get("mixed"):
        click.echo(f"warning: merge: the merged records mix provenances ({provenance.describe_mix(mixed)}); "
                   f"recorded as 'mixed' in {output}.meta.json", err=True)  # fmt: skip
    elif inputs_mixed:
        click.echo(f"warning: merge: the inputs differ in provenance ({provenance.describe_mix(inputs_mixed)}), "
                   "but the merged records (later files win per case id) do not", err=True)  # fmt: skip
    output.parent.mkdir(parents=True, exist_ok=True)
    with open(output, "w", encoding="utf-8") as f:
        for rec in sorted(records, key=lambda r: r["id"]):
            f.write(json.dumps(rec, sort_keys=True, default=str) + "\n")
    Path(str(output) + ".meta.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    s = res.summarise(records)
    counts = ", ".join(f"{v} {n}" for v, n in sorted(s.verdicts.items()))
    click.echo(f"merged {len(inputs)} files: {len(records)} cases ({counts}) -> {output}")
