"""How `tpubench infer` times one batch size: warm-up batches, then timed ones.

Each batch is timed alone with its predictions fetched to the host, so a
latency is what a caller waits for; throughput is examples over the wall
time of the timed section, which --max_seconds may end early (at the first
batch to end past it).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

from tpubench.core import timing
from tpubench.run import efficiency


@dataclasses.dataclass(frozen=True)
class Timed:
    """What to time at one batch size."""

    warmup_batches: int
    batches: int
    max_seconds: float | None
    batch: int  # the global batch size
    phase: str  # the progress line's label


def measure(predict: Callable, t: Timed, progress, on_first: Callable[[], None]) -> dict:
    """Runs PREDICT through T's warm-up and timed batches; the results section.

    ON_FIRST is called once the first prediction is on the host.
    """
    warmup = []
    out = None
    for i in range(t.warmup_batches):
        t0 = time.perf_counter()
        out = predict()
        warmup.append(time.perf_counter() - t0)
        on_first()
        progress.update(i + 1, None, None, t.phase)
    checksum = _checksum(out)  # of the last warm-up batch: outside the timed section
    latencies = []
    start = last_shown = time.perf_counter()
    for _ in range(t.batches):
        t0 = time.perf_counter()
        predict()
        t1 = time.perf_counter()
        latencies.append(t1 - t0)
        if t1 - last_shown >= 0.5 and len(latencies) < t.batches:
            rate = t.batch * len(latencies) / (t1 - start)
            progress.update(len(warmup) + len(latencies), rate, None, t.phase)
            last_shown = t1
        if t.max_seconds is not None and t1 - start >= t.max_seconds:
            break
    wall = time.perf_counter() - start
    results = timing.latency_summary(latencies, t.batch, wall)
    progress.update(len(warmup) + len(latencies), results["examples_per_sec"], None, t.phase)
    progress.close()
    results.update(
        warmup_batches=len(warmup),
        warmup_seconds=sum(warmup),
        first_batch_seconds=warmup[0],
        output_checksum=checksum,
        peak_rss_gib=efficiency.peak_rss_gib(),
        latencies=[round(x, 7) for x in latencies],
        warmup_latencies=[round(x, 7) for x in warmup],
    )
    return results


# ----------------------------------------------------------------- helpers
def predictor(runner, batch: int, manifest, seed: int):
    """predict() -> the batch's predictions as numpy arrays on the host."""
    import tensorflow as tf

    from tpubench.model.model_api import Mode

    runner.set_global_batch_size(batch)
    if manifest is None:
        fixed = runner.synthetic_inputs(seed)
        step = runner.make_predict_step(lambda: fixed)
    else:  # an endless stream of full eval batches
        iterator = iter(runner.distribute(Mode.EVAL, fixed_eval_steps=True))
        step = runner.make_predict_step(lambda: next(iterator))

    def predict():
        return tf.nest.map_structure(lambda t: t.numpy(), step())  # the host has the result

    return predict


def _checksum(out) -> float:
    """Sum of |value| over every prediction of a batch: equal outputs, equal sums."""
    import numpy as np
    import tensorflow as tf

    return float(sum(np.abs(np.asarray(x, np.float64)).sum() for x in tf.nest.flatten(out)))
