"""Checkpoint saves, on gs:// written by TensorFlow's async checkpoint thread.

With `tf.train.CheckpointOptions(experimental_enable_async_checkpoint=True)`
a save copies the variables to host memory and returns; TensorFlow's own
thread writes the files and then the CheckpointManager's state file.  At
most one save is in flight: the next save (or `sync`) waits for it.

TensorFlow keeps an error of its write thread and raises it only at the
*next* save, before that save is queued, so the failed step would be
misnamed and the next save skipped.  `Saver` therefore waits for the
previous save first, takes its error itself and names its step.

TensorFlow 2.21's async helper cannot save Keras 3 variables twice: their
`_copy_trackable_to_cpu` makes a new tf.Variable at every save, which the
helper's second copy refuses ("tf.function only supports singleton
tf.Variables created on the first call"), so every save after the first
failed.  Once a save is written, `Saver` stops that helper's thread and
drops it; the next save makes a fresh one, whose first copy works.  A final
save (the run's end, an interrupt) is waited for, so the record claims a
checkpoint only once its files are complete.

Each save in flight on gs:// is tracked (storage/inflight.py) from submit
until it is written, so a bucket that stops answering is named with the
step being saved; `last_whole` is the newest step known written whole
(what a rerun resumes from when a save is abandoned).
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable

from tpubench.storage import inflight


@dataclasses.dataclass
class Failure:
    step: int
    error: BaseException


class Saver:
    """MANAGER's saves at a given step; ASYNCHRONOUS: written in the background."""

    def __init__(self, manager, asynchronous: bool, clock=time.perf_counter, last_whole=None):
        self.manager = manager
        self.last_whole: int | None = last_whole  # newest step whose save is known complete
        self._token = None  # inflight token of the async save in flight
        self.asynchronous = asynchronous
        self.clock = clock
        self.blocked_seconds = 0.0  # the caller's time in save()
        self.background_seconds = 0.0  # TensorFlow's write thread, submit to written
        self.waited_seconds = 0.0  # of blocked_seconds: waiting for that thread
        self._pending: int | None = None  # step of the async save not yet waited for
        self._submitted = 0.0
        self._written: float | None = None
        self._saved: int | None = None  # the step of the newest save made
        self.saves = 0  # saves made (submitted, when asynchronous)

    def save(self, step: int, final: bool) -> list[Failure]:
        """Saves at STEP (waited for when FINAL); the saves that failed, this one or earlier."""
        t0 = self.clock()
        try:
            failures = self._settle() if self.asynchronous else []
            if step == self._saved and not any(f.step == step for f in failures):
                return failures  # saved at this step already (a checkpoint step ends the run)
            token = inflight.begin(f"checkpoint save at step {step}", self.manager.directory)
            try:
                self.manager.save(checkpoint_number=step, options=self._options())
            except Exception as e:  # noqa: BLE001 - reported by the caller
                inflight.end(token)
                return failures + [Failure(step, e)]
            self._saved = step
            self.saves += 1
            if not self.asynchronous:
                inflight.end(token)
                self.last_whole = step
            else:
                self._token = token
                self._pending, self._submitted, self._written = step, self.clock(), None
                if final:
                    failures += self._settle()
            return failures
        finally:
            self.blocked_seconds += self.clock() - t0

    def sync(self) -> list[Failure]:
        """Waits for the save in flight; its failure, if it failed."""
        t0 = self.clock()
        try:
            return self._settle() if self.asynchronous else []
        finally:
            self.blocked_seconds += self.clock() - t0

    def _options(self):
        if not self.asynchronous:
            return None
        import tensorflow as tf

        return tf.train.CheckpointOptions(
            experimental_enable_async_checkpoint=True,
            experimental_write_callbacks=[self._on_written],
        )

    def _on_written(self, save_path) -> None:  # on TensorFlow's write thread
        self._written = self.clock()
        inflight.end(self._token)
        with contextlib.suppress(ValueError):
            self.last_whole = int(str(save_path).rsplit("-", 1)[-1])

    def _settle(self) -> list[Failure]:
        if self._pending is None:
            return []
        step, self._pending = self._pending, None
        t0 = self.clock()
        # Also after the files are written, TensorFlow's thread still writes the state
        # file and removes old checkpoints: the wait is a storage call of its own.
        with inflight.op(f"checkpoint save at step {step} (finishing)", self.manager.directory):
            self.manager.sync()
        self.waited_seconds += self.clock() - t0
        if self._written is not None:
            self.background_seconds += self._written - self._submitted
        inflight.end(self._token)
        error = _take_async_error(self.manager)
        _retire_async_helper(self.manager)
        return [Failure(step, error)] if error is not None else []


def section(saver: Saver | None, every_secs: float | None, every_steps: int | None) -> dict:
    """The record's `checkpoints`: the cadence asked for and what SAVER's saves cost.

    `seconds` is the training thread's time in saves (the periodic ones,
    the final one and any interrupt's), timed as pauses apart from the
    loops: examples/sec never includes it (docs/reliability.md).
    """
    return {
        "every_seconds": every_secs,
        "every_steps": every_steps,
        "saved": saver.saves if saver is not None else 0,
        "last_step": saver.last_whole if saver is not None else None,
        "seconds": round(saver.blocked_seconds, 3) if saver is not None else 0.0,
        "background_seconds": round(saver.background_seconds, 3) if saver is not None else 0.0,
        "in_throughput": False,
    }


@dataclasses.dataclass(frozen=True)
class Failures:
    """Where a run notes its failed saves: RECORD's `checkpoints_not_saved` lists each
    step, and WARN(line) tells the first one (saves under CKPT_DIR)."""

    record: dict
    ckpt_dir: str
    warn: Callable[[str], None]

    def note(self, failure: Failure) -> str:
        """Records FAILURE's step (warned the first time); returns why it failed."""
        from tpubench.run import checkpoints

        why = checkpoints.save_failed(self.ckpt_dir, failure.step, failure.error)
        failed = self.record.setdefault("checkpoints_not_saved", [])
        first = not failed
        if failure.step not in failed:
            failed.append(failure.step)
        if first:
            self.warn(failure_warning(self.ckpt_dir, failure.step, why))
        return why


def failure_warning(ckpt_dir: str, step: int, why: str) -> str:
    """The one console warning of a run whose checkpoint saves fail (the first one)."""
    return (
        f"checkpoint at step {step} not saved under {ckpt_dir}: {why} "
        "(the record's checkpoints_not_saved lists every step whose save failed)"
    )


def _retire_async_helper(manager) -> None:
    """Stops and drops the checkpoint's async helper (see the module doc)."""
    checkpoint = manager.checkpoint
    impl = getattr(checkpoint, "_async_checkpointer_impl", None)
    if impl is None:
        return
    impl._join_async_save_thread()  # its queue is empty: the thread ends at once
    checkpoint._async_checkpointer_impl = None


def _take_async_error(manager) -> BaseException | None:
    """The error TensorFlow's async checkpoint thread kept (and would raise at the next
    save), taken so that it is reported once, for its own step."""
    impl = getattr(manager.checkpoint, "_async_checkpointer_impl", None)
    error = getattr(impl, "_async_error", None)
    if error is not None:
        impl._async_error = None
    return error
