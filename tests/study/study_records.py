"""A record of a study cell's run, for tests whose subject comes after the record (verdicts,
repeats, reports): one that tpubench wrote (tests/storage/fixtures/v1), carrying the cell's
label, command line and flags, and the model, batch, precision and placement the cell asks.

A bare `{"run_label": cell.id, "status": "ok"}` is no cell's result (docs/security.md, "A
result only from a record of that run"); tests of that rule relabel real records instead.
"""

from __future__ import annotations

import json
import pathlib

from conftest import WRITTEN_RECORD

from tpubench.children import command
from tpubench.storage import record_match
from tpubench.study.run import cell_records
from tpubench.study.spec import data_bench


def record(cell, run_id: str, rate: float | None, status: str = "ok", accelerator=None) -> dict:
    """A record of CELL's run RUN_ID at RATE examples/s (None: no results), with STATUS."""
    rec = json.loads(WRITTEN_RECORD.read_text())
    asks = cell_records.asks(cell, accelerator)
    given = record_match.Given
    flags = {k: "gs://b/d" if isinstance(v, given) else v for k, v in asks.flags.items()}
    words = data_bench.WORDS[cell.part.command]
    rec.update(
        run_id=run_id,
        run_label=cell.id,
        status=status,
        kind="train" if cell.part.command == "train" else cell.part.command,
        argv=["tpubench", *words, *command.flags_argv(flags)],
        flags={**rec["flags"], **flags},
        started="2026-01-01T00:00:00+00:00",
        finished="2026-01-01T00:01:00+00:00",
        results={"examples_per_sec": rate} if rate is not None else {},
    )
    for gone in ("cost", "mfu"):
        rec.pop(gone, None)
    rec["model"]["name"] = cell.model.model
    rec["global_batch_size"] = flags.get("batch_size", rec["global_batch_size"])
    rec["per_replica_batch_size"] = flags.get("per_replica_batch_size", 8)
    rec["config"]["precision"] = flags.get("precision", "fp32")
    rec["placement"]["accelerator"] = flags.get("accelerator", "cpu")
    strategy = asks.measured.get("strategy") or flags.get("strategy")
    rec["placement"]["strategy"] = strategy or rec["placement"]["strategy"]
    if asks.measured:
        rec["placement"]["cluster"] = {
            "chief": ["c"],
            "worker": ["w"] * asks.measured["worker"],
            "ps": ["p"] * asks.measured["ps"],
        }
    return rec


def write(directory: pathlib.Path, cell, run_id: str, rate, **kwargs) -> pathlib.Path:
    """RECORD(...) written as DIRECTORY/RUN_ID.json."""
    path = directory / f"{run_id}.json"
    path.write_text(json.dumps(record(cell, run_id, rate, **kwargs)))
    return path
