"""Evaluation's sums and means: exact over partial batches, the same on 1 or N replicas.

Each replica sums its examples' loss and metrics into one vector (one
stacked tensor, not a dict, because MultiWorkerMirroredStrategy's reduce
rejects nested structures of scalars); the steps' reduced vectors are added
on the host and divided by the example count once.  The runner
(run/runner.py) traces the step; this module holds the arithmetic.
"""

from __future__ import annotations

import tensorflow as tf


def replica_sums(out) -> tuple[list[str], tf.Tensor]:
    """(metric names, [loss, count, *metrics] summed over one replica's examples) for
    the model's EVAL output OUT."""
    names = sorted(out.metrics)
    sums = [
        tf.reduce_sum(out.per_example_loss),
        tf.cast(tf.shape(out.per_example_loss)[0], tf.float32),
    ]
    sums += [tf.reduce_sum(tf.cast(out.metrics[k], tf.float32)) for k in names]
    return names, tf.stack(sums)


def summed(step, dataset, max_steps: int | None):
    """STEP's reduced vectors over DATASET (at most MAX_STEPS batches), added; None if empty."""
    total = None
    for i, (features, labels) in enumerate(dataset):
        if max_steps is not None and i >= max_steps:
            break
        sums = step(features, labels).numpy()
        total = sums if total is None else total + sums
    return total


def means(total, names: list[str], derived_metrics) -> dict:
    """Loss and each metric per example from TOTAL; DERIVED_METRICS(result) adds more."""
    if total is None or not total[1]:
        return {"examples": 0}
    count = float(total[1])
    result = {"loss": float(total[0]) / count}
    result.update({k: float(v) / count for k, v in zip(names, total[2:], strict=True)})
    if derived_metrics is not None:
        result.update(derived_metrics(result))
    result["examples"] = int(count)
    return result
