"""Batch norms folded into the convolutions before them, for inference."""

from __future__ import annotations

import contextlib

import tensorflow as tf

from tpubench.model import batch_norm, layers


def fold_batch_norms(model, strategy=None) -> int:
    """Folds each batch norm that normalises a `Conv2D` output into that convolution (inference).

    The convolution then runs with kernel x gamma / sqrt(variance + eps) and
    bias beta - mean x gamma / sqrt(variance + eps), made once here from the
    current weights (the moving statistics: inference only), in the layer's
    compute dtype, and the batch norm passes its input through.  TensorFlow's
    graph optimizer makes the same fold itself for fp32 on a CPU, but not
    for bf16, where the batch norm then runs as its own pass (docs/cpu.md).
    Returns how many were folded; a model trained afterwards would be wrong,
    so only an inference session calls this.
    """
    with strategy.scope() if strategy is not None else contextlib.nullcontext():
        return _fold(model)


def _fold(model) -> int:
    folded = 0
    for bn in model.layers:
        if not isinstance(bn, batch_norm.FusedBatchNorm) or len(bn._inbound_nodes) != 1:
            continue
        node = bn._inbound_nodes[0]
        x = node.arguments.args[0]
        x = x[0] if isinstance(x, (list, tuple)) else x  # [x, side]: x is the normalised one
        conv = x._keras_history.operation
        if not isinstance(conv, layers.Conv2D):
            continue
        if len(conv._inbound_nodes) != 1 or len(conv._outbound_nodes) != 1:
            continue
        beta = tf.convert_to_tensor(bn.beta)
        gamma = tf.convert_to_tensor(bn.gamma) if bn.scale else tf.ones_like(beta)
        scale = gamma * tf.math.rsqrt(tf.convert_to_tensor(bn.moving_variance) + bn.epsilon)
        bias = beta - tf.convert_to_tensor(bn.moving_mean) * scale
        if conv.use_bias:
            bias += tf.convert_to_tensor(conv.bias) * scale
        kernel = tf.convert_to_tensor(conv.kernel) * scale  # HWIO: scales the output channels
        dtype = conv.compute_dtype
        pair = (
            tf.Variable(tf.cast(kernel, dtype), trainable=False),
            tf.Variable(tf.cast(bias, dtype), trainable=False),
        )
        # Plain attributes, untracked: the folded copies are not the model's weights.
        conv.__dict__["_folded"] = pair
        bn.__dict__["_folded_into_conv"] = True
        folded += 1
    return folded
