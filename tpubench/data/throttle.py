"""`--read_mb_per_s`: records held back as if a disk of that read rate served them.

An application-level emulation of a slower disk: every serialized record
the pipeline reads (TFRecord shards, local or gs://) is let through only
when an emulated disk reading at the given rate would have delivered its
bytes.  The disk is one queue (a shared clock behind a lock), so parallel
reads share its bandwidth as they would a real device's; a record read
while the disk is idle waits only for its own bytes.  It holds whatever
served the bytes underneath (page cache, local disk, gs://), so a run sees
at most that rate even when the shards are cached in memory, and never
more than the real source gives.  It does not emulate a disk's latency per
request or its IOPS limit, only its bandwidth.

The waits run on tf.data's threads inside `numpy_function`.  A stopping
process must not wait for them: a slow emulated disk may owe minutes of
queued reads, TensorFlow finishes its in-flight calls before the
interpreter can exit, and Python runs a signal handler only when the main
thread, blocked in the iterator's next batch, comes back (a Ctrl-C waited
for the batch, or hung at exit).  So every wait is on one event that
`release()` sets: at exit, and the moment SIGINT, SIGTERM or SIGHUP arrives
(seen through the C-level wakeup fd by a small thread, while the main
thread is still inside TensorFlow).  After it the emulated disk lets
everything through at once.

A run stopped that way must not free its pipeline either: TensorFlow's
parallel-map iterator, destroyed after a signal cancelled its reads, can
wait for ever for a call that never completes (seen at the end of an
interrupted `data bench`, TF 2.20).  `stopped_by_signal()` tells the
command-line edge to end the process once its record and its line are out,
without running those destructors.
"""

from __future__ import annotations

import atexit
import os
import select
import signal
import threading
import time

_RELEASED = threading.Event()
_SIGNALLED = threading.Event()
_IN_USE = threading.Event()


def release(by_signal: bool = False) -> None:
    """Ends every wait of every emulated disk in this process, now and from now on."""
    if by_signal:
        _SIGNALLED.set()
    _RELEASED.set()


def stopped_by_signal() -> bool:
    """Whether a stop signal released an emulated disk that a pipeline of this process read."""
    return _SIGNALLED.is_set() and _IN_USE.is_set()


atexit.register(release)
_STOPPING = {int(signal.SIGINT), int(signal.SIGTERM), int(signal.SIGHUP)}
_watched = False


def _watch_signals() -> None:
    """Releases the waits when a stop signal arrives, even while the main thread is in C++.

    Installed once, from the main thread, and only where no one else uses
    the wakeup fd (Python's own handlers still run as before)."""
    global _watched
    if _watched or threading.current_thread() is not threading.main_thread():
        return
    r, w = os.pipe()
    os.set_blocking(w, False)
    try:
        previous = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    except ValueError:
        previous = None
    if previous != -1:  # another wakeup fd is in use (or none could be set): leave it be
        if previous is not None:
            signal.set_wakeup_fd(previous)
        os.close(r)
        os.close(w)
        return
    _watched = True

    def watch():
        while not _RELEASED.is_set():
            ready, _, _ = select.select([r], [], [], 1.0)
            if ready and _STOPPING & set(os.read(r, 64)):
                release(by_signal=True)

    threading.Thread(target=watch, name="emulated-disk-signals", daemon=True).start()


def _wait(seconds: float) -> None:
    _RELEASED.wait(seconds)


class Disk:
    """An emulated disk of RATE bytes/s: read(n) returns when n bytes would be read."""

    def __init__(self, bytes_per_s: float, clock=time.monotonic, sleep=_wait):
        self.rate = float(bytes_per_s)
        self._clock, self._sleep = clock, sleep
        self._lock = threading.Lock()
        self._free_at = 0.0  # when the disk finishes what it was asked for so far

    def read(self, n: int) -> int:
        with self._lock:
            start = max(self._clock(), self._free_at)
            self._free_at = start + int(n) / self.rate
            done = self._free_at
        delay = done - self._clock()
        if delay > 0:  # the default wait ends at once once released
            self._sleep(delay)
        return int(n)


def records(ds, mb_per_s: float | None, deterministic: bool = True):
    """DS (serialized records) with each record held until a MB_PER_S disk has read it."""
    if not mb_per_s:
        return ds
    import numpy as np
    import tensorflow as tf

    disk = Disk(mb_per_s * 1e6)
    _IN_USE.set()
    _watch_signals()

    def read(n):
        return np.int64(disk.read(int(n)))

    def hold(record):
        size = tf.cast(tf.strings.length(record), tf.int64)  # bytes (the default unit)
        done = tf.numpy_function(read, [size], tf.int64, stateful=True)
        with tf.control_dependencies([done]):
            return tf.identity(record)

    return ds.map(hold, num_parallel_calls=tf.data.AUTOTUNE, deterministic=deterministic)
