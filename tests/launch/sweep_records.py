"""A record of a sweep configuration's run: one that tpubench wrote (tests/storage/fixtures/v1),
carrying the configuration's label, command line and flags, and the model, batch, precision
and strategy it asks.  Tests of docs/security.md ("A result only from a record of that run")
then change what it measured, as a colleague's relabelled record would.
"""

from __future__ import annotations

import json
import pathlib

from conftest import WRITTEN_RECORD

from tpubench.children import command


def record(config, run_id: str, model_dir: str | None = None, **changed) -> dict:
    """A record of CONFIG's run RUN_ID in MODEL_DIR, its flags then CHANGED (and what it
    measured with them: model, batch, precision, strategy)."""
    rec = json.loads(WRITTEN_RECORD.read_text())
    flags = {**config.train_flags(), **changed}
    if model_dir:
        flags["model_dir"] = model_dir
    rec.update(
        run_id=run_id,
        run_label=config.record_label,
        status="ok",
        kind=config.command,
        argv=["tpubench", config.command, *command.flags_argv(flags)],
        flags={**rec["flags"], **flags},
    )
    rec["config"]["model_dir"] = model_dir
    rec["model"]["name"] = flags["model"]
    rec["global_batch_size"] = flags.get("batch_size", rec["global_batch_size"])
    rec["per_replica_batch_size"] = flags.get("batch_size", rec["per_replica_batch_size"])
    rec["config"]["precision"] = flags.get("precision", "fp32")
    rec["placement"]["strategy"] = flags.get("strategy", "one_device")
    return rec


def write(directory: pathlib.Path, config, run_id: str, model_dir=None, **changed) -> str:
    """RECORD(...) written as DIRECTORY/RUN_ID.json; returns that path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{run_id}.json"
    path.write_text(json.dumps(record(config, run_id, model_dir, **changed)))
    return str(path)
