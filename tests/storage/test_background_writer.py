"""TimedWriter: metric writes in the background, every call applied, errors kept
(in process, with a slow inner writer; and on gs:// through the local GCS server)."""

from __future__ import annotations

import json
import threading
import time
import uuid

from tpubench.storage import background_writer, writers


class SlowWriter(writers.MetricWriter):
    """Records calls; each flush takes FLUSH_SECONDS and fails while FAILURES > 0."""

    def __init__(self, flush_seconds=0.0, failures=0, hang=None):
        self.rows, self.flushed_rows, self.flushes = [], [], 0
        self.flush_seconds, self.failures, self.hang = flush_seconds, failures, hang
        self.threads = set()

    def write_scalars(self, step, scalars):
        self.threads.add(threading.current_thread().name)
        self.rows.append(step)

    def flush(self, wait=False):
        if self.hang is not None:
            self.hang.wait()
        time.sleep(self.flush_seconds)
        if self.failures:
            self.failures -= 1
            raise OSError("HTTP response code 503 (injected)")
        self.flushes += 1
        self.flushed_rows = list(self.rows)


def test_background_writes_return_at_once_and_coalesce_flushes():
    inner = SlowWriter(flush_seconds=0.2)
    w = background_writer.TimedWriter(inner, background=True, min_interval=0.0)
    t0 = time.perf_counter()
    for step in range(1, 51):
        w.write_scalars(step, {"loss": 1.0 / step})
        w.flush()
    asked = time.perf_counter() - t0
    assert asked < 0.15  # 50 flushes asked for, none waited for
    assert w.close() is None
    assert inner.flushed_rows == list(range(1, 51))  # every row, in order, written
    assert inner.flushes <= 3 + 1  # ~0.2 s of writes during the asks, then close's flush
    assert inner.threads == {"tpubench-writes"}
    assert w.blocked_seconds >= 0.2  # close waited for the last flush
    assert w.background_seconds >= 0.2 * inner.flushes


def test_inline_writes_count_their_time_as_blocked():
    inner = SlowWriter(flush_seconds=0.1)
    w = background_writer.TimedWriter(inner, background=False)
    for step in (1, 2, 3):
        w.write_scalars(step, {"loss": 1.0})
        w.flush()
    assert inner.flushes == 3 and inner.flushed_rows == [1, 2, 3]
    assert w.blocked_seconds >= 0.3 and w.background_seconds == 0.0
    assert w.close() is None


def test_failed_flushes_are_reported_once_each_and_retried_until_they_land():
    inner = SlowWriter(failures=3)
    w = background_writer.TimedWriter(inner, background=True, min_interval=0.05)
    w.write_scalars(1, {"loss": 1.0})
    w.flush(wait=True)  # fails: returns instead of hanging
    assert inner.flushed_rows == []
    first = w.take_errors()
    assert first == ["OSError: HTTP response code 503 (injected)"]
    assert w.take_errors() == []
    w.write_scalars(2, {"loss": 0.5})
    assert w.close() is None  # retried: the last flush landed (at the third try)
    assert inner.flushed_rows == [1, 2]
    assert w.take_errors() == ["OSError: HTTP response code 503 (injected)"] * 2  # each once


def test_a_flush_that_keeps_failing_or_hangs_is_named_at_close():
    failing = background_writer.TimedWriter(SlowWriter(failures=99), True, min_interval=0.01)
    failing.write_scalars(1, {"loss": 1.0})
    message = failing.close(timeout=5)
    assert message.startswith("the last metrics could not be written (OSError: HTTP response")
    hang = threading.Event()
    stuck = background_writer.TimedWriter(SlowWriter(hang=hang), True)
    stuck.write_scalars(1, {"loss": 1.0})
    t0 = time.perf_counter()
    message = stuck.close(timeout=0.5)
    assert 0.5 <= time.perf_counter() - t0 < 3
    assert message.startswith("the last metrics were still being written after 0 s")
    hang.set()


def test_on_gcs_slow_uploads_do_not_block_and_every_line_lands(gcs_env, local_gcs):
    import tensorflow as tf

    from tpubench.storage import gcs

    local_gcs.delay(r"metrics\.jsonl", 0.2)
    path = f"gs://tpubench-test/bg-{uuid.uuid4().hex[:8]}/metrics.jsonl"
    w = background_writer.TimedWriter(writers.JsonlWriter(path, "r1"), True, min_interval=0.0)
    tf.io.gfile.makedirs(path.rsplit("/", 1)[0])
    for step in range(1, 21):
        w.write_scalars(step, {"train/loss": 1.0})
        w.flush()
        time.sleep(0.01)
    assert w.blocked_seconds < 0.2  # one upload takes longer than all 20 asks together
    assert w.close() is None
    assert w.background_seconds > 0.4  # two requests or more per upload, 0.2 s each
    lines = [json.loads(x) for x in gcs.read_bytes(path).decode().splitlines()]
    assert [x["step"] for x in lines] == list(range(1, 21))
    assert {x["run_id"] for x in lines} == {"r1"}
