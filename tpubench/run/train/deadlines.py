"""Deadlines on storage: a slow or frozen bucket never holds a run past them.

Two limits, watched by one thread while a train run lives:

* the shutdown grace (`--shutdown_grace_secs`): from the first SIGINT,
  SIGTERM or SIGHUP the run has that long to save its checkpoint and write
  its record, as a preempted VM gives (GCE: 30 s before SIGKILL).  When the
  grace ends first, the save in flight is abandoned (the last whole
  checkpoint stays; its half-written files are removed at the next start),
  and the record says `interrupted` with the step.
* the storage deadline (`--storage_deadline_secs`): a gs:// call that has not
  returned for that long stops the run with `failed`; after
  `--storage_stall_secs` a warning names the bucket and the operation.

TensorFlow's GCS calls cannot be interrupted from Python (its retries last
minutes), and a Python signal handler runs only when the main thread gets
back to Python, so the watcher is a thread: it learns of signals through
`signal.set_wakeup_fd` (written by the C-level handler even while the main
thread is inside TensorFlow), reads the calls in flight from
`storage/inflight.py`, and at a deadline writes the record itself - to
--results_dir when that answers within a few seconds, else locally - prints
one line and ends the process with `os._exit` (nothing else would return).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import sys
import threading
import time

from tpubench.core import errors
from tpubench.run import interrupts
from tpubench.storage import gcs, inflight, records

TICK = 0.2  # seconds between the watcher's looks
REMOTE_RECORD_SECONDS = 3.0  # how long a gs:// --results_dir gets for the last record


class StorageDeadline(errors.TpubenchError):
    """A gs:// call outlived --storage_deadline_secs; the run stopped."""

    exit_code = 7


class Watchdog:
    """Watches JOB's storage calls and the shutdown grace; see the module doc."""

    def __init__(self, job, grace: float, stall: float, deadline: float):
        self.job = job
        self.grace, self.stall, self.deadline = grace, stall, deadline
        self.signalled: str | None = None  # the first signal's name
        self.grace_ends: float | None = None
        self._ending = threading.Lock()  # held by whoever writes the final record
        self._stop = threading.Event()
        self._wakeup = None  # (read fd, write fd, the previous wakeup fd)
        self._thread = threading.Thread(target=self._run, name="tpubench-deadlines", daemon=True)

    def start(self) -> Watchdog:
        inflight.clear()
        if threading.current_thread() is threading.main_thread():
            r, w = os.pipe()
            os.set_blocking(r, False)
            os.set_blocking(w, False)
            self._wakeup = (r, w, signal.set_wakeup_fd(w, warn_on_full_buffer=False))
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2 * TICK + 1)
        if self._wakeup is not None:
            r, w, previous = self._wakeup
            signal.set_wakeup_fd(previous)
            os.close(r)
            os.close(w)
            self._wakeup = None

    def claim_end(self) -> bool:
        """The main thread is about to write the final record: the watcher must not."""
        return self._ending.acquire(blocking=False)

    # ------------------------------------------------------------ the watcher
    def _run(self) -> None:
        while not self._stop.is_set():
            self._signals()
            now = time.monotonic()
            ops = inflight.snapshot()
            for op in ops:
                if not op.warned and op.age(now) >= self.stall:
                    op.warned = True
                    self._warn(op, now)
            late = next((op for op in ops if op.age(now) >= self.deadline), None)
            if self.grace_ends is not None and now >= self.grace_ends:
                self._expire(self._grace_over(ops))
            elif late is not None:
                self._expire(self._too_late(late))

    def _signals(self) -> None:
        """Waits a tick for a signal byte; the first SIGINT/SIGTERM/SIGHUP starts the grace."""
        if self._wakeup is None:
            self._stop.wait(TICK)
            return
        ready, _, _ = select.select([self._wakeup[0]], [], [], TICK)
        if not ready:
            return
        with contextlib.suppress(OSError):
            for number in os.read(self._wakeup[0], 64):
                if number in interrupts.SIGNALS and self.grace_ends is None:
                    interrupts.release_slow_disks()
                    self.signalled = signal.Signals(number).name
                    # Room to write the record before the grace is over.
                    remote = gcs.is_gcs(self.job.cfg.results_dir)
                    reserve = REMOTE_RECORD_SECONDS + 0.5 if remote else 0.5
                    self.grace_ends = time.monotonic() + max(0.5, self.grace - reserve)

    def _warn(self, op: inflight.Op, now: float) -> None:
        self.job.warn(
            f"storage: {op.bucket} has not answered for {op.age(now):.0f} s "
            f"({op.what}, {op.path}); the run stops at {self.deadline:g} s "
            "(--storage_deadline_secs)"
        )

    def _grace_over(self, ops) -> tuple[dict, str, int]:
        job = self.job
        step = self._step()
        last = job.saver.last_whole if job.saver is not None else None
        save = next((op for op in ops if op.what.startswith("checkpoint save")), None)
        cause = self.signalled or "signal"
        if save is not None:
            what = (
                f"the {save.what} was abandoned: {save.bucket} did not finish it within the "
                f"{self.grace:g} s grace period (--shutdown_grace_secs)"
            )
        else:
            slow = f" ({ops[0].what} on {ops[0].bucket})" if ops else ""
            what = f"the run did not stop within the {self.grace:g} s grace period{slow}"
        resume = (
            f"the last whole checkpoint is step {last}, which a rerun of the same command "
            "resumes from (it removes the abandoned files)"
            if last is not None
            else "no whole checkpoint was saved, so a rerun starts from step 0"
        )
        section = {"cause": cause, "step": step, "checkpoint_saved": False}
        section |= {"last_checkpoint": last, "grace_secs": self.grace}
        fields = {
            "status": "interrupted",
            "error": f"interrupted ({cause}) at step {step}; {what}; {resume}",
            "interrupted": section,
        }
        return fields, "interrupted", errors.InterruptedRun.exit_code

    def _too_late(self, op: inflight.Op) -> tuple[dict, str, int]:
        step = self._step()
        last = self.job.saver.last_whole if self.job.saver is not None else None
        fields = {
            "status": "failed",
            "error": (
                f"storage deadline: {op.bucket} did not answer for {self.deadline:g} s "
                f"(--storage_deadline_secs) during the {op.what} ({op.path}); stopped at step "
                f"{step}; {_last_whole(last)}"
            ),
            "stopped": {
                "reason": "storage deadline",
                "step": step,
                "bucket": op.bucket,
                "operation": op.what,
                "path": op.path,
                "seconds": self.deadline,
                "last_checkpoint": last,
            },
        }
        return fields, op.bucket, StorageDeadline.exit_code

    def _step(self) -> int:
        job = self.job
        state = getattr(job.controller, "state", None)
        steps = [job.stop_step, getattr(state, "step", None), job.step]
        return max((s for s in steps if isinstance(s, int)), default=0)

    def _expire(self, plan: tuple[dict, str, int]) -> None:
        fields, avoid, code = plan
        # The main thread may be writing the final record: it gets a little longer
        # (and if it is stuck on the same bucket, this one is written anyway).
        self._ending.acquire(timeout=5.0)
        if not self.job.is_chief:  # the chief writes the record of a cluster
            print(f"tpubench train: error: {fields['error']}", file=sys.stderr, flush=True)
            os._exit(code)
        try:
            record = self._record(fields)
            where = self._write(record, avoid)
            line = f"{fields['error']}; run record: {where}"
        except Exception as e:  # noqa: BLE001 - the line must still come out
            line = f"{fields['error']}; the run record could not be written ({e})"
        print(f"tpubench train: error: {line}", file=sys.stderr, flush=True)
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        os._exit(code)

    def _record(self, fields: dict) -> dict:
        from tpubench.core import timing

        for _ in range(5):  # the main thread may change it while it is copied
            try:
                record = json.loads(json.dumps(self.job.record, default=str))
                break
            except RuntimeError:
                time.sleep(0.01)
        else:
            record = {"run_id": self.job.record.get("run_id")}
        record.update(fields, finished=records.now_iso())
        state = getattr(self.job.controller, "state", None)
        loops = list(getattr(state, "loops", None) or [])
        if loops and "results" not in record:
            results = timing.summarize(loops, self.job.cfg.warmup_loops, self.job.replicas)
            record["results"] = results | {"partial": True, "final_step": self._step()}
        return record

    def _write(self, record: dict, avoid: str) -> str:
        """Writes RECORD to --results_dir, or locally when that is on gs:// and slow."""
        from tpubench.run.train import unsent

        results_dir = self.job.cfg.results_dir
        if not gcs.is_gcs(results_dir):
            return records.write(record, results_dir)
        if not results_dir.startswith(avoid.rstrip("/") + "/"):
            done: dict = {}

            def write():
                done["path"] = records.write(record, results_dir)

            t = threading.Thread(target=write, daemon=True)
            t.start()
            t.join(REMOTE_RECORD_SECONDS)
            if "path" in done:
                return done["path"]
        target = records.path_for(results_dir, record["run_id"])
        kept = dict(record, unsent_to=target, unsent_reason="its bucket did not answer in time")
        path = records.write(kept, unsent.folder())
        return f"{path} (kept locally; the same command run again records it in {target})"


def _last_whole(step: int | None) -> str:
    if step is None:
        return "no checkpoint of this run is known to be whole"
    return f"the last whole checkpoint is step {step}"


def watch(job, cfg) -> Watchdog:
    """A started Watchdog over JOB with CFG's grace, stall and deadline (stop it at the end)."""
    return Watchdog(
        job, cfg.shutdown_grace_secs, cfg.storage_stall_secs, cfg.storage_deadline_secs
    ).start()
