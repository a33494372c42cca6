"""The same command resumes a killed run, also where it gave no --model_dir.

Without --model_dir a run keeps its checkpoints in RESULTS_DIR/RUN_ID, a
new folder each run.  So that rerunning the command after a `kill -9`, an
out-of-memory kill or a preemption resumes instead of starting again at
step 0, `killed_run` looks in RESULTS_DIR for the record of a run of the
same command line that did not finish: the newest record naming its
model_dir is `running` with its process dead (liveness.status `died`) or
`interrupted`, and that model_dir holds a checkpoint.  A model_dir whose
newest record finished (ok, failed, invalid) is never resumed, so a
finished command run again starts a new run.  Pure Python: read before
TensorFlow loads.
"""

from __future__ import annotations

import dataclasses
import glob
import os

from tpubench.core import errors
from tpubench.storage import gcs, liveness, record_match, records, redaction

RESUMABLE = ("died", "interrupted")


@dataclasses.dataclass(frozen=True)
class Killed:
    """A run of the same command that did not finish, and where its checkpoints are."""

    run_id: str
    model_dir: str
    status: str  # died | interrupted


def killed_run(results_dir: str, argv: list[str]) -> Killed | None:
    """The newest unfinished run of ARGV (the command line) in RESULTS_DIR, or None.

    Only the run records directly in RESULTS_DIR are read, and only a
    model_dir RESULTS_DIR/RUN_ID (where such a run keeps it) is resumed: a
    record naming a folder elsewhere never sends checkpoints there.
    """
    try:
        found = _records(results_dir)
    except Exception:  # noqa: BLE001 - no resume beats a refusal: the run starts afresh
        return None
    wanted = redaction.redact_argv(argv)[1:]
    newest: dict[str, tuple[str, dict]] = {}  # model_dir -> (started, record) of its newest
    for record in found:
        model_dir = record_match.recorded_model_dir(record)
        if record.get("kind") != "train" or not _inside(model_dir, results_dir):
            continue
        started = str(record.get("started") or "")
        if model_dir not in newest or started > newest[model_dir][0]:
            newest[model_dir] = (started, record)
    chosen = None
    for model_dir, (started, record) in newest.items():
        argv_then = record.get("argv")
        if not isinstance(argv_then, list) or argv_then[1:] != wanted:
            continue
        status = liveness.status(record)
        if status not in RESUMABLE or not _has_checkpoint(model_dir):
            continue
        if chosen is None or started > chosen[0]:
            chosen = (started, Killed(str(record.get("run_id")), model_dir, status))
    return chosen[1] if chosen else None


def note(killed: Killed) -> str:
    """The console note of a run that resumes another's model_dir."""
    how = "was killed" if killed.status == "died" else "was interrupted"
    return (
        f"run {killed.run_id} of this command {how}; resuming from its checkpoint in "
        f"{killed.model_dir} (give --model_dir to choose where a run keeps its checkpoints)"
    )


def _records(results_dir: str) -> list[dict]:
    """The readable run records directly in RESULTS_DIR (none when it does not exist)."""
    if gcs.is_gcs(results_dir):
        top = results_dir.rstrip("/")
        paths = [p for p in records.find(results_dir) if p.rsplit("/", 1)[0] == top]
    elif os.path.isdir(results_dir):
        paths = sorted(glob.glob(os.path.join(glob.escape(results_dir), "*.json")))
    else:
        return []
    out = []
    for path in paths:
        try:
            out.append(records.read(path))
        except errors.TpubenchError:
            continue  # not a record, or a damaged one
    return out


def _inside(model_dir, results_dir: str) -> bool:
    """MODEL_DIR is RESULTS_DIR/RUN_ID, the folder a run without --model_dir writes."""
    if not isinstance(model_dir, str) or "/" not in model_dir.rstrip("/"):
        return False
    parent, name = model_dir.rstrip("/").rsplit("/", 1)
    try:
        records.checked_run_id(name)
    except errors.TpubenchError:
        return False
    if gcs.is_gcs(model_dir) or gcs.is_gcs(results_dir):
        return parent == results_dir.rstrip("/")
    return os.path.realpath(parent) == os.path.realpath(results_dir)


def _has_checkpoint(model_dir: str) -> bool:
    """Whether MODEL_DIR/checkpoints holds a `ckpt-N.index` (gs://: assumed; restore checks)."""
    if gcs.is_gcs(model_dir):
        return True
    return bool(glob.glob(os.path.join(glob.escape(model_dir), "checkpoints", "ckpt-*.index")))
