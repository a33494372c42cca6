"""A finished run's record survives a results directory that cannot take it.

`write_final` writes the record with retries; when every try fails (a full
disk, a GCS 503 storm or 403, the server gone) it saves the record under the
user cache's `unsent-records/` and raises `RecordNotWritten`, which names
both places.  The same command run again (same --model_dir) finds that
record first and writes it where it belongs (`recover`), so a finished run
is recorded instead of refused as "nothing to train".  Pure Python.
"""

from __future__ import annotations

import os
import time

from tpubench.core import errors
from tpubench.storage import cache, records
from tpubench.storage.run_dir import RunDir

ATTEMPTS = 3
RETRY_DELAYS = (0.5, 2.0)  # seconds between the tries
FOLDER = "unsent-records"


class RecordNotWritten(errors.TpubenchError):
    """The final record could not be written to --results_dir; it waits in the cache."""

    exit_code = 6

    def __init__(self, message: str, record: dict, fallback: str | None):
        super().__init__(message)
        self.record = record
        self.fallback = fallback


def folder() -> str:
    return cache.path(FOLDER)


def write_final(record: dict, results_dir: str, sleep=time.sleep) -> str:
    """Writes RECORD to RESULTS_DIR, retrying; returns its path.

    Raises:
      RecordNotWritten: every try failed; the record was saved to the cache
        (or, if even that failed, nowhere), and the message says where.
    """
    last = None
    for attempt in range(ATTEMPTS):
        try:
            return records.write(record, results_dir)
        except Exception as e:  # noqa: BLE001 - any failure to write gets the next try
            last = e
        if attempt < ATTEMPTS - 1:
            sleep(RETRY_DELAYS[min(attempt, len(RETRY_DELAYS) - 1)])
    reason = errors.one_line(last) if isinstance(last, errors.TpubenchError) else str(last)
    target = records.path_for(results_dir, record["run_id"])
    unsent = dict(record, unsent_to=target, unsent_reason=reason)
    try:
        fallback = records.write(unsent, folder())
    except Exception as e:  # noqa: BLE001
        raise RecordNotWritten(
            f"run record not written to {target} after {ATTEMPTS} tries ({reason}), nor to "
            f"{folder()} ({e}); its status was {record.get('status')}",
            record,
            None,
        ) from None
    raise RecordNotWritten(
        f"run record not written to {target} after {ATTEMPTS} tries ({reason}); saved it to "
        f"{fallback}: run the same command again to record it",
        record,
        fallback,
    )


def pending(model_dir: str) -> list[tuple[str, dict]]:
    """(path, record) of the records saved for MODEL_DIR, oldest first."""
    want = RunDir.of(model_dir)
    out = []
    for path, record in records.scan(folder()):
        config = record.get("config")
        got = config.get("model_dir") if isinstance(config, dict) else None
        if want.same(got):
            out.append((path, record))
    return sorted(out, key=lambda x: str(x[1].get("started")))


def recover(model_dir: str | None, results_dir: str, say) -> dict | None:
    """Writes the records saved for MODEL_DIR to RESULTS_DIR and removes them from the cache.

    Returns the newest of them when it is a finished run (status `ok`), which
    the command then reports instead of training; None when there was
    nothing, or what there was (interrupted, failed) leaves training to do.
    """
    if not model_dir:
        return None
    finished = None
    for path, record in pending(model_dir):
        for key in ("unsent_to", "unsent_reason", "record_path"):
            record.pop(key, None)
        record["record_path"] = records.write(record, results_dir)
        os.unlink(path)
        say(
            f"recorded run {record['run_id']} ({record.get('status')}), saved in {path} when "
            f"its results directory failed, as {record['record_path']}"
        )
        finished = record if record.get("status") == "ok" else None
    return finished
