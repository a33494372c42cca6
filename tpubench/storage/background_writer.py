"""Metric writes timed, and on gs:// taken off the training path.

A GCS object cannot be appended to, so a flush of `metrics.jsonl` or of a
TensorBoard events file on gs:// uploads the whole file again: hundreds of
milliseconds against a far bucket, between every few loops.  `TimedWriter`
wraps the run's writer and does one of two things:

* inline (local files, or `--noasync_remote_writes`): every call runs in the
  caller's thread and its time counts as *blocked* I/O;
* in the background (gs://): the caller's calls are queued and one thread
  applies them in order; `flush()` only asks for a flush.  At most one
  upload is in flight; flush requests that pile up while one runs become one;
  the objects are rewritten at most every MIN_INTERVAL seconds unless a
  flush is waited for (`flush(wait=True)`, `close()`).  The caller blocks
  only when the queue is full or it waits, and that time counts as blocked.

Errors on the background thread are kept, never dropped: the lines stay
queued in the inner writer (the next flush writes them again), and
`take_errors()` hands each new error to the caller once, which warns on the
console and in the record.  `close(timeout)` waits for the final flush and
reports, in one line, what could not be written in time.
"""

from __future__ import annotations

import collections
import threading
import time

from tpubench.core import errors
from tpubench.storage import inflight, writers

MIN_INTERVAL = 5.0  # seconds between two background flushes nobody waits for
MAX_QUEUE = 10_000  # queued calls before the caller waits for room
CLOSE_TIMEOUT = 120.0  # seconds the end of a run waits for its last metrics
CLOSE_ATTEMPTS = 3  # tries of the last flush


class TimedWriter(writers.MetricWriter):
    """INNER's calls, inline or on a background thread, with their time counted."""

    def __init__(
        self,
        inner: writers.MetricWriter,
        background: bool,
        min_interval: float = MIN_INTERVAL,
        max_queue: int = MAX_QUEUE,
        clock=time.perf_counter,
        where: str | None = None,
    ):
        self.inner = inner
        self.where = where  # the directory written (a gs:// one is watched: inflight.py)
        self.background = background
        self.min_interval = min_interval
        self.max_queue = max_queue
        self.clock = clock
        self.blocked_seconds = 0.0  # the caller's time in this writer
        self.background_seconds = 0.0  # the background thread's time in INNER
        self.flushes = 0  # flushes of INNER that completed
        self._ops: collections.deque = collections.deque()
        self._cond = threading.Condition()
        self._wanted = 0  # flush requests made (a sequence number)
        self._forced = 0  # the newest request someone waits for
        self._done = 0  # the newest request whose flush completed
        self._last_flush = clock()
        self._closing = False
        self._errors: list[str] = []
        self._reported = 0
        self._failed_at = 0  # the newest request whose flush failed
        self._retry_at = 0.0  # no flush before this clock time after a failure
        self._thread = None
        if background:
            self._thread = threading.Thread(target=self._work, name="tpubench-writes", daemon=True)
            self._thread.start()

    # ------------------------------------------------------------ the caller's side
    @property
    def writers(self):
        """The inner writers (MultiWriter's), for code that looks for one kind."""
        return getattr(self.inner, "writers", [self.inner])

    def write_scalars(self, step, scalars):
        self.call(self.inner.write_scalars, step, dict(scalars))

    def write_hparams(self, hparams, trial_id=""):
        self.call(self.inner.write_hparams, dict(hparams), trial_id)

    def flush(self, wait: bool = False) -> None:
        """Flushes INNER; in the background only asked for unless WAIT (then waited for)."""
        if not self.background:
            self._inline(self.inner.flush)
            return
        t0 = self.clock()
        with self._cond:
            self._wanted += 1
            if wait:
                self._forced = self._wanted
            target = self._wanted
            self._cond.notify_all()
            if wait:
                while (
                    self._done < target
                    and self._thread.is_alive()
                    and not self._failed_since(target)
                ):
                    self._cond.wait(0.5)
        self.blocked_seconds += self.clock() - t0

    def close(self, timeout: float = CLOSE_TIMEOUT) -> str | None:
        """Writes what is left and closes INNER; returns None, or why it could not in time."""
        if not self.background:
            self._inline(self.inner.close)
            return None
        t0 = self.clock()
        with self._cond:
            self._wanted += 1
            self._forced = target = self._wanted
            self._closing = True
            self._cond.notify_all()
            deadline = time.monotonic() + timeout
            while self._thread.is_alive() and time.monotonic() < deadline:
                self._cond.wait(min(0.5, max(0.0, deadline - time.monotonic())))
            late = self._thread.is_alive()
            left = len(self._ops)
            done = self._done >= target
        self.blocked_seconds += self.clock() - t0
        if late:
            return (
                f"the last metrics were still being written after {timeout:.0f} s "
                f"({left} calls queued); metrics.jsonl and TensorBoard may lack the last steps"
            )
        if not done:
            why = self._errors[-1] if self._errors else "the writer thread stopped"
            return f"the last metrics could not be written ({why})"
        return None

    def take_errors(self) -> list[str]:
        """Errors of the background thread not handed out before (each once)."""
        with self._cond:
            new = self._errors[self._reported :]
            self._reported = len(self._errors)
        return new

    def call(self, fn, *args) -> None:
        """FN(*ARGS) in order with the other calls (on an inner writer, e.g. one board)."""
        if not self.background:
            self._inline(fn, *args)
            return
        with self._cond:
            if len(self._ops) >= self.max_queue:
                t0 = self.clock()
                while len(self._ops) >= self.max_queue and self._thread.is_alive():
                    self._cond.wait(0.5)
                self.blocked_seconds += self.clock() - t0
            self._ops.append((fn, args))
            self._cond.notify_all()

    def _inline(self, fn, *args) -> None:
        t0 = self.clock()
        try:
            with inflight.op("metrics write", self.where):
                fn(*args)
        finally:
            self.blocked_seconds += self.clock() - t0

    def _failed_since(self, target: int) -> bool:
        """A flush at or after TARGET failed (then waiting longer would hang)."""
        return self._failed_at >= target

    # ------------------------------------------------------------ the background thread
    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._ops and not self._flush_due() and not self._closing:
                    self._cond.wait(self._wait_time())
                ops = list(self._ops)
                self._ops.clear()
                self._cond.notify_all()  # room in the queue
                flush = self._flush_due() and not self._closing  # close flushes itself
                target = self._wanted
                closing = self._closing
            self._run(ops, flush, target)
            if closing:
                self._close_inner()
                return

    def _flush_due(self) -> bool:
        if self._wanted <= self._done or self.clock() < self._retry_at:
            return False
        if self._forced > self._done:
            return True
        return self.clock() - self._last_flush >= self.min_interval

    def _wait_time(self) -> float | None:
        if self._wanted > self._done:
            since = self.clock() - self._last_flush
            return max(0.01, self.min_interval - since, self._retry_at - self.clock())
        return None

    def _run(self, ops, flush: bool, target: int) -> None:
        t0 = self.clock()
        with inflight.op("metrics upload", self.where):
            for fn, args in ops:
                self._guarded(fn, *args)
            ok = self._guarded(self.inner.flush) if flush else True
        with self._cond:
            self.background_seconds += self.clock() - t0
            if flush:
                self._last_flush = self.clock()
                if ok:
                    self._done = max(self._done, target)
                    self.flushes += 1
                else:  # retried (the lines are still in INNER) after MIN_INTERVAL
                    self._failed_at = target
                    self._retry_at = self.clock() + self.min_interval
            self._cond.notify_all()

    def _guarded(self, fn, *args) -> bool:
        try:
            fn(*args)
            return True
        except Exception as e:  # noqa: BLE001 - kept and reported by the caller's thread
            with self._cond:
                self._errors.append(f"{type(e).__name__}: {errors.one_line(e)[:300]}")
            return False

    def _close_inner(self) -> None:
        """The last flush, tried CLOSE_ATTEMPTS times, then INNER's close."""
        t0 = self.clock()
        ok = False
        with inflight.op("last metrics upload", self.where):
            for attempt in range(CLOSE_ATTEMPTS):
                if attempt:
                    time.sleep(min(self.min_interval, 1.0))
                ok = self._guarded(self.inner.flush)
                if ok:
                    break
            ok = self._guarded(self.inner.close) and ok
        with self._cond:
            self.background_seconds += self.clock() - t0
            if ok:
                self._done = self._wanted
            self._cond.notify_all()
