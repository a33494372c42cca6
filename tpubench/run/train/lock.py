"""One run per model_dir: an exclusive lock, taken before any checkpoint is read.

The lock is MODEL_DIR/.tpubench-lock.json, created only if absent: on local
disk with O_CREAT|O_EXCL, on gs:// as an object written with the generation
precondition `if_generation_match=0` (google-cloud-storage).  It holds the
holder's pid, host, start time, heartbeat, run id and record path.  A lock
whose holder is dead (pid gone on this host, or no heartbeat for
liveness.STALE_SECS) is taken over, and the dead run's `running` record is
marked `died`.  A live holder makes the second run stop with one line naming
the model_dir and the holder, or wait for it (--wait_for_lock).
"""

from __future__ import annotations

import json
import os
import time

from tpubench.core import errors, safe_files
from tpubench.storage import files, gcs, liveness, records
from tpubench.storage.run_dir import RunDir

NAME = ".tpubench-lock.json"
POLL_SECS = 2.0
MAX_BYTES = 65536  # a holder is some 300 bytes
WHAT = "the lock a tpubench run writes; remove it if no run uses this model_dir"


class ModelDirLocked(errors.UsageError):
    """Another live run holds the model_dir."""


def path_of(model_dir: str) -> str:
    return RunDir.of(model_dir).join(NAME)


class Lock:
    """A held lock: `refresh` renews its heartbeat, `release` removes it."""

    def __init__(self, path: str, holder: dict, generation: int | None = None):
        self.path = path
        self.holder = holder
        self.generation = generation

    def refresh(self) -> None:
        self.holder["heartbeat"] = liveness.now_iso()
        data = json.dumps(self.holder).encode()
        if gcs.is_gcs(self.path):
            new = gcs.replace_if_generation(self.path, data, self.generation)
            if new is not None:
                self.generation = new
            return
        current = _read_local(self.path)
        if current is not None and current.get("run_id") == self.holder.get("run_id"):
            files.write_atomic(self.path, data)

    def release(self) -> None:
        if gcs.is_gcs(self.path):
            gcs.delete_if_generation(self.path, self.generation)
            return
        current = _read_local(self.path)
        if current is not None and current.get("run_id") == self.holder.get("run_id"):
            os.unlink(self.path)


def for_run(model_dir: str, record: dict, results_dir: str, wait: bool, say) -> Lock:
    """The lock on MODEL_DIR for the run of RECORD, whose record goes to RESULTS_DIR."""
    path = records.path_for(results_dir, record["run_id"])
    holder = {
        "run_id": record["run_id"],
        "since": record["started"],
        "record": path if gcs.is_gcs(path) else os.path.abspath(path),
    }
    return acquire(model_dir, holder, wait, say)


def acquire(model_dir: str, holder: dict, wait: bool, say, sleep=time.sleep) -> Lock:
    """Takes the lock on MODEL_DIR for HOLDER (run_id, record, since; pid/host added).

    Raises:
      ModelDirLocked: another live run holds it and WAIT is false.
    """
    holder = dict(holder) | liveness.identity()
    path = path_of(model_dir)
    told = False
    while True:
        lock = _try_create(path, holder)
        if lock is not None:
            return lock
        try:
            current = _current(path)
        except errors.UsageError as e:  # a FIFO, a device or a link in the lock's place
            raise errors.UsageError(f"--model_dir={model_dir}: lock {e}") from None
        if current is None:  # released between the two calls
            continue
        found, generation = current
        if found.get("young"):  # being written this very moment
            sleep(0.1)
            continue
        dead = "its lock file is unreadable" if found.get("garbage") else liveness.death(found)
        if dead is not None:
            if _remove(path, generation):
                say(f"--model_dir={model_dir}: took over the lock of a dead run ({dead})")
                _mark_died(found, dead)
            continue
        line = (
            f"--model_dir={model_dir} is in use by run {found.get('run_id')} (pid "
            f"{found.get('pid')} on host {found.get('host')}, since {found.get('since')})"
        )
        if not wait:
            raise ModelDirLocked(
                f"{line}; wait for it to finish, pass --wait_for_lock, or give another --model_dir"
            )
        if not told:
            say(f"{line}; waiting for it (--wait_for_lock)")
            told = True
        sleep(POLL_SECS)


def _try_create(path: str, holder: dict) -> Lock | None:
    data = json.dumps(holder).encode()
    if gcs.is_gcs(path):
        generation = gcs.create_exclusive(path, data)
        return None if generation is None else Lock(path, holder, generation)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return None
    except OSError as e:
        raise errors.UsageError(f"cannot lock {path}: {e.strerror or e}") from None
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    return Lock(path, holder)


def _current(path: str) -> tuple[dict, object] | None:
    """(holder, what identifies this lock for removal), or None when there is none."""
    if gcs.is_gcs(path):
        found = gcs.read_generation(path)
        if found is None:
            return None
        return _parse(found[0]), found[1]
    try:
        st = os.lstat(path)  # the link itself: a planted symlink is refused, not followed
    except FileNotFoundError:
        return None
    holder = _read_local(path)
    if holder is None:  # being written, or garbage: stale once it is old
        age = time.time() - st.st_mtime
        return ({"young": True} if age < 10 else {"garbage": True}), st.st_ino
    return holder, st.st_ino


def _parse(data: bytes) -> dict:
    try:
        holder = json.loads(data)
    except ValueError:
        return {"garbage": True}
    return holder if isinstance(holder, dict) else {"garbage": True}


def _read_local(path: str) -> dict | None:
    """The holder in PATH; None when gone or empty.

    Raises:
      UsageError: PATH is a FIFO, a device, a symlink or over 64 KiB (one line).
    """
    try:
        data = safe_files.read_bytes(path, "", MAX_BYTES, WHAT, follow=False)
    except safe_files.Unreadable:
        return None
    if not data:
        return None
    return _parse(data)


def _remove(path: str, ident) -> bool:
    """Removes the stale lock IDENT (a generation, or an inode) unless it was replaced."""
    if gcs.is_gcs(path):
        return gcs.delete_if_generation(path, ident)
    aside = f"{path}.{os.getpid()}.stale"
    try:
        os.rename(path, aside)  # one taker wins the rename
    except FileNotFoundError:
        return False
    if os.stat(aside).st_ino != ident:  # a live run's fresh lock: put it back
        os.rename(aside, path)
        return False
    os.unlink(aside)
    return True


def _mark_died(holder: dict, why: str) -> None:
    """The dead run's record, if still `running`, becomes `died` with the reason."""
    path = holder.get("record")
    if not isinstance(path, str) or not path.endswith(".json"):
        return
    try:
        record = records.read(path)
        if record.get("status") != "running":
            return
        if path.rsplit("/", 1)[-1] != f"{record['run_id']}.json":
            return  # the lock names some other file: rewrite nothing but the dead run's own
        record.update(status="died", error=f"died: {why}", died_noticed=liveness.now_iso())
        records.write(record, path.rsplit("/", 1)[0])
    except errors.TpubenchError:
        return  # the record moved or its directory is gone: nothing to mark
