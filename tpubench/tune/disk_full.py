"""Tune on a disk that fills: one line, exit 6, and nothing lost.

Every file a tune writes goes through here: a trial's log folder and wall
time, the winners' flag files and the summary (each atomically), and a
trial whose own record the disk refused (train saves that record in the
cache's unsent-records and exits 6; an infer trial names the full disk in
its last line).  Any of them stops the tune at once with one line naming
what was not written and why.  Nothing is lost: every finished trial's
record stays in the records directory, a record the disk refused waits in
the cache until the trial's own command runs again (same --model_dir: it
records the finished run instead of training again), and the same tune
command resumes, reusing every finished trial and writing the flag files
and the summary again.  Pure Python.
"""

from __future__ import annotations

import errno
import os

from tpubench.core import errors
from tpubench.storage import cache, files, records
from tpubench.storage.run_dir import RunDir

# What storage/files.py and the trials' own lines call a full disk.
_FULL = ("no space left on the device", "no space left on device", "disk quota exceeded")
RECORD_NOT_WRITTEN = 6  # train's exit code when its record went to the cache (run/train/unsent)
UNSENT_FOLDER = "unsent-records"  # that cache folder (run/train/unsent.FOLDER)


class TuneStopped(errors.TpubenchError):
    """The disk refused a file of the tune; the same command resumes."""

    exit_code = 6  # as a train whose record could not be written


def stopped(what: str, reason: str, records_dir: str) -> TuneStopped:
    """The one line: WHAT was not written, REASON, where the finished trials are, what to do."""
    return TuneStopped(
        f"tune stopped: {what} ({reason}); every finished trial is kept (records in "
        f"{records_dir}): free space and run the same command again to resume "
        "(finished trials are reused)"
    )


def is_full(text: str | None) -> bool:
    """Whether TEXT (an error line) says the disk or the quota is full."""
    return bool(text) and any(word in text.lower() for word in _FULL)


def write(path: str, text: str, records_dir: str) -> str:
    """Writes TEXT to PATH atomically; a refusal stops the tune (TuneStopped, one line)."""
    try:
        return files.write_atomic(path, text)
    except errors.UsageError as e:
        raise stopped(f"{path} not written", _after_path(e, path), records_dir) from None


def makedirs(path: str, records_dir: str) -> None:
    """Makes the folder PATH; a refusal stops the tune."""
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        reason = "no space left on the device" if e.errno == errno.ENOSPC else e.strerror or str(e)
        raise stopped(f"{path} not made", reason, records_dir) from None


def check_trial(run_label, code, said, recorded, model_dir, records_dir) -> None:
    """Stops the tune when trial RUN_LABEL ended because the disk refused its record.

    CODE is its exit code, SAID its last error line (None: its log was lost
    too), RECORDED whether its record is in RECORDS_DIR; MODEL_DIR finds the
    record the trial saved in the cache instead.
    """
    saved = _saved_for(model_dir)  # its exit code may be lost with its log
    if not saved and code != RECORD_NOT_WRITTEN and (recorded or not is_full(said)):
        return
    if saved:
        path, record = saved[-1]
        why = str(record.get("unsent_reason") or said or f"exit code {code}")
        where = f"{why}; it is saved in {path} until the same command records it"
    else:
        where = said or f"exit code {code}"
    raise stopped(f"trial {run_label}'s record was not written", where, records_dir)


def _saved_for(model_dir: str) -> list[tuple[str, dict]]:
    """(path, record) of the records a trial of MODEL_DIR saved in the cache, oldest first.

    Where run/train/unsent.py saves them (tune runs trials as processes and
    never imports run/)."""
    want = RunDir.of(model_dir)
    found = []
    for path, record in records.scan(cache.path(UNSENT_FOLDER)):
        config = record.get("config")
        if want.same(config.get("model_dir") if isinstance(config, dict) else None):
            found.append((path, record))
    return sorted(found, key=lambda x: str(x[1].get("started")))


def _after_path(e: errors.UsageError, path: str) -> str:
    """The reason of write_atomic's 'cannot write PATH: REASON'."""
    text = errors.one_line(e)
    return text.split(f"{path}: ", 1)[-1]
