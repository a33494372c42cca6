"""Synthetic batches, made once and kept on the devices.

tf_cnn_benchmarks issue 140: regenerating synthetic data every step costs
time and measures nothing.  One global batch is drawn from the model's
element spec with a fixed seed and split across replicas, so 1 and N
replicas see exactly the same global batch (that is what lets tests compare
their losses).
"""

from __future__ import annotations

import numpy as np


def _sample(spec, batch: int, rng: np.random.Generator, high: int):
    import tensorflow as tf

    shape = (batch, *spec.shape)
    if spec.dtype.is_integer:
        return rng.integers(0, high, size=shape).astype(spec.dtype.as_numpy_dtype)
    if spec.dtype == tf.bool:
        return rng.integers(0, 2, size=shape).astype(bool)
    return rng.standard_normal(shape).astype(np.float32).astype(spec.dtype.as_numpy_dtype)


def global_batch(element_spec, params, batch_size: int, seed: int):
    """numpy (features, labels) for one global batch drawn from ELEMENT_SPEC.

    Integer features are token ids below params["vocab_size"]; integer labels
    are classes below params["num_classes"].
    """
    import tensorflow as tf

    rng = np.random.default_rng(seed)
    features_spec, labels_spec = element_spec
    vocab = int(params.get("vocab_size", 256))
    classes = int(params.get("num_classes", 2))
    features = tf.nest.map_structure(lambda s: _sample(s, batch_size, rng, vocab), features_spec)
    labels = tf.nest.map_structure(lambda s: _sample(s, batch_size, rng, classes), labels_spec)
    return features, labels


def per_replica_values(strategy, batch, num_replicas: int):
    """Splits a global numpy batch and places one slice on each replica's device."""
    import tensorflow as tf

    def value_fn(ctx):
        def take(x):
            per = x.shape[0] // num_replicas
            i = ctx.replica_id_in_sync_group
            return tf.constant(x[i * per : (i + 1) * per])

        return tf.nest.map_structure(take, batch)

    return strategy.experimental_distribute_values_from_function(value_fn)
