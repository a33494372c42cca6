"""Gradient clipping across replicas: the global gradient clipped once, as on one replica.

The runner's train step (run/runner.py) calls `clip_reduced` between the
gradients and the optimizer's update.
"""

from __future__ import annotations

import tensorflow as tf


def clip_reduced(grads, strategy, optimizer):
    """Clips the global gradient, not each replica's share of it.

    Keras 3 clips (clipnorm, global_clipnorm, clipvalue) before its
    cross-replica sum, so N replicas would clip N partial gradients and
    train differently from one replica.  Here the gradient is summed
    first, clipped once, and handed over divided by N: the optimizer's
    own sum restores it, and its own clipping finds nothing left to clip.
    """
    n = strategy.num_replicas_in_sync
    opt = getattr(optimizer, "inner_optimizer", optimizer)
    clips = [getattr(opt, k, None) for k in ("global_clipnorm", "clipnorm", "clipvalue")]
    if n == 1 or not any(clips):
        return grads
    present = [i for i, g in enumerate(grads) if g is not None]
    dense = [tf.convert_to_tensor(grads[i]) for i in present]  # embeddings: IndexedSlices
    dense = tf.distribute.get_replica_context().all_reduce("sum", dense)
    global_norm, norm, value = clips
    if global_norm:
        dense, _ = tf.clip_by_global_norm(dense, global_norm)
    if norm:
        dense = [tf.clip_by_norm(g, norm) for g in dense]
    if value:
        dense = [tf.clip_by_value(g, -value, value) for g in dense]
    out = list(grads)
    for i, g in zip(present, dense, strict=True):
        out[i] = g / n
    return out
