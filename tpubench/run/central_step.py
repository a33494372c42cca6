"""The synchronous parameter server's update: each gradient summed and applied where its
variable lives (`--strategy=central_storage`, hardware/central_storage.py).

Keras 3's optimizer, called from each replica, all-reduces the gradients
through the strategy first: CentralStorageStrategy sums them on the host
CPU and hands each replica a copy, and the update then reads replica 0's
copy, so with the variables on the CPU every summed gradient made a trip
through the first GPU and back, and with them on a GPU every sum ran on the
host.  tf_cnn_benchmarks summed each gradient on its variable's device and
applied it there; so does this step: the replicas only compute gradients,
and the sums and the update run from the cross-replica context.
"""

from __future__ import annotations

import tensorflow as tf


def _variable(v):
    """The tf.Variable behind a Keras 3 variable."""
    return getattr(v, "value", v)


def _sum(parts):
    """The sum of one gradient's per-replica PARTS, on the current device."""
    if len(parts) == 1:
        return parts[0]
    if any(isinstance(p, tf.IndexedSlices) for p in parts):  # embeddings: rows, not a dense sum
        slices = [p if isinstance(p, tf.IndexedSlices) else _as_slices(p) for p in parts]
        return tf.IndexedSlices(
            tf.concat([s.values for s in slices], 0),
            tf.concat([s.indices for s in slices], 0),
            slices[0].dense_shape,
        )
    return tf.add_n(parts)


def _as_slices(dense):
    rows = tf.range(tf.shape(dense, out_type=tf.int64)[0])
    return tf.IndexedSlices(dense, rows, tf.shape(dense, out_type=tf.int64))


def summed(strategy, grads, variables) -> list:
    """Each per-replica gradient of GRADS summed on its variable's device (None stays None)."""
    out = []
    for g, v in zip(grads, variables, strict=True):
        if g is None:
            out.append(None)
            continue
        with tf.device(_variable(v).device):
            out.append(_sum(strategy.experimental_local_results(g)))
    return out


def apply(strategy, optimizer, grads, variables) -> None:
    """Applies the summed GRADS to VARIABLES, each update on its variable's device.

    From the strategy's cross-replica context the optimizer neither
    all-reduces again nor merges: its update goes to `extended.update`,
    which runs it with the variable.  Keras clips (clipnorm and the like)
    here, on the whole gradient.
    """
    with strategy.scope():
        if hasattr(optimizer, "apply_summed"):  # loss scaling: model/optim.py
            optimizer.apply_summed(grads, variables)
        else:
            optimizer.apply_gradients(zip(grads, variables, strict=True))


def make(strategy, grads_fn, optimizer, model):
    """The train step under a central-storage STRATEGY, or None under any other: f(features,
    labels) -> the per-replica loss.  The replicas run GRADS_FN (loss and gradients of
    MODEL's trainable variables); the sums and OPTIMIZER's updates follow, on each
    variable's device."""
    if not isinstance(strategy, tf.distribute.experimental.CentralStorageStrategy):
        return None

    def step(features, labels):
        loss, grads = strategy.run(grads_fn, args=(features, labels))
        variables = model.trainable_variables
        apply(strategy, optimizer, summed(strategy, grads, variables), variables)
        return loss

    return step
