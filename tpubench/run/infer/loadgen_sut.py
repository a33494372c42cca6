"""The model as MLPerf LoadGen's system under test (SUT) and query sample library (QSL).

`Samples` is the QSL: `--qsl_samples` inputs drawn from the model's input
pipeline (synthetic, or the eval split of the real data) and held in host
memory before LoadGen starts, so that reading data is never timed, as
LoadGen expects.  `Batcher` is the SUT: LoadGen's `issue_query` only queues
the samples; one serving thread takes up to `max_batch` of them (waiting
at most `window` seconds after the oldest arrived for more to join, which is
dynamic batching), pads the batch to the next of a few fixed sizes (so the
step traces a handful of shapes, all before timing), runs the model, fetches
the predictions to the host and tells LoadGen the queries are complete.
"""

from __future__ import annotations

import collections
import dataclasses
import threading
import time

import numpy as np


@dataclasses.dataclass(frozen=True)
class Samples:
    """Host-memory inputs, indexed as LoadGen's sample indices."""

    features: object  # a nest of numpy arrays, leading dimension = count
    count: int

    def take(self, indices) -> object:
        import tensorflow as tf

        return tf.nest.map_structure(lambda x: np.take(x, indices, axis=0), self.features)


def load_samples(runner, manifest, count: int, seed: int) -> Samples:
    """COUNT inputs from the model's pipeline: synthetic ones, or the real eval split's."""
    import tensorflow as tf

    from tpubench.data import synthetic
    from tpubench.model import model_api
    from tpubench.model.model_api import Mode

    params = runner.params
    synthetic.check_memory(  # before the samples are drawn or read
        runner.spec.element_spec(params),
        count,
        f"the query sample library ({count:,} samples)",
        "a smaller --qsl_samples",
    )
    if manifest is None:
        features, _ = synthetic.global_batch(runner.spec.element_spec(params), params, count, seed)
        return Samples(features, count)
    # An endless stream of full eval batches (repeats a split smaller than COUNT).
    params = model_api.RunParams(params, fixed_eval_steps=True)
    parts, have = [], 0
    for features, _ in runner.spec.input_fn(params, None, Mode.EVAL):
        parts.append(tf.nest.map_structure(lambda t: t.numpy(), features))
        have += int(tf.nest.flatten(parts[-1])[0].shape[0])
        if have >= count:
            break
    joined = tf.nest.map_structure(lambda *xs: np.concatenate(xs)[:count], *parts)
    return Samples(joined, count)


def bucket_sizes(max_batch: int, replicas: int) -> tuple[int, ...]:
    """Batch shapes the SUT runs: replicas x 1, 2, 4, ... below MAX_BATCH, and MAX_BATCH."""
    sizes, size = [], replicas
    while size < max_batch:
        sizes.append(size)
        size *= 2
    return tuple(sizes + [max_batch])


class Batcher:
    """LoadGen's SUT over one model: queue, dynamic batches, responses.

    Args:
      lg: the `mlperf_loadgen` module.
      samples: the QSL's inputs.
      predict: f(features nest of numpy arrays) -> predictions, on the host.
      max_batch: the largest batch run at once.
      window: seconds a batch may wait, after its oldest query arrived, for
        more queries to join it (0: take what is waiting).
      buckets: the batch sizes a batch is padded up to (bucket_sizes()).
      on_signal: called at every query issued and batch served, to act on a
        signal noted while LoadGen runs (a signal must not raise inside
        LoadGen's callbacks: the exception would abort the process).
      shed_after: seconds the oldest queued query may wait before the SUT
        stops serving this run (None: never).  A server probe far above
        what the device sustains would otherwise queue every query LoadGen
        sends for the whole minimum duration: gigabytes of backlog, never a
        VALID run.  Past that point every query is completed unserved, the
        run is marked `overloaded` and its LoadGen figures are not used.
    """

    def __init__(
        self, lg, samples: Samples, predict, max_batch, window, buckets, on_signal, shed_after=None
    ):
        self._lg = lg
        self._samples = samples
        self._predict = predict
        self._max_batch = max_batch
        self._window = window
        self._buckets = buckets
        self._on_signal = on_signal
        self._queue = collections.deque()  # (QuerySample, arrival perf_counter)
        self._cv = threading.Condition()
        self._stop = False
        self.error: BaseException | None = None
        self.batch_sizes = collections.Counter()  # real (unpadded) sizes run
        self._shed_after = shed_after
        self.overloaded: dict | None = None  # {"after_seconds", "served", "backlog"} once shed
        self._started = time.perf_counter()
        self._served = 0
        self._thread = threading.Thread(target=self._serve, name="loadgen-sut", daemon=True)
        self._thread.start()

    def warm_up(self) -> None:
        """Runs every bucket's shape once, untimed (the first run of a shape traces it)."""
        for size in self._buckets:
            self._predict(self._samples.take(np.arange(size) % self._samples.count))

    def act_on_signal(self) -> None:
        """Acts on a signal noted while LoadGen runs (scenarios.signal_watch calls it)."""
        self._on_signal()

    def issue_query(self, query_samples) -> None:
        self._on_signal()
        if self.overloaded is not None:  # this run is lost: complete at once, hold nothing
            self._complete(query_samples)
            return
        now = time.perf_counter()
        with self._cv:
            self._queue.extend((s, now) for s in query_samples)
            self._cv.notify()

    def flush_queries(self) -> None:
        """LoadGen's end-of-run call: nothing is held back, so nothing to flush."""

    def reset_counts(self) -> None:
        """A new LoadGen run starts: its counts, and serving again."""
        self.batch_sizes = collections.Counter()
        self.overloaded = None
        self._started = time.perf_counter()
        self._served = 0

    def close(self) -> None:
        with self._cv:
            self._stop = True
            self._cv.notify()
        self._thread.join(timeout=60)

    def _next_batch(self) -> list | None:
        with self._cv:
            while not self._queue and not self._stop:
                self._cv.wait()
            if self._stop and not self._queue:
                return None
            deadline = self._queue[0][1] + self._window
            while len(self._queue) < self._max_batch and not self._stop:
                left = deadline - time.perf_counter()
                if left <= 0:
                    break
                self._cv.wait(left)
            waited = time.perf_counter() - self._queue[0][1]
            if self._shed_after is not None and waited > self._shed_after:
                self.overloaded = {
                    "after_seconds": round(time.perf_counter() - self._started, 3),
                    "served": self._served,
                    "backlog": len(self._queue),
                    "oldest_wait_seconds": round(waited, 3),
                }
                backlog = [q[0] for q in self._queue]
                self._queue.clear()
                return backlog  # completed unserved by _serve, outside the lock
            n = min(self._max_batch, len(self._queue))
            return [self._queue.popleft()[0] for _ in range(n)]

    def _serve(self) -> None:
        while True:
            batch = self._next_batch()
            if batch is None:
                return
            if self.overloaded is not None:
                self._complete(batch)
                continue
            self._on_signal()
            if self.error is None:
                try:
                    self._run(batch)
                except Exception as e:  # noqa: BLE001 - re-raised after LoadGen returns
                    self.error = e
            # Complete every query even after an error: LoadGen waits for all of them.
            self._complete(batch)
            self._served += len(batch)

    def _complete(self, query_samples) -> None:
        responses = [self._lg.QuerySampleResponse(s.id, 0, 0) for s in query_samples]
        self._lg.QuerySamplesComplete(responses)

    def _run(self, batch) -> None:
        n = len(batch)
        size = next(b for b in self._buckets if b >= n)
        indices = [s.index for s in batch]
        indices += [indices[0]] * (size - n)  # padding rows: their outputs are dropped
        self._predict(self._samples.take(indices))
        self.batch_sizes[n] += 1


def host_predictor(runner):
    """f(features nest of numpy) -> predictions as numpy: placed per replica, run, fetched."""
    import tensorflow as tf

    from tpubench.data import synthetic

    strategy = runner.strategy
    replicas = strategy.num_replicas_in_sync
    step = runner.make_predict_fn()

    def predict(features):
        placed = synthetic.per_replica_values(strategy, features, replicas)
        return tf.nest.map_structure(lambda t: t.numpy(), step(placed))

    return predict
