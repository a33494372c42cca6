"""Layers models may share.  No devices, strategies or flags here either."""

from __future__ import annotations

import keras
import tensorflow as tf


class FusedBatchNorm(keras.layers.Layer):
    """Batch normalisation through TensorFlow's fused kernel.

    Keras 3's BatchNormalization computes moments with separate ops; on CPU
    the fused kernel (`FusedBatchNormV3`, what tf_cnn_benchmarks used) is
    about 20% faster for ResNet-50 (../shared/TF_NOTES.md).  With
    `synchronized=True` the batch statistics are all-reduced across replicas,
    so N replicas normalise exactly like one replica on the global batch.
    `scale=False` has no gamma (a fixed 1), as in Inception v3, where the
    next convolution absorbs any scale.  Channels-last only.
    """

    def __init__(
        self, momentum=0.9, epsilon=1e-5, synchronized=False, gamma_zero=False, scale=True, **kw
    ):
        super().__init__(**kw)
        self.scale = scale
        self.momentum = momentum
        self.epsilon = epsilon
        self.synchronized = synchronized
        self.gamma_zero = gamma_zero

    def build(self, input_shape):
        c = int(input_shape[-1])
        self.gamma = None
        if self.scale:
            self.gamma = self.add_weight(
                shape=(c,),
                initializer="zeros" if self.gamma_zero else "ones",
                name="gamma",
                autocast=False,
            )
        self.beta = self.add_weight(shape=(c,), initializer="zeros", name="beta", autocast=False)
        stat = dict(trainable=False, autocast=False, aggregation="mean")
        self.moving_mean = self.add_weight(
            shape=(c,), initializer="zeros", name="moving_mean", **stat
        )
        self.moving_variance = self.add_weight(
            shape=(c,), initializer="ones", name="moving_variance", **stat
        )

    def _update(self, mean, variance):
        m = self.momentum
        self.moving_mean.assign(self.moving_mean * m + tf.cast(mean, tf.float32) * (1 - m))
        self.moving_variance.assign(
            self.moving_variance * m + tf.cast(variance, tf.float32) * (1 - m)
        )

    def call(self, x, training=False):
        beta = tf.convert_to_tensor(self.beta)
        # The fused kernel always takes a scale: without gamma it is ones.
        gamma = tf.convert_to_tensor(self.gamma) if self.scale else tf.ones_like(beta)
        ctx = tf.distribute.get_replica_context()
        if training and self.synchronized and ctx is not None and ctx.num_replicas_in_sync > 1:
            xf = tf.cast(x, tf.float32)
            axes = list(range(len(x.shape) - 1))
            count = tf.cast(tf.reduce_prod(tf.shape(xf)[:-1]), tf.float32)
            s, ss, n = ctx.all_reduce(
                "sum", [tf.reduce_sum(xf, axes), tf.reduce_sum(tf.square(xf), axes), count]
            )
            mean = s / n
            variance = tf.maximum(ss / n - tf.square(mean), 0.0)
            y = tf.nn.batch_normalization(xf, mean, variance, beta, gamma, self.epsilon)
            self._update(mean, variance)
            return tf.cast(y, x.dtype)
        shape = tf.shape(x)
        x4 = x if len(x.shape) == 4 else tf.reshape(x, [-1, 1, 1, x.shape[-1]])
        if training:
            # The kernel updates the moving averages itself (one op, not six
            # per layer): new = momentum * old + (1 - momentum) * batch, the
            # batch variance Bessel-corrected as before.
            y, mean, variance = tf.compat.v1.nn.fused_batch_norm(
                x4,
                gamma,
                beta,
                mean=tf.convert_to_tensor(self.moving_mean),
                variance=tf.convert_to_tensor(self.moving_variance),
                epsilon=self.epsilon,
                is_training=True,
                exponential_avg_factor=1.0 - self.momentum,
            )[:3]
            self.moving_mean.assign(mean)
            self.moving_variance.assign(variance)
        else:
            y = tf.compat.v1.nn.fused_batch_norm(
                x4,
                gamma,
                beta,
                mean=tf.convert_to_tensor(self.moving_mean),
                variance=tf.convert_to_tensor(self.moving_variance),
                epsilon=self.epsilon,
                is_training=False,
            )[0]
        return y if len(x.shape) == 4 else tf.reshape(y, shape)

    def compute_output_shape(self, input_shape):
        return input_shape
