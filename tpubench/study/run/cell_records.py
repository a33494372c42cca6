"""Which records are a study cell's: those that measured what the cell asks.

A record carrying a cell's id as its run_label is the cell's result only
when storage/record_match finds it ran the cell's flags (model, batch,
precision, strategy, devices, threads, params, data, the scale's flags) and
measured what they set; any other is named in one line and left out of the
resume count and of every figure.  What depends on where a cell ran is not
compared: its results and model directories, the machine it is priced as and
the TPU a rented slice names (the launcher's, study/run/remote.py), the pricing
basis a spot VM adds, and the path of its data (its kind is: set, or on gs://).
A setup of `device: auto` is the GPU or the CPU, whichever the record ran on.
"""

from __future__ import annotations

from tpubench.hardware import memory_cap
from tpubench.storage import record_match, records
from tpubench.study.run import cells as cells_lib

# Flags set by where a cell runs, not by the cell: never compared, allowed on its command line.
WHERE = ("results_dir", "model_dir", "run_label", "machine", "tpu")
OTHERS = frozenset((*WHERE, "pricing"))


def asks(cell, accelerator=None) -> record_match.Asks:
    """What CELL asks of its record; ACCELERATOR: the one a record ran on (auto setups)."""
    device = cell.setup.device
    if device == "auto":
        device = accelerator if accelerator in ("gpu", "cpu") else "cpu"
    gpus = cell.setup.devices + (1 if cell.cluster() else 0) if device == "gpu" else 0
    host = cells_lib.Host((), gpus, "", device == "tpu", "gs://")
    flags = cell.flags(host, "", None)
    for key in WHERE:
        flags.pop(key, None)
    if cell.data in ("jpeg", "jpeg_gs"):  # a path of this host or of the rented one
        flags["data_dir"] = record_match.Given("gs://" if cell.data == "jpeg_gs" else "")
    measured = {"worker": cell.setup.devices, "ps": 1} if cell.cluster() else {}
    return record_match.Asks(cell.id, flags, measured, OTHERS, cell.describe())


def split(cell, found) -> record_match.Split:
    """FOUND (records carrying CELL's id) into the cell's own and a line for each record that
    would have counted (done, or dead at its memory cap) but measured something else."""
    ours, out = [], []
    for f in found:
        flags = f.record.get("flags")
        ran = flags.get("accelerator") if isinstance(flags, dict) else None
        a = asks(cell, ran)
        why = record_match.differs(f.record, a)
        if why is None:
            ours.append(f)
        elif f.run.status in records.DONE_STATUSES or memory_cap.reached(f.record):
            out.append(record_match.line(f.path, a, why))
    return record_match.Split(tuple(ours), tuple(out))


def of_cells(cells, results_dir: str) -> dict:
    """{cell id: its Split} for CELLS, from one read of RESULTS_DIR."""
    found = records.by_label(results_dir)
    return {c.id: split(c, found.get(c.id, [])) for c in cells}


def left_out(splits: dict) -> tuple[str, ...]:
    """Every left-out line of SPLITS, once each, in the cells' order."""
    return tuple(dict.fromkeys(x for s in splits.values() for x in s.left_out))
