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
"""

from __future__ import annotations

import threading
import time


class Disk:
    """An emulated disk of RATE bytes/s: read(n) returns when n bytes would be read."""

    def __init__(self, bytes_per_s: float, clock=time.monotonic, sleep=time.sleep):
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
        if delay > 0:
            self._sleep(delay)
        return int(n)


def records(ds, mb_per_s: float | None, deterministic: bool = True):
    """DS (serialized records) with each record held until a MB_PER_S disk has read it."""
    if not mb_per_s:
        return ds
    import numpy as np
    import tensorflow as tf

    disk = Disk(mb_per_s * 1e6)

    def read(n):
        return np.int64(disk.read(int(n)))

    def hold(record):
        size = tf.cast(tf.strings.length(record), tf.int64)  # bytes (the default unit)
        done = tf.numpy_function(read, [size], tf.int64, stateful=True)
        with tf.control_dependencies([done]):
            return tf.identity(record)

    return ds.map(hold, num_parallel_calls=tf.data.AUTOTUNE, deterministic=deterministic)
