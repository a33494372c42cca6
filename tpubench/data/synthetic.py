"""Synthetic batches, made once and kept on the devices.

tf_cnn_benchmarks issue 140: regenerating synthetic data every step costs
time and measures nothing.  One global batch is drawn from the model's
element spec with a fixed seed and split across replicas, so 1 and N
replicas see exactly the same global batch (that is what lets tests compare
their losses).
"""

from __future__ import annotations

import math

import numpy as np

from tpubench.core import bounds


def _sample(spec, batch: int, rng: np.random.Generator, high: int):
    import tensorflow as tf

    shape = (batch, *spec.shape)
    if spec.dtype.is_integer:
        return rng.integers(0, high, size=shape).astype(spec.dtype.as_numpy_dtype)
    if spec.dtype == tf.bool:
        return rng.integers(0, 2, size=shape).astype(bool)
    return rng.standard_normal(shape).astype(np.float32).astype(spec.dtype.as_numpy_dtype)


def check_memory(element_spec, examples: int, what: str, fix: str = "a smaller --batch_size"):
    """Refuses EXAMPLES of ELEMENT_SPEC when they would not fit in this host's memory.

    Drawn as 8-byte values, then cast and copied: about 16 bytes a value at
    the peak, known before anything is allocated (core/bounds.check_memory).
    """
    import tensorflow as tf

    values = sum(
        examples * math.prod(d or 1 for d in s.shape) for s in tf.nest.flatten(element_spec)
    )
    bounds.check_memory(16 * values, what, f"give {fix}")


def global_batch(element_spec, params, batch_size: int, seed: int):
    """numpy (features, labels) for one global batch drawn from ELEMENT_SPEC.

    Integer features are token ids below params["vocab_size"]; integer labels
    are classes below params["num_classes"].
    """
    import tensorflow as tf

    features_spec, labels_spec = element_spec
    check_memory(element_spec, batch_size, f"the synthetic batch ({batch_size:,} examples)")
    rng = np.random.default_rng(seed)
    vocab = int(params.get("vocab_size", 256))
    classes = int(params.get("num_classes", 2))
    features = tf.nest.map_structure(lambda s: _sample(s, batch_size, rng, vocab), features_spec)
    labels = tf.nest.map_structure(lambda s: _sample(s, batch_size, rng, classes), labels_spec)
    return features, labels


def per_replica_values(strategy, batch, num_replicas: int | None = None):
    """Splits a global numpy batch into NUM_REPLICAS slices (default: STRATEGY's
    replicas) and places one slice on each replica's device."""
    import tensorflow as tf

    def value_fn(ctx):
        def take(x):
            per = x.shape[0] // (num_replicas or ctx.num_replicas_in_sync)
            i = ctx.replica_id_in_sync_group
            return tf.constant(x[i * per : (i + 1) * per])

        return tf.nest.map_structure(take, batch)

    return strategy.experimental_distribute_values_from_function(value_fn)
